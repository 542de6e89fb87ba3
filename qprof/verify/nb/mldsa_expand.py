"""ML-DSA samplers for the numba verifier: ExpandA fused with A * z, and SampleInBall.

ExpandA (FIPS 204 Algorithm 32) runs one SHAKE128 stream per matrix entry,
RejNTTPoly(rho || s || r). The streams are independent, so they run ``WAYS`` (4 or 8)
at a time on the interleaved permutation of ``keccak_xn``, and each sampled entry is
multiplied into the accumulator straight away: the matrix is never stored. The
first batches leave the last way to tr = SHAKE256(pk), the verifier's longest single
hash.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from qprof.verify.nb.keccak import SHAKE256_RATE, absorb, keccak_f1600
from qprof.verify.nb.keccak_xn import WAYS, keccak_f1600_xn
from qprof.verify.nb.mldsa_poly import N, Q

SHAKE128_RATE_LANES = 21  # 168-byte rate = 7 groups of 3 lanes = 56 candidates
COEFF_MASK = np.uint64(0x7FFFFF)  # CoeffFromThreeBytes drops the top bit of byte 3
SHAKE_PAD = np.uint64(0x1F)
TR_WAY = WAYS - 1  # the way that carries tr = SHAKE256(pk) while it is being absorbed
TR_BYTES = 64
RATE_END_PAD = np.uint64(0x80) << np.uint64(56)
# Unsigned offsets for the candidate stores (uint64 + int would promote to float).
ONE, TWO, THREE, FOUR = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
FIVE, SIX, SEVEN = np.uint64(5), np.uint64(6), np.uint64(7)
# Candidates per SHAKE128 block; also the slack after the 256 coefficients, since a
# block's candidates are stored before the count is known.
SAMPLE_SLACK = 56


@njit(cache=True, nogil=True)
def absorb_seeds_xn(s: np.ndarray, rho: np.ndarray, nonces: np.ndarray, ways: int) -> None:
    """Load rho || nonce (column, row bytes) with SHAKE128 padding into ways 0..ways-1.

    Other ways are left alone (one may be carrying the tr sponge). No permutation.
    """
    for lane in range(25):
        for w in range(ways):
            s[WAYS * lane + w] = np.uint64(0)
    for lane in range(4):
        v = np.uint64(0)
        for b in range(8):
            v |= np.uint64(rho[8 * lane + b]) << np.uint64(8 * b)
        for w in range(ways):
            s[WAYS * lane + w] = v
    for w in range(ways):
        s[WAYS * 4 + w] = np.uint64(nonces[w]) | (SHAKE_PAD << np.uint64(16))
        s[WAYS * (SHAKE128_RATE_LANES - 1) + w] = RATE_END_PAD


@njit(cache=True, nogil=True)
def absorb_tr_block(s: np.ndarray, pk: bytes, block: int) -> None:
    """XOR SHAKE256 input block ``block`` of pk (the last one padded) into way TR_WAY."""
    full = len(pk) // SHAKE256_RATE
    base = SHAKE256_RATE * block
    if block < full:
        for i in range(SHAKE256_RATE // 8):
            v = np.uint64(0)
            for b in range(8):
                v |= np.uint64(pk[base + 8 * i + b]) << np.uint64(8 * b)
            s[WAYS * i + TR_WAY] ^= v
        return
    rem = len(pk) - base
    for j in range(rem):
        s[WAYS * (j >> 3) + TR_WAY] ^= np.uint64(pk[base + j]) << np.uint64(8 * (j & 7))
    s[WAYS * (rem >> 3) + TR_WAY] ^= SHAKE_PAD << np.uint64(8 * (rem & 7))
    s[WAYS * (SHAKE256_RATE // 8 - 1) + TR_WAY] ^= RATE_END_PAD


@njit(cache=True, nogil=True, inline="always")
def _candidates_of_group(s: np.ndarray, w: int, g: int, out: np.ndarray, p: np.uint64) -> None:
    """The 8 candidates of lanes 3g..3g+2 of way ``w`` (24 bytes) to out[p:p + 8]."""
    w0 = s[WAYS * 3 * g + w]
    w1 = s[WAYS * (3 * g + 1) + w]
    w2 = s[WAYS * (3 * g + 2) + w]
    out[p] = np.int32(w0 & COEFF_MASK)
    out[p + ONE] = np.int32((w0 >> np.uint64(24)) & COEFF_MASK)
    out[p + TWO] = np.int32(((w0 >> np.uint64(48)) | (w1 << np.uint64(16))) & COEFF_MASK)
    out[p + THREE] = np.int32((w1 >> np.uint64(8)) & COEFF_MASK)
    out[p + FOUR] = np.int32((w1 >> np.uint64(32)) & COEFF_MASK)
    out[p + FIVE] = np.int32(((w1 >> np.uint64(56)) | (w2 << np.uint64(8))) & COEFF_MASK)
    out[p + SIX] = np.int32((w2 >> np.uint64(16)) & COEFF_MASK)
    out[p + SEVEN] = np.int32((w2 >> np.uint64(40)) & COEFF_MASK)


@njit(cache=True, nogil=True)
def rej_sample_block(s: np.ndarray, w: int, out: np.ndarray, ctr: int) -> int:
    """RejNTTPoly on one 168-byte block of way ``w``; returns the new count.

    All 56 candidates are written to out[ctr:ctr + 56] first (independent stores);
    q / 2^23 > 0.999, so the block is usually accepted whole and the in-place
    compaction of rejected candidates is the rare path. The seven 3-lane groups are
    written out (inlined) rather than looped over: as a loop, LLVM vectorises across
    the groups with gathers, 25% slower on AVX-512 (Zen 5). Indexes are unsigned so
    numba adds no negative-index wrap-around to each store (another third faster).
    (Extracting all ways at once, way-interleaved, measured slower on AVX2: LLVM
    kept that loop scalar.)
    """
    p = np.uint64(ctr)
    _candidates_of_group(s, w, 0, out, p)
    _candidates_of_group(s, w, 1, out, p + np.uint64(8))
    _candidates_of_group(s, w, 2, out, p + np.uint64(16))
    _candidates_of_group(s, w, 3, out, p + np.uint64(24))
    _candidates_of_group(s, w, 4, out, p + np.uint64(32))
    _candidates_of_group(s, w, 5, out, p + np.uint64(40))
    _candidates_of_group(s, w, 6, out, p + np.uint64(48))
    rejected = 0
    for i in range(SAMPLE_SLACK):
        rejected |= out[p + np.uint64(i)] >= Q
    if rejected == 0:
        return ctr + SAMPLE_SLACK
    kept = ctr
    for i in range(SAMPLE_SLACK):
        v = out[ctr + i]
        out[kept] = v  # kept <= ctr + i: never overwrites an unread candidate
        kept += v < Q
    return kept


@njit(cache=True, nogil=True)
def expand_a_times_z(
    rho: np.ndarray,
    k: int,
    l: int,
    zhat: np.ndarray,
    acc: np.ndarray,
    state: np.ndarray,
    sampled: np.ndarray,
    counts: np.ndarray,
    pk: bytes,
    tr: np.ndarray,
    want_tr: bool,
) -> None:
    """acc[r] = sum over s of A_hat[r][s] * z_hat[s], unreduced int64 products.

    With ``want_tr`` it also computes tr = SHAKE256(pk, 64) into ``tr``: the single tr
    stream rides in the last way of the first batches (which then expand one matrix
    entry fewer), so its permutations cost a fraction of a scalar one.

    ``zhat``: int32[l, 256] (|coeff| < 9q), ``acc``: int64[k, 256] (overwritten),
    ``state``: uint64[25 * WAYS], ``sampled``: int32[WAYS, 256 + SAMPLE_SLACK],
    ``counts``: int64[WAYS] scratch, ``tr``: uint8[64]. Sums stay below
    7 * q * 9q < 2^53, inside Montgomery's input range.
    """
    for r in range(k):
        for j in range(N):
            acc[r, j] = 0
    for i in range(25 * WAYS):
        state[i] = np.uint64(0)
    tr_perms = len(pk) // SHAKE256_RATE + 1 if want_tr else 0
    tr_done = 0
    total = k * l
    first = 0
    while first < total or tr_done < tr_perms:
        ways = min(WAYS if tr_done >= tr_perms else TR_WAY, total - first)
        # counts[w] doubles as the nonce until the stream is absorbed.
        for w in range(ways):
            m = first + w
            counts[w] = (m % l) | ((m // l) << 8)
        absorb_seeds_xn(state, rho, counts, ways)
        for w in range(WAYS):
            counts[w] = 0 if w < ways else N
        pending = ways
        while True:
            # One permutation of all ways; the last one may be advancing tr.
            tr_step = tr_done < tr_perms and ways < WAYS
            if tr_step:
                absorb_tr_block(state, pk, tr_done)
            keccak_f1600_xn(state)
            if tr_step:
                tr_done += 1
                if tr_done == tr_perms:
                    for i in range(TR_BYTES):
                        lane = state[WAYS * (i >> 3) + TR_WAY]
                        tr[i] = np.uint8((lane >> np.uint64(8 * (i & 7))) & np.uint64(0xFF))
            for w in range(ways):
                if counts[w] < N:
                    counts[w] = rej_sample_block(state, w, sampled[w], counts[w])
                    pending -= counts[w] >= N
            if pending == 0:
                break
        for w in range(ways):
            m = first + w
            row = acc[m // l]
            zs = zhat[m % l]
            a = sampled[w]
            for j in range(N):
                row[j] += np.int64(a[j]) * np.int64(zs[j])
        first += ways


@njit(cache=True, nogil=True)
def sample_in_ball(
    c_tilde: np.ndarray, tau: int, state: np.ndarray, block: np.ndarray, c: np.ndarray
) -> None:
    """FIPS 204 SampleInBall (Algorithm 29) into int32[256] ``c``.

    ``state``: uint64[25] scratch, ``block``: uint8[136] scratch.
    """
    absorb(state, SHAKE256_RATE, c_tilde)
    _copy_block(state, block)
    signs = np.uint64(0)
    for b in range(8):
        signs |= np.uint64(block[b]) << np.uint64(8 * b)
    pos = 8
    for j in range(N):
        c[j] = 0
    for i in range(N - tau, N):
        while True:
            if pos == SHAKE256_RATE:
                keccak_f1600(state)
                _copy_block(state, block)
                pos = 0
            j = np.int64(block[pos])
            pos += 1
            if j <= i:
                break
        c[i] = c[j]
        c[j] = 1 - 2 * np.int64(signs & np.uint64(1))
        signs >>= np.uint64(1)


@njit(cache=True, nogil=True)
def _copy_block(state: np.ndarray, block: np.ndarray) -> None:
    for i in range(SHAKE256_RATE // 8):
        v = state[i]
        for b in range(8):
            block[8 * i + b] = np.uint8((v >> np.uint64(8 * b)) & np.uint64(0xFF))
