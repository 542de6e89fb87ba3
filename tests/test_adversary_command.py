"""`qprof adversary` and `qprof block --adversarial` end to end, small (needs liboqs).

SLH-DSA-SHAKE-128f keeps it short: a few seconds of grinding, a pool of 8, 3 rounds.
The file must hold every kind with the keys the issue names, liboqs must accept the
ground signatures and reject the crafted ones, and the hash calls must be the ones
``walk`` counts, and so the Keccak permutations; the summary holds the model and its
largest error per kind.  The ML-DSA run writes its rejections.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from qprof.cli import main
from qprof.measure.adversary import summary_path
from qprof.verify.slhdsa_calls import walk

KEYS = {"kind", "suite", "pk", "msg", "ctx", "sig", "valid", "hash_calls", "verify_ns",
        "keccak_permutations", "quickest_ns"}
needs_liboqs = pytest.mark.usefixtures("liboqs_available")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QPROF_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _cpu() -> str:
    return str(max(os.sched_getaffinity(0)))


@needs_liboqs
def test_slhdsa_run_writes_checkable_signatures(cache: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from qprof.verify import get_verifier

    out = cache / "adv.json"
    suite = "SLH-DSA-SHAKE-128f"
    assert main(["adversary", suite, "--minutes", "0.05", "--pool", "8", "--rounds", "3",
                 "--cpu", _cpu(), "--no-dual", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())
    kinds = [r["kind"] for r in rows]
    # --minutes bounds the whole command: as many random ones as its signing share
    # allows, never fewer than the baseline needs.
    assert 5 <= kinds.count("random") <= 16 and "costliest" in kinds and "ground" in kinds
    assert "crafted_invalid" in kinds
    verifier = get_verifier("liboqs", suite)
    for r in rows:
        assert set(r) >= KEYS and r["suite"] == suite and r["verify_ns"] > 0
        pk, msg, sig, ctx = (bytes.fromhex(r[k]) for k in ("pk", "msg", "sig", "ctx"))
        assert verifier.verify(pk, msg, sig, ctx) is r["valid"]
        assert r["valid"] is (r["kind"] != "crafted_invalid")
        w = walk(suite, pk, msg, sig, ctx)
        assert r["hash_calls"] == w.calls.total
        assert r["keccak_permutations"] == w.permutations.total
        assert 0 < r["quickest_ns"] <= r["verify_ns"]
    captured = capsys.readouterr()
    text = captured.out
    # The bars: signing with its count, rate and ETA, grinding by the clock.
    assert re.search(rf"^signing {suite} random  \[[#-]+\]  \d+/16  \S+/s  ETA ",
                     captured.err, re.M), captured.err[-2000:]
    assert f"grinding {suite} valid  [" in captured.err
    assert "ground" in text and "time = " in text and "Keccak-f permutations" in text
    summary = json.loads(summary_path(suite).read_text())["summary"]
    pool = summary["pool"]
    assert 4 <= pool["model"]["points"] <= 8 and pool["model"]["ns_per_permutation"] > 0
    assert set(pool["model_max_error"]) == {"pool", "random", "costliest", "ground",
                                            "crafted_invalid"}

    code = main(["block", "--adversarial", "--suites", suite, "--signatures", "6",
                 "--repeat", "1", "--cpus", _cpu(), "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    (row,) = data["adversarial"]
    assert row["ground"]["signatures"] == row["median"]["signatures"] == 6
    assert row["ratio"] > 0


@needs_liboqs
def test_mldsa_run_writes_its_rejections(cache: Path) -> None:
    out = cache / "adv.json"
    state = cache / "state"
    assert main(["adversary", "ML-DSA-44", "--minutes", "0", "--pool", "4", "--rounds", "3",
                 "--cpu", _cpu(), "--no-dual", "--out", str(out), "--no-store",
                 "--state-dir", str(state)]) == 0
    assert not state.exists()  # --no-store: no store made
    rows = json.loads(out.read_text())
    rejected = [r for r in rows if r["kind"] == "crafted_invalid"]
    assert len(rejected) == 3 and not any(r["valid"] for r in rejected)
    assert all(r["hash_calls"] is None and r["keccak_permutations"] is None for r in rows)


@needs_liboqs
def test_the_run_is_kept_for_history_and_calibrate(cache: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Kept in a fresh state dir as check's runs are: history lists the run and its
    factors, and calibrate --headroom ground with that state dir projects the suite with
    the ground factor."""
    state = cache / "state"
    suite = "SLH-DSA-SHAKE-128s"  # a suite of qanum's: calibrate projects it
    assert main(["adversary", suite, "--minutes", "0.05", "--pool", "4", "--rounds", "3",
                 "--cpu", _cpu(), "--no-dual", "--json", "--state-dir", str(state)]) == 0
    capsys.readouterr()
    assert main(["history", "--state-dir", str(state), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (run,) = doc["runs"]
    assert run["status"] == "finished" and run["measurements"] == 0 and run["cpus"]
    kept = {f["kind"]: f for f in doc["adversary"] if f["suite"] == suite}
    assert {"ground", "crafted_invalid"} <= set(kept)
    assert {f["run_id"] for f in kept.values()} == {run["run_id"]}
    cached = json.loads(summary_path(suite).read_text())["summary"]
    assert cached["measured_at"] == kept["ground"]["measured_at"]  # the run's own factor
    assert main(["calibrate", "--headroom", "ground", "--state-dir", str(state),
                 "--json"]) == 0
    row = next(s for s in json.loads(capsys.readouterr().out)["suites"]
               if s["suite"] == suite)
    assert row["projected"] and f"x{kept['ground']['factor']:.3f}" in row["note"], row


def test_the_default_is_the_profile_s_slh_dsa_suites() -> None:
    import argparse

    from qprof.commands.adversary import _suites

    got = _suites(argparse.Namespace(suite=None, profile="qanum"))
    assert got == ["SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s"]
    assert _suites(argparse.Namespace(suite="ML-DSA-44", profile="qanum")) == ["ML-DSA-44"]


def test_bad_arguments_exit_2(cache: Path) -> None:
    assert main(["adversary", "NOPE"]) == 2
    assert main(["adversary", "--profile", "no-such-profile"]) == 2
    with pytest.raises(SystemExit) as exc:  # the option's type refuses it (exit 2)
        main(["adversary", "ML-DSA-44", "--rounds", "1"])
    assert exc.value.code == 2
