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
from qprof.verify.nb.keccak_xn import WAYS, keccak_f1600_xn, keccak_f1600_xn_low
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
def absorb_tr_block(s: np.ndarray, pk: bytes, pk_lanes: np.ndarray, block: int) -> None:
    """XOR SHAKE256 input block ``block`` of pk (the last one padded) into way TR_WAY.

    ``pk_lanes`` is pk viewed as little-endian uint64 lanes (ML-DSA public keys are
    32 + 320k bytes, whole lanes): one load per lane instead of eight byte loads.
    """
    full = len(pk) // SHAKE256_RATE
    base = SHAKE256_RATE * block
    lane0 = base // 8
    if block < full:
        for i in range(SHAKE256_RATE // 8):
            s[WAYS * i + TR_WAY] ^= pk_lanes[lane0 + i]
        return
    rem = len(pk) - base
    for i in range(rem // 8):
        s[WAYS * i + TR_WAY] ^= pk_lanes[lane0 + i]
    for j in range(rem & ~7, rem):
        s[WAYS * (j >> 3) + TR_WAY] ^= np.uint64(pk[base + j]) << np.uint64(8 * (j & 7))
    s[WAYS * (rem >> 3) + TR_WAY] ^= SHAKE_PAD << np.uint64(8 * (rem & 7))
    s[WAYS * (SHAKE256_RATE // 8 - 1) + TR_WAY] ^= RATE_END_PAD


# The states and one block's candidates of every way share one uint64 workspace
# ``ws``: the states in ws[:25 * WAYS], the candidates from WS_STAGE on, way-interleaved
# (candidate c of way w at WS_STAGE + c * WAYS + w). LLVM vectorises a loop over the
# ways (8 iterations) only when it needs no run-time check that two arrays do not
# overlap (it declines those checks below 16 iterations); accesses to one array at
# constant distances need none, which is also how ``keccak_f1600_xn`` vectorises.
WS_STAGE = 25 * WAYS
WS_WORDS = WS_STAGE + SAMPLE_SLACK * WAYS
Q_U64 = np.uint64(Q)
REJECT_CARRY = np.uint64((1 << 23) - Q)  # v + this >= 2^23 iff v >= q, for v < 2^23
UWAYS = np.uint64(WAYS)


@njit(cache=True, nogil=True, inline="always")
def stage_block_xn(ws: np.ndarray) -> int:
    """The 56 candidates of the current 168-byte block of every way to the staging
    area, as uint64; returns bit w set when way w has a candidate >= q. A 23-bit v is
    >= q exactly when v + 2^23 - q reaches bit 23, so each way ORs those sums: an add
    and an OR per candidate on every vector ISA (a 64-bit max, which AVX2 and NEON
    lack, made AVX2 slower than a second pass). Written out group by group so that
    every offset is a constant: LLVM emits one vector shift-and-mask per candidate for
    all ways at once (the per-way extraction this replaces cost about half of ExpandA
    on AVX-512)."""
    bits = np.uint64(0)
    for w in range(WAYS):
        w0 = ws[0 * WAYS + w]
        w1 = ws[1 * WAYS + w]
        w2 = ws[2 * WAYS + w]
        v = w0 & COEFF_MASK
        ws[WS_STAGE + 0 * WAYS + w] = v
        over = v + REJECT_CARRY
        v = (w0 >> np.uint64(24)) & COEFF_MASK
        ws[WS_STAGE + 1 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w0 >> np.uint64(48)) | (w1 << np.uint64(16))) & COEFF_MASK
        ws[WS_STAGE + 2 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(8)) & COEFF_MASK
        ws[WS_STAGE + 3 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(32)) & COEFF_MASK
        ws[WS_STAGE + 4 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w1 >> np.uint64(56)) | (w2 << np.uint64(8))) & COEFF_MASK
        ws[WS_STAGE + 5 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(16)) & COEFF_MASK
        ws[WS_STAGE + 6 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(40)) & COEFF_MASK
        ws[WS_STAGE + 7 * WAYS + w] = v
        over |= v + REJECT_CARRY
        w0 = ws[3 * WAYS + w]
        w1 = ws[4 * WAYS + w]
        w2 = ws[5 * WAYS + w]
        v = w0 & COEFF_MASK
        ws[WS_STAGE + 8 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w0 >> np.uint64(24)) & COEFF_MASK
        ws[WS_STAGE + 9 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w0 >> np.uint64(48)) | (w1 << np.uint64(16))) & COEFF_MASK
        ws[WS_STAGE + 10 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(8)) & COEFF_MASK
        ws[WS_STAGE + 11 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(32)) & COEFF_MASK
        ws[WS_STAGE + 12 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w1 >> np.uint64(56)) | (w2 << np.uint64(8))) & COEFF_MASK
        ws[WS_STAGE + 13 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(16)) & COEFF_MASK
        ws[WS_STAGE + 14 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(40)) & COEFF_MASK
        ws[WS_STAGE + 15 * WAYS + w] = v
        over |= v + REJECT_CARRY
        w0 = ws[6 * WAYS + w]
        w1 = ws[7 * WAYS + w]
        w2 = ws[8 * WAYS + w]
        v = w0 & COEFF_MASK
        ws[WS_STAGE + 16 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w0 >> np.uint64(24)) & COEFF_MASK
        ws[WS_STAGE + 17 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w0 >> np.uint64(48)) | (w1 << np.uint64(16))) & COEFF_MASK
        ws[WS_STAGE + 18 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(8)) & COEFF_MASK
        ws[WS_STAGE + 19 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(32)) & COEFF_MASK
        ws[WS_STAGE + 20 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w1 >> np.uint64(56)) | (w2 << np.uint64(8))) & COEFF_MASK
        ws[WS_STAGE + 21 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(16)) & COEFF_MASK
        ws[WS_STAGE + 22 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(40)) & COEFF_MASK
        ws[WS_STAGE + 23 * WAYS + w] = v
        over |= v + REJECT_CARRY
        w0 = ws[9 * WAYS + w]
        w1 = ws[10 * WAYS + w]
        w2 = ws[11 * WAYS + w]
        v = w0 & COEFF_MASK
        ws[WS_STAGE + 24 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w0 >> np.uint64(24)) & COEFF_MASK
        ws[WS_STAGE + 25 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w0 >> np.uint64(48)) | (w1 << np.uint64(16))) & COEFF_MASK
        ws[WS_STAGE + 26 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(8)) & COEFF_MASK
        ws[WS_STAGE + 27 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(32)) & COEFF_MASK
        ws[WS_STAGE + 28 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w1 >> np.uint64(56)) | (w2 << np.uint64(8))) & COEFF_MASK
        ws[WS_STAGE + 29 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(16)) & COEFF_MASK
        ws[WS_STAGE + 30 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(40)) & COEFF_MASK
        ws[WS_STAGE + 31 * WAYS + w] = v
        over |= v + REJECT_CARRY
        w0 = ws[12 * WAYS + w]
        w1 = ws[13 * WAYS + w]
        w2 = ws[14 * WAYS + w]
        v = w0 & COEFF_MASK
        ws[WS_STAGE + 32 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w0 >> np.uint64(24)) & COEFF_MASK
        ws[WS_STAGE + 33 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w0 >> np.uint64(48)) | (w1 << np.uint64(16))) & COEFF_MASK
        ws[WS_STAGE + 34 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(8)) & COEFF_MASK
        ws[WS_STAGE + 35 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(32)) & COEFF_MASK
        ws[WS_STAGE + 36 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w1 >> np.uint64(56)) | (w2 << np.uint64(8))) & COEFF_MASK
        ws[WS_STAGE + 37 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(16)) & COEFF_MASK
        ws[WS_STAGE + 38 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(40)) & COEFF_MASK
        ws[WS_STAGE + 39 * WAYS + w] = v
        over |= v + REJECT_CARRY
        w0 = ws[15 * WAYS + w]
        w1 = ws[16 * WAYS + w]
        w2 = ws[17 * WAYS + w]
        v = w0 & COEFF_MASK
        ws[WS_STAGE + 40 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w0 >> np.uint64(24)) & COEFF_MASK
        ws[WS_STAGE + 41 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w0 >> np.uint64(48)) | (w1 << np.uint64(16))) & COEFF_MASK
        ws[WS_STAGE + 42 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(8)) & COEFF_MASK
        ws[WS_STAGE + 43 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(32)) & COEFF_MASK
        ws[WS_STAGE + 44 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w1 >> np.uint64(56)) | (w2 << np.uint64(8))) & COEFF_MASK
        ws[WS_STAGE + 45 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(16)) & COEFF_MASK
        ws[WS_STAGE + 46 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(40)) & COEFF_MASK
        ws[WS_STAGE + 47 * WAYS + w] = v
        over |= v + REJECT_CARRY
        w0 = ws[18 * WAYS + w]
        w1 = ws[19 * WAYS + w]
        w2 = ws[20 * WAYS + w]
        v = w0 & COEFF_MASK
        ws[WS_STAGE + 48 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w0 >> np.uint64(24)) & COEFF_MASK
        ws[WS_STAGE + 49 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w0 >> np.uint64(48)) | (w1 << np.uint64(16))) & COEFF_MASK
        ws[WS_STAGE + 50 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(8)) & COEFF_MASK
        ws[WS_STAGE + 51 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w1 >> np.uint64(32)) & COEFF_MASK
        ws[WS_STAGE + 52 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = ((w1 >> np.uint64(56)) | (w2 << np.uint64(8))) & COEFF_MASK
        ws[WS_STAGE + 53 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(16)) & COEFF_MASK
        ws[WS_STAGE + 54 * WAYS + w] = v
        over |= v + REJECT_CARRY
        v = (w2 >> np.uint64(40)) & COEFF_MASK
        ws[WS_STAGE + 55 * WAYS + w] = v
        over |= v + REJECT_CARRY
        bits |= ((over >> np.uint64(23)) & ONE) << np.uint64(w)
    return np.int64(bits)


@njit(cache=True, nogil=True, inline="always")
def mac_staged(ws: np.ndarray, w: int, acc: np.ndarray, r: int, zhat: np.ndarray, s: int,
               start: int, count: int) -> None:
    """acc[r, start + c] += candidate c of way w * zhat[s, start + c] for c < count (a
    block without rejections is the next ``count`` coefficients of entry (r, s)).

    Rows are indexed, not sliced: a slice is a new array view whose reference count
    numba updates atomically, and those updates took a fifth of ExpandA when they ran
    per way and block. Unsigned indexes: numba then adds no negative-index
    wrap-around, which would turn the loop into gathers and scatters."""
    src = np.uint64(WS_STAGE) + np.uint64(w)
    base = np.uint64(start)
    ur = np.uint64(r)
    us = np.uint64(s)
    for c in range(count):
        uc = np.uint64(c)
        a = np.int64(np.int32(ws[src + uc * UWAYS]))
        acc[ur, base + uc] += a * np.int64(zhat[us, base + uc])


@njit(cache=True, nogil=True)
def mac_staged_rejecting(ws: np.ndarray, w: int, acc: np.ndarray, r: int, zhat: np.ndarray,
                         s: int, start: int, tmp: np.ndarray, t: int) -> int:
    """The rare block with a rejected candidate (about one in twenty): its candidates
    below q, in order, to row ``t`` of ``tmp``, multiplied in up to coefficient 256;
    returns the number of coefficients entry (r, s) now has."""
    ut = np.uint64(t)
    src = np.uint64(WS_STAGE) + np.uint64(w)
    kept = np.uint64(0)
    for c in range(SAMPLE_SLACK):
        v = ws[src + np.uint64(c) * UWAYS]
        tmp[ut, kept] = np.int32(v)
        kept += np.uint64(v < Q_U64)
    take = min(np.int64(kept), N - start)
    # Unsigned indexes (see ``mac_staged``): this loop is then vector code.
    base = np.uint64(start)
    ur = np.uint64(r)
    us = np.uint64(s)
    for c in range(take):
        uc = np.uint64(c)
        acc[ur, base + uc] += np.int64(tmp[ut, uc]) * np.int64(zhat[us, base + uc])
    return start + take


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
    c_tilde: np.ndarray,
    ball_state: np.ndarray,
    ctx_msg: bytes,
    ctx_len: int,
    mu: np.ndarray,
) -> int:
    """acc[r] = sum over s of A_hat[r][s] * z_hat[s], unreduced int64 products.

    With ``want_tr`` it also computes tr = SHAKE256(pk, 64) into ``tr``, riding in the
    last way of the first batches. Every permutation is followed by one vectorised
    extraction of all ways' candidates (``stage_block_xn``), multiplied into their rows.
    SampleInBall's first permutation (``ball_state``, bit 0 of the result) and a one-block
    mu (``mu``, bit 1) ride in free ways too; docs/NUMBA.md says where.

    ``zhat``: int32[l, 256] (|coeff| < 9q), ``acc``: int64[k, 256] (overwritten),
    ``state``: uint64[WS_WORDS], ``sampled``: int32[WAYS, >= SAMPLE_SLACK] and
    ``counts``: int64[WAYS] scratch, ``tr``: uint8[64]. Sums stay below 7 * q * 9q < 2^53.
    """
    for r in range(k):
        for j in range(N):
            acc[r, j] = 0
    for i in range(25 * WAYS):
        state[i] = np.uint64(0)
    tr_perms = len(pk) // SHAKE256_RATE + 1 if want_tr else 0
    pk_lanes = np.frombuffer(pk, dtype=np.uint64)  # pk is 32 + 320k bytes: whole lanes
    tr_done = 0
    total = k * l
    first = 0
    ball_done = False
    mu_done = False
    mu_fits = want_tr and TR_BYTES + 2 + len(ctx_msg) < SHAKE256_RATE
    # Entry m is (m // l, m % l); m < 64, so a multiply by 2^16 / l rounded up and a
    # shift give m // l exactly, without a division per way and block.
    inv_l = ((1 << 16) + l - 1) // l
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
        # The ways after the entries carry SampleInBall's and mu's first permutation.
        live = ways
        ball_way = -1
        if not ball_done and tr_done >= tr_perms and live < WAYS:
            ball_way = live
            live += 1
            absorb_ball_way(state, c_tilde, ball_way)
        mu_way = -1
        if mu_fits and not mu_done and tr_done >= tr_perms and live < WAYS:
            mu_way = live
            live += 1
            absorb_mu_way(state, tr, ctx_msg, ctx_len, mu_way)
        while True:
            # One permutation of all ways; the last one may be advancing tr.
            tr_step = tr_done < tr_perms and ways < WAYS
            if tr_step:
                absorb_tr_block(state, pk, pk_lanes, tr_done)
            if tr_step or live > WAYS // 2:
                keccak_f1600_xn(state)
            else:
                keccak_f1600_xn_low(state)  # the last batch, mostly
            live = ways
            if ball_way >= 0:
                for i in range(25):
                    ball_state[i] = state[WAYS * i + ball_way]
                ball_way = -1
                ball_done = True
            if mu_way >= 0:
                for i in range(TR_BYTES):
                    lane = state[WAYS * (i >> 3) + mu_way]
                    mu[i] = np.uint8((lane >> np.uint64(8 * (i & 7))) & np.uint64(0xFF))
                mu_way = -1
                mu_done = True
            if tr_step:
                tr_done += 1
                if tr_done == tr_perms:
                    for i in range(TR_BYTES):
                        lane = state[WAYS * (i >> 3) + TR_WAY]
                        tr[i] = np.uint8((lane >> np.uint64(8 * (i & 7))) & np.uint64(0xFF))
            bad = stage_block_xn(state)
            for w in range(ways):
                done = counts[w]
                if done < N:
                    m = first + w
                    r = (m * inv_l) >> 16
                    s = m - r * l
                    if (bad >> w) & 1:
                        counts[w] = mac_staged_rejecting(state, w, acc, r, zhat, s, done,
                                                         sampled, w)  # fmt: skip
                    else:
                        take = min(SAMPLE_SLACK, N - done)
                        mac_staged(state, w, acc, r, zhat, s, done, take)
                        counts[w] = done + take
                    pending -= counts[w] >= N
            if pending == 0:
                break
        first += ways
    return np.int64(ball_done) | (np.int64(mu_done) << 1)


