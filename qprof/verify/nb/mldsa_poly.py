"""ML-DSA (FIPS 204) polynomial arithmetic for the numba verifier.

Coefficients are int32, arithmetic int64 so LLVM can use 32x32->64-bit vector multiplies.
Reduction follows FIPS 204 Appendix A: Montgomery multiplication with R = 2^32 and the
reference implementation's lazy bounds in the NTT. The forward NTT is the plain NTT,
pointwise products carry R^-1, and ``invntt_tomont`` multiplies by R / 256, so
``invntt(pointwise(ntt(a), ntt(b)))`` is exactly the negacyclic product a * b.
"""

from __future__ import annotations

import numpy as np
from numba import njit

Q = 8380417
N = 256
D = 13
QINV = 58728449  # q^-1 mod 2^32
# Forward-NTT twiddles: zeta^bitrev8(i) * 2^32 mod q, centred in (-q/2, q/2].
_ZETA = 1753


def _zetas() -> np.ndarray:
    table = np.empty(N, dtype=np.int64)
    for i in range(N):
        brv = int(f"{i:08b}"[::-1], 2)
        z = pow(_ZETA, brv, Q) * pow(2, 32, Q) % Q
        table[i] = z - Q if z > Q // 2 else z
    return table


ZETAS = _zetas()
# R^2 / 256 mod q: the final scaling of the inverse NTT (R / 256 after one reduction).
INVNTT_F = pow(2, 64, Q) * pow(256, -1, Q) % Q
# Unsigned index offsets (uint64 + int would promote to float).
_U1, _U2, _U3, _U4 = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
_U8 = np.uint64(8)
_MASK18 = np.uint64(0x3FFFF)


@njit(cache=True, nogil=True, inline="always")
def montgomery_reduce(a: np.int64) -> np.int64:
    """a * 2^-32 mod q for |a| < 2^31 * q; result in (-q, q)."""
    t = np.int32(np.int64(np.int32(a)) * QINV)
    return (a - np.int64(t) * Q) >> 32


@njit(cache=True, nogil=True, inline="always")
def reduce32(a: np.int64) -> np.int64:
    """Representative of a mod q in [-6283009, 6283007] for a < 2^31 - 2^22."""
    t = (a + (1 << 22)) >> 23
    return a - t * Q


@njit(cache=True, nogil=True, inline="always")
def mont_mul32(a: np.int32, z: np.int32, zq: np.int32) -> np.int32:
    """montgomery_reduce(a * z), bit-identical, on int32 lanes (zq = z * QINV mod 2^32).

    The high halves of a * z and of (a * zq mod 2^32) * q differ by exactly the reduced
    value (their low halves are equal), so LLVM keeps 32-bit lanes, 16 per zmm with
    even/odd vpmuldq, where int64 lanes halve the width."""
    hi = np.int32((np.int64(a) * np.int64(z)) >> 32)
    lo = np.int32(np.int64(a) * np.int64(zq))
    return hi - np.int32((np.int64(lo) * Q) >> 32)


@njit(cache=True, nogil=True, inline="always")
def caddq(a: np.int64) -> np.int64:
    """Add q if a is negative (maps (-q, q) to [0, q))."""
    return a + ((a >> 31) & Q)


