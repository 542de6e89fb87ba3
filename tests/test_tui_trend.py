"""The monitor's trend (issue 29): per CPU and suite, a sparkline of the stored runs'
estimates with the change points marked, the current segment's estimate beside the newest
run's. In tmux on a store of 20 runs, as a Textual snapshot of the panel, and its parts.

The store is built from the three real check runs of tests/data/runs (AMD EPYC guest,
liboqs 0.16.0, CPU 1): twenty runs in turn, each with a run id and start of its own, the
points computed from their records by the estimator (as the daemon stores them when a run
ends). From run STEP_AT on, every SLH-DSA-SHAKE-256s timing value is × (1 + STEP): a
change point. Run GAP_AT is the first four rounds of a run only: too contended to
estimate, an undecided run (a gap). The newest run's records are stored whole, so the
coverage shows its figures as `qprof check` gives them.
"""

from __future__ import annotations

import dataclasses
import json
import lzma
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from test_tui_helpers import THIS_VM, fixture_root
from test_tui_tmux import tmux, wait_for

from qprof.consensus.trend.from_records import run_points
from qprof.consensus.trend.model import RunPoint, SeriesKey
from qprof.measure.jsonl import read_run
from qprof.measure.records import End, Env, FreqSample, Measurement, Meta, Record
from qprof.service.store import Store
from qprof.tui.model import TrendView
from qprof.tui.sources.consensus import load_profile_info
from qprof.tui.sources.trend import (
    TrendResult,
    TrendState,
    evaluate_trend,
    result_from_json,
    series_to_json,
)
from qprof.tui.widgets.trend_panel import (
    CHANGE_MARK,
    GAP_MARK,
    figures_text,
    spark_width,
    sparkline,
)

pytestmark = pytest.mark.timeout(180)

RUNS = Path(__file__).parent / "data" / "runs"
RUN_COUNT = 20
STEP_AT, STEP, STEPPED = 13, 0.03, "SLH-DSA-SHAKE-256s"
GAP_AT = 5
T0 = 1_764_000_000.0  # the series' first start; one run an hour
BARS = "▁▂▃▄▅▆▇█"


def _scaled(m: Measurement, factor: float) -> Measurement:
    """Every timing value of one round × ``factor``."""
    def times(x: float | None) -> float | None:
        return None if x is None else x * factor

    return dataclasses.replace(
        m, median_ns=m.median_ns * factor, p95_ns=times(m.p95_ns), mean_ns=times(m.mean_ns),
        stdev_ns=times(m.stdev_ns), min_ns=times(m.min_ns), max_ns=times(m.max_ns),
        samples_ns=None if m.samples_ns is None else [x * factor for x in m.samples_ns])


def _stepped(records: Iterable[Record]) -> list[Record]:
    return [_scaled(r, 1 + STEP) if isinstance(r, Measurement) and r.suite == STEPPED else r
            for r in records]


def _first_rounds(records: Iterable[Record], rounds: int) -> list[Record]:
    return [r for r in records if not isinstance(r, Measurement) or r.round < rounds]


def _renamed(records: Iterable[Record], run_id: str, started_at: float) -> list[Record]:
    """The records of another run: its id and clock moved to ``started_at``."""
    records = list(records)
    meta = next(r for r in records if isinstance(r, Meta))
    shift = started_at - meta.started_at
    out: list[Record] = []
    for r in records:
        r = dataclasses.replace(r, run_id=run_id)  # type: ignore[call-arg]
        if isinstance(r, Meta):
            r = dataclasses.replace(r, started_at=r.started_at + shift)
        elif isinstance(r, End) or isinstance(r, Measurement) and r.finished_at is not None:
            r = dataclasses.replace(r, finished_at=r.finished_at + shift)
        elif isinstance(r, Env | FreqSample):
            r = dataclasses.replace(r, taken_at=r.taken_at + shift)
        out.append(r)
    return out


def _only(points: list[tuple[SeriesKey, RunPoint]]) -> tuple[SeriesKey, RunPoint]:
    assert len(points) == 1, points  # one CPU, one backend
    return points[0]


