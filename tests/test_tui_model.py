"""The monitor's data layer without a terminal: formatting, load, coverage, report."""

from __future__ import annotations

from pathlib import Path

import pytest
from faults import EVIL, _assert_inert
from gen_run import HOSTILE, assert_plain, svgs_are_xml
from test_tui_helpers import seed_store

from qprof.consensus.judgement import VERIFY_OPERATIONS, judge
from qprof.hw.load import read_proc_stat
from qprof.measure.units import fmt_ns
from qprof.service.store import Store
from qprof.tui.model import CoreView, cpu_ranges, fmt_cap, fmt_covered
from qprof.tui.sources.consensus import (
    core_costs,
    coverage_rows,
    evaluation_of,
    load_profile_info,
)
from qprof.tui.sources.hardware import ClusterFacts
from qprof.tui.sources.load import LoadSource
from qprof.tui.widgets.freq_history import sparkline


def test_formatting() -> None:
    assert fmt_ns(190_750) == "190.8 µs"
    assert fmt_ns(3_005_000) == "3.00 ms"
    assert fmt_ns(1_257_000_000) == "1,257 ms"
    assert fmt_ns(None, missing="—") == "—"
    assert fmt_ns(3_095_400, "µs") == "3,095"
    assert cpu_ranges([0, 1, 2, 3, 6]) == "0-3,6"
    assert fmt_covered(True).startswith("✓") and fmt_covered(False).startswith("✗")
    assert fmt_covered(None) == "not measured yet"
    # The unit suite on a core where nothing binds: its own words, no side (issue 52).
    assert fmt_covered(True, decision="covered", binds=False, unit=True) == "the unit suite"
    assert fmt_covered(True, decision="covered", binds=False) == "not binding here (within)"
    core = CoreView(cpu=6, online=True, cluster=1, design="Cortex-A77", part=None,
                    core_class="performance", governor="schedutil", cur_khz=1_075_200,
                    max_khz=1_075_200, hw_max_khz=2_419_200, capped=True, cap_factor=2.25,
                    cap_cause="policy")
    assert fmt_cap(core) == "⚠ cap ×2.25 policy"  # text, not colour


def test_sparkline_scales_to_hardware_max() -> None:
    assert sparkline((2_419_200, 1_075_200), 2_419_200, 10) == "█▄"
    assert sparkline((), 1, 10) == ""
    assert len(sparkline(tuple(range(1, 100)), 100, 8)) == 8


def test_load_from_proc_stat(tmp_path: Path) -> None:
    stat = tmp_path / "proc" / "stat"
    stat.parent.mkdir()
    stat.write_text("cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 10 0 10 80 0 0 0 0 0 0\n")
    source = LoadSource(tmp_path, live=True)
    assert source.sample() == {}  # first reading: nothing to compare with
    stat.write_text("cpu  40 0 10 130 0 0 0 0 0 0\ncpu0 40 0 10 130 0 0 0 0 0 0\n")
    assert source.sample() == {0: pytest.approx(37.5)}  # 30 busy of 80 jiffies
    assert LoadSource(tmp_path, live=False).sample() == {}
    assert read_proc_stat(tmp_path / "missing") is None
    assert LoadSource(tmp_path / "missing").sample() == {}


def test_coverage_from_seeded_store(tmp_path: Path) -> None:
    db = seed_store(tmp_path / "q.db")
    info = load_profile_info("qanum-2026-10-14")
    assert info.error is None
    measurements = Store(db, readonly=True).newest_run_measurements()
    evaluation = evaluation_of(judge(measurements, info.profile,
                                     operations=VERIFY_OPERATIONS), info, "liboqs")
    clusters = [ClusterFacts(0, (0, 1, 2, 3), "Cortex-A55", 1_804_800),
                ClusterFacts(1, (4, 5, 6, 7), "Cortex-A77", 2_419_200)]
    rows = {(r.suite, r.cluster): r for r in coverage_rows(evaluation, info, clusters,
                                                           "liboqs")}
    assert len(rows) == 8  # 4 suites × 2 clusters, measured or not
    assert rows[("ML-DSA-87", 0)].vu_estimate == 286 and rows[("ML-DSA-87", 0)].covered
    slh = rows[("SLH-DSA-SHAKE-128s", 0)]
    assert (slh.vu_estimate, slh.vu_constant, slh.covered, slh.margin) == (1576, 1200, False,
                                                                          -376)
    assert rows[("SLH-DSA-SHAKE-256s", 0)].margin == 8
    # Bound by the auth bytes: 802 ML-DSA-44 spends of 3,739 bytes (2,000 by VU alone).
    assert rows[("ML-DSA-44", 0)].worst_block_ns == pytest.approx(802 * 190_750)
    gold = rows[("ML-DSA-87", 1)]
    assert gold.covered is None and gold.note == "not measured yet"
    costs = core_costs(evaluation)
    assert costs[2][1]["SLH-DSA-SHAKE-256s"] == 3492
    # One round, no samples: the ML-DSA rounds cannot disagree, so `qprof check` (and
    # the monitor) use the median, and say so.
    assert costs[2][2] == "median" and slh.statistic == "median"


