"""Per-CPU frequencies, governors and the cap model.

A CPU is *capped* when the frequency it may run at now (``scaling_max_freq``, which
already includes thermal and QoS limits on current kernels) is below what the hardware
can do (``cpuinfo_max_freq``). The cause is named only when the system says so: an
active cpufreq cooling device for that CPU means ``thermal``; boost/turbo switched off
means ``boost-off``; otherwise the policy maximum was lowered (``policy``). The factor
is hardware max / allowed max. :class:`CapWatch` samples readings over a window (``qprof
freq --watch``): per CPU and cluster whether a cap is on, since when, when the last ended
(events from :mod:`qprof.hw.caps`).
"""

from __future__ import annotations

import os
import re
import statistics
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from qprof.hw.caps import CapSeen, CapTracker
from qprof.hw.cpudir import CPU_DIR, PolicyMap
from qprof.hw.estimate import estimate_cpu_khz
from qprof.hw.model import Topology
from qprof.hw.sysfs import SysRoot, problems_by_cpu
from qprof.hw.thermal import ThermalState, read_thermal
from qprof.hw.topology import read_topology

# Allowed max within this fraction of the hardware max is not a cap (driver rounding).
CAP_TOLERANCE = 0.005
# Governor and driver names live in the kernel's char name[CPUFREQ_NAME_LEN] (16, with its
# NUL): anything longer in scaling_governor is not a governor (a hostile or broken
# --root), and is dropped with a problem rather than stored, printed and alerted on.
CPUFREQ_NAME_CHARS = 15
_CPU_MHZ = re.compile(r"^cpu MHz\s*:\s*([0-9.]+)", re.M)


@dataclass
class CpuFreq:
    cpu: int
    online: bool | None
    cur_khz: int | None = None
    min_khz: int | None = None  # scaling_min_freq
    max_khz: int | None = None  # scaling_max_freq: what the CPU may run at now
    hw_min_khz: int | None = None  # cpuinfo_min_freq
    hw_max_khz: int | None = None  # cpuinfo_max_freq: what the hardware can do
    governor: str | None = None
    driver: str | None = None
    available_governors: list[str] | None = None
    capped: bool | None = None
    cap_factor: float | None = None
    cap_cause: str | None = None
    estimated: bool = False  # cur_khz measured by qprof, not reported by the system
    cur_source: str | None = None  # "scaling_cur_freq", "cpuinfo_cur_freq", "estimated"
    cluster: int | None = None
    # Without cpufreq only: /proc/cpuinfo "cpu MHz" (x86). On VMs that is the host's
    # nominal/TSC clock, not what the core runs at now, so it is not cur_khz.
    reported_khz: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ClusterFreq:
    id: int
    cpus: list[int]
    uarch: str | None
    hw_max_khz: int | None
    max_khz: int | None
    cur_khz: int | None  # highest current frequency among online members
    governor: str | None
    capped: bool | None
    cap_factor: float | None
    cap_cause: str | None
    estimated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FreqReading:
    root: str
    taken_at: float
    cpus: list[CpuFreq]
    clusters: list[ClusterFreq]
    boost: bool | None = None  # cpufreq/boost (acpi-cpufreq, amd-pstate)
    no_turbo: bool | None = None  # intel_pstate/no_turbo
    thermal: ThermalState = field(default_factory=ThermalState)
    problems: list[str] = field(default_factory=list)
    domains: dict[int, list[int]] = field(default_factory=dict)  # for problems_by_cpu

    def cpu(self, n: int) -> CpuFreq | None:
        for c in self.cpus:
            if c.cpu == n:
                return c
        return None

    def to_dict(self) -> dict[str, Any]:
        per_cpu = problems_by_cpu(self.problems, self.domains)
        return {
            "root": self.root,
            "taken_at": self.taken_at,
            "boost": self.boost,
            "no_turbo": self.no_turbo,
            "cpus": [dict(c.to_dict(), problems=per_cpu.get(c.cpu, [])) for c in self.cpus],
            "clusters": [c.to_dict() for c in self.clusters],
            "thermal": self.thermal.to_dict(),
            "problems": list(self.problems),
        }


