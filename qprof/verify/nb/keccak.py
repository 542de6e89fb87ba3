"""Keccak-f[1600] and SHAKE128/SHAKE256 as numba kernels.

Every function is ``@njit(cache=True, nogil=True)`` so it loads from the numba cache
and runs without the GIL.  The permutation itself is generated as LLVM IR
(``keccak_ir.keccak_p1600``): one round on 25 SSA values inside a 24-iteration loop,
so LLVM keeps the lanes in registers (about twice as fast as indexing an array every
step) and every kernel that inlines it still compiles quickly.

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

from qprof.verify.nb.keccak_ir import keccak_p1600

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
def keccak_f1600(state):
    """Permute a C-contiguous ``uint64[25]`` state in place (24 rounds)."""
    keccak_p1600(state, state, _RC)


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
        w = np.uint64(0)
        for b in range(8):
            w |= np.uint64(data[i + b]) << np.uint64(8 * b)
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
