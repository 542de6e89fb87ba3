"""Per-core table: design, class, governor, frequencies with cap marker, load, costs."""

from __future__ import annotations

from textual.widgets import DataTable

from qprof.measure.units import fmt_ns
from qprof.tui.model import (
    UNKNOWN,
    CoreView,
    bare_design,
    fmt_cap,
    fmt_ghz,
    fmt_pct,
    fmt_stat,
)

# "Stat": the statistic `qprof check` compared on that core (med, or paired on a busy host).
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


class CoreTable(DataTable):
    """One row per CPU; cells are updated in place so the cursor stays put."""

    DEFAULT_CSS = """
    CoreTable { height: auto; max-height: 50%; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)  # type: ignore[arg-type]
        self._suites: tuple[str, ...] | None = None
        self._cpus: tuple[int, ...] = ()
        self._cells: dict[int, tuple[str, ...]] = {}
        self._widths: dict[int, int] = {}  # widest text seen per column

    def show(self, cores: tuple[CoreView, ...], suites: tuple[str, ...]) -> None:
        cpus = tuple(c.cpu for c in cores)
        if suites != self._suites or cpus != self._cpus:
            self._rebuild(cores, suites)
            return
        for core in cores:
            cells = core_cells(core, suites)
            old = self._cells.get(core.cpu)
            if cells == old:
                continue
            for i, (new, was) in enumerate(zip(cells, old or (), strict=False)):
                if new != was:
                    # Re-measuring column widths relayouts the table: only when it grows.
                    self.update_cell(str(core.cpu), self._column_keys[i], new,
                                     update_width=len(new) > self._widths.get(i, 0))
                    self._widths[i] = max(self._widths.get(i, 0), len(new))
            self._cells[core.cpu] = cells

    def _rebuild(self, cores: tuple[CoreView, ...], suites: tuple[str, ...]) -> None:
        row = self.cursor_row
        self.clear(columns=True)
        labels = (*BASE_COLUMNS, *(f"{short_suite(s)} µs (VU)" for s in suites), "Part")
        self._column_keys = [self.add_column(label, key=f"c{i}")
                             for i, label in enumerate(labels)]
        self._cells = {}
        self._widths = {i: len(label) for i, label in enumerate(labels)}
        for core in cores:
            cells = core_cells(core, suites)
            self.add_row(*cells, key=str(core.cpu))
            self._cells[core.cpu] = cells
            for i, cell in enumerate(cells):
                self._widths[i] = max(self._widths[i], len(cell))
        self._suites, self._cpus = suites, tuple(c.cpu for c in cores)
        if cores:
            self.move_cursor(row=min(max(row, 0), len(cores) - 1))

    def selected_cpu(self) -> int | None:
        if not self._cpus:
            return None
        row = min(max(self.cursor_row, 0), len(self._cpus) - 1)
        return self._cpus[row]