class RealSeries:
    """The three real runs, stepped and cut short, and their points (each computed once)."""

    def __init__(self, workdir: Path) -> None:
        self.records: list[list[Record]] = []
        for xz in sorted(RUNS.glob("*.jsonl.xz")):
            path = workdir / xz.name.removesuffix(".xz")
            path.write_bytes(lzma.decompress(xz.read_bytes()))
            self.records.append(read_run(path).records)
        assert len(self.records) == 3
        self.points = [_only(run_points(r)) for r in self.records]
        self.stepped = [_only(run_points(_stepped(r))) for r in self.records]
        self.gap = _only(run_points(_first_rounds(self.records[GAP_AT % 3], 4)))

    def run(self, i: int) -> tuple[list[Record], tuple[SeriesKey, RunPoint]]:
        """Run ``i`` of the series: its records and its point, with its own id and start."""
        base = i % len(self.records)
        records = self.records[base]
        point = self.points[base]
        if i == GAP_AT:
            records, point = _first_rounds(records, 4), self.gap
        elif i >= STEP_AT:
            records, point = _stepped(records), self.stepped[base]
        run_id, started = f"trend-{i:02d}", T0 + 3600 * i
        key, p = point
        return (_renamed(records, run_id, started),
                (key, dataclasses.replace(p, run_id=run_id, started_at=started)))

    def store(self, path: Path, runs: int = RUN_COUNT, whole: Iterable[int] = ()) -> Path:
        """A store of ``runs`` runs: each run's Meta and End and its stored points, as a
        daemon's store keeps them once retention has dropped the samples; the runs in
        ``whole`` (and the newest) with every record."""
        store = Store(path)
        whole = {*whole, runs - 1}
        for i in range(runs):
            records, point = self.run(i)
            for r in records:
                if i in whole or isinstance(r, Meta | End):
                    store.add(r)
            store.points.add(point[1].run_id, [point])
        store.close()
        return path


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory) -> RealSeries:
    return RealSeries(tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def store_20(series: RealSeries, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return series.store(tmp_path_factory.mktemp("store") / "qprof.db")


def _qanum_views(path: Path) -> tuple[TrendView, ...]:
    result = evaluate_trend(path, load_profile_info("qanum"), "liboqs")
    assert result.error is None, result.error
    return result.views


def _view(views: tuple[TrendView, ...], suite: str) -> TrendView:
    return next(v for v in views if v.suite == suite)


# ------------------------------------------------------------------ the figures


def test_twenty_runs_give_each_suite_its_trend(store_20: Path) -> None:
    views = _qanum_views(store_20)
    assert [(v.cpu, v.suite) for v in views] == [
        (1, "ML-DSA-87"), (1, "SLH-DSA-SHAKE-128s"), (1, "SLH-DSA-SHAKE-256s")]
    for v in views:
        assert v.runs == RUN_COUNT and v.estimates[GAP_AT] is None  # the gap, kept in place
        assert sum(e is None for e in v.estimates) == 1
        assert v.newest_vu is not None and v.newest_ci is not None
        assert v.newest_ci[0] <= v.newest_vu <= v.newest_ci[1]
        assert v.segment_ci is not None and v.segment_vu is not None
        assert v.segment_ci[0] <= v.segment_vu <= v.segment_ci[1]
    steady = _view(views, "ML-DSA-87")
    assert steady.changes == () and steady.segment_runs == RUN_COUNT - 1
    assert steady.segment_gaps == 1
    moved = _view(views, STEPPED)
    assert moved.changes == (STEP_AT,), moved
    assert moved.segment_runs == RUN_COUNT - STEP_AT and moved.segment_gaps == 0
    assert len(moved.change_lines) == 1 and "+3" in moved.change_lines[0]  # +300 bp or so
    before = [e for e in moved.estimates[:STEP_AT] if e is not None]
    after = moved.estimates[STEP_AT:]
    assert min(after) > max(before)  # type: ignore[type-var]


def test_runs_without_stored_points_are_read_from_their_records(series: RealSeries,
                                                                tmp_path: Path) -> None:
    """The monitor's own store (no daemon stored points): a run's records through the
    estimator, the same figures `qprof check` gives."""
    path = tmp_path / "monitor.db"
    store = Store(path)
    records, (_key, point) = series.run(STEP_AT)
    for r in _first_rounds(records, 8):  # eight rounds: decided, and the estimator quick
        store.add(r)
    store.close()
    views = _qanum_views(path)
    expected = _only(run_points(_first_rounds(records, 8)))[1]
    assert [(v.suite, v.runs) for v in views] == [(s.suite, 1) for s in expected.suites]
    for v, s in zip(views, expected.suites, strict=True):
        assert v.estimates == (100 * s.ratio,) and v.segment_runs == 1


def test_the_child_sends_the_consensus_s_trend_and_the_ui_draws_the_same_views(
        store_20: Path, tmp_path: Path) -> None:
    """The child's JSON is the consensus's codec (series trends, no views of its own);
    the views built from it on the UI's side are the in-process ones."""
    info = load_profile_info("qanum")
    text = series_to_json(store_20, info, "liboqs")
    assert set(json.loads(text)) == {"series"} and "change_lines" not in text
    assert result_from_json(text, info) == TrendResult(_qanum_views(store_20))
    bad = tmp_path / "qprof.db"
    bad.write_bytes(b"not a database" * 100)
    failed = result_from_json(series_to_json(bad, info, "liboqs"), info)
    assert failed.views == () and failed.error and "\n" not in failed.error
    with pytest.raises(ValueError):  # a wrong shape: the caller's one error line
        result_from_json('{"series": [{"key": 1}]}', info)


def test_broken_store_is_an_error_line_never_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "qprof.db"
    bad.write_bytes(b"not a database" * 100)
    result = evaluate_trend(bad, load_profile_info("qanum"), "liboqs")
    assert result.views == () and result.error and "\n" not in result.error


def test_state_keeps_one_child_and_the_newest_key() -> None:
    state = TrendState()
    first, second = (1.0, "liboqs", "qanum"), (2.0, "liboqs", "qanum")
    assert state.want(first) == first
    assert state.want(second) is None  # one child at a time
    following = state.done(first, TrendResult(error="x"))
    assert state.error == "x" and following == second  # the newer one next
    assert state.done(second, TrendResult()) is None and state.shown == second
    assert state.want(second) is None  # nothing new
    state.views = (_view_for_state(),)
    assert state.want((2.0, "numba", "qanum")) is not None
    assert state.views == ()  # another backend's trend is never shown


def _view_for_state() -> TrendView:
    return TrendView(cpu=1, suite="ML-DSA-87", backend="liboqs", estimates=(226.0, 227.0),
                     changes=(), change_bp=(), segment_vu=227, segment_ci=(226, 228),
                     segment_runs=2, segment_gaps=0, newest_vu=227, newest_ci=(226, 228))


# ----------------------------------------------------------------- the drawing


def test_sparkline_marks_changes_and_gaps(store_20: Path) -> None:
    moved = _view(_qanum_views(store_20), STEPPED)
    whole = sparkline(moved, 40).plain
    assert len(whole) == RUN_COUNT + 1  # every run and one change mark
    assert whole.index(CHANGE_MARK) == STEP_AT and whole[GAP_AT] == GAP_MARK
    assert set(whole[STEP_AT + 1:]) <= set("▅▆▇█")  # the step: the top of the scale
    assert set(whole[:STEP_AT]) - {GAP_MARK} <= set("▁▂▃")
    tail = sparkline(moved, 8).plain
    # The newest runs when narrow (the seven since the change and its mark), scaled anew.
    assert len(tail) == 8 and tail[0] == CHANGE_MARK
    text = figures_text(moved)
    assert text.startswith(f"newest run {moved.newest_vu} (")
    assert f"segment of {RUN_COUNT - STEP_AT} runs {moved.segment_vu} (" in text


def test_lines_fit_80_columns(store_20: Path) -> None:
    views = _qanum_views(store_20)
    spark, newest_ci = spark_width(views, 78)
    assert spark >= 8 and not newest_ci  # the newest run's interval gives way first
    spark, newest_ci = spark_width(views, 118)
    assert spark == RUN_COUNT + 1 and newest_ci


# The panel's input fixed (the figures of the 20-run store, rounded): the snapshot shows
# the drawing, not the segment statistics, which move on with the estimator.
PANEL_VIEWS = (
    TrendView(cpu=1, suite="ML-DSA-87", backend="liboqs",
              estimates=tuple(None if i == GAP_AT else (226.1, 226.7, 224.4)[i % 3]
                              for i in range(RUN_COUNT)),
              changes=(), change_bp=(), segment_vu=226, segment_ci=(226, 227),
              segment_runs=19, segment_gaps=1, newest_vu=227, newest_ci=(226, 228)),
    TrendView(cpu=1, suite="SLH-DSA-SHAKE-256s", backend="liboqs",
              estimates=tuple((9344.4, 9319.8, 9249.9)[i % 3] * (1.03 if i >= STEP_AT else 1)
                              for i in range(RUN_COUNT)),
              changes=(STEP_AT,), change_bp=(295.0,), segment_vu=9598,
              segment_ci=(9503, 9694), segment_runs=7, segment_gaps=0, newest_vu=9600,
              newest_ci=(9498, 9727),
              change_lines=("SLH-DSA-SHAKE-256s: 9321.9 -> 9597.4 VU (+295 bp, 95 % +255 to "
                            "+336) at run 13 (2025-11-25 05:00, detected): only SLH-DSA moved",)),
)


def test_panel_snapshot(snap_compare) -> None:  # noqa: ANN001
    from textual.app import App, ComposeResult

    from qprof.tui.widgets.trend_panel import TrendPanel

    class PanelApp(App[None]):
        def compose(self) -> ComposeResult:
            yield TrendPanel()

        def on_mount(self) -> None:
            self.query_one(TrendPanel).show(PANEL_VIEWS)

    assert snap_compare(PanelApp(), terminal_size=(120, 32))


# --------------------------------------------------------------------- in tmux


class Monitor:
    """`qprof monitor` on a store, in a tmux session of its own (always killed)."""

    def __init__(self, store: Path, size: tuple[int, int], tmp_path: Path) -> None:
        self.name = f"qprof-trend-{uuid.uuid4().hex[:8]}"
        root = fixture_root(THIS_VM)
        command = ["env", "-u", "COLUMNS", "-u", "LINES", f"XDG_STATE_HOME={tmp_path}",
                   "TERM=xterm-256color", sys.executable, "-m", "qprof", "monitor",
                   "--root", str(root), "--store", str(store), "--backend", "liboqs",
                   "--measure-every", "0", "--no-auto-measure"]
        tmux("new-session", "-d", "-s", self.name, "-x", str(size[0]), "-y", str(size[1]),
             " ".join(command))

    def screen(self) -> str:
        return tmux("capture-pane", "-p", "-t", self.name)

    def kill(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True,
                       timeout=10)


@pytest.fixture
def monitor(tmp_path: Path):  # noqa: ANN201
    started: list[Monitor] = []

    def start(store: Path, size: tuple[int, int]) -> Monitor:
        m = Monitor(store, size, tmp_path)
        started.append(m)
        return m

    yield start
    for m in started:
        m.kill()


def _trend_lines(screen: str) -> dict[str, str]:
    """The panel's line per suite, by its short name."""
    return {ln.split()[0]: ln for ln in screen.splitlines()
            if " @1 " in ln and "newest run" in ln}


def _shown(m: Monitor) -> Callable[[], str]:
    def trend_drawn() -> str:
        screen = m.screen()
        return screen if len(_trend_lines(screen)) == 3 else ""
    return trend_drawn


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed "
                    "(Debian package tmux)")
def test_monitor_shows_the_trend_of_20_runs_in_tmux(monitor, store_20: Path,  # noqa: ANN001
                                                    tmp_path: Path) -> None:
    store = tmp_path / "qprof.db"
    shutil.copy(store_20, store)  # the monitor may migrate or write beside it
    m = monitor(store, (140, 40))  # room for every run in the sparkline
    screen = wait_for(_shown(m), 120, "the trend panel", m.screen)
    lines = _trend_lines(screen)
    assert "Trend over the stored runs" in screen
    moved, steady = lines["SLH-256s"], lines["ML-DSA-87"]
    # The step: a change mark in the sparkline, the segment since it, its size below.
    assert CHANGE_MARK in moved and sum(c in BARS for c in moved) >= RUN_COUNT - 1, moved
    assert f"segment of {RUN_COUNT - STEP_AT} runs" in moved
    assert GAP_MARK in steady and CHANGE_MARK not in steady
    assert f"segment of {RUN_COUNT - 1} runs" in steady and "1 undecided" in steady
    assert "newest run" in steady
    size = next(ln for ln in screen.splitlines() if "SLH-DSA-SHAKE-256s:" in ln
                and " VU (+" in ln)
    assert " bp, 95 % +" in size and f"at run {STEP_AT + 1}" in size, size  # from 1
    # The coverage shows the newest run's figures meanwhile (the trend came after them).
    assert "Verify-Unit coverage" in screen and "SLH-256s" in screen


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed "
                    "(Debian package tmux)")
