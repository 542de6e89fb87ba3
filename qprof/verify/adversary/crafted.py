"""Invalid SLH-DSA signatures that make verification walk long chains at every layer.

The verifier learns only at the top root that a signature is invalid, and each layer's
WOTS+ message comes from signature bytes: layer 0 signs the FORS public key (from the
FORS part), layer j > 0 the root layer j - 1 computed from its WOTS+ signature and
authentication path.  So the forger, bottom up, replaces one node per layer: the top
authentication node of FORS tree 0 (each try: one H and the T_k of the roots) for
layer 0, and the authentication node next to layer j - 1's root (each try: one H) for
layer j, keeping the candidate whose resulting message has the most chain steps.  R is
kept (any R would do), so the digest, the address and the FORS indices stay fixed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from qprof.verify.adversary.keys import adrs_pair, layer_lane, tree_lane, words
from qprof.verify.slhdsa_calls import nb_module, params_of, walk

CHUNK = 1 << 16  # tries per kernel call
TREE = 2


@dataclass(frozen=True)
class Crafted:
    signature: bytes
    layer_steps: tuple[int, ...]  # as ``walk`` counts them on the final signature
    tries: tuple[int, ...]  # per layer
    seconds: float
    cpu_seconds: float

    @property
    def steps(self) -> int:
        return sum(self.layer_steps)


def _grind(kernel_call: object, seconds: float) -> tuple[int, int, int]:
    """Run ``kernel_call(start, count, best)`` in chunks for ``seconds``:
    (best counter, its steps, tries)."""
    best = np.array([-1, -1], dtype=np.int64)
    start = 0
    stop = time.monotonic() + seconds
    while True:
        kernel_call(start, CHUNK, best)  # type: ignore[operator]
        start += CHUNK
        if time.monotonic() >= stop:
            return int(best[0]), int(best[1]), start


def craft_invalid(suite: str, public_key: bytes, message: bytes, base_signature: bytes,
                  context: bytes = b"", seconds: float = 10.0, salt: bytes | None = None
                  ) -> Crafted:
    """``base_signature`` (any bytes of the right length; a valid signature is the
    realistic start) with one node per layer ground for ``seconds`` in all."""
    grind = nb_module("slhdsa_grind")
    fors_below_top, grind_fors_kernel = grind.fors_below_top, grind.grind_fors_kernel
    grind_h_kernel, xmss_below_top = grind.grind_h_kernel, grind.xmss_below_top
    message_digest = nb_module("slhdsa_walk").message_digest
    p = params_of(suite)
    n, nw = p.n, p.n // 8
    length = 2 * n + 3
    salt = salt if salt is not None else bytes(n)
    salt_w = words(salt)
    seed = words(public_key[:n])
    sig = bytearray(base_signature)
    indices = np.empty(p.k, dtype=np.int64)
    where = np.empty(2, dtype=np.int64)
    message_digest(n, p.h, p.hp, p.a, p.k, p.m, np.frombuffer(public_key, dtype=np.uint8),
                   np.frombuffer(message, dtype=np.uint8), np.frombuffer(bytes(sig), np.uint8),
                   np.frombuffer(context, dtype=np.uint8), indices, where)  # fmt: skip
    idx_tree, idx_leaf = int(where[0]), int(where[1])
    share = seconds / p.d
    t0, c0 = time.monotonic(), time.thread_time()
    tries: list[int] = []

    def candidate(counter: int) -> bytes:
        return counter.to_bytes(8, "little") + salt[8:]

    # Layer 0: the top node of FORS tree 0.
    roots = np.empty(p.k * nw, dtype=np.uint64)
    below = np.empty(nw, dtype=np.uint64)
    fors_off = n  # bytes
    fors_below_top(seed, n, p.a, p.k, np.uint64(tree_lane(idx_tree)), idx_leaf, indices,
                   words(bytes(sig)), fors_off // 8, 0, roots, below)  # fmt: skip
    node_right = bool((int(indices[0]) >> (p.a - 1)) & 1)
    lane3 = adrs_pair(p.a, 0)  # tree 0's root: height a, index 0

    def fors_call(start: int, count: int, best: np.ndarray) -> None:
        grind_fors_kernel(seed, n, p.k, np.uint64(tree_lane(idx_tree)), idx_leaf, roots, 0,
                          np.uint64(lane3), below, node_right, salt_w, start, count, best)

    counter, _, tried = _grind(fors_call, share)
    tries.append(tried)
    auth = fors_off + p.a * n  # tree 0's auth node at height a - 1
    sig[auth:auth + n] = candidate(counter)

    # Layers 1 .. d-1: the auth node next to the root of layer j - 1.
    tree, leaf = idx_tree, idx_leaf
    ht_off = n + p.k * (p.a + 1) * n
    for layer in range(1, p.d):
        below_layer = layer - 1
        w = walk(suite, public_key, message, bytes(sig), context)
        soff = ht_off + below_layer * (length + p.hp) * n
        xmss_below_top(seed, n, p.hp, below_layer, tree, leaf,
                       words(w.layer_messages[below_layer]), words(bytes(sig)), soff // 8,
                       below)  # fmt: skip
        right = bool((leaf >> (p.hp - 1)) & 1)
        lane0, lane1 = np.uint64(layer_lane(below_layer)), np.uint64(tree_lane(tree))

        def xmss_call(start: int, count: int, best: np.ndarray, lane0: np.uint64 = lane0,
                      lane1: np.uint64 = lane1, right: bool = right) -> None:
            grind_h_kernel(seed, n, lane0, lane1, np.uint64(adrs_pair(TREE, 0)),
                           np.uint64(adrs_pair(p.hp, 0)), below, right, salt_w, start, count,
                           best)  # fmt: skip

        counter, _, tried = _grind(xmss_call, share)
        tries.append(tried)
        auth = soff + (length + p.hp - 1) * n
        sig[auth:auth + n] = candidate(counter)
        leaf = tree & ((1 << p.hp) - 1)
        tree >>= p.hp
    final = walk(suite, public_key, message, bytes(sig), context)
    return Crafted(bytes(sig), final.layer_steps, tuple(tries), time.monotonic() - t0,
                   time.thread_time() - c0)
