"""Keccak-f[1600] and SHAKE128/SHAKE256 as numba kernels.

Plain ``@njit(cache=True, nogil=True)`` functions. The permutation keeps the 25 lanes in
local variables across one round written out lane by lane, so LLVM holds them in
registers. One-shot ``shake128`` / ``shake256``, and streaming for samplers that pull
output block by block (``absorb`` or ``absorb_init`` / ``absorb_update`` /
``absorb_final``, then ``squeeze_block``). Lanes are little-endian, as FIPS 202 says;
``keccak_xn`` runs 4 or 8 interleaved states.
"""

from __future__ import annotations

import numpy as np
from numba import njit

SHAKE128_RATE = 168
SHAKE256_RATE = 136

# Round constants of Keccak-f[1600] (FIPS 202, section 3.2.5).
_RC = np.array(
    [
        0x0000000000000001,
        0x0000000000008082,
        0x800000000000808A,
        0x8000000080008000,
        0x000000000000808B,
        0x0000000080000001,
        0x8000000080008081,
        0x8000000000008009,
        0x000000000000008A,
        0x0000000000000088,
        0x0000000080008009,
        0x000000008000000A,
        0x000000008000808B,
        0x800000000000008B,
        0x8000000000008089,
        0x8000000000008003,
        0x8000000000008002,
        0x8000000000000080,
        0x000000000000800A,
        0x800000008000000A,
        0x8000000080008081,
        0x8000000000008080,
        0x0000000080000001,
        0x8000000080008008,
    ],
    dtype=np.uint64,
)
ROUND_CONSTANTS = _RC  # public name, for the multi-way permutation in keccak_xn


# Rotation amounts as uint64 so numba never promotes the shifts to int64 or float.
_R1 = np.uint64(1)
_R2 = np.uint64(2)
_R3 = np.uint64(3)
_R6 = np.uint64(6)
_R8 = np.uint64(8)
_R9 = np.uint64(9)
_R10 = np.uint64(10)
_R14 = np.uint64(14)
_R15 = np.uint64(15)
_R18 = np.uint64(18)
_R19 = np.uint64(19)
_R20 = np.uint64(20)
_R21 = np.uint64(21)
_R23 = np.uint64(23)
_R25 = np.uint64(25)
_R27 = np.uint64(27)
_R28 = np.uint64(28)
_R36 = np.uint64(36)
_R37 = np.uint64(37)
_R39 = np.uint64(39)
_R41 = np.uint64(41)
_R43 = np.uint64(43)
_R44 = np.uint64(44)
_R45 = np.uint64(45)
_R46 = np.uint64(46)
_R49 = np.uint64(49)
_R50 = np.uint64(50)
_R54 = np.uint64(54)
_R55 = np.uint64(55)
_R56 = np.uint64(56)
_R58 = np.uint64(58)
_R61 = np.uint64(61)
_R62 = np.uint64(62)
_R63 = np.uint64(63)


