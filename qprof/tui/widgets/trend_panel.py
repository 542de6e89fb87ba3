"""Each suite's trend on each measured CPU (one line each): a sparkline of the stored
runs' estimates, oldest left, with a mark before the first run after each change point;
then the newest run's estimate and the current segment's (every comparable run since the
last change, the figure the verdict over time uses). Below, the newest change of each
suite, sized and explained. On a short terminal (80x24) one line instead: each suite's
newest change and its segment since. Hidden until some CPU has two runs."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from qprof.tui.model import TrendView
from qprof.tui.widgets.core_table import short_suite

BARS = "▁▂▃▄▅▆▇█"
CHANGE_MARK = "│"  # before the first run of a new segment
GAP_MARK = "·"  # an undecided run: no estimate, a gap in the series
MIN_SPARK = 8
MIN_SCALE = 0.02  # the sparkline's least range, a share of the estimate
CURRENT_STYLE = "bold"  # runs of the current segment
EARLIER_STYLE = "dim"
MARK_STYLE = "bold magenta"  # colour and a character: NO_COLOR terminals see the '│'
COMPACT_BELOW = 30  # terminal rows
TITLE = (f"Trend over the stored runs · {CHANGE_MARK} change point · {GAP_MARK} undecided "
         "run · segment = the runs since the last change")


def sparkline(view: TrendView, width: int) -> Text:
    """The newest runs that fit in ``width`` cells (a change mark takes a cell), bars
    scaled from the lowest to the highest estimate shown."""
    cells: list[tuple[int, str | None]] = []  # (run index, mark) newest first
    used = 0
    for i in range(view.runs - 1, -1, -1):
        if used >= width:
            break
        cells.append((i, None))
        used += 1
        if i in view.changes and used < width:
            cells.append((i, CHANGE_MARK))
            used += 1
    cells.reverse()
    shown = [v for i, mark in cells if mark is None and (v := view.estimates[i]) is not None]
    lo, hi = (min(shown), max(shown)) if shown else (0.0, 0.0)
    # At least MIN_SCALE of the value from the lowest bar to the highest: the runs'
    # wander (tens of bp) stays small beside a step of a percent or more.
    mid, half = (lo + hi) / 2, max(hi - lo, MIN_SCALE * (lo + hi) / 2) / 2
    lo, hi = mid - half, mid + half
    current = max(view.changes, default=0)
    out = Text()
    for i, mark in cells:
        if mark is not None:
            out.append(mark, MARK_STYLE)
            continue
        value = view.estimates[i]
        style = CURRENT_STYLE if i >= current else EARLIER_STYLE
        if value is None:
            out.append(GAP_MARK, EARLIER_STYLE)
            continue
        level = round((len(BARS) - 1) * (value - lo) / (hi - lo)) if hi > lo else 3
        out.append(BARS[level], style)
    return out


def _figure(vu: int | None, ci: tuple[int, int] | None, with_ci: bool = True) -> str:
    if vu is None:
        return "undecided"
    return f"{vu} ({ci[0]}-{ci[1]})" if ci is not None and with_ci else str(vu)


def figures_text(view: TrendView, newest_ci: bool = True) -> str:
    """'newest run 227 (226-228) · segment of 12 runs 226 (225-227)'."""
    runs = view.segment_runs
    segment = (f"segment of {runs} run{'s' if runs != 1 else ''} "
               f"{_figure(view.segment_vu, view.segment_ci)}")
    if view.segment_gaps:
        segment += f", {view.segment_gaps} undecided"
    return f"newest run {_figure(view.newest_vu, view.newest_ci, newest_ci)} · {segment}"


def _label(view: TrendView) -> str:
    return f"{short_suite(view.suite):<9.9} @{view.cpu:<2} "


def _cells(view: TrendView) -> int:
    return view.runs + len(view.changes)


def spark_width(views: tuple[TrendView, ...], width: int) -> tuple[int, bool]:
    """One sparkline width for every line (the figures start in one column), and whether
    the newest runs' intervals fit beside the figures."""
    for newest_ci in (True, False):
        room = min((width - len(_label(v)) - 1 - len(figures_text(v, newest_ci))
                    for v in views), default=0)
        if room >= MIN_SPARK or not newest_ci:
            cells = max((_cells(v) for v in views), default=0)
            return max(MIN_SPARK, min(room, cells)), newest_ci
    raise AssertionError("unreachable")