def cap_factor(hw_max_khz: int | None, max_khz: int | None) -> float | None:
    if not hw_max_khz or not max_khz:
        return None
    return round(hw_max_khz / max_khz, 2)


def _policies(topology: Topology) -> list[list[int]]:
    seen: list[list[int]] = []
    for c in topology.cpus:
        if c.freq_domain and c.freq_domain not in seen:
            seen.append(c.freq_domain)
    return sorted(seen)


def _freq_dir(sr: SysRoot, cpu: int) -> str | None:
    path = f"{CPU_DIR}/cpu{cpu}/cpufreq"
    return path if os.path.isdir(sr.path(path)) else None


def read_frequencies(root: str | Path = "/", topology: Topology | None = None,
                     estimate: bool = False) -> FreqReading:
    """One reading of every CPU's frequency state (cheap: the daemon calls it each second).

    ``estimate=True`` measures the clock of online CPUs the system gives no frequency for
    (VMs), labelled ``estimated``; only on the live machine (root ``/``).
    """
    if topology is None:
        topology = read_topology(root)
    sr = SysRoot(root)
    now = time.time()
    policies = _policies(topology)
    policy_dirs = PolicyMap(sr)

    boost_val, _ = sr.int(f"{CPU_DIR}/cpufreq/boost")
    no_turbo_val, _ = sr.int(f"{CPU_DIR}/intel_pstate/no_turbo")
    boost = None if boost_val is None else bool(boost_val)
    no_turbo = None if no_turbo_val is None else bool(no_turbo_val)
    x86 = topology.arch in ("x86", "x86_64")  # thermal_throttle counters are x86-only
    thermal = read_thermal(sr, policies, [c.cpu for c in topology.cpus] if x86 else [])

    # CPUs go on- and offline between readings: ask again, do not trust the topology.
    online_list, _ = sr.cpulist(f"{CPU_DIR}/online")
    cpus: list[CpuFreq] = []
    any_freq = False
    shared: dict[tuple[int, ...], CpuFreq] = {}  # one complete read per policy
    for t in topology.cpus:
        online: bool | None
        if online_list is not None:
            online = t.cpu in online_list
        else:
            own_online, _ = sr.int(f"{CPU_DIR}/cpu{t.cpu}/online")
            online = bool(own_online) if own_online is not None else t.online
        f = CpuFreq(cpu=t.cpu, online=online, cluster=t.cluster)
        key = tuple(t.freq_domain) if t.freq_domain and len(t.freq_domain) > 1 else None
        done = shared.get(key) if key is not None else None
        if done is not None and online is not False:
            any_freq = True
            for name in ("min_khz", "max_khz", "hw_min_khz", "hw_max_khz",
                         "governor", "driver", "available_governors"):
                setattr(f, name, getattr(done, name))
            # The current frequency is read per CPU: some drivers answer per CPU.
            base = _freq_dir(sr, t.cpu) or policy_dirs.get(t.cpu)
            if base is not None:
                _read_cur(sr, f, base)
        elif t.present is not False:
            base = _freq_dir(sr, t.cpu) or policy_dirs.get(t.cpu)
            if base is not None:
                any_freq = True
                before = len(sr.problems)
                _read_cpufreq(sr, f, base)
                if key is not None and online is not False and len(sr.problems) == before:
                    shared[key] = f
        _apply_cap_model(f, thermal, boost, no_turbo)
        cpus.append(f)
    if not any_freq:
        for cpu, mhz in cpuinfo_mhz(root).items():
            if (found := next((c for c in cpus if c.cpu == cpu), None)) is not None:
                found.reported_khz = int(mhz * 1000)
        live = estimate and os.path.abspath(str(root)) == "/"
        sr.note("no cpufreq: the system exposes no CPU frequency (VM?); current frequency "
                + ("estimated by measurement" if live else "unknown"))
        if live:
            _estimate_missing(cpus, sr)
    clusters = _clusters(topology, cpus)
    return FreqReading(root=str(root), taken_at=now, cpus=cpus, clusters=clusters, boost=boost,
                       no_turbo=no_turbo, thermal=thermal, problems=sr.problems,
                       domains=topology.domains())


