"""Verify-Unit coverage: suite × cluster, estimate against constant, margin, ✓/✗.

Below the table, lines that wrap rather than being cut: why there is no verdict (a
verifier that is comparison only, and what to run), the statistic and contention, the
time bound, the worst signature, and the selected row's whole verdict."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from qprof.consensus.verdict_types import WORDS
from qprof.measure.units import fmt_ns
from qprof.tui.fit import column_widths, fitting
from qprof.tui.model import (
    CAP_MARK,
    CoverageView,
    cpu_ranges,
    fmt_covered,
    fmt_estimate,
    fmt_stat,
)
from qprof.tui.widgets.core_table import short_suite

# Cap before the worst block: at 80 columns the last column is the one cut off.
# "Verify" is the time `qprof check` compared, by the statistic "Stat" names (paired for
# interleaved rounds, the median otherwise, p10 only when asked for). "Est" is the estimate
# with its 95 % interval, as `qprof check` prints it.
COLUMNS = ("Suite", "Where", "Verify", "Stat", "Est", "Const", "Margin", "Covered", "Cap",
           "Worst block")
# Left out first where the screen is too narrow for every column whole (qprof.tui.fit);
# the suite and its verdict always stay.
DROP_ORDER = (9, 8, 3, 1, 6, 2, 5, 4)


def coverage_cells(row: CoverageView) -> tuple[str, ...]:
    if row.covered is None and row.time_ns is None:
        return (short_suite(row.suite), row.where, "—", "—", "—",
                "—" if row.vu_constant is None else str(row.vu_constant), "—",
                row.note or "not measured yet", "", "—")
    cap = ""
    if row.capped:
        cap = f"{CAP_MARK} capped" + (f" ×{row.cap_factor:.2f}" if row.cap_factor else "")
    elif row.capped is None:
        cap = "unknown"  # no cpufreq data (VMs): cannot tell
    margin = "—" if row.margin is None else f"{row.margin:+d}"
    return (
        short_suite(row.suite),
        row.where + (f" @{row.cpu}" if row.cpu is not None else ""),
        fmt_ns(row.time_ns, missing="—"),
        fmt_stat(row.statistic),
        fmt_estimate(row),
        "—" if row.vu_constant is None else str(row.vu_constant),
        margin,
        fmt_covered(row.covered, decision=row.decision, binds=row.ratio_binds,
                    unit=row.is_unit),
        cap,
        fmt_ns(row.worst_block_ns, missing="—"),
    )


def detail_line(rows: tuple[CoverageView, ...], index: int) -> str:
    """The selected row's whole verdict, as `qprof check --verbose` words it."""
    if not 0 <= index < len(rows):
        return ""
    r = rows[index]
    where = f"{r.suite} on CPU {r.cpu}" if r.cpu is not None else f"{r.suite}, {r.where}"
    return f"{where}: {r.note or 'not measured yet'}"


def block_time_line(rows: tuple[CoverageView, ...]) -> str:
    """Each measured core's time bound, as consensus decided it: 'Time bound: @1 ✓ 83.9 ms
    vs 376 ms on Silver (125 x SLH-DSA-SHAKE-128s ...)'."""
    by_cpu: dict[int, CoverageView] = {}
    for r in rows:
        if r.cpu is not None and r.block_time_ns is not None and r.basis != "comparison":
            by_cpu.setdefault(r.cpu, r)
    parts = []
    for cpu, r in sorted(by_cpu.items()):
        mark = {True: "✓", False: "✗ OVER", None: "?"}[r.block_time_covered]
        ref = (f" vs {fmt_ns(r.block_reference_ns)} on {r.block_reference_core}"
               if r.block_reference_ns is not None else "")
        parts.append(f"@{cpu} {mark} {fmt_ns(r.block_time_ns)}{ref} ({r.block_text})")
    return "Time bound, worst-case block here vs the reference core: " + "; ".join(parts) \
        if parts else ""


def statistic_line(rows: tuple[CoverageView, ...]) -> str:
    """Which statistic each measured core's verdict used, and why (as `qprof check`
    says it): 'Stat as `qprof check`: paired on CPU 0,1: …'."""
    by_cpu: dict[int, CoverageView] = {}
    for r in rows:
        if r.cpu is not None and r.statistic:
            by_cpu.setdefault(r.cpu, r)
    if not by_cpu:
        return ""
    parts = []
    # Statistics other than the plain median first: they are the news.
    stats = sorted({r.statistic for r in by_cpu.values()}, key=lambda s: (s == "median", s))
    for stat in stats:
        cpus = sorted(c for c, r in by_cpu.items() if r.statistic == stat)
        first = by_cpu[cpus[0]]
        where = "CPU " + ",".join(map(str, cpus))
        parts.append(f"{fmt_stat(stat)} on {where}: {first.statistic_why}")
    return "Stat as `qprof check`: " + "; ".join(parts)


def segment_line(rows: tuple[CoverageView, ...]) -> str:
    """The kept runs each verdict stands on, as check says it: 'Kept runs: ML-87 @1
    this machine, 22 decided runs (runs 1-22 of 22): 226 (225-227) covered'."""
    words: dict[str, str] = {str(k): v for k, v in WORDS.items()}
    parts = [f"{short_suite(r.suite)} @{r.cpu} {r.segment}: {words.get(r.state or '', '')}"
             .rstrip(": ") for r in rows if r.segment and r.cpu is not None]
    return "Kept runs: " + "; ".join(parts) if parts else ""


