"""A clock that changes during a run: marked, left out of the estimate, raised by the daemon.

Simulated runs (tests/simulate.py) pin the rule on known shapes; one end-to-end run times
real verifiers while the test rewrites ``scaling_max_freq`` of a copy of the seeds' arm
machine under the running engine, then hands the run to the daemon's cycle.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path

import pytest
import simulate

from qprof.consensus import load_profile
from qprof.consensus.estimate.clock import clock_changes, steady_measurements
from qprof.consensus.verdict import evaluate
from qprof.measure.records import FreqSample, Measurement, Note, Record
from qprof.service import cycle
from qprof.service.alerts import Alert, AlertDispatcher
from qprof.service.config import DaemonConfig
from qprof.service.cycle import CycleRunner
from qprof.service.metrics import MetricsState
from qprof.service.store import Store

UNIT = "ML-DSA-44"


@pytest.mark.parametrize("name", ["quiet", "bursts", "heavy", "drift", "host"])
def test_contention_and_drift_are_not_clock_changes(name: str) -> None:
    for seed in range(6):
        run = simulate.simulate_run(simulate.SHAPES_BY_NAME[name], seed)
        assert clock_changes(run.measurements, UNIT) == [], (name, seed)


def test_a_cap_seen_by_cpufreq_leaves_its_rounds_out() -> None:
    run = simulate.simulate_run(simulate.SHAPES_BY_NAME["cap"], 3)
    [change] = clock_changes(run.measurements, UNIT)
    assert (change.source, change.kind, change.factor) == ("cpufreq", "cap_change", 1.5)
    assert change.decided and len(change.kept_rounds) >= 3
    assert set(change.changed_rounds).isdisjoint(change.kept_rounds)
    kept, _ = steady_measurements(run.measurements, UNIT)
    assert {m.round for m in kept} == set(change.kept_rounds)
    assert "left out of the estimate" in change.text()


def test_a_vm_clock_step_is_found_from_the_unit_suite() -> None:
    run = simulate.simulate_run(simulate.SHAPES_BY_NAME["vm-step"], 3)
    assert all(m.capped is None for m in run.measurements)  # no cpufreq to tell
    [change] = clock_changes(run.measurements, UNIT)
    assert (change.source, change.kind, change.backend) == ("unit_speed", "clock_change",
                                                             "liboqs")
    assert abs(change.factor - 1.5) < 0.05 and change.decided
    assert "probable clock change" in change.text()


def test_too_few_rounds_at_one_clock_keeps_every_round_and_says_so() -> None:
    cfg = simulate.Config(rounds=4)
    run = simulate.simulate_run(simulate.SHAPES_BY_NAME["cap"], 1, cfg)
    [change] = clock_changes(run.measurements, UNIT)
    assert not change.decided
    kept, _ = steady_measurements(run.measurements, UNIT)
    assert kept == run.measurements
    assert "could not leave the change out" in change.text()


@pytest.mark.fresh
def test_a_cap_that_starts_under_the_running_engine(seeds: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Real workers on this machine; the frequency files are a copy of the seeds' arm
    machine, whose CPU 1 (Silver, 1.80 GHz) the test caps to 0.90 GHz once round 4 began."""
    from qprof.measure.config import BenchConfig
    from qprof.measure.engine import run_bench
    from qprof.verify import available_backends

    st = available_backends()
    backend = next((b for b in ("liboqs", "rustcrypto") if st[b].available), None)
    if backend is None:
        pytest.skip("neither liboqs nor rustcrypto available: " + st["liboqs"].reason)
    cpu = 1
    if cpu not in os.sched_getaffinity(0):
        pytest.skip("CPU 1 is not available to this process")
    monkeypatch.setenv("QPROF_CACHE_DIR", str(tmp_path / "cache"))
    # CPUs 0-5 share one frequency policy (on the device their cpufreq directories are
    # links to one policy directory; the copy has one file per CPU).
    policy = [seeds / f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_max_freq"
              for c in range(6)]
    assert {f.read_text().strip() for f in policy} == {"1804800"}

    alerts: list[Alert] = []
    profile = load_profile("qanum")
    runner = CycleRunner(DaemonConfig(root=seeds), Store(tmp_path / "qprof.db"),
                         AlertDispatcher([alerts.append]), MetricsState(profile=profile),
                         backend, capped_now=dict, online_now=lambda c: True)
    records: list[Record] = []
    sink = runner._sink

    def watch_and_cap(record: Record) -> None:
        # The frequency sampler reports each round as it starts: cap the CPU in round 4.
        if isinstance(record, FreqSample) and record.round == 3 and not record.capped:
            for f in policy:
                f.write_text("902400\n")
        records.append(record)
        sink(record)

    runner._sink = watch_and_cap  # type: ignore[method-assign]

    def short_run(config: BenchConfig, sink, stop=None, rule=None):  # the daemon's, shorter
        config = dataclasses.replace(config, suites=[UNIT, "ML-DSA-87"], budget_s=0.02,
                                     rounds=8, max_rounds=8, adaptive=False)
        return run_bench(config, sink, stop=stop, rule=rule)

    monkeypatch.setattr(cycle, "run_bench", short_run)
    status = runner._measure_cpu(cpu, threading.Event())
    assert status == "finished"
    caps = {m.round: m.capped for m in records if isinstance(m, Measurement)}
    assert [caps[r] for r in range(3)] == [False, False, False]
    assert all(caps[r] for r in range(4, 8))
    # The engine's note says which rounds, and that the estimate leaves them out.
    [note] = [r for r in records if isinstance(r, Note) and r.kind == "cap_change"]
    assert "x2.00" in note.text and "left out of the estimate" in note.text
    ms = [m for m in records if isinstance(m, Measurement)]
    [change] = clock_changes(ms, UNIT)
    results = evaluate(profile, ms, statistic="median")
    assert {r.estimate.rounds for r in results} == {len(change.kept_rounds)}
    # The daemon: result_skewed with the factor and the rounds left out.
    [skew] = [a for a in alerts if a.kind == "result_skewed"]
    assert skew.cpu == cpu and skew.details["factor"] == 2.0
    [detail] = skew.details["clock_changes"]
    assert detail["source"] == "cpufreq" and detail["left_out"]
    assert set(detail["rounds_left_out"]) == set(range(8)) - set(change.kept_rounds)


def test_the_daemon_raises_a_vm_clock_step_as_result_skewed(tmp_path: Path) -> None:
    from qprof.measure.records import End, Meta

    alerts: list[Alert] = []
    runner = CycleRunner(DaemonConfig(), Store(tmp_path / "qprof.db"),
                         AlertDispatcher([alerts.append]),
                         MetricsState(profile=load_profile("qanum")), "liboqs",
                         capped_now=dict, online_now=lambda c: True)
    run = simulate.simulate_run(simulate.SHAPES_BY_NAME["vm-step"], 3)
    runner._sink(Meta(run_id=simulate.RUN_ID, started_at=simulate.EPOCH, qprof_version="t",
                      command=[]))
    for rec in run.records:
        runner._sink(rec)
    runner._sink(End(run_id=simulate.RUN_ID, finished_at=simulate.EPOCH + 10,
                     status="finished"))
    runner._check_skew(1, {}, simulate.RUN_ID)
    [skew] = alerts
    assert skew.kind == "result_skewed" and abs(skew.details["factor"] - 1.5) < 0.05
    [detail] = skew.details["clock_changes"]
    assert detail["source"] == "unit_speed" and detail["left_out"]
    assert "probable clock change" in skew.message
