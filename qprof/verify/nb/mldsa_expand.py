"""ML-DSA samplers for the numba verifier: ExpandA fused with A * z, and SampleInBall.

ExpandA (FIPS 204 Algorithm 32) runs one SHAKE128 stream per matrix entry,
RejNTTPoly(rho || s || r). The streams are independent, so they run four at a time
on the interleaved permutation of ``keccak4``, and each sampled entry is
multiplied into the accumulator straight away: the matrix is never stored. The
first batches leave way 3 to tr = SHAKE256(pk), the verifier's longest single hash.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from qprof.verify.nb.keccak import SHAKE256_RATE, absorb, keccak_f1600
from qprof.verify.nb.keccak4 import keccak_f1600_x4
from qprof.verify.nb.mldsa_poly import N, Q

SHAKE128_RATE_LANES = 21  # 168-byte rate = 7 groups of 3 lanes = 56 candidates
COEFF_MASK = np.uint64(0x7FFFFF)  # CoeffFromThreeBytes drops the top bit of byte 3
SHAKE_PAD = np.uint64(0x1F)
TR_WAY = 3  # the way that carries tr = SHAKE256(pk) while it is being absorbed
TR_BYTES = 64
RATE_END_PAD = np.uint64(0x80) << np.uint64(56)
# Candidates per SHAKE128 block; also the slack after the 256 coefficients, since a
# block's candidates are stored before the count is known.
SAMPLE_SLACK = 56


@njit(cache=True, nogil=True)
def absorb_seeds_x4(s: np.ndarray, rho: np.ndarray, nonces: np.ndarray, ways: int) -> None:
    """Load rho || nonce (column, row bytes) with SHAKE128 padding into ways 0..ways-1.

    Other ways are left alone (one may be carrying the tr sponge). No permutation.
    """
    for lane in range(25):
        for w in range(ways):
            s[4 * lane + w] = np.uint64(0)
    for lane in range(4):
        v = np.uint64(0)
        for b in range(8):
            v |= np.uint64(rho[8 * lane + b]) << np.uint64(8 * b)
        for w in range(ways):
            s[4 * lane + w] = v
    for w in range(ways):
        s[16 + w] = np.uint64(nonces[w]) | (SHAKE_PAD << np.uint64(16))
        s[80 + w] = RATE_END_PAD


@njit(cache=True, nogil=True)
def absorb_tr_block(s: np.ndarray, pk: bytes, block: int) -> None:
    """XOR SHAKE256 input block ``block`` of pk (the last one padded) into way 3."""
    full = len(pk) // SHAKE256_RATE
    base = SHAKE256_RATE * block
    if block < full:
        for i in range(SHAKE256_RATE // 8):
            v = np.uint64(0)
            for b in range(8):
                v |= np.uint64(pk[base + 8 * i + b]) << np.uint64(8 * b)
            s[4 * i + TR_WAY] ^= v
        return
    rem = len(pk) - base
    for j in range(rem):
        s[4 * (j >> 3) + TR_WAY] ^= np.uint64(pk[base + j]) << np.uint64(8 * (j & 7))
    s[4 * (rem >> 3) + TR_WAY] ^= SHAKE_PAD << np.uint64(8 * (rem & 7))
    s[4 * (SHAKE256_RATE // 8 - 1) + TR_WAY] ^= RATE_END_PAD


@njit(cache=True, nogil=True)
def rej_sample_block(s: np.ndarray, w: int, out: np.ndarray, ctr: int) -> int:
    """RejNTTPoly on one 168-byte block of way ``w``; returns the new count.

    All 56 candidates are written to out[ctr:ctr + 56] first (independent stores);
    q / 2^23 > 0.999, so the block is usually accepted whole and the in-place
    compaction of rejected candidates is the rare path. (Extracting all four ways
    at once, way-interleaved, measured slower: LLVM keeps that loop scalar.)
    """
    for g in range(SHAKE128_RATE_LANES // 3):
        w0 = s[12 * g + w]
        w1 = s[12 * g + 4 + w]
        w2 = s[12 * g + 8 + w]
        p = ctr + 8 * g
        out[p] = np.int32(w0 & COEFF_MASK)
        out[p + 1] = np.int32((w0 >> np.uint64(24)) & COEFF_MASK)
        out[p + 2] = np.int32(((w0 >> np.uint64(48)) | (w1 << np.uint64(16))) & COEFF_MASK)
        out[p + 3] = np.int32((w1 >> np.uint64(8)) & COEFF_MASK)
        out[p + 4] = np.int32((w1 >> np.uint64(32)) & COEFF_MASK)
        out[p + 5] = np.int32(((w1 >> np.uint64(56)) | (w2 << np.uint64(8))) & COEFF_MASK)
        out[p + 6] = np.int32((w2 >> np.uint64(16)) & COEFF_MASK)
        out[p + 7] = np.int32((w2 >> np.uint64(40)) & COEFF_MASK)
    rejected = 0
    for i in range(SAMPLE_SLACK):
        rejected |= out[ctr + i] >= Q
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
    nonces: np.ndarray,
    pk: bytes,
    tr: np.ndarray,
    want_tr: bool,
) -> None:
    """acc[r] = sum over s of A_hat[r][s] * z_hat[s], unreduced int64 products.

    With ``want_tr`` it also computes tr = SHAKE256(pk, 64) into ``tr``: the single tr
    stream rides in way 3 of the first batches (which then expand three matrix entries
    instead of four), so its permutations cost a quarter of a scalar one.

    ``zhat``: int32[l, 256] (|coeff| < 9q), ``acc``: int64[k, 256] (overwritten),
    ``state``: uint64[100], ``sampled``: int32[4, 256 + SAMPLE_SLACK], ``nonces``:
    int64[4], ``tr``: uint8[64]. Sums stay below 7 * q * 9q < 2^53, inside
    Montgomery's input range.
    """
    for r in range(k):
        for j in range(N):
            acc[r, j] = 0
    for i in range(100):
        state[i] = np.uint64(0)
    tr_perms = len(pk) // SHAKE256_RATE + 1 if want_tr else 0
    tr_done = 0
    total = k * l
    first = 0
    while first < total or tr_done < tr_perms:
        ways = min(4 if tr_done >= tr_perms else TR_WAY, total - first)
        for w in range(ways):
            m = first + w
            nonces[w] = (m % l) | ((m // l) << 8)
        absorb_seeds_x4(state, rho, nonces, ways)
        c0 = 0 if ways > 0 else N
        c1 = 0 if ways > 1 else N
        c2 = 0 if ways > 2 else N
        c3 = 0 if ways > 3 else N
        while True:
            # One permutation of all four ways; way 3 may be advancing tr.
            tr_step = tr_done < tr_perms and ways < 4
            if tr_step:
                absorb_tr_block(state, pk, tr_done)
            keccak_f1600_x4(state)
            if tr_step:
                tr_done += 1
                if tr_done == tr_perms:
                    for i in range(TR_BYTES):
                        lane = state[4 * (i >> 3) + TR_WAY]
                        tr[i] = np.uint8((lane >> np.uint64(8 * (i & 7))) & np.uint64(0xFF))
            if c0 < N:
                c0 = rej_sample_block(state, 0, sampled[0], c0)
            if c1 < N:
                c1 = rej_sample_block(state, 1, sampled[1], c1)
            if c2 < N:
                c2 = rej_sample_block(state, 2, sampled[2], c2)
            if c3 < N:
                c3 = rej_sample_block(state, 3, sampled[3], c3)
            if c0 >= N and c1 >= N and c2 >= N and c3 >= N:
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
