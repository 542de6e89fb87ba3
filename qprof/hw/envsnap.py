"""Environment snapshot taken before and after a run (the seeds' ``.env.txt``), as JSON.

Everything comes from files under the root, so a ``qprof snapshot`` of another machine
gives the same answer. Per-CPU time counters (``/proc/stat``) are included so two
snapshots (before/after a run) tell how busy each CPU was and how much time the
hypervisor stole. On the live machine only, ``busy_window_s`` adds a short psutil
measurement of the same (psutil's ``cpu_times_percent``: what the CPUs are doing now).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from qprof.hw.cgroup import own_limit
from qprof.hw.format import merge_problems
from qprof.hw.freq import read_frequencies
from qprof.hw.load import parse_loadavg, parse_proc_stat
from qprof.hw.model import Topology
from qprof.hw.sysfs import SysRoot
from qprof.hw.thermal import read_hwmon
from qprof.hw.topology import read_topology


def _loadavg(sr: SysRoot) -> dict[str, Any] | None:
    text, prob = sr.text("/proc/loadavg")
    if text is None:
        sr.note(prob)
        return None
    load = parse_loadavg(text)
    if load is None:
        sr.note(f"/proc/loadavg: cannot parse {text.strip()[:40]!r}")
        return None
    out: dict[str, Any] = {"1m": load.one, "5m": load.five, "15m": load.fifteen}
    if load.running is not None:
        out["running"], out["tasks"] = load.running, load.tasks
    return out


def _cpu_times(sr: SysRoot) -> dict[str, dict[str, int]] | None:
    """Per-CPU cumulative times in USER_HZ ticks from /proc/stat (``cpuN`` lines)."""
    text, prob = sr.text("/proc/stat")
    if text is None:
        if prob and not prob.endswith(": missing"):
            sr.note(prob)
        return None
    stat = parse_proc_stat(text)
    for problem in stat.problems:
        sr.note(problem)
    return {str(cpu): dict(t.fields) for cpu, t in sorted(stat.cpus.items())} or None


def _smt(sr: SysRoot) -> dict[str, Any] | None:
    """SMT state (the seeds record "SMT none"): active 0/1 and control (on, off,
    notsupported, forceoff)."""
    active, _ = sr.int("/sys/devices/system/cpu/smt/active")
    control, _ = sr.word("/sys/devices/system/cpu/smt/control")
    if active is None and control is None:
        return None
    return {"active": None if active is None else bool(active), "control": control}


def _busy_window(window_s: float) -> dict[str, Any] | None:
    """Live machine: per-CPU busy and steal % over ``window_s`` seconds (psutil)."""
    try:
        import psutil

        shares = psutil.cpu_times_percent(interval=window_s, percpu=True)
    except Exception:  # psutil missing or failing never breaks a snapshot
        return None
    cpus = {}
    for i, t in enumerate(shares):
        cpus[str(i)] = {"busy_pct": round(100.0 - t.idle - getattr(t, "iowait", 0.0), 1),
                        "steal_pct": round(getattr(t, "steal", 0.0), 1)}
    return {"source": "psutil.cpu_times_percent", "window_s": window_s, "cpus": cpus}


def _cgroup(root: str | Path) -> dict[str, Any] | None:
    """qprof's cgroup CPU limit (quota, throttling counts, cpuset), None: none here."""
    limit = own_limit(root)
    return None if limit is None else {**asdict(limit), "quota_cpus": limit.cpus,
                                       "text": limit.text()}


def take_env_snapshot(root: str | Path = "/", topology: Topology | None = None,
                      estimate: bool = False, busy_window_s: float = 0.0) -> dict[str, Any]:
    """JSON-able snapshot: load, per-CPU frequency/governor/cap, temperatures, CPU times.

    ``busy_window_s`` > 0 on the live machine also measures per-CPU busy/steal % over
    that window (blocks that long). Raises :class:`~qprof.hw.topology.NotLinuxRoot` for a
    root that is not a Linux tree.
    """
    topology = topology or read_topology(root)
    freq = read_frequencies(root, topology, estimate=estimate)
    sr = SysRoot(root)
    taken_at = time.time()
    kernel, _ = sr.word("/proc/sys/kernel/osrelease")
    uptime_text, _ = sr.text("/proc/uptime")
    uptime = None
    if uptime_text:
        try:
            uptime = float(uptime_text.split()[0])
        except (IndexError, ValueError):
            sr.note("/proc/uptime: cannot parse")
    live = os.path.abspath(str(root)) == "/"
    by_cpu = {c.cpu: c for c in topology.cpus}
    cpus = []
    for f in freq.cpus:
        t = by_cpu.get(f.cpu)
        cpus.append({
            "cpu": f.cpu, "online": f.online, "cluster": f.cluster,
            "uarch": t.uarch if t else None,
            "cur_khz": f.cur_khz, "max_khz": f.max_khz, "hw_max_khz": f.hw_max_khz,
            "min_khz": f.min_khz, "governor": f.governor, "driver": f.driver,
            "capped": f.capped, "cap_factor": f.cap_factor, "cap_cause": f.cap_cause,
            "estimated": f.estimated, "reported_khz": f.reported_khz,
            "isa": t.isa if t else None,
        })
    problems = merge_problems(topology.problems, freq.problems, sr.problems)
    return {
        "taken_at": taken_at,
        "taken_at_utc": datetime.fromtimestamp(taken_at, UTC).isoformat(timespec="seconds"),
        "root": str(root),
        "kernel": kernel,
        "arch": topology.arch,
        "model_name": topology.model_name,
        "uptime_s": uptime,
        "load": _loadavg(sr),
        "boost": freq.boost,
        "no_turbo": freq.no_turbo,
        "smt": _smt(sr),
        "cpus": cpus,
        "clusters": [c.to_dict() for c in freq.clusters],
        "temperatures": [{"zone": z.zone, "type": z.type, "temp_c": z.temp_c,
                          "source": "thermal_zone"} for z in freq.thermal.zones]
        + [{"zone": None, "type": f"{h.chip or 'hwmon'}/{h.label}", "temp_c": h.temp_c,
            "source": "hwmon"} for h in read_hwmon(sr)],
        "cooling_devices": [{"device": c.device, "type": c.type, "cur_state": c.cur_state,
                             "max_state": c.max_state, "cpus": c.cpus}
                            for c in freq.thermal.cooling],
        "throttle_counts": {str(k): v for k, v in freq.thermal.throttle.items()},
        "cpu_times": _cpu_times(sr),
        "busy": _busy_window(busy_window_s) if busy_window_s > 0 and live else None,
        "cgroup": _cgroup(root),
        "problems": merge_problems(problems, sr.problems),
    }