@njit(cache=True, nogil=True)
def keccak_p1600(src, dst):
    """Keccak-f[1600] of the 25 lanes ``src[0:25]`` into ``dst[0:25]`` (may be the same
    array).  Lane ``x + 5y`` is local ``a<x><y>``; the round below was generated from the
    FIPS 202 rho offsets and pi permutation and is checked against hashlib in the tests.
    """
    a00 = src[0]
    a10 = src[1]
    a20 = src[2]
    a30 = src[3]
    a40 = src[4]
    a01 = src[5]
    a11 = src[6]
    a21 = src[7]
    a31 = src[8]
    a41 = src[9]
    a02 = src[10]
    a12 = src[11]
    a22 = src[12]
    a32 = src[13]
    a42 = src[14]
    a03 = src[15]
    a13 = src[16]
    a23 = src[17]
    a33 = src[18]
    a43 = src[19]
    a04 = src[20]
    a14 = src[21]
    a24 = src[22]
    a34 = src[23]
    a44 = src[24]
    for rnd in range(24):
        c0 = a00 ^ a01 ^ a02 ^ a03 ^ a04
        c1 = a10 ^ a11 ^ a12 ^ a13 ^ a14
        c2 = a20 ^ a21 ^ a22 ^ a23 ^ a24
        c3 = a30 ^ a31 ^ a32 ^ a33 ^ a34
        c4 = a40 ^ a41 ^ a42 ^ a43 ^ a44
        d0 = c4 ^ ((c1 << _R1) | (c1 >> _R63))
        d1 = c0 ^ ((c2 << _R1) | (c2 >> _R63))
        d2 = c1 ^ ((c3 << _R1) | (c3 >> _R63))
        d3 = c2 ^ ((c4 << _R1) | (c4 >> _R63))
        d4 = c3 ^ ((c0 << _R1) | (c0 >> _R63))
        b00 = a00 ^ d0
        t = a01 ^ d0
        b13 = (t << _R36) | (t >> _R28)
        t = a02 ^ d0
        b21 = (t << _R3) | (t >> _R61)
        t = a03 ^ d0
        b34 = (t << _R41) | (t >> _R23)
        t = a04 ^ d0
        b42 = (t << _R18) | (t >> _R46)
        t = a10 ^ d1
        b02 = (t << _R1) | (t >> _R63)
        t = a11 ^ d1
        b10 = (t << _R44) | (t >> _R20)
        t = a12 ^ d1
        b23 = (t << _R10) | (t >> _R54)
        t = a13 ^ d1
        b31 = (t << _R45) | (t >> _R19)
        t = a14 ^ d1
        b44 = (t << _R2) | (t >> _R62)
        t = a20 ^ d2
        b04 = (t << _R62) | (t >> _R2)
        t = a21 ^ d2
        b12 = (t << _R6) | (t >> _R58)
        t = a22 ^ d2
        b20 = (t << _R43) | (t >> _R21)
        t = a23 ^ d2
        b33 = (t << _R15) | (t >> _R49)
        t = a24 ^ d2
        b41 = (t << _R61) | (t >> _R3)
        t = a30 ^ d3
        b01 = (t << _R28) | (t >> _R36)
        t = a31 ^ d3
        b14 = (t << _R55) | (t >> _R9)
        t = a32 ^ d3
        b22 = (t << _R25) | (t >> _R39)
        t = a33 ^ d3
        b30 = (t << _R21) | (t >> _R43)
        t = a34 ^ d3
        b43 = (t << _R56) | (t >> _R8)
        t = a40 ^ d4
        b03 = (t << _R27) | (t >> _R37)
        t = a41 ^ d4
        b11 = (t << _R20) | (t >> _R44)
        t = a42 ^ d4
        b24 = (t << _R39) | (t >> _R25)
        t = a43 ^ d4
        b32 = (t << _R8) | (t >> _R56)
        t = a44 ^ d4
        b40 = (t << _R14) | (t >> _R50)
        a00 = b00 ^ (~b10 & b20) ^ _RC[rnd]
        a10 = b10 ^ (~b20 & b30)
        a20 = b20 ^ (~b30 & b40)
        a30 = b30 ^ (~b40 & b00)
        a40 = b40 ^ (~b00 & b10)
        a01 = b01 ^ (~b11 & b21)
        a11 = b11 ^ (~b21 & b31)
        a21 = b21 ^ (~b31 & b41)
        a31 = b31 ^ (~b41 & b01)
        a41 = b41 ^ (~b01 & b11)
        a02 = b02 ^ (~b12 & b22)
        a12 = b12 ^ (~b22 & b32)
        a22 = b22 ^ (~b32 & b42)
        a32 = b32 ^ (~b42 & b02)
        a42 = b42 ^ (~b02 & b12)
        a03 = b03 ^ (~b13 & b23)
        a13 = b13 ^ (~b23 & b33)
        a23 = b23 ^ (~b33 & b43)
        a33 = b33 ^ (~b43 & b03)
        a43 = b43 ^ (~b03 & b13)
        a04 = b04 ^ (~b14 & b24)
        a14 = b14 ^ (~b24 & b34)
        a24 = b24 ^ (~b34 & b44)
        a34 = b34 ^ (~b44 & b04)
        a44 = b44 ^ (~b04 & b14)
    dst[0] = a00
    dst[1] = a10
    dst[2] = a20
    dst[3] = a30
    dst[4] = a40
    dst[5] = a01
    dst[6] = a11
    dst[7] = a21
    dst[8] = a31
    dst[9] = a41
    dst[10] = a02
    dst[11] = a12
    dst[12] = a22
    dst[13] = a32
    dst[14] = a42
    dst[15] = a03
    dst[16] = a13
    dst[17] = a23
    dst[18] = a33
    dst[19] = a43
    dst[20] = a04
    dst[21] = a14
    dst[22] = a24
    dst[23] = a34
    dst[24] = a44


@njit(cache=True, nogil=True)
def keccak_f1600(state):
    """Permute a ``uint64[25]`` state in place (24 rounds)."""
    keccak_p1600(state, state)


@njit(cache=True, nogil=True)
def _xor_byte(state, pos, byte):
    lane = pos >> 3
    state[lane] ^= np.uint64(byte) << np.uint64((pos & 7) * 8)


