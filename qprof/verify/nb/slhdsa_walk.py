"""What one SLH-DSA-SHAKE verification walks: each layer's WOTS+ message and chain steps.

A verification's cost is fixed by the parameter set except for the WOTS+ chains: at
every hypertree layer chain c runs from its message digit to w - 1, so the F calls of
layer j are sum(15 - digit) over the 35 (n = 16) to 67 (n = 32) digits (message
nibbles and checksum) of that layer's message node.  Layer 0 signs the FORS public
key; layer j > 0 signs the root that layer j - 1 computed from the signature, so the
walk has to compute what verification computes.  ``walk_kernel`` is ``verify_kernel``
(slhdsa_kernels) with the digits of every layer written out; it reuses its functions,
so the count is the one of the hashing verification really does.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from qprof.verify.nb.keccak import (
    SHAKE256_RATE,
    absorb_final,
    absorb_init,
    absorb_update,
    squeeze_into,
)
from qprof.verify.nb.keccak_xn import WAYS
from qprof.verify.nb.slhdsa_kernels import (
    FORS_ROOTS,
    FORS_TREE,
    TREE,
    WOTS_HASH,
    WOTS_PK,
    _adrs_pair,
    _bswap32,
    _bswap64,
    _bytes_to_words,
    _climb,
    _fors_roots_xn,
    _hash_t,
    _make_template,
    _make_template_xn,
    _set_lane_xn,
    _set_layer_tree,
    _wots_chains_xn,
    _wots_digits,
)

_W_MASK = 15


@njit(cache=True, nogil=True)
def node_steps(words, off, n):
    """F calls WOTS+ verification makes for the n-byte message node ``words[off:]``:
    sum(15 - digit) over its 2n base-16 digits and the 3 checksum digits."""
    csum = 0
    for i in range(2 * n):
        b = i >> 1
        byte = np.int64((words[off + (b >> 3)] >> np.uint64(8 * (b & 7))) & np.uint64(0xFF))
        digit = (byte >> 4) if (i & 1) == 0 else (byte & _W_MASK)
        csum += _W_MASK - digit
    steps = csum
    for c in range(3):
        steps += _W_MASK - ((csum >> (4 * (2 - c))) & _W_MASK)
    return steps


@njit(cache=True, nogil=True)
def message_digest(n, h, hp, a, k, m, pk, msg, sig, ctx, indices, where):
    """H_msg and its split (Algorithm 20, lines 6-11): FORS indices to ``indices[k]``,
    idx_tree and idx_leaf to ``where[0]``, ``where[1]``."""
    state = np.zeros(25, dtype=np.uint64)
    pos = absorb_init(state)
    pos = absorb_update(state, SHAKE256_RATE, pos, sig[0:n])
    pos = absorb_update(state, SHAKE256_RATE, pos, pk)
    prefix = np.zeros(2, dtype=np.uint8)
    prefix[1] = ctx.shape[0]
    pos = absorb_update(state, SHAKE256_RATE, pos, prefix)
    pos = absorb_update(state, SHAKE256_RATE, pos, ctx)
    pos = absorb_update(state, SHAKE256_RATE, pos, msg)
    absorb_final(state, SHAKE256_RATE, pos)
    digest = np.empty(m, dtype=np.uint8)
    squeeze_into(state, digest, 0, m)
    md_bytes = (k * a + 7) // 8
    tree_bits = h - hp
    tree_bytes = (tree_bits + 7) // 8
    leaf_bytes = (hp + 7) // 8
    idx_tree = np.uint64(0)
    for i in range(tree_bytes):
        idx_tree = (idx_tree << np.uint64(8)) | np.uint64(digest[md_bytes + i])
    if tree_bits < 64:
        idx_tree &= (np.uint64(1) << np.uint64(tree_bits)) - np.uint64(1)
    idx_leaf = 0
    for i in range(leaf_bytes):
        idx_leaf = (idx_leaf << 8) | np.int64(digest[md_bytes + tree_bytes + i])
    idx_leaf &= (1 << hp) - 1
    bits = 0
    acc = 0
    byte_pos = 0
    for i in range(k):
        while bits < a:
            acc = ((acc << 8) | np.int64(digest[byte_pos])) & 0xFFFFFFFF
            byte_pos += 1
            bits += 8
        bits -= a
        indices[i] = (acc >> bits) & ((1 << a) - 1)
    where[0] = np.int64(idx_tree)
    where[1] = idx_leaf


@njit(cache=True, nogil=True)
def walk_kernel(n, h, d, hp, a, k, m, pk, msg, sig, ctx, steps, messages, where):
    """Verification (as ``verify_kernel``) recording, per layer j, the chain steps in
    ``steps[j]`` and the message node in ``messages[j * n/8:]``; idx_tree, idx_leaf in
    ``where``.  Returns True when the signature is valid."""
    nw = n // 8
    length = 2 * n + 3
    seed = np.empty(nw, dtype=np.uint64)
    root = np.empty(nw, dtype=np.uint64)
    _bytes_to_words(pk, 0, n, seed, 0)
    _bytes_to_words(pk, n, n, root, 0)
    sigw = np.empty(sig.shape[0] // 8, dtype=np.uint64)
    _bytes_to_words(sig, 0, sig.shape[0], sigw, 0)
    indices = np.empty(k, dtype=np.int64)
    message_digest(n, h, hp, a, k, m, pk, msg, sig, ctx, indices, where)
    idx_tree = np.uint64(where[0])
    idx_leaf = where[1]

    th = _make_template(seed, nw, 2 * nw)
    tmp = np.empty(4, dtype=np.uint64)
    buf = np.empty(length * nw + k * nw, dtype=np.uint64)
    node = np.empty(nw, dtype=np.uint64)
    state = np.zeros(25, dtype=np.uint64)
    lane0 = np.uint64(0)
    lane1 = _bswap64(idx_tree)
    tfx = _make_template_xn(seed, nw, nw)
    thx = _make_template_xn(seed, nw, 2 * nw)
    outx = np.empty(25 * WAYS, dtype=np.uint64)
    scratch = np.empty(2 * WAYS, dtype=np.int64)
    digits = np.empty(length, dtype=np.int64)
    order = np.empty(length, dtype=np.int64)
    _set_lane_xn(tfx, nw, lane0)
    _set_lane_xn(tfx, nw + 1, lane1)
    _set_lane_xn(thx, nw, lane0)
    _set_lane_xn(thx, nw + 1, lane1)
    sig_off = nw
    _fors_roots_xn(tfx, thx, outx, nw, a, k, _adrs_pair(FORS_TREE, idx_leaf), indices, sigw,
                   sig_off, buf, scratch)  # fmt: skip
    sig_off += k * (a + 1) * nw
    _hash_t(state, seed, nw, lane0, lane1, _adrs_pair(FORS_ROOTS, idx_leaf), np.uint64(0),
            buf, k * nw, node, 0)  # fmt: skip

    tree = idx_tree
    leaf = idx_leaf
    for layer in range(d):
        if layer > 0:
            leaf = np.int64(tree & np.uint64((1 << hp) - 1))
            tree = tree >> np.uint64(hp)
        for i in range(nw):
            messages[layer * nw + i] = node[i]
        steps[layer] = node_steps(node, 0, n)
        lane0 = _bswap32(layer)
        lane1 = _bswap64(tree)
        _set_layer_tree(th, nw, lane0, lane1)
        _set_lane_xn(tfx, nw, lane0)
        _set_lane_xn(tfx, nw + 1, lane1)
        _wots_digits(node, 0, n, digits)
        _wots_chains_xn(tfx, outx, nw, _adrs_pair(WOTS_HASH, leaf), digits, order, length, sigw,
                        sig_off, buf, scratch)  # fmt: skip
        _hash_t(state, seed, nw, lane0, lane1, _adrs_pair(WOTS_PK, leaf), np.uint64(0),
                buf, length * nw, node, 0)  # fmt: skip
        sig_off += length * nw
        _climb(th, nw, _adrs_pair(TREE, 0), leaf, node, 0, leaf, sigw, sig_off, hp, tmp)
        sig_off += hp * nw

    diff = np.uint64(0)
    for i in range(nw):
        diff |= node[i] ^ root[i]
    return diff == np.uint64(0)