def _read_cpufreq(sr: SysRoot, f: CpuFreq, base: str) -> None:
    related, _ = sr.cpulist(f"{base}/related_cpus")
    if related is not None and f.cpu not in related:
        sr.note(f"{base}/related_cpus: does not list cpu{f.cpu} itself; "
                "its cpufreq files are ignored")
        return
    if f.online is False:
        # Offline CPUs keep stale policy files; their current frequency means nothing.
        f.hw_max_khz, _ = sr.khz(f"{base}/cpuinfo_max_freq")
        f.hw_min_khz, _ = sr.khz(f"{base}/cpuinfo_min_freq")
        return
    _read_cur(sr, f, base)
    for attr, name in (("min_khz", "scaling_min_freq"), ("max_khz", "scaling_max_freq"),
                       ("hw_min_khz", "cpuinfo_min_freq"), ("hw_max_khz", "cpuinfo_max_freq")):
        value, prob = sr.khz(f"{base}/{name}")
        sr.note(prob)
        setattr(f, attr, value)
    f.governor, prob = sr.word(f"{base}/scaling_governor", CPUFREQ_NAME_CHARS)
    sr.note(prob)
    f.driver, _ = sr.word(f"{base}/scaling_driver", CPUFREQ_NAME_CHARS)
    f.available_governors, _ = sr.words(f"{base}/scaling_available_governors",
                                        CPUFREQ_NAME_CHARS)


def _read_cur(sr: SysRoot, f: CpuFreq, base: str) -> None:
    cur, prob = sr.khz(f"{base}/scaling_cur_freq")
    source = "scaling_cur_freq"
    if cur is None:
        cur, _ = sr.khz(f"{base}/cpuinfo_cur_freq")
        source = "cpuinfo_cur_freq"
        if cur is None:
            sr.note(prob)
    if cur is not None:
        f.cur_khz, f.cur_source = cur, source


def _apply_cap_model(f: CpuFreq, thermal: ThermalState, boost: bool | None,
                     no_turbo: bool | None) -> None:
    if f.hw_max_khz is None or f.max_khz is None:
        return  # unknown: capped stays None
    f.capped = f.max_khz < f.hw_max_khz * (1 - CAP_TOLERANCE)
    if not f.capped:
        f.cap_factor = 1.0
        return
    f.cap_factor = cap_factor(f.hw_max_khz, f.max_khz)
    if any(c.active for c in thermal.cpu_cooling(f.cpu)) or any(
            c.active and c.cpus is None and c.type == "Processor" for c in thermal.cooling):
        # ACPI "Processor" cooling devices do not say which CPU they are (their device
        # link is all there is); an active one lowers the P-state limit of its CPU.
        f.cap_cause = "thermal"
    elif no_turbo or boost is False:
        f.cap_cause = "boost-off"
    else:
        f.cap_cause = "policy"


def _clusters(topology: Topology, cpus: list[CpuFreq]) -> list[ClusterFreq]:
    by_cpu = {c.cpu: c for c in cpus}
    out: list[ClusterFreq] = []
    for cl in topology.clusters:
        members = [by_cpu[c] for c in cl.cpus if c in by_cpu]
        live = [m for m in members if m.online is not False] or members
        capped_values = [m.capped for m in live if m.capped is not None]
        capped = any(capped_values) if capped_values else None
        worst = max((m for m in live if m.capped), key=lambda m: m.cap_factor or 0, default=None)
        curs = [m.cur_khz for m in live if m.cur_khz is not None]
        maxes = [m.max_khz for m in live if m.max_khz is not None]
        hw = [m.hw_max_khz for m in members if m.hw_max_khz is not None]
        govs = [m.governor for m in live if m.governor]
        out.append(ClusterFreq(
            id=cl.id, cpus=list(cl.cpus), uarch=cl.uarch,
            hw_max_khz=max(hw) if hw else cl.max_khz,
            max_khz=min(maxes) if maxes else None,
            cur_khz=max(curs) if curs else None,
            governor=govs[0] if govs else None,
            capped=capped,
            cap_factor=(worst.cap_factor if worst else (1.0 if capped is False else None)),
            cap_cause=worst.cap_cause if worst else None,
            estimated=any(m.estimated for m in live)))
    return out


