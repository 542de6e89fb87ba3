"""One judgement in every view: a store of real runs with a known step gives the same
segment estimate, state and change in check, the monitor's coverage, history, report
(Markdown and HTML), trend, export and the daemon's metrics; checks are kept; nothing
outside consensus decides a verdict."""

from __future__ import annotations

import ast
import json
import lzma
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from test_service_daemon import NO_CYCLE, DaemonProc

from qprof.consensus.trend.from_records import run_points
from qprof.measure.jsonl import read_run
from qprof.measure.records import Measurement, Record
from qprof.service.store import Store

REPO = Path(__file__).resolve().parents[1]
ZEN4 = sorted((REPO / "tests" / "data" / "trend" / "zen4").glob("check-*.jsonl.xz"))
STEPPED = "SLH-DSA-SHAKE-256s"
STEP_FROM = 12  # runs 13-20 (counted from 1) have the suite's times 3 % up
QPROF = [sys.executable, "-m", "qprof"]


def _scaled(m: Measurement, f: float) -> Measurement:
    def x(v: float | None) -> float | None:
        return None if v is None else v * f

    return replace(m, median_ns=m.median_ns * f, p95_ns=m.p95_ns * f, mean_ns=x(m.mean_ns),
                   stdev_ns=x(m.stdev_ns), min_ns=x(m.min_ns), max_ns=x(m.max_ns),
                   samples_ns=None if m.samples_ns is None else [v * f for v in m.samples_ns])


def _runs(tmp: Path) -> list[list[Record]]:
    out = []
    for i, path in enumerate(ZEN4[:20]):
        plain = tmp / path.name.removesuffix(".xz")
        plain.write_bytes(lzma.decompress(path.read_bytes()))
        records = read_run(plain).records
        if i >= STEP_FROM:
            records = [_scaled(r, 1.03) if isinstance(r, Measurement) and r.suite == STEPPED
                       else r for r in records]
        out.append(records)
    return out


