"""The watch loop's one tick: frequencies, governors, caps, online CPUs and load.

Cheap by design (a few small sysfs/proc reads per CPU, about once a second): the
topology is read once and again only when the set of online CPUs changes. Cap changes
go through hysteresis (alerts.Hysteresis) so a flickering cap does not flood; governor
changes and CPUs going offline are deliberate events and alert at once.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from qprof.hw.freq import ClusterFreq, read_frequencies
from qprof.hw.topology import read_topology
from qprof.service.alerts import AlertDispatcher, Hysteresis

log = logging.getLogger("qprof.daemon")


@dataclass
class CpuView:
    cpu: int
    cluster: int | None
    online: bool
    cur_khz: int | None
    max_khz: int | None
    hw_max_khz: int | None
    governor: str | None
    capped: bool | None
    cap_factor: float | None
    cap_cause: str | None


@dataclass
class LoadView:
    load1: float | None  # 1-minute load average
    busy_pct: float | None  # all CPUs, over the last ~10 ticks (None on the first)
    online_cpus: int


@dataclass
class WatchTick:
    ts: float
    cpus: dict[int, CpuView]
    load: LoadView
    problems: list[str] = field(default_factory=list)


def read_loadavg(root: Path) -> float | None:
    try:
        return float((root / "proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def read_cpu_jiffies(root: Path) -> tuple[int, int] | None:
    """(busy, total) jiffies of the aggregate 'cpu' line of /proc/stat."""
    try:
        with open(root / "proc/stat") as fh:
            first = fh.readline().split()
    except OSError:
        return None
    if not first or first[0] != "cpu":
        return None
    try:
        values = [int(v) for v in first[1:]]
    except ValueError:
        return None
    idle = sum(values[3:5])  # idle + iowait
    total = sum(values[:8])  # without guest (already counted in user)
    return total - idle, total


class Watcher:
    def __init__(self, root: Path, alerts: AlertDispatcher, cap_samples: int = 3,
                 cap_hold_s: float = 5.0, busy_window_ticks: int = 10) -> None:
        self.root = Path(root)
        self.alerts = alerts
        self.caps = Hysteresis(cap_samples, cap_hold_s)
        self.topology = read_topology(self.root)
        self._governors: dict[int, str | None] = {}
        self._online: dict[int, bool] = {}
        # /proc/stat readings of the last few ticks: busy share over a ~10 s window.
        self._jiffies: deque[tuple[int, int]] = deque(maxlen=busy_window_ticks + 1)
        self._first = True
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
        cpus = {f.cpu: CpuView(
            cpu=f.cpu, cluster=f.cluster, online=f.online is not False, cur_khz=f.cur_khz,
            max_khz=f.max_khz, hw_max_khz=f.hw_max_khz, governor=f.governor, capped=f.capped,
            cap_factor=f.cap_factor, cap_cause=f.cap_cause) for f in reading.cpus}
        jiff = read_cpu_jiffies(self.root)
        if jiff is not None:
            self._jiffies.append(jiff)
        busy = None
        if len(self._jiffies) >= 2 and self._jiffies[-1][1] > self._jiffies[0][1]:
            (b0, t0), (b1, t1) = self._jiffies[0], self._jiffies[-1]
            busy = 100.0 * (b1 - b0) / (t1 - t0)
        load = LoadView(read_loadavg(self.root), busy,
                        sum(1 for v in cpus.values() if v.online) or 1)
        tick = WatchTick(now, cpus, load, list(reading.problems))
        self._compare(tick, reading.clusters)
        self.last = tick
        self._first = False
        return tick

    def _compare(self, tick: WatchTick, clusters: list[ClusterFreq]) -> None:
        # Online/offline: per CPU, at once.
        for cpu, view in tick.cpus.items():
            was = self._online.get(cpu)
            if was is not None and was != view.online:
                if view.online:
                    self.alerts.emit("cpu_online", "info", f"cpu {cpu} came back online",
                                     cpu=cpu, ts=tick.ts)
                else:
                    self.alerts.emit("cpu_offline", "warning", f"cpu {cpu} went offline",
                                     cpu=cpu, ts=tick.ts)
            self._online[cpu] = view.online
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
        if cl.capped is None:
            return  # unknown: say nothing rather than guess
        details = {"factor": cl.cap_factor, "cause": cl.cap_cause, "max_khz": cl.max_khz,
                   "hw_max_khz": cl.hw_max_khz}
        if self._first:
            # The state found at start-up is reported once, not as a change.
            self.caps.set_active(cl.id, cl.capped)
            if cl.capped:
                self.alerts.emit("cap_started", "warning",
                                 f"{label}: capped at start-up ({self._cap_text(cl)})",
                                 ts=ts, cluster=cl.id, at_startup=True, **details)
            return
        change = self.caps.update(cl.id, cl.capped, ts)
        if change is True:
            self.alerts.emit("cap_started", "warning", f"{label}: capped ({self._cap_text(cl)})",
                             ts=ts, cluster=cl.id, **details)
        elif change is False:
            self.alerts.emit("cap_ended", "info", f"{label}: cap ended, back to full speed",
                             ts=ts, cluster=cl.id)

    @staticmethod
    def _cap_text(cl: ClusterFreq) -> str:
        parts = []
        if cl.max_khz and cl.hw_max_khz:
            parts.append(f"{cl.max_khz / 1e6:.2f} of {cl.hw_max_khz / 1e6:.2f} GHz")
        if cl.cap_factor:
            parts.append(f"{cl.cap_factor:.2f}x slower")
        parts.append(f"cause {cl.cap_cause or 'unknown'}")
        return ", ".join(parts)

    def capped_cpus(self) -> dict[int, float | None]:
        """CPUs capped now (debounced per cluster, or seen capped) -> factor."""
        out: dict[int, float | None] = {}
        if self.last is None:
            return out
        for view in self.last.cpus.values():
            if (view.cluster is not None and self.caps.active(view.cluster)) or view.capped:
                out[view.cpu] = view.cap_factor
        return out