@njit(cache=True, nogil=True)
def absorb_init(state):
    """Reset the state to zero; returns the absorb position 0."""
    for i in range(25):
        state[i] = np.uint64(0)
    return 0


@njit(cache=True, nogil=True)
def absorb_range(state, rate, pos, data, start, stop):
    """XOR ``data[start:stop]`` into the state from byte ``pos``, permuting on every
    full block; returns the new position (0 <= pos < rate).

    ``data`` is any indexable uint8 buffer: a numpy array, or a ``bytes`` object (numba's
    read-only ``Bytes``, which has ``len`` but no ``shape``), so callers hash pieces of
    keys and signatures without copying. Whole 8-byte lanes are assembled in registers
    when the position is lane-aligned (the common case).
    """
    i = start
    # Bytes up to the next lane boundary.
    while i < stop and (pos & 7) != 0:
        _xor_byte(state, pos, data[i])
        i += 1
        pos += 1
        if pos == rate:
            keccak_f1600(state)
            pos = 0
    # Whole lanes.
    while stop - i >= 8:
        # Unsigned indexes: without numba's negative-index wrap-around LLVM merges the
        # eight byte loads into one 64-bit load.
        at = np.uint64(i)
        w = np.uint64(0)
        for b in range(8):
            w |= np.uint64(data[at + np.uint64(b)]) << np.uint64(8 * b)
        state[pos >> 3] ^= w
        i += 8
        pos += 8
        if pos == rate:
            keccak_f1600(state)
            pos = 0
    # Tail.
    while i < stop:
        _xor_byte(state, pos, data[i])
        i += 1
        pos += 1
        if pos == rate:
            keccak_f1600(state)
            pos = 0
    return pos


@njit(cache=True, nogil=True)
def absorb_update(state, rate, pos, data):
    """XOR all of ``data`` into the state from byte ``pos`` (see ``absorb_range``)."""
    return absorb_range(state, rate, pos, data, 0, len(data))


@njit(cache=True, nogil=True)
def absorb_final(state, rate, pos):
    """Apply SHAKE padding (0x1F ... 0x80) at ``pos`` and permute once.

    Afterwards the first ``rate`` bytes of the state are the first output block.
    """
    _xor_byte(state, pos, 0x1F)
    _xor_byte(state, rate - 1, 0x80)
    keccak_f1600(state)


@njit(cache=True, nogil=True)
def absorb(state, rate, data):
    """Reset ``state`` and absorb ``data`` with SHAKE padding; ready to squeeze."""
    pos = absorb_init(state)
    pos = absorb_update(state, rate, pos, data)
    absorb_final(state, rate, pos)


@njit(cache=True, nogil=True)
def absorb2(state, rate, data1, data2):
    """``absorb`` of ``data1 || data2`` without building the concatenation."""
    pos = absorb_init(state)
    pos = absorb_update(state, rate, pos, data1)
    pos = absorb_update(state, rate, pos, data2)
    absorb_final(state, rate, pos)


@njit(cache=True, nogil=True)
def squeeze_into(state, out, offset, count):
    """Copy ``count`` (<= rate) bytes of the current state to ``out[offset:]``; no permute."""
    base = np.uint64(offset)
    for j in range(count):
        w = state[j >> 3]
        out[base + np.uint64(j)] = np.uint8((w >> np.uint64((j & 7) * 8)) & np.uint64(0xFF))


@njit(cache=True, nogil=True)
def squeeze_block(state, rate, out, offset):
    """Copy one block (``rate`` bytes, fewer if ``out`` ends sooner) then permute.

    Repeated calls stream the SHAKE output into ``out``.
    """
    count = rate
    if out.shape[0] - offset < count:
        count = out.shape[0] - offset
    if count > 0:
        squeeze_into(state, out, offset, count)
    keccak_f1600(state)


@njit(cache=True, nogil=True)
def _shake(data, outlen, rate):
    state = np.zeros(25, dtype=np.uint64)
    absorb(state, rate, data)
    out = np.empty(outlen, dtype=np.uint8)
    offset = 0
    while offset < outlen:
        count = rate if outlen - offset > rate else outlen - offset
        squeeze_into(state, out, offset, count)
        offset += count
        if offset < outlen:
            keccak_f1600(state)
    return out


@njit(cache=True, nogil=True)
def shake128(data, outlen):
    """SHAKE128(data, 8*outlen bits) as a new ``uint8`` array."""
    return _shake(data, outlen, SHAKE128_RATE)


@njit(cache=True, nogil=True)
def shake256(data, outlen):
    """SHAKE256(data, 8*outlen bits) as a new ``uint8`` array."""
    return _shake(data, outlen, SHAKE256_RATE)
