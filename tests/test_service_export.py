"""`qprof export` and `qprof history` in-process over a real store file."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pytest

from qprof.commands import export as export_cmd
from qprof.commands import history as history_cmd
from qprof.measure.records import End, Measurement, Meta
from qprof.measure.records_parts import CpuRow
from qprof.service.config import DaemonConfig
from qprof.service.daemon import Daemon
from qprof.service.store import Store


def _args(module: object, *argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    module.add_parser(p)  # type: ignore[attr-defined]
    return p.parse_args(list(argv))


def _store(state: Path) -> Store:
    store = Store(state / "qprof.db")
    for run_id, t, status in (("done", 1000.0, "finished"), ("cut", 2000.0, None)):
        store.add(Meta(run_id=run_id, started_at=t, qprof_version="t", command=[],
                       cpus=[CpuRow(cpu=0)], profile="qanum"))
        if status:
            for rnd in range(3):
                for suite, ns in (("ML-DSA-44", 100_000.0), ("ML-DSA-87", 300_000.0)):
                    store.add(Measurement(run_id=run_id, cpu=0, suite=suite, backend="liboqs",
                                          operation="verify", round=rnd, n=10,
                                          median_ns=ns, p95_ns=ns, finished_at=t + 1))
            store.add(End(run_id=run_id, finished_at=t + 5, status=status))
    store.mark_unfinished_runs_aborted()  # "cut": the newest run, aborted and empty
    return store


def test_export_latest_is_the_newest_run_with_results(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    _store(tmp_path)
    assert export_cmd.run(_args(export_cmd, "latest", "--state-dir", str(tmp_path))) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {x["run_id"] for x in lines} == {"done"}
    assert export_cmd.run(_args(export_cmd, "cut", "--state-dir", str(tmp_path))) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["status"] == "aborted"


def test_history_shows_results_and_coverage(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _store(tmp_path)
    assert history_cmd.run(_args(history_cmd, "--json", "--state-dir", str(tmp_path))) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["profile"] == "qanum"
    assert [(r["suite"], r["statistic"]) for r in data["results"]] == [
        ("ML-DSA-44", "median"), ("ML-DSA-87", "median")]
    assert [(c["suite"], c["vu_estimate"], c["covered"]) for c in data["coverage"]] == [
        ("ML-DSA-44", 100, True), ("ML-DSA-87", 300, False)]
    assert history_cmd.run(_args(history_cmd, "--state-dir", str(tmp_path))) == 0
    text = capsys.readouterr().out
    assert "ML-DSA-87            liboqs   NOT covered: 300, constant 290" in text


class _OneCycle:
    current_cpu = None

    def run_cycle(self, cpus: list[int], stop: object) -> str:
        time.sleep(0.2)  # a cycle that takes a while
        return "finished"

    def burst_cpus(self) -> set[int]:
        return set()  # no change detector's alarm pending


def test_interval_is_rest_after_a_cycle_not_start_to_start(tmp_path: Path) -> None:
    d = Daemon(DaemonConfig(interval=30.0, state_dir=tmp_path))
    d.cycles = _OneCycle()  # type: ignore[assignment]
    d._cycle([0])
    # The next cycle is an interval after this one *ended*, so a cycle longer than the
    # interval is never followed by another at once.
    assert d.next_cycle >= time.time() + 30.0 - 1.0
