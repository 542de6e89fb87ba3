"""numba Keccak/SHAKE kernels agree with hashlib (OpenSSL) on edge lengths."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from qprof.verify.nb import keccak

# Lengths around lane (8) and block (136 for SHAKE256, 168 for SHAKE128) boundaries.
IN_LENGTHS = [0, 1, 7, 8, 9, 135, 136, 137, 167, 168, 169, 271, 272, 273, 337, 1000]
OUT_LENGTHS = [0, 1, 16, 32, 135, 136, 137, 168, 169, 400]


def _data(length: int) -> np.ndarray:
    return np.random.default_rng(length).integers(0, 256, length, dtype=np.uint8)


@pytest.mark.parametrize("length", IN_LENGTHS)
def test_shake_one_shot_matches_hashlib(length: int) -> None:
    data = _data(length)
    for outlen in OUT_LENGTHS:
        assert bytes(keccak.shake128(data, outlen)) == hashlib.shake_128(data.tobytes()).digest(
            outlen
        )
        assert bytes(keccak.shake256(data, outlen)) == hashlib.shake_256(data.tobytes()).digest(
            outlen
        )


def test_keccak_f1600_zero_state_known_answer() -> None:
    # First lane of Keccak-f[1600] applied to the all-zero state (Keccak team KAT).
    state = np.zeros(25, dtype=np.uint64)
    keccak.keccak_f1600(state)
    assert int(state[0]) == 0xF1258F7940E1DDE7
    keccak.keccak_f1600(state)
    assert int(state[0]) == 0x2D5C954DF96ECB3C


@pytest.mark.parametrize(("rate", "ref"), [(168, hashlib.shake_128), (136, hashlib.shake_256)])
def test_streaming_absorb_and_squeeze_blocks(rate: int, ref: Callable[..., Any]) -> None:
    state = np.zeros(25, dtype=np.uint64)
    for length in (0, 34, rate - 1, rate, rate + 1, 3 * rate + 5):
        data = _data(length)
        keccak.absorb(state, rate, data)
        out = np.zeros(5 * rate, dtype=np.uint8)
        for block in range(5):
            keccak.squeeze_block(state, rate, out, block * rate)
        assert out.tobytes() == ref(data.tobytes()).digest(5 * rate)


@pytest.mark.parametrize(("rate", "ref"), [(168, hashlib.shake_128), (136, hashlib.shake_256)])
def test_absorb2_equals_concatenation(rate: int, ref: Callable[..., Any]) -> None:
    state = np.zeros(25, dtype=np.uint64)
    for split_a, split_b in ((0, 0), (3, 31), (32, 2), (rate - 1, 9), (rate, rate + 3), (5, 0)):
        a, b = _data(split_a), _data(split_b + 1000)[:split_b]
        keccak.absorb2(state, rate, a, b)
        out = np.zeros(rate, dtype=np.uint8)
        keccak.squeeze_block(state, rate, out, 0)
        assert out.tobytes() == ref(a.tobytes() + b.tobytes()).digest(rate)


def test_squeeze_block_stops_at_end_of_output() -> None:
    state = np.zeros(25, dtype=np.uint64)
    keccak.absorb(state, 136, _data(10))
    out = np.zeros(100, dtype=np.uint8)
    keccak.squeeze_block(state, 136, out, 0)  # only 100 bytes fit
    assert out.tobytes() == hashlib.shake_256(_data(10).tobytes()).digest(100)


def test_multi_way_permutation_matches_scalar_ones() -> None:
    from qprof.verify.nb.keccak_xn import WAYS, keccak_p1600_xn

    rng = np.random.default_rng(4)
    states = rng.integers(0, 2**64 - 1, size=(25, WAYS), dtype=np.uint64, endpoint=True)
    src = np.ascontiguousarray(states).reshape(-1)
    kept = src.copy()
    out = np.zeros(25 * WAYS, dtype=np.uint64)
    keccak_p1600_xn(src, out)
    assert np.array_equal(src, kept)  # the source is a template: left intact
    for j in range(WAYS):
        expected = np.ascontiguousarray(states[:, j])
        keccak.keccak_f1600(expected)
        assert np.array_equal(out.reshape(25, WAYS)[:, j], expected)


def test_permutation_into_another_array_leaves_the_source() -> None:
    src = np.random.default_rng(5).integers(0, 2**63, 50, dtype=np.uint64)
    kept = src.copy()
    keccak.keccak_p1600(src[:25], src[25:])  # how SLH-DSA permutes its hash templates
    assert np.array_equal(src[:25], kept[:25])
    expected = kept[:25].copy()
    keccak.keccak_f1600(expected)
    assert np.array_equal(src[25:], expected)


def test_half_width_permutation_permutes_the_low_ways_only() -> None:
    from qprof.verify.nb.keccak_xn import WAYS, keccak_f1600_xn_low

    rng = np.random.default_rng(6)
    states = rng.integers(0, 2**64 - 1, size=(25, WAYS), dtype=np.uint64, endpoint=True)
    s = np.ascontiguousarray(states).reshape(-1).copy()
    keccak_f1600_xn_low(s)
    for j in range(WAYS):
        expected = np.ascontiguousarray(states[:, j])
        if j < WAYS // 2:
            keccak.keccak_f1600(expected)
        assert np.array_equal(s.reshape(25, WAYS)[:, j], expected)