def trend_line(view: TrendView, spark: int, newest_ci: bool = True) -> Text:
    line = Text(_label(view)) + sparkline(view, spark)
    line.append(" " * (spark - min(spark, _cells(view))))  # a short series: pad
    return line + Text(" " + figures_text(view, newest_ci))


def notes(views: tuple[TrendView, ...]) -> list[str]:
    """The newest change of each suite and any alarm not yet confirmed."""
    out = []
    for v in views:
        if v.change_lines:
            more = f" ({len(v.change_lines)} changes)" if len(v.change_lines) > 1 else ""
            out.append(f"  @{v.cpu} {v.change_lines[-1]}{more}")
        if v.alarm:
            out.append(f"  @{v.cpu} {short_suite(v.suite)}: {v.alarm}")
    return out


def summary(views: tuple[TrendView, ...]) -> str:
    """The trend in one line, for a short terminal: each suite's newest change and its
    segment since; the suites without a change by name."""
    moved, steady = [], []
    for v in views:
        if not v.changes:
            steady.append(f"{short_suite(v.suite)} @{v.cpu}")
            continue
        runs = v.segment_runs
        moved.append(f"{short_suite(v.suite)} @{v.cpu} {CHANGE_MARK} {v.change_bp[-1]:+.0f} bp "
                     f"at run {v.changes[-1] + 1}, segment of {runs} run{'s' if runs != 1 else ''} "
                     f"{_figure(v.segment_vu, v.segment_ci)}")
    runs = max((v.runs for v in views), default=0)
    parts = moved + ([f"no change: {', '.join(steady)}"] if steady else [])
    return f"Trend over {runs} runs: " + "; ".join(parts)


class TrendBody(Widget):
    """The lines, laid out when drawn: the width is the one the body has then (a panel
    shown after its first figures has no width before its first layout)."""

    DEFAULT_CSS = """
    TrendBody { height: auto; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, id: str) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.views: tuple[TrendView, ...] = ()
        self.compact = False

    def set_views(self, views: tuple[TrendView, ...], compact: bool) -> None:
        if (views, compact) != (self.views, self.compact):
            self.views, self.compact = views, compact
            self.refresh(layout=True)

    def render(self) -> Text:
        if self.compact:
            return Text(summary(self.views))
        spark, newest_ci = spark_width(self.views, self.content_size.width or 78)
        lines = [trend_line(v, spark, newest_ci) for v in self.views]
        return Text("\n").join([*lines, *(Text(n) for n in notes(self.views))])


class TrendPanel(Vertical):
    DEFAULT_CSS = """
    TrendPanel { height: auto; display: none; }
    TrendPanel.-shown { display: block; }
    TrendPanel > #trend-title { height: 1; padding: 0 1; background: $panel; }
    """

    def compose(self) -> ComposeResult:
        yield Static(Text(TITLE, no_wrap=True, overflow="ellipsis"), id="trend-title")
        yield TrendBody(id="trend-body")

    def show(self, views: tuple[TrendView, ...]) -> None:
        # A short terminal (80x24) keeps its rows for the coverage table: one line.
        compact = self.app.size.height < COMPACT_BELOW
        self.set_class(any(v.runs >= 2 for v in views), "-shown")
        self.query_one("#trend-title").display = not compact
        self.query_one(TrendBody).set_views(views, compact)

    def on_resize(self) -> None:
        if (body := self.query_one(TrendBody)).views:
            self.show(body.views)  # the title and the one-line form follow the height