def test_bad_profile_is_reported_not_raised() -> None:
    info = load_profile_info("no-such-profile")
    assert info.profile is None and "no-such-profile" in (info.error or "")
    assert coverage_rows(None, info, [], "liboqs") == ()


def test_broken_store_and_profile_are_shown_not_raised(tmp_path: Path) -> None:
    from test_tui_helpers import BIG_LITTLE, fixture_root, frozen_config

    from qprof.tui.collect import Collector

    bad = tmp_path / "bad.db"
    bad.write_text("not a database")
    frame = Collector(frozen_config(fixture_root(BIG_LITTLE), store=bad)).frame()
    assert any("cannot open store" in p for p in frame.machine.problems)
    assert len(frame.coverage) == 8 and all(r.covered is None for r in frame.coverage)
    frame = Collector(frozen_config(fixture_root(BIG_LITTLE), profile="nope")).frame()
    assert frame.machine.profile == "nope (not loaded)" and frame.coverage == ()
    assert len(frame.cores) == 8  # the hardware view still works


def test_live_root_cap_edges_become_alerts_and_history(tmp_path: Path) -> None:
    """A copy of the big.LITTLE root treated as live: lifting the Gold cap and putting it
    back shows in the frequency history and as cap_ended / cap_started alerts."""
    import shutil

    from test_tui_helpers import BIG_LITTLE, fixture_root, frozen_config

    from qprof.tui.collect import Collector

    root = tmp_path / "machine"
    shutil.copytree(fixture_root(BIG_LITTLE), root, symlinks=True)
    gold = root / "sys/devices/system/cpu/cpu6/cpufreq"
    if not (gold / "scaling_max_freq").exists():
        pytest.skip("fixture layout changed: no per-CPU cpufreq directory for CPU 6")
    # Every edge counts at once here (the frozen clock stands still; hysteresis is the
    # tracker's, tested in test_service_alerts / test_service_watch).
    collector = Collector(frozen_config(root, live=True, cap_samples=1, cap_hold_s=0.0))
    first = collector.frame()
    assert first.cores[6].capped is True and first.alerts == ()
    for name in ("scaling_max_freq", "scaling_cur_freq"):
        (gold / name).write_text("2419200\n")
    second = collector.frame()
    assert second.cores[6].capped is False
    assert [a.kind for a in second.alerts] == ["cap_ended"]
    (gold / "scaling_max_freq").write_text("1080000\n")
    (gold / "scaling_cur_freq").write_text("1080000\n")
    third = collector.frame()
    assert [a.kind for a in third.alerts][:1] == ["cap_started"]
    assert "×2.24" in third.alerts[0].message and third.alerts[0].where == "CPUs 6-7"
    gold_history = next(h for h in third.history if h.cluster == 1)
    assert gold_history.samples_khz == (1_080_000, 2_419_200, 1_080_000)


def _noisy_store(path: Path) -> Path:
    """One simulated check run on CPU 0 of a shared host (tests/simulate.py, shape "host":
    contention spells a quarter of the time, slow drift): round medians jump, so the median
    rule is off by ~100 bp for SLH-DSA while the quiet-turn pairs hold the truth."""
    import simulate

    from qprof.measure.records import End, Meta

    run = simulate.simulate_run(simulate.SHAPES_BY_NAME["host"], 2, simulate.Config(cpu=0))
    store = Store(path)
    store.add(Meta(run_id=simulate.RUN_ID, started_at=simulate.EPOCH, qprof_version="test",
                   command=["qprof", "check"], profile="qanum"))
    for m in run.measurements:
        store.add(m)
    store.add(End(run_id=simulate.RUN_ID, finished_at=simulate.EPOCH + 60, status="finished"))
    store.close()
    return path


