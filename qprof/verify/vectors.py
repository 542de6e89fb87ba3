"""Known-answer verification vectors as typed cases.

Two file formats: Wycheproof's ML-DSA verify tests (``mldsa_<level>_verify_test.json``:
pure cases with a message, external-mu cases with ``mu``), and qprof's SLH-DSA files
(tests/data/slhdsa/: one liboqs signature, checked by a second library, plus tampered
variants given as one XOR at an offset of one field). Read by the tests and by
scripts/aarch64_kernels.py (the emulated-aarch64 CI run), so both see the same cases.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

_FIELDS = ("public_key", "message", "context", "signature")


@dataclass(frozen=True)
class VerifyCase:
    """One verification and its expected verdict. ``mu`` set: an external-mu case
    (``message`` and ``context`` unused)."""

    label: str
    suite: str
    public_key: bytes
    message: bytes
    signature: bytes
    context: bytes
    expected: bool
    mu: bytes | None = None


def wycheproof_mldsa(path: Path) -> list[VerifyCase]:
    """Every test of a Wycheproof ML-DSA verify file (result "valid" -> True)."""
    data = json.loads(path.read_text())
    suite = data["algorithm"]
    out = []
    for group in data["testGroups"]:
        pk = bytes.fromhex(group["publicKey"])
        for test in group["tests"]:
            if test["result"] not in ("valid", "invalid"):
                raise ValueError(f"{path}: tc{test['tcId']} has result {test['result']!r}")
            out.append(
                VerifyCase(
                    label=f"tc{test['tcId']} {test.get('comment', '')} {test.get('flags', [])}",
                    suite=suite,
                    public_key=pk,
                    message=bytes.fromhex(test.get("msg", "")),
                    signature=bytes.fromhex(test["sig"]),
                    context=bytes.fromhex(test.get("ctx", "")),
                    expected=test["result"] == "valid",
                    mu=bytes.fromhex(test["mu"]) if "msg" not in test else None,
                )
            )
    return out


def slhdsa_cases(path: Path) -> list[VerifyCase]:
    """The valid signature of a qprof SLH-DSA vector file, then each tampered variant."""
    data = json.loads(path.read_text())
    valid = VerifyCase(
        label=f"{data['params']} valid",
        suite=data["params"],
        expected=True,
        **{key: bytes.fromhex(data[key]) for key in _FIELDS},
    )
    out = [valid]
    for flip in data.get("tampered", []):
        part, offset, xor = flip["part"], int(flip["offset"]), int(flip["xor"])
        if part not in _FIELDS:
            raise ValueError(f"{path}: unknown tampered part {part!r}")
        changed = bytearray(getattr(valid, part))
        changed[offset] ^= xor
        field_change: dict[str, Any] = {part: bytes(changed)}
        out.append(
            replace(
                valid,
                label=f"{data['params']} {part}[{offset}] ^= {xor:#x}",
                expected=False,
                **field_change,
            )
        )
    return out
