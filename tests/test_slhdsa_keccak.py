"""Keccak-f permutations per verification: qprof's count against an independent one.

The pure-Python ``slhdsa`` package verifies each test vector (valid and tampered, every
SHAKE parameter set) with its ``hashlib.shake_256`` replaced by a wrapper that records
each call's input and output length; those lengths, priced with the sponge's own rule
(``ceil((input + 1) / rate)`` absorbing, one more per further rate squeezed), must give
the permutations ``walk`` counts, in total and per kind of hash (told apart by input
length).  No liboqs needed: the vectors are files, the count is qprof's numba walk.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import slhdsa
import slhdsa.lowlevel.parameters as slh_parameters

from qprof.verify.slhdsa_calls import walk
from qprof.verify.slhdsa_keccak import shake256_permutations
from qprof.verify.vectors import VerifyCase, slhdsa_cases

VECTORS = Path(__file__).resolve().parent / "data" / "slhdsa"
RATE = 136
SIZES = ("128s", "128f", "192s", "192f", "256s", "256f")


@dataclass
class ShakeLog:
    """(input bytes, output bytes) of every SHAKE256 call made while it is installed."""

    calls: list[tuple[int, int]] = field(default_factory=list)


def _counting_shake(log: ShakeLog) -> type:
    class CountingShake256:
        def __init__(self, data: bytes = b"") -> None:
            self._h = hashlib.shake_256(data)
            self._absorbed = len(data)

        def update(self, data: bytes | memoryview) -> None:
            self._absorbed += len(data)
            self._h.update(data)

        def digest(self, length: int) -> bytes:
            log.calls.append((self._absorbed, length))
            return self._h.digest(length)

    return CountingShake256


def _sponge_permutations(input_bytes: int, output_bytes: int) -> int:
    """Written from the sponge construction, not from qprof's formula."""
    absorb = -(-(input_bytes + 1) // RATE)  # pad10*1 with the suffix takes >= 1 byte
    squeeze = -(-output_bytes // RATE) - 1  # the first block comes with the last absorb
    return absorb + squeeze


def _reference_log(case: VerifyCase, monkeypatch: pytest.MonkeyPatch) -> tuple[bool, ShakeLog]:
    log = ShakeLog()
    params = getattr(slhdsa, "shake_" + case.suite.rsplit("-", 1)[1])
    with monkeypatch.context() as m:
        m.setattr(slh_parameters, "shake_256", _counting_shake(log))
        ok = slhdsa.PublicKey.from_digest(case.public_key, params).verify_pure(
            case.message, case.signature, case.context)
    return ok, log


@pytest.mark.parametrize("size", SIZES)
def test_permutations_agree_with_the_reference_verifier(
        size: str, monkeypatch: pytest.MonkeyPatch) -> None:
    cases = slhdsa_cases(VECTORS / f"SLH-DSA-SHAKE-{size}.json")
    # the valid one, a flip in the FORS part and one in the first layer (other chains)
    for case in (cases[0], cases[2], cases[3]):
        ok, log = _reference_log(case, monkeypatch)
        assert ok is case.expected, case.label
        w = walk(case.suite, case.public_key, case.message, case.signature, case.context)
        perms = w.permutations
        assert w.valid is case.expected
        assert perms.total == sum(_sponge_permutations(i, o) for i, o in log.calls), case.label
        assert w.calls.total == len(log.calls), case.label
        n = len(case.public_key) // 2
        by_input = Counter[int]()
        for i, o in log.calls:
            by_input[i] += _sponge_permutations(i, o)
        assert by_input.pop(2 * n + 32) == perms.f and by_input.pop(3 * n + 32) == perms.h
        assert by_input.pop(3 * n + 2 + len(case.context) + len(case.message)) == perms.hmsg
        # what is left: the d WOTS+ public keys (T_len) and the FORS one (T_k)
        assert sorted(by_input.values()) == sorted([perms.t_len, perms.t_k]), case.label


def test_shake256_permutations_at_the_block_edges() -> None:
    for inp in (0, 1, 64, 135, 136, 137, 271, 272, 2208):
        for out in (16, 32, 49, 136, 137, 300):
            assert shake256_permutations(inp, out) == _sponge_permutations(inp, out)
    assert shake256_permutations(135, 32) == 1 and shake256_permutations(136, 32) == 2
    with pytest.raises(ValueError):
        shake256_permutations(-1, 16)