def test_coverage_agrees_with_qprof_check_on_a_noisy_host(tmp_path: Path) -> None:
    """The monitor's panel is `qprof check`'s verdict (statistic auto), not the median
    rule, and says which statistic it used: the two never contradict each other."""
    from qprof.consensus import load_profile
    from qprof.consensus.verdict import evaluate

    db = _noisy_store(tmp_path / "q.db")
    measurements = Store(db, readonly=True).newest_run_measurements()
    check = {r.suite: r for r in evaluate(load_profile("qanum"), measurements,
                                          statistic="auto")}
    by_median = {r.suite: r for r in evaluate(load_profile("qanum"), measurements,
                                              statistic="median")}
    assert {r.statistic for r in check.values()} == {"paired"}
    # The case that matters: the median rule would say something else.
    assert any(by_median[s].vu_estimate != r.vu_estimate for s, r in check.items())

    info = load_profile_info("qanum")
    evaluation = evaluation_of(judge(measurements, info.profile,
                                     operations=VERIFY_OPERATIONS), info, "liboqs")
    rows = {r.suite: r for r in coverage_rows(
        evaluation, info, [ClusterFacts(0, (0, 1), "Zen 3", None)], "liboqs")}
    for suite, r in check.items():
        row = rows[suite]
        assert (row.vu_estimate, row.covered, row.margin) == (r.vu_estimate, r.covered,
                                                              r.margin), suite
        assert row.statistic == r.statistic == "paired"
        assert row.time_ns == pytest.approx(r.suite_time_ns)  # the figure compared
    costs = core_costs(evaluation)
    assert costs[0][2] == "paired"
    assert costs[0][1] == {s: r.vu_estimate for s, r in check.items()}
    # And through the collector, as the app shows it (evaluated off the 1 Hz path).
    from test_tui_helpers import THIS_VM, fixture_root, frozen_config

    from qprof.tui.collect import Collector
    from qprof.tui.widgets.coverage_panel import statistic_line

    collector = Collector(frozen_config(fixture_root(THIS_VM), store=db, profile="qanum"))
    before = collector.frame()
    assert all(r.note == "evaluating…" for r in before.coverage)  # never a stale verdict
    collector.evaluate_now()
    frame = collector.frame()
    shown = {r.suite: r for r in frame.coverage}
    assert {s: shown[s].vu_estimate for s in check} == {
        s: r.vu_estimate for s, r in check.items()}
    assert frame.cores[0].statistic == "paired"
    assert statistic_line(frame.coverage).startswith(
        "Stat as `qprof check`: paired on CPU 0: interleaved turns; the host was contended")
    # The app evaluates in a child process (a thread would hold the UI's GIL for
    # seconds): the same verdict comes back.
    from qprof.tui.sources.consensus import evaluate_store, evaluate_store_in_child

    child = evaluate_store_in_child(db, info, "liboqs")
    assert child.error is None
    # Typed results survive the JSON trip (the policy's block time with them); both read
    # what each CPU is from the same root.
    assert child.results == evaluate_store(db, info, "liboqs").results


def test_clock_estimate_only_without_any_frequency_reading() -> None:
    """A live machine without cpufreq (this VM's fixture read as live) asks for a one-off
    estimate of each online CPU; a machine with cpufreq and a snapshot never do."""
    from test_tui_helpers import BIG_LITTLE, THIS_VM, fixture_root, frozen_config

    from qprof.tui.collect import Collector
    from qprof.tui.sources.hardware import estimate_clocks

    assert Collector(frozen_config(fixture_root(THIS_VM), live=True)).cpus_to_estimate() \
        == [0, 1]
    assert Collector(frozen_config(fixture_root(THIS_VM))).cpus_to_estimate() == []
    assert Collector(frozen_config(fixture_root(BIG_LITTLE), live=True)).cpus_to_estimate() \
        == []
    collector = Collector(frozen_config(fixture_root(THIS_VM), live=True))
    collector.estimated_khz = {0: 3_190_000}
    assert collector.cpus_to_estimate() == []  # once
    assert collector.frame().cores[0].est_khz == 3_190_000
    from qprof.tui.widgets.core_table import core_cells

    assert core_cells(collector.frame().cores[0], ())[5] == "~3.19 est"
    assert estimate_clocks([]) == ({}, [])


