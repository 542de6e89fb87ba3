"""Per-CPU load from ``<root>/proc/stat`` (the difference between two readings).

Only meaningful for the live machine: a snapshot directory holds one frozen
/proc/stat, so :meth:`LoadSource.sample` returns ``{}`` there (the table shows "—").
"""

from __future__ import annotations

from pathlib import Path

from qprof.hw.load import CpuTicks, busy_share, read_proc_stat


class LoadSource:
    """Busy share of each CPU since the previous sample, in percent."""

    def __init__(self, root: str | Path = "/", live: bool = True) -> None:
        self.root = Path(root)
        self.live = live
        self._last: dict[int, CpuTicks] = {}

    def sample(self) -> dict[int, float]:
        if not self.live:
            return {}
        stat = read_proc_stat(self.root)
        now = stat.cpus if stat is not None else {}
        loads: dict[int, float] = {}
        for cpu, ticks in now.items():
            prev = self._last.get(cpu)
            share = busy_share(prev, ticks) if prev is not None else None
            if share is not None:
                loads[cpu] = share
        self._last = now
        return loads
