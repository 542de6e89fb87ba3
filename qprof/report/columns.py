"""The report's model: one column per (run, CPU), and the cell formats its tables share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qprof.consensus import Profile
from qprof.consensus.estimate.reduce import Key, Reduced, reduce_measurements
from qprof.measure.jsonl import RunData
from qprof.measure.units import fmt_ns

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


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


# ---------------------------------------------------------------- model


@dataclass
class Column:
    """One measured CPU of one run."""

    run: RunData
    cpu: int
    label: str
    reduced: dict[Key, Reduced] = field(default_factory=dict)

    def get(self, suite: str, backend: str, op: str) -> Reduced | None:
        return self.reduced.get((self.cpu, suite, backend, op))

    @property
    def cpu_row(self) -> dict[str, Any]:
        meta = self.run.meta
        for row in meta.cpus if meta else []:
            if row.get("cpu") == self.cpu:
                return row
        return {"cpu": self.cpu}


def core_name(row: dict[str, Any]) -> str | None:
    name = row.get("part_name") or row.get("uarch")
    return str(name) if name else None


def build_columns(runs: list[RunData]) -> list[Column]:
    cols = []
    many = len(runs) > 1
    for run in runs:
        reduced = reduce_measurements(run.measurements)
        for cpu in sorted({m.cpu for m in run.measurements}):
            stem = Path(run.path).stem
            label = f"{stem} CPU {cpu}" if many else f"CPU {cpu}"
            col = Column(run, cpu, label, reduced)
            name = core_name(col.cpu_row)
            if name:
                col.label += f" ({name})"
            cols.append(col)
    return cols


def backends_of(cols: list[Column], op: str) -> list[str]:
    seen: list[str] = []
    for c in cols:
        for (cpu, _s, b, o) in c.reduced:
            if cpu == c.cpu and o == op and b not in seen:
                seen.append(b)
    return seen


def suites_of(cols: list[Column], profile: Profile | None, ops: tuple[str, ...]) -> list[str]:
    order = list(profile.suites) if profile else []
    for c in cols:
        for (cpu, s, _b, o) in sorted(c.reduced):
            if cpu == c.cpu and o in ops and s not in order:
                order.append(s)
    present = {s for c in cols for (cpu, s, _b, o) in c.reduced if cpu == c.cpu and o in ops}
    return [s for s in order if s in present]


def unit_of(profile: Profile | None, cols: list[Column]) -> str:
    if profile:
        return profile.unit_suite
    for c in cols:
        meta = c.run.meta
        if meta and meta.settings.get("unit_suite"):
            return str(meta.settings["unit_suite"])
    return "ML-DSA-44"