def test_clock_estimate_of_this_machine_runs_in_a_child() -> None:
    from qprof.tui.sources.hardware import estimate_clocks

    khz, problems = estimate_clocks([0])
    if not khz:
        assert problems  # numba missing or CPU 0 not allowed: said, not raised
        return
    assert set(khz) == {0} and 100_000 < khz[0] < 10_000_000  # 0.1-10 GHz


def test_a_helper_child_is_killed_when_the_monitor_quits() -> None:
    """`q` sets the stop event: a child still evaluating is killed, not waited for (thread
    workers are not daemon threads; the process would outlive the UI)."""
    import threading

    from qprof.measure.child.launch import ChildStopped
    from qprof.tui.sources.hardware import estimate_clocks

    stop = threading.Event()
    stop.set()
    with pytest.raises(ChildStopped):
        estimate_clocks([0] * 300, stop)


def test_5_monitor_export_and_log_lines(tmp_path: Path) -> None:
    import logging

    from qprof.service.journal import JournalFormatter, LineFormatter
    from qprof.tui.model import ClusterHistory, CoverageView, Frame, MachineView
    from qprof.tui.report import write_report

    frame = Frame(
        taken_at=1e9,
        machine=MachineView(model=HOSTILE, designs=HOSTILE, arch=HOSTILE, profile=HOSTILE,
                            backend=HOSTILE, source=HOSTILE, measurable=True,
                            problems=(HOSTILE,)),
        cores=(),
        coverage=(CoverageView(suite=HOSTILE, where=HOSTILE, cluster=0, cpu=0,
                               backend="liboqs", time_ns=1e5, vu_estimate=1614,
                               vu_constant=1600, margin=-14, covered=None, note=HOSTILE,
                               statistic="paired", vu_median_rule=1600, basis="node",
                               decision="unsure", vu_ci=(1583, 1640), ratio_binds=True,
                               worst_block_ns=2e9),),
        history=(ClusterHistory(cluster=0, label=HOSTILE, samples_khz=(2_000_000,) * 3,
                                max_khz=2_000_000),),
        alerts=(),
    )
    md = write_report(frame, tmp_path, HOSTILE, 75.0)
    assert_plain(md.read_text(), "monitor export Markdown")
    html = md.with_suffix(".html").read_text()
    assert_plain(html, "monitor export HTML")
    assert svgs_are_xml(html) >= 2
    record = logging.LogRecord("qprof.daemon", logging.WARNING, __file__, 1,
                               "alert %s: %s", ("kind", HOSTILE), None)
    for formatter in (JournalFormatter(), LineFormatter("%(levelname)s %(message)s")):
        line = formatter.format(record)
        assert "\n" not in line and len(line) <= 2100
        assert_plain(line, type(formatter).__name__)


def test_6_monitor_export_escapes_every_string(tmp_path: Path) -> None:
    from qprof.tui.model import (
        AlertView,
        ClusterHistory,
        CoreView,
        CoverageView,
        Frame,
        MachineView,
    )
    from qprof.tui.report import write_report

    frame = Frame(
        taken_at=1e9,
        machine=MachineView(model=EVIL, designs=EVIL, arch=EVIL, profile=EVIL, backend=EVIL,
                            source=EVIL, measurable=False, problems=(EVIL,)),
        cores=(CoreView(cpu=0, online=True, cluster=0, design=EVIL, part=EVIL, core_class=EVIL,
                        governor=EVIL, cur_khz=None, max_khz=None, hw_max_khz=None,
                        capped=None, cap_factor=None, cap_cause=EVIL,
                        times_ns={EVIL: 1e5}, statistic=EVIL),),
        coverage=(CoverageView(suite=EVIL, where=EVIL, cluster=0, cpu=0, backend=EVIL,
                               time_ns=1e5, vu_estimate=100, vu_constant=100, margin=0,
                               covered=True, note=EVIL, statistic="paired",
                               statistic_why=EVIL, basis="comparison", basis_label=EVIL),),
        history=(ClusterHistory(cluster=0, label=EVIL, samples_khz=(), max_khz=None),),
        alerts=(AlertView(ts=1e9, kind=EVIL, severity="warning", where=EVIL, message=EVIL),),
        coverage_note=EVIL,
    )
    path = write_report(frame, tmp_path, EVIL)
    _assert_inert(path.read_text())