@njit(cache=True, nogil=True, inline="always")
def _xor_byte_way(s: np.ndarray, w: int, pos: int, byte: np.uint64) -> None:
    s[WAYS * (pos >> 3) + w] ^= byte << np.uint64(8 * (pos & 7))


@njit(cache=True, nogil=True)
def absorb_mu_way(s: np.ndarray, tr: np.ndarray, ctx_msg: bytes, ctx_len: int, w: int) -> None:
    """SHAKE256 absorption of tr || 0 || ctx_len || ctx_msg (one block) into way w."""
    for lane in range(25):
        s[WAYS * lane + w] = np.uint64(0)
    for i in range(TR_BYTES):
        _xor_byte_way(s, w, i, np.uint64(tr[i]))
    _xor_byte_way(s, w, TR_BYTES + 1, np.uint64(ctx_len))  # byte TR_BYTES is 0 (pure)
    n = TR_BYTES + 2
    for i in range(len(ctx_msg)):
        _xor_byte_way(s, w, n + i, np.uint64(ctx_msg[i]))
    _xor_byte_way(s, w, n + len(ctx_msg), SHAKE_PAD)
    s[WAYS * (SHAKE256_RATE // 8 - 1) + w] ^= RATE_END_PAD


@njit(cache=True, nogil=True)
def absorb_ball_way(s: np.ndarray, c_tilde: np.ndarray, w: int) -> None:
    """SHAKE256 absorption of c_tilde (at most 64 bytes: one block) into way w."""
    for lane in range(25):
        s[WAYS * lane + w] = np.uint64(0)
    n = len(c_tilde)
    for i in range(n):
        s[WAYS * (i >> 3) + w] ^= np.uint64(c_tilde[i]) << np.uint64(8 * (i & 7))
    s[WAYS * (n >> 3) + w] ^= SHAKE_PAD << np.uint64(8 * (n & 7))
    s[WAYS * (SHAKE256_RATE // 8 - 1) + w] ^= RATE_END_PAD


@njit(cache=True, nogil=True)
def sample_in_ball(
    c_tilde: np.ndarray, tau: int, state: np.ndarray, block: np.ndarray, c: np.ndarray
) -> None:
    """FIPS 204 SampleInBall (Algorithm 29) into int32[256] ``c``.

    ``state``: uint64[25] scratch, ``block``: uint8[136] scratch.
    """
    absorb(state, SHAKE256_RATE, c_tilde)
    sample_in_ball_absorbed(tau, state, block, c)


@njit(cache=True, nogil=True)
def sample_in_ball_absorbed(tau: int, state: np.ndarray, block: np.ndarray, c: np.ndarray) -> None:
    """``sample_in_ball`` from the SHAKE256 sponge ``state`` that has absorbed c_tilde
    (``keccak.absorb``, or the way ``expand_a_times_z`` ran it in)."""
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
