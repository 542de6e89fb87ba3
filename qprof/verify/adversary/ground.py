"""Valid SLH-DSA signatures whose verification walks long chains: the key owner grinds.

A signature's chain steps depend only on its hypertree address (and the key), and the
upper layers are shared by many addresses, so the search goes top down: greedily pick
the trees whose roots make the layer above walk most, grind opt_rand until H_msg lands
under one of them, then finish the lower layers, dropping a hit once it cannot catch up
with the best (``CATCH_UP_SD``). The best hits are signed by liboqs with their opt_rand
(:mod:`qprof.verify.adversary.oqs_rng`): real signatures. The steps: docs/ADVERSARY.md.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import numpy as np

from qprof.verify.adversary.keys import SlhSecret, message_prime, one_block_template, words
from qprof.verify.adversary.oqs_rng import sign_with_opt_rand
from qprof.verify.slhdsa_calls import nb_module, params_of, random_layer_steps

LANDING_BITS = 18  # landing may need about 2^18 tries a hit (0.1 s)
LAND_CHUNK = 1 << 16  # tries per landing kernel call (deadline checks in between)
CATCH_UP_SD = 1.5
KEEP_LAST = 16  # prefixes kept at the last greedy level
KEEP_MID = 4  # and at the levels between the first and the last
MAX_FIXED = 2  # 3 (256s: 24 bits, beam 4 x 16) measured no better: landing took the time


@dataclass(frozen=True)
class GroundCandidate:
    """An address the key owner can sign at, and the chain steps its signature walks."""

    opt_rand: bytes
    address: int
    layer_steps: tuple[int, ...]  # layer 0 first

    @property
    def steps(self) -> int:
        return sum(self.layer_steps)


@dataclass
class GrindStats:
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    trees: int = 0  # XMSS roots computed
    fors_keys: int = 0  # FORS public keys computed
    landing_tries: int = 0
    hits: int = 0
    complete: int = 0  # hits evaluated down to layer 0
    fixed_layers: int = 0
    best_steps: list[tuple[float, int]] = field(default_factory=list)  # (cpu s, best so far)


class ValidGrinder:
    """Searches the addresses of one key for the costliest valid signatures."""

    def __init__(self, secret: SlhSecret, message: bytes, context: bytes = b"",
                 seed: int | None = None) -> None:
        self.secret = secret
        self.p = params_of(secret.suite)
        self.message = message
        self.context = context
        spread = random_layer_steps(self.p.n)
        self.mean, self.sd = spread.mean, spread.sd
        self._rng = random.Random(seed)
        self._salt = self._rng.randbytes(self.p.n)
        n = self.p.n
        mp = message_prime(message, context)
        self._prf_tmpl = one_block_template(secret.sk_prf + bytes(8)
                                            + self._salt[8:] + mp)
        self._hmsg_tmpl = one_block_template(bytes(n) + secret.pk_seed + secret.pk_root + mp)
        self._seed_w = words(secret.pk_seed)
        self._sk_w = words(secret.sk_seed)
        self._roots: dict[tuple[int, int], int] = {}  # (layer, tree) -> steps its root makes
        self._counter = self._rng.randrange(1 << 40)
        self.stats = GrindStats()

    def opt_rand(self, counter: int) -> bytes:
        return counter.to_bytes(8, "little") + self._salt[8:]

    # -- costs -------------------------------------------------------------------------
    def root_steps(self, layer: int, tree: int) -> int:
        """Chain steps layer + 1 walks for the root of tree ``tree`` of ``layer``."""
        xmss_root = nb_module("slhdsa_grind").xmss_root
        node_steps = nb_module("slhdsa_walk").node_steps
        key = (layer, tree)
        if key not in self._roots:
            out = np.empty(self.p.n // 8, dtype=np.uint64)
            xmss_root(self._seed_w, self._sk_w, self.p.n, self.p.hp, layer, np.uint64(tree), out)
            self._roots[key] = int(node_steps(out, 0, self.p.n))
            self.stats.trees += 1
        return self._roots[key]

    def fors_steps(self, address: int) -> int:
        fors_pk = nb_module("slhdsa_grind").fors_pk
        node_steps = nb_module("slhdsa_walk").node_steps
        p = self.p
        out = np.empty(p.n // 8, dtype=np.uint64)
        fors_pk(self._seed_w, self._sk_w, p.n, p.a, p.k, np.uint64(address >> p.hp),
                address & ((1 << p.hp) - 1), out)  # fmt: skip
        self.stats.fors_keys += 1
        return int(node_steps(out, 0, p.n))

    def layer_steps(self, layer: int, address: int) -> int:
        """Steps of ``layer`` at ``address`` (layer 0: FORS; else a tree root)."""
        if layer == 0:
            return self.fors_steps(address)
        return self.root_steps(layer - 1, address >> (self.p.hp * layer))

    # -- search --------------------------------------------------------------------------
    def _best_of(self, layer: int, prefix: int, stop: float) -> list[tuple[int, int]]:
        """(steps, prefix << h' | x) for the extensions x tried before ``stop``, best
        first: the roots of layer - 1's trees under ``prefix``."""
        hp = self.p.hp
        options = list(range(1 << hp))
        self._rng.shuffle(options)
        scored = []
        for x in options:
            candidate = (prefix << hp) | x
            scored.append((self.root_steps(layer - 1, candidate), candidate))
            if time.monotonic() > stop:
                break
        scored.sort(reverse=True)
        return scored

    def _greedy(self, fixed: int, deadline: float) -> dict[int, list[int]]:
        """The prefixes (the top ``fixed`` layers' choice) landing may hit, with the
        steps of those layers.  A beam: the best choice at the first level, the best
        ``KEEP_MID`` extensions of those at middle levels, the best ``KEEP_LAST`` at the
        last (fewer landing tries a hit, for a little less per layer)."""
        p = self.p
        beam: dict[int, list[int]] = {0: []}
        for i in range(fixed):
            layer = p.d - 1 - i  # the layer whose message this choice sets
            stop = time.monotonic() + (deadline - time.monotonic()) / (fixed - i)
            share = stop - time.monotonic()
            scored: list[tuple[int, int, list[int]]] = []
            for j, (prefix, top) in enumerate(beam.items()):
                part = time.monotonic() + share / len(beam) if j < len(beam) - 1 else stop
                scored += [(s, c, top) for s, c in self._best_of(layer, prefix, part)]
            scored.sort(key=lambda t: -t[0])
            keep = 1 if i == 0 else KEEP_MID if i < fixed - 1 else KEEP_LAST
            keep = max(1, min(keep, len(scored) // 16))
            beam = {c: [s, *top] for s, c, top in scored[:keep]}
        return beam

    @staticmethod
    def fixed_layers(hp: int, d: int) -> int:
        """The most top layers whose beam landing reaches in <= 2^LANDING_BITS tries."""
        fixed = 1
        while fixed + 1 < min(d, MAX_FIXED + 1):
            prefixes = KEEP_LAST * KEEP_MID ** max(0, fixed - 1)  # with one more level
            if hp * (fixed + 1) - prefixes.bit_length() + 1 > LANDING_BITS:
                break
            fixed += 1
        return fixed

    def _land(self, shift: int, allowed: np.ndarray, deadline: float) -> list[tuple[int, int]]:
        land_kernel = nb_module("slhdsa_grind").land_kernel
        p = self.p
        hits = np.empty(16, dtype=np.int64)
        trees = np.empty(16, dtype=np.uint64)
        leaves = np.empty(16, dtype=np.uint64)
        while time.monotonic() < deadline:
            found = land_kernel(self._prf_tmpl, self._hmsg_tmpl, p.n // 8, p.h, p.hp, p.a, p.k,
                                self._counter, LAND_CHUNK, shift, allowed, hits, trees,
                                leaves)  # fmt: skip
            self._counter += LAND_CHUNK
            self.stats.landing_tries += LAND_CHUNK
            if found:
                return [(int(hits[i]), (int(trees[i]) << p.hp) | int(leaves[i]))
                        for i in range(found)]
        return []

    def _behind(self, lead: float, remaining: int, found: list[GroundCandidate]) -> bool:
        if not found:
            return lead < 0
        best_lead = found[-1].steps - self.p.d * self.mean  # the last one kept
        return lead + CATCH_UP_SD * self.sd * remaining ** 0.5 < best_lead

    def grind(self, seconds: float, keep: int = 4) -> list[GroundCandidate]:
        """The ``keep`` costliest candidates found in ``seconds`` (best first)."""
        p = self.p
        start = time.monotonic()
        cpu0 = time.thread_time()
        deadline = start + seconds
        fixed = self.fixed_layers(p.hp, p.d)
        self.stats.fixed_layers = fixed
        prefixes = self._greedy(fixed, start + 0.35 * seconds)
        shift = p.h - p.hp * fixed
        allowed = np.zeros(1 << (p.hp * fixed), dtype=np.uint8)
        allowed[list(prefixes)] = 1
        found: list[GroundCandidate] = []
        while time.monotonic() < deadline:
            for counter, address in self._land(shift, allowed, deadline):
                self.stats.hits += 1
                top = prefixes[address >> shift]
                steps = list(top)
                lead = sum(s - self.mean for s in top)
                for layer in range(p.d - 1 - fixed, -1, -1):
                    if time.monotonic() > deadline:
                        break
                    s = self.layer_steps(layer, address)
                    steps.insert(0, s)
                    lead += s - self.mean
                    if layer > 0 and self._behind(lead, layer, found):
                        break
                if len(steps) == p.d:
                    self.stats.complete += 1
                    found.append(GroundCandidate(self.opt_rand(counter), address, tuple(steps)))
                    found.sort(key=lambda c: -c.steps)
                    del found[keep:]
                    self.stats.best_steps.append((time.thread_time() - cpu0, found[0].steps))
        self.stats.seconds = time.monotonic() - start
        self.stats.cpu_seconds = time.thread_time() - cpu0
        return found


def sign_candidate(secret: SlhSecret, message: bytes, context: bytes,
                   candidate: GroundCandidate) -> bytes:
    """liboqs's signature at the candidate's address (its opt_rand as the randomness)."""
    return sign_with_opt_rand(secret.suite, secret.secret_key, message, context,
                              candidate.opt_rand)