def _estimate_missing(cpus: list[CpuFreq], sr: SysRoot) -> None:
    for f in cpus:
        if f.online is False or f.cur_khz is not None:
            continue
        khz, problem = estimate_cpu_khz(f.cpu)
        if khz is not None:
            f.cur_khz, f.estimated, f.cur_source = khz, True, "estimated"
        else:
            sr.note(f"cpu{f.cpu}: {problem}")


# --- cap watch -----------------------------------------------------------------------


@dataclass
class CapEvent:
    at: float
    cpu: int
    kind: str  # "started" | "ended"
    factor: float | None
    cause: str | None


@dataclass
class CapState:
    """Cap state of one CPU (or a cluster) over the watch window."""

    cpu: int | None
    cluster: int | None
    capped_now: bool | None  # None = the system does not say
    cause: str | None
    factor: float | None  # now
    max_factor: float | None  # worst in the window
    capped_fraction: float | None  # share of samples in the window that were capped
    since: float | None  # when the cap that is on now started (first sample seen capped)
    last_ended: float | None  # when the last cap ended
    samples: int
    window_s: float
    hw_max_khz: int | None
    max_khz: int | None
    cur_khz_median: int | None
    estimated: bool = False
    throttle_events: int | None = None  # x86 thermal throttle count increase in the window
    # x86 hardware throttling (PROCHOT) does not lower scaling_max_freq, so a CPU can be
    # "not capped" by the files and still held back: the counters rising says so.
    throttled: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Sample:
    at: float
    capped: bool | None
    factor: float | None
    cause: str | None
    cur_khz: int | None
    max_khz: int | None
    hw_max_khz: int | None
    estimated: bool
    throttle_count: int | None = None


