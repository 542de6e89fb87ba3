"""Keccak-f[1600] and SHAKE128/SHAKE256 as numba kernels.

Every function is ``@njit(cache=True, nogil=True)`` so it loads from the numba cache
and runs without the GIL.  The permutation works on 25 local ``uint64`` variables
(the round body is unrolled, only the 24-round loop remains): LLVM keeps the lanes in
registers, which is about twice as fast as indexing an array every step.

Two levels of API:

* one-shot ``shake128(data, outlen)`` / ``shake256(data, outlen)``;
* streaming, for samplers that pull output block by block (ML-DSA ExpandA,
  SampleInBall): ``absorb(state, rate, data)`` or ``absorb_init`` /
  ``absorb_update`` / ``absorb_final`` for concatenated inputs without copying, then
  ``squeeze_block(state, rate, out, offset)`` repeatedly.

Lanes are little-endian, as FIPS 202 specifies: byte ``i`` of the state is bits
``8*(i % 8)`` .. of lane ``i // 8``.
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
ROUND_CONSTANTS = _RC  # public name, for the 4-way permutation in keccak_x4


@njit(cache=True, nogil=True)
def permute_lanes(
    a00,
    a01,
    a02,
    a03,
    a04,
    a05,
    a06,
    a07,
    a08,
    a09,
    a10,
    a11,
    a12,
    a13,
    a14,
    a15,
    a16,
    a17,
    a18,
    a19,
    a20,
    a21,
    a22,
    a23,
    a24,
):
    """Keccak-f[1600] on 25 lanes passed as scalars; returns the 25 new lanes.

    The scalar form lets callers that build a state from words (the SLH-DSA
    tweakable hashes) skip the array entirely.
    """
    for i in range(24):
        c0 = a00 ^ a05 ^ a10 ^ a15 ^ a20
        c1 = a01 ^ a06 ^ a11 ^ a16 ^ a21
        c2 = a02 ^ a07 ^ a12 ^ a17 ^ a22
        c3 = a03 ^ a08 ^ a13 ^ a18 ^ a23
        c4 = a04 ^ a09 ^ a14 ^ a19 ^ a24
        d0 = c4 ^ ((c1 << np.uint64(1)) | (c1 >> np.uint64(63)))
        d1 = c0 ^ ((c2 << np.uint64(1)) | (c2 >> np.uint64(63)))
        d2 = c1 ^ ((c3 << np.uint64(1)) | (c3 >> np.uint64(63)))
        d3 = c2 ^ ((c4 << np.uint64(1)) | (c4 >> np.uint64(63)))
        d4 = c3 ^ ((c0 << np.uint64(1)) | (c0 >> np.uint64(63)))
        t = a00 ^ d0
        b00 = t
        t = a05 ^ d0
        b16 = (t << np.uint64(36)) | (t >> np.uint64(28))
        t = a10 ^ d0
        b07 = (t << np.uint64(3)) | (t >> np.uint64(61))
        t = a15 ^ d0
        b23 = (t << np.uint64(41)) | (t >> np.uint64(23))
        t = a20 ^ d0
        b14 = (t << np.uint64(18)) | (t >> np.uint64(46))
        t = a01 ^ d1
        b10 = (t << np.uint64(1)) | (t >> np.uint64(63))
        t = a06 ^ d1
        b01 = (t << np.uint64(44)) | (t >> np.uint64(20))
        t = a11 ^ d1
        b17 = (t << np.uint64(10)) | (t >> np.uint64(54))
        t = a16 ^ d1
        b08 = (t << np.uint64(45)) | (t >> np.uint64(19))
        t = a21 ^ d1
        b24 = (t << np.uint64(2)) | (t >> np.uint64(62))
        t = a02 ^ d2
        b20 = (t << np.uint64(62)) | (t >> np.uint64(2))
        t = a07 ^ d2
        b11 = (t << np.uint64(6)) | (t >> np.uint64(58))
        t = a12 ^ d2
        b02 = (t << np.uint64(43)) | (t >> np.uint64(21))
        t = a17 ^ d2
        b18 = (t << np.uint64(15)) | (t >> np.uint64(49))
        t = a22 ^ d2
        b09 = (t << np.uint64(61)) | (t >> np.uint64(3))
        t = a03 ^ d3
        b05 = (t << np.uint64(28)) | (t >> np.uint64(36))
        t = a08 ^ d3
        b21 = (t << np.uint64(55)) | (t >> np.uint64(9))
        t = a13 ^ d3
        b12 = (t << np.uint64(25)) | (t >> np.uint64(39))
        t = a18 ^ d3
        b03 = (t << np.uint64(21)) | (t >> np.uint64(43))
        t = a23 ^ d3
        b19 = (t << np.uint64(56)) | (t >> np.uint64(8))
        t = a04 ^ d4
        b15 = (t << np.uint64(27)) | (t >> np.uint64(37))
        t = a09 ^ d4
        b06 = (t << np.uint64(20)) | (t >> np.uint64(44))
        t = a14 ^ d4
        b22 = (t << np.uint64(39)) | (t >> np.uint64(25))
        t = a19 ^ d4
        b13 = (t << np.uint64(8)) | (t >> np.uint64(56))
        t = a24 ^ d4
        b04 = (t << np.uint64(14)) | (t >> np.uint64(50))
        a00 = b00 ^ (~b01 & b02)
        a01 = b01 ^ (~b02 & b03)
        a02 = b02 ^ (~b03 & b04)
        a03 = b03 ^ (~b04 & b00)
        a04 = b04 ^ (~b00 & b01)
        a05 = b05 ^ (~b06 & b07)
        a06 = b06 ^ (~b07 & b08)
        a07 = b07 ^ (~b08 & b09)
        a08 = b08 ^ (~b09 & b05)
        a09 = b09 ^ (~b05 & b06)
        a10 = b10 ^ (~b11 & b12)
        a11 = b11 ^ (~b12 & b13)
        a12 = b12 ^ (~b13 & b14)
        a13 = b13 ^ (~b14 & b10)
        a14 = b14 ^ (~b10 & b11)
        a15 = b15 ^ (~b16 & b17)
        a16 = b16 ^ (~b17 & b18)
        a17 = b17 ^ (~b18 & b19)
        a18 = b18 ^ (~b19 & b15)
        a19 = b19 ^ (~b15 & b16)
        a20 = b20 ^ (~b21 & b22)
        a21 = b21 ^ (~b22 & b23)
        a22 = b22 ^ (~b23 & b24)
        a23 = b23 ^ (~b24 & b20)
        a24 = b24 ^ (~b20 & b21)
        a00 ^= _RC[i]

    return (
        a00,
        a01,
        a02,
        a03,
        a04,
        a05,
        a06,
        a07,
        a08,
        a09,
        a10,
        a11,
        a12,
        a13,
        a14,
        a15,
        a16,
        a17,
        a18,
        a19,
        a20,
        a21,
        a22,
        a23,
        a24,
    )


@njit(cache=True, nogil=True)
def keccak_f1600(state):
    """Permute a ``uint64[25]`` state in place (24 rounds)."""
    (
        a00,
        a01,
        a02,
        a03,
        a04,
        a05,
        a06,
        a07,
        a08,
        a09,
        a10,
        a11,
        a12,
        a13,
        a14,
        a15,
        a16,
        a17,
        a18,
        a19,
        a20,
        a21,
        a22,
        a23,
        a24,
    ) = permute_lanes(
        state[0],
        state[1],
        state[2],
        state[3],
        state[4],
        state[5],
        state[6],
        state[7],
        state[8],
        state[9],
        state[10],
        state[11],
        state[12],
        state[13],
        state[14],
        state[15],
        state[16],
        state[17],
        state[18],
        state[19],
        state[20],
        state[21],
        state[22],
        state[23],
        state[24],
    )
    state[0] = a00
    state[1] = a01
    state[2] = a02
    state[3] = a03
    state[4] = a04
    state[5] = a05
    state[6] = a06
    state[7] = a07
    state[8] = a08
    state[9] = a09
    state[10] = a10
    state[11] = a11
    state[12] = a12
    state[13] = a13
    state[14] = a14
    state[15] = a15
    state[16] = a16
    state[17] = a17
    state[18] = a18
    state[19] = a19
    state[20] = a20
    state[21] = a21
    state[22] = a22
    state[23] = a23
    state[24] = a24


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
def absorb_update(state, rate, pos, data):
    """XOR ``data`` into the state from byte ``pos``, permuting on every full block.

    Returns the new position (0 <= pos < rate) for the next update or final.
    """
    n = data.shape[0]
    i = 0
    # Bytes up to the next lane boundary.
    while i < n and (pos & 7) != 0:
        _xor_byte(state, pos, data[i])
        i += 1
        pos += 1
        if pos == rate:
            keccak_f1600(state)
            pos = 0
    # Whole lanes.
    while n - i >= 8:
        w = (
            np.uint64(data[i])
            | (np.uint64(data[i + 1]) << np.uint64(8))
            | (np.uint64(data[i + 2]) << np.uint64(16))
            | (np.uint64(data[i + 3]) << np.uint64(24))
            | (np.uint64(data[i + 4]) << np.uint64(32))
            | (np.uint64(data[i + 5]) << np.uint64(40))
            | (np.uint64(data[i + 6]) << np.uint64(48))
            | (np.uint64(data[i + 7]) << np.uint64(56))
        )
        state[pos >> 3] ^= w
        i += 8
        pos += 8
        if pos == rate:
            keccak_f1600(state)
            pos = 0
    # Tail.
    while i < n:
        _xor_byte(state, pos, data[i])
        i += 1
        pos += 1
        if pos == rate:
            keccak_f1600(state)
            pos = 0
    return pos


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
    for j in range(count):
        w = state[j >> 3]
        out[offset + j] = np.uint8((w >> np.uint64((j & 7) * 8)) & np.uint64(0xFF))


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