def test_monitor_trend_fits_80x24_in_tmux(monitor, store_20: Path,  # noqa: ANN001
                                          tmp_path: Path) -> None:
    store = tmp_path / "qprof.db"
    shutil.copy(store_20, store)
    m = monitor(store, (80, 24))

    def summary_drawn() -> str:
        screen = m.screen()
        return screen if "Trend over 20 runs:" in screen else ""

    screen = wait_for(summary_drawn, 120, "the trend line", m.screen)
    lines = screen.splitlines()
    assert len(lines) <= 24 and max(map(len, lines)) <= 80
    # A short terminal keeps its rows for the coverage: the trend in one line.
    line = next(ln for ln in lines if "Trend over 20 runs:" in ln)
    assert f"SLH-256s @1 {CHANGE_MARK} +" in line and f"bp at run {STEP_AT + 1}" in line, line
    assert "segment of 7 runs" in line
    assert "newest run" not in screen


# ------------------------------------------------------------------ qprof history


def test_history_says_each_suites_segment_and_changes(store_20: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    import argparse
    import json

    from qprof.commands import history

    shutil.copy(store_20, tmp_path / "qprof.db")
    parser = argparse.ArgumentParser()
    history.add_parser(parser)
    assert history.run(parser.parse_args(["--state-dir", str(tmp_path)])) == 0
    text = capsys.readouterr().out
    lines = text[text.index("the ratio over time"):].splitlines()
    moved = next(ln for ln in lines if "SLH-DSA-SHAKE-256s   liboqs" in ln)
    assert f"segment of runs {STEP_AT + 1}-{RUN_COUNT} of {RUN_COUNT}:" in moved  # from 1
    assert f"over {RUN_COUNT - STEP_AT} runs" in moved
    change = lines[lines.index(moved) + 1]
    assert change.strip().startswith("change: SLH-DSA-SHAKE-256s:") and " bp, 95 % +" in change
    steady = next(ln for ln in lines if "ML-DSA-87            liboqs" in ln)
    assert f"over {RUN_COUNT - 1} runs, 1 undecided" in steady
    assert history.run(parser.parse_args(["--state-dir", str(tmp_path), "--json"])) == 0
    doc = json.loads(capsys.readouterr().out)
    (series_doc,) = doc["trend"]
    suite = series_doc["suites"][STEPPED]
    assert [c["run_index"] for c in suite["changes"]] == [STEP_AT]
    assert suite["segments"][-1]["runs"] == RUN_COUNT - STEP_AT
