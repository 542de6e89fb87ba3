"""Wycheproof ML-DSA verify vectors (../shared/testvectors/wycheproof) on every backend.

Every vector with a message must give its ``result`` ("valid" -> True, "invalid" ->
False) on each available backend that implements the suite; unavailable backends skip
with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qprof.verify import BACKEND_NAMES, available_backends, get_verifier

FILES = {"ML-DSA-44": "mldsa_44_verify_test.json", "ML-DSA-65": "mldsa_65_verify_test.json"}


def _vectors(shared_dir: Path, suite: str) -> list[tuple[str, bytes, bytes, bytes, bytes, bool]]:
    path = shared_dir / "testvectors" / "wycheproof" / FILES[suite]
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    data = json.loads(path.read_text())
    assert data["algorithm"] == suite
    out = []
    for group in data["testGroups"]:
        pk = bytes.fromhex(group["publicKey"])
        for test in group["tests"]:
            if "msg" not in test:
                continue  # pre-hashed (mu) vectors are not pure verification
            assert test["result"] in ("valid", "invalid"), test["tcId"]
            out.append((
                f"tc{test['tcId']} {test.get('comment', '')} {test.get('flags', [])}",
                pk,
                bytes.fromhex(test["msg"]),
                bytes.fromhex(test["sig"]),
                bytes.fromhex(test.get("ctx", "")),
                test["result"] == "valid",
            ))  # fmt: skip
    return out


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
        f"{label}: expected {expected}"
        for label, pk, msg, sig, ctx, expected in vectors
        if verifier.verify(pk, msg, sig, ctx) is not expected
        # a documented backend limit (BackendStatus.details["context_limit"]), not a bug
        and not (expected and len(ctx) > verifier.max_context_len)
    ]
    assert not wrong, f"{backend} {suite}: {len(wrong)} wrong of {len(vectors)}:\n" + "\n".join(
        wrong[:20]
    )
