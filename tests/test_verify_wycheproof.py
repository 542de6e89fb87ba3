"""Wycheproof ML-DSA verify vectors (../shared/testvectors/wycheproof) on every backend.

Every vector with a message must give its ``result`` ("valid" -> True, "invalid" ->
False) on each available backend that implements the suite; unavailable backends skip
with the reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qprof.verify import BACKEND_NAMES, available_backends, get_verifier
from qprof.verify.vectors import VerifyCase, wycheproof_mldsa

FILES = {"ML-DSA-44": "mldsa_44_verify_test.json", "ML-DSA-65": "mldsa_65_verify_test.json"}


def _vectors(shared_dir: Path, suite: str) -> list[VerifyCase]:
    """The pure (message) cases of the suite's file; pre-hashed (mu) ones are not pure
    verification."""
    path = shared_dir / "testvectors" / "wycheproof" / FILES[suite]
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    cases = wycheproof_mldsa(path)
    assert all(case.suite == suite for case in cases)
    return [case for case in cases if case.mu is None]


@pytest.mark.fresh
@pytest.mark.parametrize("suite", list(FILES))
@pytest.mark.parametrize("backend", BACKEND_NAMES)
def test_wycheproof_vectors(shared_dir: Path, backend: str, suite: str) -> None:
    status = available_backends()[backend]
    if not status.available:
        pytest.skip(status.reason)
    if suite not in status.suites:
        pytest.skip(f"{backend} does not implement {suite} here: {status.details}")
    vectors = _vectors(shared_dir, suite)
    assert len(vectors) >= 100
    verifier = get_verifier(backend, suite)
    verifier.warm_up()
    wrong = [
        f"{case.label}: expected {case.expected}"
        for case in vectors
        if verifier.verify(case.public_key, case.message, case.signature, case.context)
        is not case.expected
        # a documented backend limit (BackendStatus.details["context_limit"]), not a bug
        and not (case.expected and len(case.context) > verifier.max_context_len)
    ]
    assert not wrong, f"{backend} {suite}: {len(wrong)} wrong of {len(vectors)}:\n" + "\n".join(
        wrong[:20]
    )