class CapWatch:
    """Sample frequency readings over a sliding window; per-CPU and per-cluster cap state.

    ``sample()`` reads the root (or takes a reading made elsewhere) and returns it;
    call it on a loop. Topology is read once (it rarely changes; pass ``topology`` to
    share it).
    """

    def __init__(self, root: str | Path = "/", window_s: float = 60.0,
                 topology: Topology | None = None, max_events: int = 1000,
                 tracker: CapTracker | None = None) -> None:
        self.root = root
        self.window_s = window_s
        self.topology = topology
        self._samples: dict[int, deque[_Sample]] = {}
        self._since: dict[int, float | None] = {}
        self._last_ended: dict[int, float | None] = {}
        # Every edge by default (the watch shows what the files say, sample by sample).
        self.tracker = tracker or CapTracker(min_samples=1, hold_s=0.0)
        self.events: deque[CapEvent] = deque(maxlen=max_events)
        self.last: FreqReading | None = None
        self.first_at: float | None = None  # a cap "since" this was already on then

    def sample(self, reading: FreqReading | None = None, now: float | None = None) -> FreqReading:
        if reading is None:
            if self.topology is None:
                self.topology = read_topology(self.root)
            reading = read_frequencies(self.root, self.topology)
            # CPUs came or went since the topology was read: read it again next time.
            was_online = {c.cpu for c in self.topology.cpus if c.online}
            if was_online != {f.cpu for f in reading.cpus if f.online}:
                self.topology = None
        at = reading.taken_at if now is None else now
        if self.first_at is None:
            self.first_at = at
        for f in reading.cpus:
            q = self._samples.setdefault(f.cpu, deque())
            counts = reading.thermal.throttle.get(f.cpu)
            q.append(_Sample(at, f.capped, f.cap_factor, f.cap_cause, f.cur_khz, f.max_khz,
                             f.hw_max_khz, f.estimated,
                             sum(counts.values()) if counts else None))
            while q and q[0].at < at - self.window_s:
                q.popleft()
            change = self.tracker.update(f.cpu, CapSeen(f.capped, f.cap_factor, f.cap_cause,
                                                        f.max_khz, f.hw_max_khz), at)
            if change is not None and change.started:
                self._since[f.cpu] = at
                self.events.append(CapEvent(at, f.cpu, "started", f.cap_factor, f.cap_cause))
            elif change is not None:
                self._since[f.cpu] = None
                self._last_ended[f.cpu] = at
                self.events.append(CapEvent(at, f.cpu, "ended", None, None))
        self.last = reading
        return reading

    def summary(self, cpu: int) -> CapState:
        q = self._samples.get(cpu, deque())
        last = q[-1] if q else None
        known = [s for s in q if s.capped is not None]
        curs = [s.cur_khz for s in q if s.cur_khz is not None]
        factors = [s.factor for s in q if s.factor is not None]
        cluster = None
        if self.last is not None and (f := self.last.cpu(cpu)) is not None:
            cluster = f.cluster
        counts = [s.throttle_count for s in q if s.throttle_count is not None]
        return CapState(
            cpu=cpu, cluster=cluster,
            capped_now=last.capped if last else None,
            cause=last.cause if last else None,
            factor=last.factor if last else None,
            max_factor=max(factors) if factors else None,
            capped_fraction=(sum(1 for s in known if s.capped) / len(known)) if known else None,
            since=self._since.get(cpu) if last and last.capped else None,
            last_ended=self._last_ended.get(cpu),
            samples=len(q), window_s=self.window_s,
            hw_max_khz=last.hw_max_khz if last else None,
            max_khz=last.max_khz if last else None,
            cur_khz_median=int(statistics.median(curs)) if curs else None,
            estimated=any(s.estimated for s in q),
            throttle_events=(counts[-1] - counts[0]) if counts else None,
            throttled=(counts[-1] > counts[0]) if len(counts) >= 2 else None)

    def cluster_summary(self, cluster_id: int) -> CapState:
        """Worst member of the cluster: capped if any online member is capped."""
        if self.last is None:
            return CapState(None, cluster_id, None, None, None, None, None, None, None, 0,
                            self.window_s, None, None, None)
        members = [c.cpu for c in self.last.cpus if c.cluster == cluster_id
                   and c.online is not False]
        states = [self.summary(c) for c in members]
        if not states:
            return CapState(None, cluster_id, None, None, None, None, None, None, None, 0,
                            self.window_s, None, None, None)
        worst = max(states, key=lambda s: (bool(s.capped_now), s.factor or 0, s.max_factor or 0))
        starts = [s.since for s in states if s.since is not None]
        ends = [s.last_ended for s in states if s.last_ended is not None]
        fractions = [s.capped_fraction for s in states if s.capped_fraction is not None]
        known_now = [s.capped_now for s in states if s.capped_now is not None]
        return CapState(
            cpu=None, cluster=cluster_id,
            capped_now=any(known_now) if known_now else None,
            cause=worst.cause, factor=worst.factor,
            max_factor=max((s.max_factor for s in states if s.max_factor), default=None),
            capped_fraction=max(fractions) if fractions else None,
            since=min(starts) if starts else None,
            last_ended=max(ends) if ends else None,
            samples=max(s.samples for s in states), window_s=self.window_s,
            hw_max_khz=worst.hw_max_khz, max_khz=worst.max_khz,
            cur_khz_median=worst.cur_khz_median,
            estimated=any(s.estimated for s in states),
            throttle_events=max((s.throttle_events for s in states
                                 if s.throttle_events is not None), default=None),
            throttled=(any(s.throttled for s in states)
                       if any(s.throttled is not None for s in states) else None))

    def states(self) -> dict[int, CapState]:
        return {cpu: self.summary(cpu) for cpu in sorted(self._samples)}


def cpuinfo_mhz(root: str | Path = "/") -> dict[int, float]:
    """``cpu MHz`` per processor from /proc/cpuinfo (x86; on VMs the host's nominal clock)."""
    sr = SysRoot(root)
    text, _ = sr.text("/proc/cpuinfo")
    out: dict[int, float] = {}
    cpu = None
    for line in (text or "").splitlines():
        if line.startswith("processor"):
            try:
                cpu = int(line.split(":", 1)[1])
            except (IndexError, ValueError):
                cpu = None
        elif cpu is not None and (m := _CPU_MHZ.match(line)):
            out[cpu] = float(m.group(1))
    return out
