"""Multi-way interleaved Keccak-f[1600], plain numba: four or eight states at once.

ML-DSA's ExpandA and SLH-DSA's chains and trees are many independent Keccak streams.
Keeping ``WAYS`` states interleaved lane by lane (``s[lane * WAYS + way]``) lets LLVM
vectorise the per-way loop, so ``WAYS`` permutations cost about one scalar permutation:
four ways with AVX2 (NEON on aarch64), eight with AVX-512. ``WAYS`` is fixed at import
from the features numba compiles for. The round body is ``keccak.keccak_p1600``'s.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from qprof.verify.nb.keccak import ROUND_CONSTANTS


def _vector_ways() -> int:
    """8 when numba compiles for AVX-512F (512-bit vectors), else 4."""
    from numba.core import config
    from numba.core.codegen import get_host_cpu_features

    # numba's own rule for the features it compiles for (JITCPUCodegen).
    chosen = config.CPU_FEATURES  # type: ignore[attr-defined]  # set at numba import
    features = chosen if chosen is not None else get_host_cpu_features()
    return 8 if "+avx512f" in features.split(",") else 4


WAYS = _vector_ways()  # states per call; arrays hold 25 * WAYS words

# Shift amounts as uint64 so numba never promotes the rotations to float or int64.
ONE = np.uint64(1)
SIXTYTHREE = np.uint64(63)
R1 = np.uint64(1)
R2 = np.uint64(2)
R3 = np.uint64(3)
R6 = np.uint64(6)
R8 = np.uint64(8)
R9 = np.uint64(9)
R10 = np.uint64(10)
R14 = np.uint64(14)
R15 = np.uint64(15)
R18 = np.uint64(18)
R19 = np.uint64(19)
R20 = np.uint64(20)
R21 = np.uint64(21)
R23 = np.uint64(23)
R25 = np.uint64(25)
R27 = np.uint64(27)
R28 = np.uint64(28)
R36 = np.uint64(36)
R37 = np.uint64(37)
R39 = np.uint64(39)
R41 = np.uint64(41)
R43 = np.uint64(43)
R44 = np.uint64(44)
R45 = np.uint64(45)
R46 = np.uint64(46)
R49 = np.uint64(49)
R50 = np.uint64(50)
R54 = np.uint64(54)
R55 = np.uint64(55)
R56 = np.uint64(56)
R58 = np.uint64(58)
R61 = np.uint64(61)
R62 = np.uint64(62)
R63 = np.uint64(63)


@njit(cache=True, nogil=True)
def keccak_f1600_xn(s: np.ndarray) -> None:
    """Permute ``WAYS`` interleaved states in place; ``s`` is uint64[25 * WAYS]."""
    _permute_ways(s, WAYS)


@njit(cache=True, nogil=True)
def keccak_f1600_xn_low(s: np.ndarray) -> None:
    """``keccak_f1600_xn`` of ways 0 .. WAYS/2 - 1 only (the others are left alone).

    Half-width vectors for a batch with at most WAYS/2 live streams: Intel AVX-512
    cores issue 256-bit operations on three ports and 512-bit ones on two (225 against
    331 ns measured); Zen 4 splits 512-bit operations in two (not measured)."""
    _permute_ways(s, WAYS // 2)


@njit(cache=True, nogil=True, inline="always")
def _permute_ways(s: np.ndarray, ways: int) -> None:
    """The 24 rounds of ways 0 .. ways - 1 (a constant where it is inlined)."""
    for rnd in range(24):
        rc = ROUND_CONSTANTS[rnd]
        # Every way runs the same straight-line code on its own lanes: LLVM vectorises
        # this loop across the ways.
        for w in range(ways):
            a00 = s[0 * WAYS + w]
            a10 = s[1 * WAYS + w]
            a20 = s[2 * WAYS + w]
            a30 = s[3 * WAYS + w]
            a40 = s[4 * WAYS + w]
            a01 = s[5 * WAYS + w]
            a11 = s[6 * WAYS + w]
            a21 = s[7 * WAYS + w]
            a31 = s[8 * WAYS + w]
            a41 = s[9 * WAYS + w]
            a02 = s[10 * WAYS + w]
            a12 = s[11 * WAYS + w]
            a22 = s[12 * WAYS + w]
            a32 = s[13 * WAYS + w]
            a42 = s[14 * WAYS + w]
            a03 = s[15 * WAYS + w]
            a13 = s[16 * WAYS + w]
            a23 = s[17 * WAYS + w]
            a33 = s[18 * WAYS + w]
            a43 = s[19 * WAYS + w]
            a04 = s[20 * WAYS + w]
            a14 = s[21 * WAYS + w]
            a24 = s[22 * WAYS + w]
            a34 = s[23 * WAYS + w]
            a44 = s[24 * WAYS + w]
            c0 = a00 ^ a01 ^ a02 ^ a03 ^ a04
            c1 = a10 ^ a11 ^ a12 ^ a13 ^ a14
            c2 = a20 ^ a21 ^ a22 ^ a23 ^ a24
            c3 = a30 ^ a31 ^ a32 ^ a33 ^ a34
            c4 = a40 ^ a41 ^ a42 ^ a43 ^ a44
            d0 = c4 ^ ((c1 << ONE) | (c1 >> SIXTYTHREE))
            d1 = c0 ^ ((c2 << ONE) | (c2 >> SIXTYTHREE))
            d2 = c1 ^ ((c3 << ONE) | (c3 >> SIXTYTHREE))
            d3 = c2 ^ ((c4 << ONE) | (c4 >> SIXTYTHREE))
            d4 = c3 ^ ((c0 << ONE) | (c0 >> SIXTYTHREE))
            b00 = a00 ^ d0
            t = a01 ^ d0
            b13 = (t << R36) | (t >> R28)
            t = a02 ^ d0
            b21 = (t << R3) | (t >> R61)
            t = a03 ^ d0
            b34 = (t << R41) | (t >> R23)
            t = a04 ^ d0
            b42 = (t << R18) | (t >> R46)
            t = a10 ^ d1
            b02 = (t << R1) | (t >> R63)
            t = a11 ^ d1
            b10 = (t << R44) | (t >> R20)
            t = a12 ^ d1
            b23 = (t << R10) | (t >> R54)
            t = a13 ^ d1
            b31 = (t << R45) | (t >> R19)
            t = a14 ^ d1
            b44 = (t << R2) | (t >> R62)
            t = a20 ^ d2
            b04 = (t << R62) | (t >> R2)
            t = a21 ^ d2
            b12 = (t << R6) | (t >> R58)
            t = a22 ^ d2
            b20 = (t << R43) | (t >> R21)
            t = a23 ^ d2
            b33 = (t << R15) | (t >> R49)
            t = a24 ^ d2
            b41 = (t << R61) | (t >> R3)
            t = a30 ^ d3
            b01 = (t << R28) | (t >> R36)
            t = a31 ^ d3
            b14 = (t << R55) | (t >> R9)
            t = a32 ^ d3
            b22 = (t << R25) | (t >> R39)
            t = a33 ^ d3
            b30 = (t << R21) | (t >> R43)
            t = a34 ^ d3
            b43 = (t << R56) | (t >> R8)
            t = a40 ^ d4
            b03 = (t << R27) | (t >> R37)
            t = a41 ^ d4
            b11 = (t << R20) | (t >> R44)
            t = a42 ^ d4
            b24 = (t << R39) | (t >> R25)
            t = a43 ^ d4
            b32 = (t << R8) | (t >> R56)
            t = a44 ^ d4
            b40 = (t << R14) | (t >> R50)
            s[0 * WAYS + w] = (b00 ^ (~b10 & b20)) ^ rc
            s[1 * WAYS + w] = b10 ^ (~b20 & b30)
            s[2 * WAYS + w] = b20 ^ (~b30 & b40)
            s[3 * WAYS + w] = b30 ^ (~b40 & b00)
            s[4 * WAYS + w] = b40 ^ (~b00 & b10)
            s[5 * WAYS + w] = b01 ^ (~b11 & b21)
            s[6 * WAYS + w] = b11 ^ (~b21 & b31)
            s[7 * WAYS + w] = b21 ^ (~b31 & b41)
            s[8 * WAYS + w] = b31 ^ (~b41 & b01)
            s[9 * WAYS + w] = b41 ^ (~b01 & b11)
            s[10 * WAYS + w] = b02 ^ (~b12 & b22)
            s[11 * WAYS + w] = b12 ^ (~b22 & b32)
            s[12 * WAYS + w] = b22 ^ (~b32 & b42)
            s[13 * WAYS + w] = b32 ^ (~b42 & b02)
            s[14 * WAYS + w] = b42 ^ (~b02 & b12)
            s[15 * WAYS + w] = b03 ^ (~b13 & b23)
            s[16 * WAYS + w] = b13 ^ (~b23 & b33)
            s[17 * WAYS + w] = b23 ^ (~b33 & b43)
            s[18 * WAYS + w] = b33 ^ (~b43 & b03)
            s[19 * WAYS + w] = b43 ^ (~b03 & b13)
            s[20 * WAYS + w] = b04 ^ (~b14 & b24)
            s[21 * WAYS + w] = b14 ^ (~b24 & b34)
            s[22 * WAYS + w] = b24 ^ (~b34 & b44)
            s[23 * WAYS + w] = b34 ^ (~b44 & b04)
            s[24 * WAYS + w] = b44 ^ (~b04 & b14)


@njit(cache=True, nogil=True)
def keccak_p1600_xn(src: np.ndarray, dst: np.ndarray) -> None:
    """Permute the interleaved states of ``src`` into ``dst``; ``src`` is left intact
    (SLH-DSA keeps it as a template).  The copy is 25 vector moves, ~2% of a permutation.
    """
    for i in range(25 * WAYS):
        dst[i] = src[i]
    keccak_f1600_xn(dst)
