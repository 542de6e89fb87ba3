"""Per-core table: design, class, governor, frequencies with cap marker, load, costs."""

from __future__ import annotations

from textual.widgets import DataTable

from qprof.measure.units import fmt_ns
from qprof.tui.fit import column_widths, fitting
from qprof.tui.model import (
    UNKNOWN,
    CoreView,
    bare_design,
    fmt_cap,
    fmt_ghz,
    fmt_pct,
    fmt_stat,
)

# "Stat": the statistic `qprof check` compared on that core (paired for interleaved rounds,
# med for rounds timed one suite after the other).
BASE_COLUMNS = ("CPU", "Cl", "Design", "Class", "Governor", "Cur GHz", "Max GHz", "Cap",
                "Load", "Stat")
CLASS_SHORT = {"performance": "perf", "efficiency": "eff", "prime": "prime"}


def short_suite(suite: str) -> str:
    """'SLH-DSA-SHAKE-128s' -> 'SLH-128s' (column headers at 80 columns)."""
    return suite.replace("SLH-DSA-SHAKE-", "SLH-").replace("SLH-DSA-", "SLH-")


def core_cells(core: CoreView, suites: tuple[str, ...]) -> tuple[str, ...]:
    design = bare_design(core.design) or core.part or UNKNOWN
    if core.online is False:
        return (str(core.cpu), _opt(core.cluster), design, "offline", "", "", "", "", "",
                "", *("" for _ in suites), core.part or "")
    cur = fmt_ghz(core.cur_khz)
    if core.estimated and core.cur_khz is not None:
        cur = "~" + cur  # from /proc/cpuinfo, not cpufreq
    elif core.cur_khz is None and core.est_khz is not None:
        cur = f"~{fmt_ghz(core.est_khz)} est"  # timed once at start: no cpufreq here
    max_ghz = fmt_ghz(core.max_khz)
    if core.capped and core.hw_max_khz:
        max_ghz = f"{max_ghz}/{fmt_ghz(core.hw_max_khz)}"
    costs = []
    for suite in suites:
        median = core.times_ns.get(suite)
        vu = core.vu.get(suite)
        costs.append("—" if median is None else
                     fmt_ns(median, "µs") + (f" ({vu})" if vu is not None else ""))
    return (
        str(core.cpu),
        _opt(core.cluster),
        design,
        CLASS_SHORT.get(core.core_class or "", core.core_class or UNKNOWN),
        core.governor or "—",
        cur,
        max_ghz,
        fmt_cap(core),
        fmt_pct(core.load_pct),
        fmt_stat(core.statistic),
        *costs,
        core.part or "",
    )


def _opt(value: int | None) -> str:
    return UNKNOWN if value is None else str(value)


def drop_order(suites: int) -> list[int]:
    """The per-core table's columns, the least needed first: the part, governor, load and
    class, then the suites' costs from the last (the coverage panel shows them too), the
    clocks, statistic and cluster; CPU, design and cap stay longest."""
    first_cost = len(BASE_COLUMNS)
    return [first_cost + suites, 4, 8, 3, *range(first_cost + suites - 1, first_cost - 1, -1),
            5, 9, 1, 6, 7, 2]


class CoreTable(DataTable):
    """One row per CPU; cells are updated in place so the cursor stays put. Only the
    columns that fit whole are shown (:mod:`qprof.tui.fit`)."""

    DEFAULT_CSS = """
    CoreTable { height: auto; max-height: 50%; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)  # type: ignore[arg-type]
        self._suites: tuple[str, ...] | None = None
        self._cpus: tuple[int, ...] = ()
        self._shown: tuple[tuple[int, int], ...] = ()  # (column, width) shown
        self._cells: dict[int, tuple[str, ...]] = {}
        self._last: tuple[tuple[CoreView, ...], tuple[str, ...]] | None = None

    def on_resize(self) -> None:
        if self._last is not None:
            self.show(*self._last)

    def _fit(self, labels: tuple[str, ...], rows: list[tuple[str, ...]], suites: int
             ) -> tuple[tuple[int, int], ...]:
        """(column, width) of the columns that fit whole, widths set (not re-measured)."""
        room = (self.size.width or self.app.size.width) - 2  # the vertical scrollbar
        widths = column_widths(labels, rows)
        return tuple((i, widths[i]) for i in fitting(widths, drop_order(suites), room))

    def show(self, cores: tuple[CoreView, ...], suites: tuple[str, ...]) -> None:
        self._last = (cores, suites)
        cpus = tuple(c.cpu for c in cores)
        labels = (*BASE_COLUMNS, *(f"{short_suite(s)} µs (VU)" for s in suites), "Part")
        every = {c.cpu: core_cells(c, suites) for c in cores}
        shown = self._fit(labels, list(every.values()), len(suites))
        if suites != self._suites or cpus != self._cpus or shown != self._shown:
            self._rebuild(cores, suites, labels, every, shown)
            return
        for core in cores:  # same columns, same widths: cells updated in place
            cells = tuple(every[core.cpu][i] for i, _w in shown)
            old = self._cells.get(core.cpu)
            if cells == old:
                continue
            for i, (new, was) in enumerate(zip(cells, old or (), strict=False)):
                if new != was:
                    self.update_cell(str(core.cpu), self._column_keys[i], new)
            self._cells[core.cpu] = cells

    def _rebuild(self, cores: tuple[CoreView, ...], suites: tuple[str, ...],
                 labels: tuple[str, ...], every: dict[int, tuple[str, ...]],
                 shown: tuple[tuple[int, int], ...]) -> None:
        row = self.cursor_row
        self.clear(columns=True)
        self._column_keys = [self.add_column(labels[i], key=f"c{n}", width=width)
                             for n, (i, width) in enumerate(shown)]
        self._cells = {}
        for core in cores:
            cells = tuple(every[core.cpu][i] for i, _w in shown)
            self.add_row(*cells, key=str(core.cpu))
            self._cells[core.cpu] = cells
        self._suites, self._cpus, self._shown = suites, tuple(c.cpu for c in cores), shown
        if cores:
            self.move_cursor(row=min(max(row, 0), len(cores) - 1))

    def selected_cpu(self) -> int | None:
        if not self._cpus:
            return None
        row = min(max(self.cursor_row, 0), len(self._cpus) - 1)
        return self._cpus[row]
