"""What the engine needs to know about CPUs: topology rows, frequency/cap state, env.

Thin views over ``qprof.hw`` (the readers over /proc and /sys), shaped for the engine's
records. Every unknown is ``None`` plus a reason; a root the readers refuse degrades to
the CPUs this process may run on, with the reason in ``problems``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qprof.hw import Topology, read_frequencies, read_topology, take_env_snapshot
from qprof.hw.sysfs import format_cpulist, parse_cpulist


@dataclass
class CpuFreq:
    cpu: int
    cur_khz: int | None
    max_khz: int | None  # effective maximum now (policy/thermal cap applied)
    hw_max_khz: int | None
    capped: bool | None
    cap_factor: float | None
    cause: str | None
    governor: str | None = None
    min_khz: int | None = None


def _allowed_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def cpu_problem(cpu: int, root: str | Path = "/") -> str | None:
    """Why ``cpu`` cannot be measured here, or None when it can."""
    allowed = _allowed_cpus()
    base = Path(root) / "sys/devices/system/cpu"
    if base.is_dir() and not (base / f"cpu{cpu}").is_dir():
        return f"CPU {cpu} does not exist on this machine (CPUs here: {format_cpus(allowed)})"
    try:
        online = (base / f"cpu{cpu}" / "online").read_text().strip()
    except OSError:
        online = None  # no online file: CPU 0 on many kernels, always online
    if online == "0":
        return f"CPU {cpu} is offline"
    if allowed and cpu not in allowed:
        return (
            f"CPU {cpu} is not in this process's affinity mask "
            f"(allowed: {format_cpus(allowed)})"
        )
    return None


def format_cpus(cpus: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``; ``"none"`` for an empty list."""
    return format_cpulist(cpus) if cpus else "none"


def parse_cpus(text: str) -> list[int] | None:
    """"0,2-3" -> [0, 2, 3]; "all" -> None (the caller decides). ValueError when bad."""
    text = text.strip()
    if text == "all":
        return None
    cpus, problem = parse_cpulist(text, "CPU list")
    if problem:
        raise ValueError(problem)
    if not cpus:
        raise ValueError(f"no CPUs in {text!r}")
    return sorted(cpus)


def topology(root: str | Path = "/") -> dict[str, Any]:
    """Topology as ``qprof.hw.Topology.to_dict()``; when the readers refuse the root, the
    CPUs this process may run on, one cluster, and why."""
    try:
        return read_topology(root).to_dict()
    except Exception as exc:  # degrade, say why: a measurement must not die here
        reason = f"qprof.hw.read_topology failed ({type(exc).__name__}: {exc})"
    rows = [{"cpu": cpu, "online": True, "cluster": 0, "max_khz": None, "uarch": None,
             "part_name": None} for cpu in _allowed_cpus()]
    return {
        "root": str(root),
        "cpus": rows,
        "clusters": [{"id": 0, "cpus": [r["cpu"] for r in rows]}] if rows else [],
        "problems": [reason],
    }


def default_cpus(topo: dict[str, Any]) -> list[int]:
    """One CPU per cluster: the highest-numbered online one (CPU 0 takes more interrupts)."""
    online = {r["cpu"] for r in topo.get("cpus", []) if r.get("online", True)}
    chosen = []
    for cluster in topo.get("clusters", []):
        members = [c for c in cluster.get("cpus", []) if c in online]
        if members:
            chosen.append(max(members))
    if not chosen and online:
        chosen = [max(online)]
    return sorted(set(chosen)) or [0]


def frequencies(root: str | Path, cpus: list[int],
                topology: Topology | None = None) -> dict[int, CpuFreq]:
    """Frequency and cap state of ``cpus``; all-unknown rows when the readers fail.

    Pass ``topology`` when calling in a loop: without it the reader reads it again.
    """
    unknown = {cpu: CpuFreq(cpu, None, None, None, None, None, None) for cpu in cpus}
    try:
        reading = read_frequencies(root, topology)
    except Exception:  # a refused root: nothing known, which records say as None
        return unknown
    wanted = set(cpus)
    for f in reading.cpus:
        if f.cpu in wanted:
            unknown[f.cpu] = CpuFreq(
                cpu=f.cpu, cur_khz=f.cur_khz, max_khz=f.max_khz, hw_max_khz=f.hw_max_khz,
                capped=f.capped, cap_factor=f.cap_factor, cause=f.cap_cause,
                governor=f.governor, min_khz=f.min_khz,
            )
    return unknown


def env_snapshot(root: str | Path = "/") -> dict[str, Any]:
    try:
        return take_env_snapshot(root)
    except Exception as exc:
        return {"taken_at": time.time(), "problems": [
            f"qprof.hw.take_env_snapshot failed ({type(exc).__name__}: {exc})"]}


def cap_text(hw_max_khz: int | None, max_khz: int | None, factor: float | None) -> str:
    """The sentence every record and report uses for a capped CPU."""
    if hw_max_khz and max_khz:
        return (
            f"held at {max_khz / 1e6:.2f} GHz instead of {hw_max_khz / 1e6:.2f} GHz: absolute "
            f"times about {factor or hw_max_khz / max_khz:.1f}× slower; ratios measured on the "
            "same core at the same time are not affected"
        )
    return (
        f"ran below its hardware maximum (factor {factor:.2f}): absolute times are slower; "
        "ratios measured on the same core at the same time are not affected"
        if factor
        else "ran below its hardware maximum: absolute times are slower; ratios measured on "
        "the same core at the same time are not affected"
    )