@pytest.fixture(scope="module")
def stepped_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A daemon's store (qprof.db) holding twenty real Zen 4 runs, the 256s suite's times
    3 % up from run 13, each with its points as check and the daemon keep them; and the
    newest run as a JSONL file."""
    tmp = tmp_path_factory.mktemp("stepped")
    state = tmp / "state"
    state.mkdir()
    store = Store(state / "qprof.db")
    runs = _runs(tmp)
    for records in runs:
        for r in records:
            store.add(r)
        store.points.add(records[0].run_id, run_points(records))  # type: ignore[attr-defined]
    store.close()
    last = tmp / "last.jsonl"
    last.write_text("".join(r.to_json() + "\n" for r in runs[-1]))
    return state, last


def _qprof(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*QPROF, *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def _suite(judgement: dict, suite: str = STEPPED) -> dict:
    return next(s for s in judgement["suites"] if s["suite"] == suite)


@pytest.mark.slow
def test_one_store_one_answer(stepped_store: tuple[Path, Path], tmp_path: Path) -> None:
    state, last = stepped_store
    history = json.loads(_qprof("history", "--state-dir", str(state), "--json").stdout)
    want = _suite(history["judgement"])
    seg = want["segment"]
    assert want["stands_on"] == "segment" and seg is not None
    assert want["series_runs"] == 20
    assert want["state"] == "not_binding"  # a Zen 4 guest is no reference core of qanum
    assert any(c["run_index"] >= STEP_FROM - 2 for c in want["changes"]), want["changes"]
    assert seg["first_run"] >= STEP_FROM - 2
    key = ("vu_estimate", "vu_ci_95", "state", "words", "segment", "changes")

    def same(other: dict) -> None:
        assert {k: other[k] for k in key} == {k: want[k] for k in key}

    checked = _qprof("check", "--from", str(last), "--state-dir", str(state), "--json")
    same(_suite(json.loads(checked.stdout)["judgement"]))
    text = _qprof("check", "--from", str(last), "--state-dir", str(state)).stdout
    assert seg["text"] in text.replace("\n    ", " ")
    trend = json.loads(_qprof("trend", "--state-dir", str(state), "--json").stdout)
    same(_suite(trend["judgement"]))
    exported = _qprof("export", "latest", "--state-dir", str(state), "--judgement").stdout
    same(_suite(json.loads(exported)["judgement"]))
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    _qprof("report", "--state-dir", str(state), "-o", str(md), "--html", str(page))
    for shown in (md.read_text(), page.read_text()):
        assert seg["text"] in shown and f"{want['words']}: {want['vu_estimate']}" in shown

    from qprof.tui.sources.consensus import coverage_rows, evaluate_store, load_profile_info

    info = load_profile_info("qanum")
    evaluation = evaluate_store(state / "qprof.db", info, "liboqs")
    row = next(r for r in coverage_rows(evaluation, info, [], "liboqs") if r.suite == STEPPED)
    assert (row.vu_estimate, list(row.vu_ci or ()), row.state, row.segment) == (
        want["vu_estimate"], want["vu_ci_95"], want["state"], seg["text"])

    daemon = DaemonProc(tmp_path, *NO_CYCLE, "--profile", "qanum", state_dir=state)
    try:
        daemon.wait_log("metrics: http")
        scraped = daemon.scrape()
    finally:
        daemon.stop()
    labels = f'backend="liboqs",cpu="1",suite="{STEPPED}"'

    def gauge(name: str) -> float:
        m = re.search(rf"^{name}{{{labels}}} (\S+)$", scraped, re.M)
        assert m, f"{name} not scraped"
        return float(m.group(1))

    assert gauge("qprof_vu_estimate") == want["vu_estimate"]
    assert gauge("qprof_vu_segment_estimate") == seg["estimate"]
    assert [gauge("qprof_vu_segment_ci_low"), gauge("qprof_vu_segment_ci_high")] == \
        seg["ci_95"]


@pytest.mark.fresh
@pytest.mark.slow
def test_checks_are_kept(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Three checks in a new HOME without -o: history, trend and report see a series of
    three runs."""
    from qprof.verify import backend_status

    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_STATE_HOME": str(home / ".local" / "state"),
           # Keys and pools signed once for the test session, as test_check_e2e does.
           "QPROF_CACHE_DIR": str(tmp_path_factory.getbasetemp() / "qprof-cache")}
    cpu = str(max(os.sched_getaffinity(0)))
    backend = (["--backend", "liboqs"] if backend_status("liboqs").available
               else ["--backend", "numba", "--comparison"])
    for _ in range(3):
        done = _qprof("check", "--profile", "qanum", "--cpus", cpu, *backend, "--budget",
                      "0.03", "--max-rounds", "3", "--time-limit", "10", "-q", env=env)
        assert done.returncode in (0, 1, 3, 4), done.stderr
    state = home / ".local" / "state" / "qprof"
    history = json.loads(_qprof("history", "--json", env=env).stdout)
    assert len(history["runs"]) == 3
    suites = history["judgement"]["suites"]
    assert {s["series_runs"] for s in suites} == {3}, suites
    trend = json.loads(_qprof("trend", "--json", env=env).stdout)
    assert [s["runs"] for s in trend["series"]] == [3]
    report = _qprof("report", env=env).stdout
    assert "3 runs" in report or "runs 1-3 of 3" in report
    assert (state / "monitor.db").exists()


def test_nothing_outside_consensus_decides_a_verdict() -> None:
    """The verdict's makers (coverage, evaluate, the policy, the segments in place of a
    run's figures) are called in consensus alone: every view takes the judgement."""
    makers = {"coverage", "evaluate", "apply_policy", "with_segments", "current_segments",
              "overall_decision", "undecided_where_mismatched"}
    offenders = []
    for package in ("report", "service", "tui", "commands"):  # the layers above consensus
        for path in (REPO / "qprof" / package).rglob("*.py"):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                        "qprof.consensus"):
                    offenders += [f"{path.name}: {a.name}" for a in node.names
                                  if a.name in makers]
            # Module-level functions that would decide one again.
            offenders += [f"{path.name}: def {n.name}" for n in tree.body
                          if isinstance(n, ast.FunctionDef)
                          and n.name in ("summarize", "evaluate_measurements")]
    assert offenders == []
