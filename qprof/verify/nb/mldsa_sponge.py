"""Absorbing sub-ranges of byte buffers into a Keccak sponge, for the ML-DSA kernels.

``keccak.absorb_update`` takes whole numpy arrays; the ML-DSA kernel receives
``bytes`` objects (numba's read-only ``Bytes`` type, which has ``len`` but no
``shape``) and hashes pieces of them (c_tilde is the head of the signature), so
this absorbs ``data[start:stop]`` of any indexable uint8 buffer without copying.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from qprof.verify.nb.keccak import keccak_f1600


@njit(cache=True, nogil=True)
def absorb_range(state: np.ndarray, rate: int, pos: int, data, start: int, stop: int) -> int:  # noqa: ANN001
    """XOR data[start:stop] into the sponge from byte ``pos``; returns the new position.

    Permutes on every full block. Whole 8-byte lanes are assembled in registers when
    the position is lane-aligned (the common case: keys and signatures).
    """
    i = start
    while i < stop and (pos & 7) != 0:
        state[pos >> 3] ^= np.uint64(data[i]) << np.uint64((pos & 7) * 8)
        i += 1
        pos += 1
        if pos == rate:
            keccak_f1600(state)
            pos = 0
    while stop - i >= 8:
        v = np.uint64(0)
        for b in range(8):
            v |= np.uint64(data[i + b]) << np.uint64(8 * b)
        state[pos >> 3] ^= v
        i += 8
        pos += 8
        if pos == rate:
            keccak_f1600(state)
            pos = 0
    while i < stop:
        state[pos >> 3] ^= np.uint64(data[i]) << np.uint64((pos & 7) * 8)
        i += 1
        pos += 1
        if pos == rate:
            keccak_f1600(state)
            pos = 0
    return pos
