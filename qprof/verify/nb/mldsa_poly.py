"""ML-DSA (FIPS 204) polynomial arithmetic for the numba verifier.

Coefficients are stored as int32, arithmetic runs in int64 so LLVM can use
32x32->64-bit vector multiplies. Reduction follows FIPS 204 Appendix A: Montgomery
multiplication with R = 2^32 (no ``%`` per step), lazy additions in the NTT whose
bounds are the reference implementation's (|a| < q in, < 9q out of the forward NTT;
|a| < q in, < q out of the inverse).

The forward NTT produces the plain NTT (its zetas carry the factor R, which the
Montgomery reduction removes); pointwise Montgomery products then carry R^-1, and
``invntt_tomont`` multiplies by R / 256 so ``invntt(pointwise(ntt(a), ntt(b)))`` is
exactly the negacyclic product a * b.
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
def caddq(a: np.int64) -> np.int64:
    """Add q if a is negative (maps (-q, q) to [0, q))."""
    return a + ((a >> 31) & Q)


@njit(cache=True, nogil=True)
def ntt(a: np.ndarray) -> None:
    """In-place forward NTT of int32[256]; |a| < q in, |a| < 9q out."""
    # Levels with 128..8-coefficient halves: the inner loop is contiguous and
    # vectorises (8 lanes of int32, 32x32->64-bit products).
    k = 0
    length = 128
    while length >= 8:
        for blk in range(N // (2 * length)):
            k += 1
            zeta = ZETAS[k]
            base = blk * 2 * length
            for j in range(base, base + length):
                t = montgomery_reduce(zeta * np.int64(a[j + length]))
                x = np.int64(a[j])
                a[j + length] = x - t
                a[j] = x + t
        length >>= 1
    # The last three levels (halves of 4, 2, 1) stay inside 8-coefficient blocks: done
    # in registers, block by block, instead of as short loops that cannot vectorise.
    for b in range(32):
        z4 = ZETAS[32 + b]
        z2a = ZETAS[64 + 2 * b]
        z2b = ZETAS[65 + 2 * b]
        p = 8 * b
        a0 = np.int64(a[p])
        a1 = np.int64(a[p + 1])
        a2 = np.int64(a[p + 2])
        a3 = np.int64(a[p + 3])
        a4 = np.int64(a[p + 4])
        a5 = np.int64(a[p + 5])
        a6 = np.int64(a[p + 6])
        a7 = np.int64(a[p + 7])
        t = montgomery_reduce(z4 * a4)
        a4 = a0 - t
        a0 = a0 + t
        t = montgomery_reduce(z4 * a5)
        a5 = a1 - t
        a1 = a1 + t
        t = montgomery_reduce(z4 * a6)
        a6 = a2 - t
        a2 = a2 + t
        t = montgomery_reduce(z4 * a7)
        a7 = a3 - t
        a3 = a3 + t
        t = montgomery_reduce(z2a * a2)
        a2 = a0 - t
        a0 = a0 + t
        t = montgomery_reduce(z2a * a3)
        a3 = a1 - t
        a1 = a1 + t
        t = montgomery_reduce(z2b * a6)
        a6 = a4 - t
        a4 = a4 + t
        t = montgomery_reduce(z2b * a7)
        a7 = a5 - t
        a5 = a5 + t
        t = montgomery_reduce(ZETAS[128 + 4 * b] * a1)
        a[p + 1] = a0 - t
        a[p] = a0 + t
        t = montgomery_reduce(ZETAS[129 + 4 * b] * a3)
        a[p + 3] = a2 - t
        a[p + 2] = a2 + t
        t = montgomery_reduce(ZETAS[130 + 4 * b] * a5)
        a[p + 5] = a4 - t
        a[p + 4] = a4 + t
        t = montgomery_reduce(ZETAS[131 + 4 * b] * a7)
        a[p + 7] = a6 - t
        a[p + 6] = a6 + t


@njit(cache=True, nogil=True)
def invntt_tomont(a: np.ndarray) -> None:
    """In-place inverse NTT of int32[256] times R; |a| < q in, |a| < q out."""
    # First three levels (halves of 1, 2, 4) block by block in registers, as in ntt.
    for b in range(32):
        z2a = ZETAS[127 - 2 * b]
        z2b = ZETAS[126 - 2 * b]
        z4 = ZETAS[63 - b]
        p = 8 * b
        t = np.int64(a[p])
        u = np.int64(a[p + 1])
        a0 = t + u
        a1 = montgomery_reduce(ZETAS[255 - 4 * b] * (u - t))
        t = np.int64(a[p + 2])
        u = np.int64(a[p + 3])
        a2 = t + u
        a3 = montgomery_reduce(ZETAS[254 - 4 * b] * (u - t))
        t = np.int64(a[p + 4])
        u = np.int64(a[p + 5])
        a4 = t + u
        a5 = montgomery_reduce(ZETAS[253 - 4 * b] * (u - t))
        t = np.int64(a[p + 6])
        u = np.int64(a[p + 7])
        a6 = t + u
        a7 = montgomery_reduce(ZETAS[252 - 4 * b] * (u - t))
        t = a0
        a0 = t + a2
        a2 = montgomery_reduce(z2a * (a2 - t))
        t = a1
        a1 = t + a3
        a3 = montgomery_reduce(z2a * (a3 - t))
        t = a4
        a4 = t + a6
        a6 = montgomery_reduce(z2b * (a6 - t))
        t = a5
        a5 = t + a7
        a7 = montgomery_reduce(z2b * (a7 - t))
        a[p] = a0 + a4
        a[p + 4] = montgomery_reduce(z4 * (a4 - a0))
        a[p + 1] = a1 + a5
        a[p + 5] = montgomery_reduce(z4 * (a5 - a1))
        a[p + 2] = a2 + a6
        a[p + 6] = montgomery_reduce(z4 * (a6 - a2))
        a[p + 3] = a3 + a7
        a[p + 7] = montgomery_reduce(z4 * (a7 - a3))
    # The reference multiplies (t - u) by -zetas[k]; zetas[k] * (u - t) is the same.
    k = 32
    length = 8
    while length < N:
        for blk in range(N // (2 * length)):
            k -= 1
            zeta = ZETAS[k]
            base = blk * 2 * length
            for j in range(base, base + length):
                t = np.int64(a[j])
                u = np.int64(a[j + length])
                a[j] = t + u
                a[j + length] = montgomery_reduce(zeta * (u - t))
        length <<= 1
    for j in range(N):
        a[j] = montgomery_reduce(INVNTT_F * np.int64(a[j]))


@njit(cache=True, nogil=True)
def decode_t1_shifted(pk: np.ndarray, offset: int, out: np.ndarray) -> None:
    """SimpleBitUnpack(10 bits) of one t1 polynomial, times 2^d (FIPS 204 pkDecode)."""
    for i in range(N // 4):
        p = offset + 5 * i
        b0 = np.int64(pk[p])
        b1 = np.int64(pk[p + 1])
        b2 = np.int64(pk[p + 2])
        b3 = np.int64(pk[p + 3])
        b4 = np.int64(pk[p + 4])
        out[4 * i] = ((b0 | (b1 << 8)) & 0x3FF) << D
        out[4 * i + 1] = (((b1 >> 2) | (b2 << 6)) & 0x3FF) << D
        out[4 * i + 2] = (((b2 >> 4) | (b3 << 4)) & 0x3FF) << D
        out[4 * i + 3] = (((b3 >> 6) | (b4 << 2)) & 0x3FF) << D


@njit(cache=True, nogil=True)
def decode_z_checked(
    sig: np.ndarray, offset: int, gamma1_bits: int, bound: int, out: np.ndarray
) -> bool:
    """BitUnpack(gamma1 - 1, gamma1) of one z polynomial; False if some |z_i| >= bound.

    ``bound`` is gamma1 - beta (FIPS 204 Algorithm 8, ||z||_inf check).
    """
    gamma1 = np.int64(1) << gamma1_bits
    worst = np.int64(0)
    if gamma1_bits == 17:
        # 18 bits per coefficient: 4 coefficients per 9 bytes.
        for i in range(N // 4):
            p = offset + 9 * i
            b0 = np.int64(sig[p])
            b1 = np.int64(sig[p + 1])
            b2 = np.int64(sig[p + 2])
            b3 = np.int64(sig[p + 3])
            b4 = np.int64(sig[p + 4])
            b5 = np.int64(sig[p + 5])
            b6 = np.int64(sig[p + 6])
            b7 = np.int64(sig[p + 7])
            b8 = np.int64(sig[p + 8])
            v0 = gamma1 - ((b0 | (b1 << 8) | (b2 << 16)) & 0x3FFFF)
            v1 = gamma1 - (((b2 >> 2) | (b3 << 6) | (b4 << 14)) & 0x3FFFF)
            v2 = gamma1 - (((b4 >> 4) | (b5 << 4) | (b6 << 12)) & 0x3FFFF)
            v3 = gamma1 - (((b6 >> 6) | (b7 << 2) | (b8 << 10)) & 0x3FFFF)
            out[4 * i] = v0
            out[4 * i + 1] = v1
            out[4 * i + 2] = v2
            out[4 * i + 3] = v3
            worst = max(worst, abs(v0), abs(v1), abs(v2), abs(v3))
    else:
        # 20 bits per coefficient: 2 coefficients per 5 bytes.
        for i in range(N // 2):
            p = offset + 5 * i
            b0 = np.int64(sig[p])
            b1 = np.int64(sig[p + 1])
            b2 = np.int64(sig[p + 2])
            b3 = np.int64(sig[p + 3])
            b4 = np.int64(sig[p + 4])
            v0 = gamma1 - ((b0 | (b1 << 8) | (b2 << 16)) & 0xFFFFF)
            v1 = gamma1 - (((b2 >> 4) | (b3 << 4) | (b4 << 12)) & 0xFFFFF)
            out[2 * i] = v0
            out[2 * i + 1] = v1
            worst = max(worst, abs(v0), abs(v1))
    return worst < bound


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
    """SimpleBitPack of one w1 polynomial (4 bits for gamma2 = (q-1)/32, else 6)."""
    if gamma2 == (Q - 1) // 32:
        for i in range(N // 2):
            out[offset + i] = np.uint8(w1[2 * i] | (w1[2 * i + 1] << 4))
    else:
        for i in range(N // 4):
            a0 = w1[4 * i]
            a1 = w1[4 * i + 1]
            a2 = w1[4 * i + 2]
            a3 = w1[4 * i + 3]
            out[offset + 3 * i] = np.uint8((a0 | (a1 << 6)) & 0xFF)
            out[offset + 3 * i + 1] = np.uint8(((a1 >> 2) | (a2 << 4)) & 0xFF)
            out[offset + 3 * i + 2] = np.uint8(((a2 >> 4) | (a3 << 2)) & 0xFF)
