"""Environment snapshot taken before and after a run (the seeds' ``.env.txt``), as JSON."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from qprof.hw.format import merge_problems
from qprof.hw.freq import read_frequencies
from qprof.hw.sysfs import SysRoot
from qprof.hw.thermal import read_hwmon
from qprof.hw.topology import Topology, read_topology


def _loadavg(sr: SysRoot) -> dict[str, Any] | None:
    text, prob = sr.text("/proc/loadavg")
    if text is None:
        sr.note(prob)
        return None
    fields = text.split()
    try:
        load = {"1m": float(fields[0]), "5m": float(fields[1]), "15m": float(fields[2])}
    except (IndexError, ValueError):
        sr.note(f"/proc/loadavg: cannot parse {text.strip()[:40]!r}")
        return None
    if len(fields) >= 4 and "/" in fields[3]:
        running, _, total = fields[3].partition("/")
        if running.isdigit() and total.isdigit():
            load["running"], load["tasks"] = int(running), int(total)
    return load


def take_env_snapshot(root: str | Path = "/", topology: Topology | None = None,
                      estimate: bool = False) -> dict[str, Any]:
    """JSON-able snapshot: load, per-CPU frequency/governor/cap, temperatures.

    Raises :class:`NotLinuxRoot` for a root that is not a Linux tree.
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
            "estimated": f.estimated,
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
        "problems": problems,
    }
