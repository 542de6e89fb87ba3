"""The monitor's data layer without a terminal: formatting, load, coverage, report."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_tui_helpers import seed_store

from qprof.service.store import Store
from qprof.tui.model import CoreView, cpu_ranges, fmt_cap, fmt_covered, fmt_duration
from qprof.tui.sources.consensus import core_costs, coverage_rows, load_profile_info
from qprof.tui.sources.hardware import ClusterFacts
from qprof.tui.sources.load import LoadSource, read_cpu_times
from qprof.tui.widgets.freq_history import sparkline


def test_formatting() -> None:
    assert fmt_duration(190_750) == "190.8 µs"
    assert fmt_duration(3_005_000) == "3.00 ms"
    assert fmt_duration(1_257_000_000) == "1.26 s"
    assert fmt_duration(None) == "—"
    assert cpu_ranges([0, 1, 2, 3, 6]) == "0-3,6"
    assert fmt_covered(True).startswith("✓") and fmt_covered(False).startswith("✗")
    assert fmt_covered(None) == "not measured yet"
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
    assert read_cpu_times(tmp_path / "missing") == {}


def test_coverage_from_seeded_store(tmp_path: Path) -> None:
    db = seed_store(tmp_path / "q.db")
    info = load_profile_info("qanum-2026-10-14")
    assert info.error is None
    measurements = Store(db, readonly=True).latest_measurements(backend="liboqs")
    clusters = [ClusterFacts(0, (0, 1, 2, 3), "Cortex-A55", 1_804_800),
                ClusterFacts(1, (4, 5, 6, 7), "Cortex-A77", 2_419_200)]
    rows = {(r.suite, r.cluster): r for r in coverage_rows(measurements, info, clusters,
                                                           "liboqs")}
    assert len(rows) == 8  # 4 suites × 2 clusters, measured or not
    assert rows[("ML-DSA-87", 0)].vu_estimate == 286 and rows[("ML-DSA-87", 0)].covered
    slh = rows[("SLH-DSA-SHAKE-128s", 0)]
    assert (slh.vu_estimate, slh.vu_constant, slh.covered, slh.margin) == (1576, 1200, False,
                                                                          -376)
    assert rows[("SLH-DSA-SHAKE-256s", 0)].margin == 8
    assert rows[("ML-DSA-44", 0)].worst_block_ns == pytest.approx(2000 * 190_750)
    gold = rows[("ML-DSA-87", 1)]
    assert gold.covered is None and gold.note == "not measured yet"
    costs = core_costs(measurements, info)
    assert costs[2][1]["SLH-DSA-SHAKE-256s"] == 3492


def test_bad_profile_is_reported_not_raised() -> None:
    info = load_profile_info("no-such-profile")
    assert info.profile is None and "no-such-profile" in (info.error or "")
    assert coverage_rows([], info, [], "liboqs") == ()


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
    collector = Collector(frozen_config(root, live=True))
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