# The lines below the table, in order; each wraps (up to 3 rows: the CSS) and is hidden
# while empty. "verdict": why there is no verdict and what to run; "detail": the
# selected row's whole verdict.
LINES = ("verdict", "segment", "why", "time", "worst", "preflight", "detail")


class CoveragePanel(Vertical):
    DEFAULT_CSS = """
    CoveragePanel { height: 1fr; min-height: 4; }
    CoveragePanel > #coverage-title { height: auto; max-height: 3; padding: 0 1;
                                      background: $panel; }
    CoveragePanel > DataTable { height: 1fr; min-height: 2; }
    CoveragePanel > .coverage-line { height: auto; max-height: 3; padding: 0 1;
                                     display: none; }
    CoveragePanel > .coverage-line.-shown { display: block; }
    CoveragePanel > #coverage-verdict { text-style: bold; }
    CoveragePanel > #coverage-detail { color: $text-muted; }
    CoveragePanel > #coverage-preflight { max-height: 6; color: $text-muted; }
    CoveragePanel > #coverage-worst { max-height: 6; }
    """

    def compose(self) -> ComposeResult:
        yield Static("Verify-Unit coverage", id="coverage-title")
        table: DataTable = DataTable(cursor_type="row", id="coverage-table")
        yield table
        for name in LINES:
            yield Static("", id=f"coverage-{name}", classes="coverage-line")

    def on_mount(self) -> None:
        self._rows: tuple[tuple[tuple[str, ...], ...], tuple[int, ...]] | None = None
        self._views: tuple[CoverageView, ...] = ()
        self._title = ""
        self._lines: dict[str, str] = {}
        self._shown_with: tuple[tuple[CoverageView, ...], str, str, str | None, str | None,
                                tuple[str, ...], tuple[str, ...]] | None = None

    def _line(self, name: str, text: str) -> None:
        """One of :data:`LINES`: wrapped (never cut at the screen's edge), hidden empty."""
        widget = self.query_one(f"#coverage-{name}", Static)
        widget.set_class(bool(text), "-shown")
        if text != self._lines.get(name):
            self._lines[name] = text
            widget.update(Text(text, overflow="fold"))

    def on_resize(self) -> None:
        if self._shown_with is not None:  # the columns that fit whole change
            self.show(*self._shown_with)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._line("detail", detail_line(self._views, event.cursor_row))

    def show(self, rows: tuple[CoverageView, ...], profile: str, backend: str,
             note: str | None, verdict_note: str | None = None,
             preflight: tuple[str, ...] = (), worst: tuple[str, ...] = ()) -> None:
        self._shown_with = (rows, profile, backend, note, verdict_note, preflight, worst)
        title = f"Verify-Unit coverage · profile {profile} · backend {backend}"
        binding = [r for r in rows if r.ratio_binds is not False]
        covered = sum(1 for r in binding if r.covered is True)
        not_covered = sum(1 for r in binding if r.covered is False)
        unsure = sum(1 for r in binding if r.decision == "unsure")
        no_estimate = sum(1 for r in rows if r.decision == "no_estimate")
        aside = sum(1 for r in rows if r.ratio_binds is False and r.decision
                    not in (None, "comparison") and not r.is_unit)
        if covered or not_covered:
            title += f" · ✓ {covered} covered, ✗ {not_covered} NOT covered"
        if aside:
            title += f" · {aside} not binding here"
        over = sorted({r.cpu for r in rows if r.block_time_covered is False
                       and r.cpu is not None})
        if over:
            title += f" · ✗ worst-case block over the time bound on CPU {cpu_ranges(over)}"
        if unsure:
            title += f" · ? {unsure} unsure"
        if no_estimate:
            title += f" · {no_estimate} no reliable estimate"
        # Figures of a verifier no node runs alone: said once, in words, never as ✓/✗.
        for label in sorted({r.basis_label for r in rows
                             if r.basis == "comparison" and r.basis_label}):
            title += f" · {label}"
        if note:
            title += f" · {note}"
        if title != self._title:
            self._title = title
            self.query_one("#coverage-title", Static).update(Text(title))  # wraps
        self._line("verdict", verdict_note or "")
        self._line("segment", segment_line(rows))
        self._line("why", statistic_line(rows))
        self._line("time", block_time_line(rows))
        self._line("worst", "\n".join(worst))
        self._line("preflight", "\n".join(preflight))  # known answers, memory, headroom
        self._views = rows
        table = self.query_one(DataTable)
        self._line("detail", detail_line(rows, table.cursor_row))
        cells = tuple(coverage_cells(r) for r in rows)
        room = (table.size.width or self.app.size.width) - 2  # the vertical scrollbar
        widths = column_widths(COLUMNS, cells)
        shown = fitting(widths, DROP_ORDER, room)
        if (cells, shown) == self._rows:
            return
        self._rows = (cells, shown)
        row_index = table.cursor_row
        table.clear(columns=True)  # columns re-fit their content (e.g. no "not measured")
        for i in shown:
            table.add_column(COLUMNS[i], key=f"k{i}", width=widths[i])
        for i, row in enumerate(cells):
            table.add_row(*(row[c] for c in shown), key=str(i))
        if cells:
            table.move_cursor(row=min(max(row_index, 0), len(cells) - 1))
