"""How busy the machine is: ``/proc/loadavg`` and the CPU time counters of ``/proc/stat``.

The one reader of each, used by the engine's timer choice, the environment snapshot, the
daemon's watch and the monitor's load column. Missing or malformed files give ``None`` /
nothing plus a reason, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from qprof.hw.sysfs import kernel_text

# /proc/stat cpu fields: user nice system idle iowait irq softirq steal guest guest_nice.
# idle + iowait is idle time; guest time is already counted in user/nice.
STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
IDLE_FIELDS = ("idle", "iowait")


@dataclass(frozen=True)
class LoadAvg:
    one: float  # 1-minute load average
    five: float
    fifteen: float
    running: int | None = None  # runnable tasks now
    tasks: int | None = None  # all tasks


def parse_loadavg(text: str) -> LoadAvg | None:
    fields = text.split()
    try:
        one, five, fifteen = (float(x) for x in fields[:3])
    except ValueError:
        return None
    running = tasks = None
    if len(fields) >= 4 and "/" in fields[3]:
        r, _, t = fields[3].partition("/")
        if r.isdigit() and t.isdigit():
            running, tasks = int(r), int(t)
    return LoadAvg(one, five, fifteen, running, tasks)


def read_loadavg(root: str | Path = "/") -> LoadAvg | None:
    try:
        return parse_loadavg(kernel_text(Path(root) / "proc/loadavg"))
    except (OSError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class CpuTicks:
    """Cumulative time of one CPU (or all: ``cpu is None``) in USER_HZ ticks."""

    cpu: int | None
    fields: dict[str, int]  # STAT_FIELDS present on the line

    @property
    def total(self) -> int:
        return sum(self.fields.values())

    @property
    def busy(self) -> int:
        return self.total - sum(self.fields.get(f, 0) for f in IDLE_FIELDS)


@dataclass(frozen=True)
class ProcStat:
    all: CpuTicks | None  # the aggregate "cpu" line
    cpus: dict[int, CpuTicks]
    problems: tuple[str, ...] = ()


def parse_proc_stat(text: str) -> ProcStat:
    total: CpuTicks | None = None
    cpus: dict[int, CpuTicks] = {}
    problems = []
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        name, *values = line.split()
        try:
            cpu = None if name == "cpu" else int(name[3:])
            numbers = [int(v) for v in values[:len(STAT_FIELDS)]]
        except ValueError:
            problems.append(f"/proc/stat: cannot parse {line[:40]!r}")
            continue
        ticks = CpuTicks(cpu, dict(zip(STAT_FIELDS, numbers, strict=False)))
        if cpu is None:
            total = ticks
        else:
            cpus[cpu] = ticks
    return ProcStat(total, cpus, tuple(problems))


def read_proc_stat(root: str | Path = "/") -> ProcStat | None:
    """None when the file is missing or unreadable."""
    try:
        return parse_proc_stat(kernel_text(Path(root) / "proc/stat"))
    except (OSError, UnicodeDecodeError):
        return None


def read_cpu_ticks(cpu: int, root: str | Path = "/") -> CpuTicks | None:
    """One CPU's line of ``/proc/stat``; None when missing or unreadable."""
    stat = read_proc_stat(root)
    return stat.cpus.get(cpu) if stat is not None else None


@dataclass(frozen=True)
class StolenTicks:
    """What the hypervisor took of one CPU between two readings, in USER_HZ ticks."""

    steal: int
    total: int  # every tick of the CPU between them


def stolen_between(before: CpuTicks | None, after: CpuTicks | None) -> StolenTicks | None:
    """None without both readings, or when a counter went back (a CPU hot-plugged)."""
    if before is None or after is None or "steal" not in before.fields:
        return None
    steal = after.fields.get("steal", 0) - before.fields["steal"]
    total = after.total - before.total
    if steal < 0 or total < 0:
        return None
    return StolenTicks(steal, total)


def busy_share(before: CpuTicks, after: CpuTicks) -> float | None:
    """Busy percent between two readings of one line; None when no tick passed."""
    d_total = after.total - before.total
    if d_total <= 0:
        return None
    return max(0.0, min(100.0, 100.0 * (after.busy - before.busy) / d_total))
