"""Per-CPU load from ``<root>/proc/stat`` (the difference between two readings).

Only meaningful for the live machine: a snapshot directory holds one frozen
/proc/stat, so :meth:`LoadSource.sample` returns ``{}`` there (the table shows "—").
"""

from __future__ import annotations

from pathlib import Path

# /proc/stat cpuN fields: user nice system idle iowait irq softirq steal guest guest_nice.
# idle + iowait is idle time; guest time is already counted in user/nice.
_IDLE_FIELDS = (3, 4)
_COUNTED_FIELDS = 8


def read_cpu_times(stat_path: Path) -> dict[int, tuple[int, int]]:
    """cpu -> (busy jiffies, total jiffies); {} when the file is missing or malformed."""
    try:
        text = stat_path.read_text()
    except OSError:
        return {}
    times: dict[int, tuple[int, int]] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        try:
            cpu = int(name[3:])
            values = [int(v) for v in rest.split()[:_COUNTED_FIELDS]]
        except ValueError:
            continue
        total = sum(values)
        idle = sum(values[i] for i in _IDLE_FIELDS if i < len(values))
        times[cpu] = (total - idle, total)
    return times


class LoadSource:
    """Busy share of each CPU since the previous sample, in percent."""

    def __init__(self, root: str | Path = "/", live: bool = True) -> None:
        self.stat_path = Path(root) / "proc" / "stat"
        self.live = live
        self._last: dict[int, tuple[int, int]] = {}

    def sample(self) -> dict[int, float]:
        if not self.live:
            return {}
        now = read_cpu_times(self.stat_path)
        loads: dict[int, float] = {}
        for cpu, (busy, total) in now.items():
            prev = self._last.get(cpu)
            if prev is None:
                continue
            d_total = total - prev[1]
            if d_total > 0:
                loads[cpu] = max(0.0, min(100.0, 100.0 * (busy - prev[0]) / d_total))
        self._last = now
        return loads
