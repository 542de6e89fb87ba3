"""The report's model: one column per (run, CPU), and the cell formats its tables share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qprof.consensus import Profile
from qprof.consensus.estimate.reduce import Key, Reduced, reduce_measurements
from qprof.measure.jsonl import RunData
from qprof.measure.records import End
from qprof.measure.records_parts import CpuRow
from qprof.measure.units import NO_PROFILE_UNIT, fmt_ns

# ---------------------------------------------------------------- formatting


def fmt_range(red: Reduced) -> str:
    """The pooled median, or the range of round medians when they differ on display."""
    if len(red.round_medians) > 1:
        lo, hi = red.round_range
        if fmt_ns(lo) != fmt_ns(hi):
            return f"{fmt_ns(lo)}-{fmt_ns(hi)}"
    return fmt_ns(red.median_ns)


def fmt_med_p95(red: Reduced | None) -> str:
    if red is None:
        return "-"
    return f"{fmt_ns(red.median_ns)} ({fmt_ns(red.p95_ns)})"


# ---------------------------------------------------------------- model


@dataclass
class Column:
    """One measured CPU of one run."""

    run: RunData
    cpu: int
    label: str
    reduced: dict[Key, Reduced] = field(default_factory=dict)  # this CPU's only

    def get(self, suite: str, backend: str, op: str) -> Reduced | None:
        return self.reduced.get((self.cpu, suite, backend, op))

    cpu_row: CpuRow = field(default_factory=CpuRow)  # its row of the run's Meta.cpus
    end: End | None = None  # the run's end record (read once per run, not per column)


class Columns(list[Column]):
    """The report's columns, and the figures its sections share (``report.figures``:
    the estimates and verdicts each section asks for, made once)."""

    def __init__(self, cols: list[Column]) -> None:
        super().__init__(cols)
        self.figures: dict[tuple[object, ...], Any] = {}


def core_name(row: CpuRow) -> str | None:
    return row.part_name or row.uarch or None


def build_columns(runs: list[RunData]) -> Columns:
    cols = []
    many = len(runs) > 1
    for run in runs:
        # Each column holds its own CPU's reductions: a loop over a column's is then
        # linear in the run, not in the run times its CPUs (2,000 CPUs: cubic reports).
        per_cpu: dict[int, dict[Key, Reduced]] = {}
        for key, red in reduce_measurements(run.measurements).items():
            per_cpu.setdefault(key[0], {})[key] = red
        end = run.end
        rows = {row.cpu: row for row in (run.meta.cpus if run.meta else [])
                if row.cpu is not None}
        for cpu in sorted(per_cpu):
            stem = Path(run.path).stem
            label = f"{stem} CPU {cpu}" if many else f"CPU {cpu}"
            col = Column(run, cpu, label, per_cpu[cpu], rows.get(cpu, CpuRow(cpu=cpu)), end)
            name = core_name(col.cpu_row)
            if name:
                col.label += f" ({name})"
            cols.append(col)
    return Columns(cols)


def backends_of(cols: list[Column], op: str) -> list[str]:
    seen: dict[str, None] = {}
    for c in cols:
        seen.update((b, None) for (_c, _s, b, o) in c.reduced if o == op)
    return list(seen)


def suites_of(cols: list[Column], profile: Profile | None, ops: tuple[str, ...]) -> list[str]:
    present: dict[str, None] = {}
    for c in cols:
        present.update((s, None) for (_c, s, _b, o) in sorted(c.reduced) if o in ops)
    order = [s for s in (profile.suites if profile else ()) if s in present]
    return order + [s for s in present if s not in order]


def unit_of(profile: Profile | None, cols: list[Column]) -> str:
    if profile:
        return profile.unit_suite
    for c in cols:
        meta = c.run.meta
        if meta and meta.settings.unit_suite:
            return meta.settings.unit_suite
    return NO_PROFILE_UNIT.suite