def _stage_twiddles() -> tuple[np.ndarray, np.ndarray]:
    """Per-stage twiddle rows of the constant-geometry transforms (see ``ntt``).

    Forward stage s (half-length 128 >> s): position p < 128 holds block p mod 2^s,
    whose zeta is ZETAS[2^s + block]. Inverse stage t (half-length 2^t): pair p holds
    block p mod 2^(7-t), whose zeta is ZETAS[2^(8-t) - 1 - block] (the reference's
    decreasing k). int32 (|zeta| < q/2): LLVM then multiplies with 32x32->64-bit
    vector products (pmuldq), which AVX2 has; int64 twiddles need a 64-bit multiply
    that AVX2 lacks (the NTT took 1.6x as long compiled for AVX2).
    """
    fwd = np.empty((8, N // 2), dtype=np.int32)
    inv = np.empty((8, N // 2), dtype=np.int32)
    for stage in range(8):
        for p in range(N // 2):
            fwd[stage, p] = ZETAS[(1 << stage) + (p & ((1 << stage) - 1))]
            inv[stage, p] = ZETAS[(1 << (8 - stage)) - 1 - (p & ((1 << (7 - stage)) - 1))]
    return fwd, inv


def _times_qinv(table: np.ndarray) -> np.ndarray:
    """Every entry times QINV mod 2^32, as int32: ``mont_mul32``'s zq."""
    return ((table.astype(np.int64) * QINV) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


NTT_TWIDDLES, INVNTT_TWIDDLES = _stage_twiddles()
NTT_TWIDDLES_QINV = _times_qinv(NTT_TWIDDLES)
INVNTT_TWIDDLES_QINV = _times_qinv(INVNTT_TWIDDLES)
INVNTT_F_QINV = int(_times_qinv(np.array([INVNTT_F]))[0])


@njit(cache=True, nogil=True, inline="always")
def _ntt_stage(src: np.ndarray, dst: np.ndarray, stage: int) -> None:
    for p in range(N // 2):
        t = mont_mul32(src[p + N // 2], NTT_TWIDDLES[stage, p], NTT_TWIDDLES_QINV[stage, p])
        x = src[p]
        dst[2 * p] = x + t
        dst[2 * p + 1] = x - t


@njit(cache=True, nogil=True)
def ntt(a: np.ndarray, tmp: np.ndarray) -> None:
    """Forward NTT of int32[256] ``a`` in place (``tmp``: int32[256] scratch).

    |a| < q in, |a| < 9q out: the reference's Cooley-Tukey butterflies with the same
    zetas and lazy sums, so the output is the same integers, in the same order.
    Constant geometry: every stage stores coefficient index i at position
    rotl8(i, stage), so the butterfly partners are always p and p + 128, and writing
    the results to 2p and 2p + 1 of the other buffer is the next stage's order. Every
    stage is then one contiguous loop that LLVM vectorises; the in-place form's
    8- and 16-coefficient levels became gathers and scatters on AVX-512 (3x slower).
    """
    for stage in range(0, 8, 2):
        _ntt_stage(a, tmp, stage)
        _ntt_stage(tmp, a, stage + 1)


@njit(cache=True, nogil=True, inline="always")
def _invntt_stage(src: np.ndarray, dst: np.ndarray, stage: int) -> None:
    # The reference multiplies (t - u) by -zetas[k]; zetas[k] * (u - t) is the same.
    # |t|, |u|, |u - t| < 256q < 2^31 (the reference's int32 bounds): int32 lanes are exact.
    for p in range(N // 2):
        t = src[2 * p]
        u = src[2 * p + 1]
        dst[p] = t + u
        diff = np.int32(u - t)
        dst[p + N // 2] = mont_mul32(diff, INVNTT_TWIDDLES[stage, p],
                                     INVNTT_TWIDDLES_QINV[stage, p])  # fmt: skip


@njit(cache=True, nogil=True)
def invntt_tomont(a: np.ndarray, tmp: np.ndarray) -> None:
    """Inverse NTT of int32[256] ``a`` in place, times R (``tmp``: int32[256] scratch).

    |a| < q in, |a| < q out; the reference's Gentleman-Sande butterflies in the
    constant-geometry order of ``ntt`` run backwards (pairs 2p, 2p + 1 in, p and
    p + 128 out), then the scaling by R^2 / 256.
    """
    invntt_stages(a, tmp)
    for j in range(N):
        a[j] = mont_mul32(a[j], INVNTT_F, INVNTT_F_QINV)


@njit(cache=True, nogil=True)
def invntt_stages(a: np.ndarray, tmp: np.ndarray) -> None:
    """``invntt_tomont`` without the final scaling by R^2 / 256 (a caller that makes
    another pass over the coefficients does that multiplication there)."""
    for stage in range(0, 8, 2):
        _invntt_stage(a, tmp, stage)
        _invntt_stage(tmp, a, stage + 1)


@njit(cache=True, nogil=True)
def decode_t1_shifted(pk: np.ndarray, offset: int, out: np.ndarray) -> None:
    """SimpleBitUnpack(10 bits) of the t1 polynomial at byte ``offset`` of pk, times 2^d
    (FIPS 204 pkDecode).

    Four coefficients per five bytes with constant shifts; indexes are unsigned, since
    numba's wrap-around of a negative signed index keeps LLVM from vectorising (with
    them this loop is vector code, about 4x the scalar one on AVX-512)."""
    base = np.uint64(offset)
    for i in range(N // 4):
        p = base + np.uint64(5 * i)
        b0 = np.int32(pk[p])
        b1 = np.int32(pk[p + _U1])
        b2 = np.int32(pk[p + _U2])
        b3 = np.int32(pk[p + _U3])
        b4 = np.int32(pk[p + _U4])
        o = np.uint64(4 * i)
        out[o] = ((b0 | (b1 << 8)) & 0x3FF) << D
        out[o + _U1] = (((b1 >> 2) | (b2 << 6)) & 0x3FF) << D
        out[o + _U2] = (((b2 >> 4) | (b3 << 4)) & 0x3FF) << D
        out[o + _U3] = (((b3 >> 6) | (b4 << 2)) & 0x3FF) << D


@njit(cache=True, nogil=True)
def decode_z_checked(
    sig: np.ndarray, offset: int, gamma1_bits: int, bound: int, out: np.ndarray
) -> bool:
    """BitUnpack(gamma1 - 1, gamma1) of one z polynomial; False if some |z_i| >= bound.

    ``bound`` is gamma1 - beta (FIPS 204 Algorithm 8, ||z||_inf check). Unsigned
    indexes, as in ``decode_t1_shifted``, so that LLVM vectorises.
    """
    base = np.uint64(offset)
    if gamma1_bits == 17:
        # 18 bits per coefficient: 4 coefficients per 9 bytes, the first eight bytes
        # as one 64-bit word (LLVM merges the byte loads).
        gamma1 = np.int64(1) << 17
        worst = np.int64(0)
        for i in range(N // 4):
            p = base + np.uint64(9 * i)
            x = np.uint64(0)
            for b in range(8):
                x |= np.uint64(sig[p + np.uint64(b)]) << np.uint64(8 * b)
            b8 = np.uint64(sig[p + _U8])
            v0 = gamma1 - np.int64(x & _MASK18)
            v1 = gamma1 - np.int64((x >> np.uint64(18)) & _MASK18)
            v2 = gamma1 - np.int64((x >> np.uint64(36)) & _MASK18)
            v3 = gamma1 - np.int64(((x >> np.uint64(54)) | (b8 << np.uint64(10))) & _MASK18)
            o = np.uint64(4 * i)
            out[o] = v0
            out[o + _U1] = v1
            out[o + _U2] = v2
            out[o + _U3] = v3
            worst = max(worst, abs(v0), abs(v1), abs(v2), abs(v3))
        return worst < bound
    # 20 bits per coefficient: 2 coefficients per 5 bytes, on int32 lanes (16 per zmm).
    gamma1_32 = np.int32(1 << gamma1_bits)
    worst_32 = np.int32(0)
    for i in range(N // 2):
        p = base + np.uint64(5 * i)
        b0 = np.int32(sig[p])
        b1 = np.int32(sig[p + _U1])
        b2 = np.int32(sig[p + _U2])
        b3 = np.int32(sig[p + _U3])
        b4 = np.int32(sig[p + _U4])
        v0 = np.int32(gamma1_32 - np.int32((b0 | (b1 << 8) | (b2 << 16)) & 0xFFFFF))
        v1 = np.int32(gamma1_32 - np.int32(((b2 >> 4) | (b3 << 4) | (b4 << 12)) & 0xFFFFF))
        o = np.uint64(2 * i)
        out[o] = v0
        out[o + _U1] = v1
        worst_32 = max(worst_32, abs(v0), abs(v1))
    return worst_32 < bound


@njit(cache=True, nogil=True)
def hints_valid(sig: np.ndarray, offset: int, k: int, omega: int) -> bool:
    """The checks of FIPS 204 HintBitUnpack (Algorithm 21) on the encoded hint y.

    Per-polynomial end counts must be non-decreasing and <= omega, indices strictly
    increasing within each polynomial, and the unused index bytes zero.
    """
    index = 0
    for i in range(k):
        end = np.int64(sig[offset + omega + i])
        if end < index or end > omega:
            return False
        first = index
        while index < end:
            if index > first and sig[offset + index - 1] >= sig[offset + index]:
                return False
            index += 1
    for i in range(index, omega):  # noqa: SIM110 - numba has no all() over generators
        if sig[offset + i] != 0:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def highbits(a: np.int64, gamma2: int) -> np.int64:
    """HighBits of a in [0, q) (FIPS 204 Decompose, r1 part), division-free."""
    a1 = (a + 127) >> 7
    if gamma2 == (Q - 1) // 32:
        a1 = (a1 * 1025 + (1 << 21)) >> 22
        a1 &= 15
    else:
        a1 = (a1 * 11275 + (1 << 23)) >> 24
        a1 ^= ((43 - a1) >> 31) & a1
    return a1


@njit(cache=True, nogil=True)
def use_hint(a: np.int64, gamma2: int) -> np.int64:
    """FIPS 204 UseHint(1, a) for a in [0, q)."""
    a1 = highbits(a, gamma2)
    a0 = a - a1 * 2 * gamma2
    a0 -= (((Q - 1) // 2 - a0) >> 31) & Q
    if gamma2 == (Q - 1) // 32:
        if a0 > 0:
            return (a1 + 1) & 15
        return (a1 - 1) & 15
    if a0 > 0:
        return 0 if a1 == 43 else a1 + 1
    return 43 if a1 == 0 else a1 - 1


@njit(cache=True, nogil=True)
def w1_encode(w1: np.ndarray, gamma2: int, out: np.ndarray, offset: int) -> None:
    """SimpleBitPack of one w1 polynomial (4 bits for gamma2 = (q-1)/32, else 6).

    Unsigned output indexes (see ``decode_t1_shifted``): the 4-bit loop is vector code."""
    base = np.uint64(offset)
    if gamma2 == (Q - 1) // 32:
        for i in range(N // 2):
            out[base + np.uint64(i)] = np.uint8(
                np.uint32(w1[2 * i]) | (np.uint32(w1[2 * i + 1]) << np.uint32(4))
            )
    else:
        for i in range(N // 4):
            a0 = np.uint32(w1[4 * i])
            a1 = np.uint32(w1[4 * i + 1])
            a2 = np.uint32(w1[4 * i + 2])
            a3 = np.uint32(w1[4 * i + 3])
            o = base + np.uint64(3 * i)
            out[o] = np.uint8((a0 | (a1 << np.uint32(6))) & np.uint32(0xFF))
            out[o + _U1] = np.uint8(((a1 >> np.uint32(2)) | (a2 << np.uint32(4))) & np.uint32(0xFF))
            out[o + _U2] = np.uint8(((a2 >> np.uint32(4)) | (a3 << np.uint32(2))) & np.uint32(0xFF))
