"""The NIST ACVP sigVer vectors of the functional check (issue 32): shipped in the package
for ML-DSA-87, SLH-DSA-SHAKE-128s and SLH-DSA-SHAKE-256s (external interface, pure, with
contexts; qprof/data/KAT-SOURCES.txt), every answer right with the numba verifier and
liboqs, a wrong answer a MISMATCH naming the case, a damaged file one clear line.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest

from qprof.verify.functional import check_suite
from qprof.verify.vectors import (
    ShippedVectorsError,
    VerifyCase,
    shipped_cases,
    shipped_file_cases,
)

ACVP_FILE = "kat-acvp-sigver.json.gz"
# Cases per suite: whole ACVP groups, SHAKE-256s trimmed (scripts/make_shipped_vectors.py).
COUNTS = {"ML-DSA-87": 15, "SLH-DSA-SHAKE-128s": 14, "SLH-DSA-SHAKE-256s": 8}
FOLDER = {"ML-DSA-87": "ML-DSA-sigVer-FIPS204", "SLH-DSA-SHAKE-128s": "SLH-DSA-sigVer-FIPS205",
          "SLH-DSA-SHAKE-256s": "SLH-DSA-sigVer-FIPS205"}


def _acvp(suite: str) -> list[tuple[str, VerifyCase]]:
    return [(tag, c) for tag, c in shipped_cases(suite) if tag == "acvp"]


def _raw() -> bytes:
    return (resources.files("qprof") / "data" / ACVP_FILE).read_bytes()


def test_acvp_vectors_are_shipped_with_their_source() -> None:
    data = json.loads(gzip.decompress(_raw()))
    assert "975de31eb83d87039ec88934fdc47d8c312b892d" in data["source"]
    assert "not subject to copyright" in data["license"]
    assert set(data["acvp_files"]) == {
        f"gen-val/json-files/{f}/{n}" for f in set(FOLDER.values())
        for n in ("prompt.json", "expectedResults.json")}
    for suite, count in COUNTS.items():
        cases = _acvp(suite)
        assert len(cases) == count
        assert {c.expected for _t, c in cases} == {True, False}
        assert all(c.label.startswith(f"{FOLDER[suite]} tg") and " tc" in c.label
                   for _t, c in cases)
        # External interface with contexts (valid ones among them), up to 255 bytes.
        assert any(c.expected and c.context for _t, c in cases)
        assert max(len(c.context) for _t, c in cases) <= 255


@pytest.mark.parametrize("suite", list(COUNTS))
def test_numba_gives_every_acvp_answer(suite: str) -> None:
    got = check_suite("numba", suite, cases=_acvp(suite))
    assert (got.status, got.failed, got.cases) == ("PASS", (), COUNTS[suite])
    assert got.sources == ("acvp",)


@pytest.mark.parametrize("suite", list(COUNTS))
def test_liboqs_gives_every_acvp_answer(suite: str, liboqs_available: None) -> None:
    got = check_suite("liboqs", suite, cases=_acvp(suite))
    assert (got.status, got.failed, got.cases) == ("PASS", (), COUNTS[suite])


def test_a_wrong_answer_is_a_mismatch_naming_the_acvp_case() -> None:
    """Flip NIST's expected result of one valid case: the check names it and its source."""
    cases = _acvp("SLH-DSA-SHAKE-128s")
    i = next(i for i, (_t, c) in enumerate(cases) if c.expected)
    tag, valid = cases[i]
    cases[i] = (tag, replace(valid, expected=False))
    got = check_suite("numba", "SLH-DSA-SHAKE-128s", cases=cases)
    assert got.status == "MISMATCH"
    assert got.failed == (f"acvp {valid.label}: expected invalid, got valid",)


@pytest.mark.parametrize("damage", ["truncated", "not gzip", "not JSON", "a case lacks its "
                                    "signature", "bad hex"])
def test_a_damaged_vector_file_is_one_clear_line(damage: str) -> None:
    raw = _raw()
    data = json.loads(gzip.decompress(raw))
    if damage == "truncated":
        bad = raw[: len(raw) // 2]
    elif damage == "not gzip":
        bad = b"<html>not found</html>"
    elif damage == "not JSON":
        bad = gzip.compress(b'{"cases": [')
    else:
        case = data["cases"][0]
        if damage == "bad hex":
            case["signature"] = "zz" + case["signature"][2:]
        else:
            del case["signature"]
        bad = gzip.compress(json.dumps(data).encode())
    with pytest.raises(ShippedVectorsError) as err:
        shipped_file_cases(ACVP_FILE, bad)
    message = str(err.value)
    assert f"qprof/data/{ACVP_FILE}" in message and "damaged" in message
    assert "\n" not in message
    assert len(shipped_file_cases(ACVP_FILE, raw)) == sum(COUNTS.values())


@pytest.mark.fresh
def test_a_damaged_install_is_a_mismatch_not_a_traceback(tmp_path: Path) -> None:
    """A copy of the package with its ACVP file truncated: the check of a suite says
    MISMATCH with the one line naming the file."""
    from qprof.verify import backend_status

    if "ML-DSA-44" not in backend_status("reference").suites:
        pytest.skip("the reference backend (dilithium-py) is not installed")
    package = Path(resources.files("qprof"))  # type: ignore[arg-type]
    copy = tmp_path / "qprof"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    acvp = copy / "data" / ACVP_FILE
    acvp.write_bytes(acvp.read_bytes()[:1000])
    script = ("import json, qprof; from qprof.verify.functional import check_suite; "
              "r = check_suite('reference', 'ML-DSA-44'); "
              "print(json.dumps([qprof.__file__, r.status, r.cases, list(r.failed)]))")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    where, status, _cases, failed = json.loads(proc.stdout)
    assert where.startswith(str(tmp_path))
    assert status == "MISMATCH" and "Traceback" not in proc.stderr
    assert failed[0].startswith(f"shipped vectors qprof/data/{ACVP_FILE} are damaged (")
