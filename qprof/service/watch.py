"""The watch loop's one tick: frequencies, governors, caps, online CPUs and load.

Cheap by design (a few small sysfs/proc reads per CPU, about once a second): the
topology is read once and again only when the set of online CPUs changes. Cap changes
go through the cap tracker's hysteresis (qprof.hw.caps) so a flickering cap does not flood; governor
changes and CPUs going offline are deliberate events and alert at once.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qprof.hw.caps import CapSeen, CapTracker
from qprof.hw.freq import ClusterFreq, CpuFreq, read_frequencies
from qprof.hw.load import CpuTicks, busy_share, read_loadavg, read_proc_stat
from qprof.hw.topology import read_topology
from qprof.service.alerts import AlertDispatcher

log = logging.getLogger("qprof.daemon")


@dataclass
class LoadView:
    load1: float | None  # 1-minute load average
    busy_pct: float | None  # all CPUs, over the last ~10 ticks (None on the first)
    online_cpus: int


@dataclass
class WatchTick:
    ts: float
    cpus: dict[int, CpuFreq]
    load: LoadView
    problems: list[str] = field(default_factory=list)


class Watcher:
    def __init__(self, root: Path, alerts: AlertDispatcher, cap_samples: int = 3,
                 cap_hold_s: float = 5.0, busy_window_ticks: int = 10) -> None:
        self.root = Path(root)
        self.alerts = alerts
        self.caps = CapTracker(cap_samples, cap_hold_s)
        self.topology = read_topology(self.root)
        self._governors: dict[int, str | None] = {}
        self._online: dict[int, bool] = {}
        # /proc/stat readings of the last few ticks: busy share over a ~10 s window.
        self._ticks: deque[CpuTicks] = deque(maxlen=busy_window_ticks + 1)
        self.last: WatchTick | None = None

    def clusters(self) -> dict[int, list[int]]:
        return {c.id: list(c.cpus) for c in self.topology.clusters}

    def tick(self, now: float | None = None) -> WatchTick:
        now = time.time() if now is None else now
        reading = read_frequencies(self.root, self.topology)
        if {f.cpu: f.online for f in reading.cpus} != {c.cpu: c.online
                                                       for c in self.topology.cpus}:
            # A CPU went on/offline: re-read the topology (clusters' online members).
            self.topology = read_topology(self.root)
        cpus = {f.cpu: f for f in reading.cpus}
        stat = read_proc_stat(self.root)
        if stat is not None and stat.all is not None:
            self._ticks.append(stat.all)
        busy = busy_share(self._ticks[0], self._ticks[-1]) if len(self._ticks) >= 2 else None
        loadavg = read_loadavg(self.root)
        load = LoadView(loadavg.one if loadavg else None, busy,
                        sum(1 for f in cpus.values() if f.online is not False) or 1)
        tick = WatchTick(now, cpus, load, list(reading.problems))
        self._compare(tick, reading.clusters)
        self.last = tick
        return tick

    def _compare(self, tick: WatchTick, clusters: list[ClusterFreq]) -> None:
        # Online/offline: per CPU, at once.
        for cpu, f in tick.cpus.items():
            online = f.online is not False
            was = self._online.get(cpu)
            if was is not None and was != online:
                if online:
                    self.alerts.emit("cpu_online", "info", f"cpu {cpu} came back online",
                                     cpu=cpu, ts=tick.ts)
                else:
                    self.alerts.emit("cpu_offline", "warning", f"cpu {cpu} went offline",
                                     cpu=cpu, ts=tick.ts)
            self._online[cpu] = online
        # Caps and governors per cluster (a cpufreq policy spans a cluster).
        for cl in clusters:
            label = f"cluster {cl.id} (cpus {','.join(map(str, cl.cpus))})"
            self._check_governor(cl, label, tick.ts)
            self._check_cap(cl, label, tick.ts)

    def _check_governor(self, cl: ClusterFreq, label: str, ts: float) -> None:
        if cl.id in self._governors and self._governors[cl.id] != cl.governor:
            old = self._governors[cl.id]
            self.alerts.emit("governor_changed", "warning",
                             f"{label}: governor changed from {old} to {cl.governor}",
                             ts=ts, cluster=cl.id, old=old, new=cl.governor)
        self._governors[cl.id] = cl.governor

    def _check_cap(self, cl: ClusterFreq, label: str, ts: float) -> None:
        seen = CapSeen(cl.capped, cl.cap_factor, cl.cap_cause, cl.max_khz, cl.hw_max_khz)
        change = self.caps.update(cl.id, seen, ts)
        if change is None:
            return
        if change.started:
            details: dict[str, Any] = {"factor": cl.cap_factor, "cause": cl.cap_cause,
                                       "max_khz": cl.max_khz, "hw_max_khz": cl.hw_max_khz}
            if change.at_startup:
                details["at_startup"] = True
            self.alerts.emit("cap_started", "warning", f"{label}: {change.message()}",
                             ts=ts, cluster=cl.id, **details)
        else:
            self.alerts.emit("cap_ended", "info", f"{label}: {change.message()}",
                             ts=ts, cluster=cl.id)

    def capped_cpus(self) -> dict[int, float | None]:
        """CPUs capped now (debounced per cluster, or seen capped) -> factor."""
        out: dict[int, float | None] = {}
        if self.last is None:
            return out
        for f in self.last.cpus.values():
            if (f.cluster is not None and self.caps.active(f.cluster)) or f.capped:
                out[f.cpu] = f.cap_factor
        return out
