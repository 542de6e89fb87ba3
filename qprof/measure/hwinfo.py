"""What the engine needs to know about CPUs: topology rows, frequency/cap state, env.

Uses ``qprof.hw`` (the readers over /proc and /sys); when that package cannot be
imported, falls back to the few sysfs files the engine needs, so a measurement never
fails because a reader is missing. Every unknown is ``None`` plus a reason.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _read_str(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def _cpu_dir(root: str | Path, cpu: int) -> Path:
    return Path(root) / "sys/devices/system/cpu" / f"cpu{cpu}"


def cpu_problem(cpu: int, root: str | Path = "/") -> str | None:
    """Why ``cpu`` cannot be measured here, or None when it can."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    base = Path(root) / "sys/devices/system/cpu"
    if base.is_dir() and not _cpu_dir(root, cpu).is_dir():
        return f"CPU {cpu} does not exist on this machine (CPUs here: {format_cpus(allowed)})"
    if _read_str(_cpu_dir(root, cpu) / "online") == "0":
        return f"CPU {cpu} is offline"
    if allowed and cpu not in allowed:
        return (
            f"CPU {cpu} is not in this process's affinity mask "
            f"(allowed: {format_cpus(allowed)})"
        )
    return None


def format_cpus(cpus: list[int]) -> str:
    if not cpus:
        return "none"
    parts = []
    start = prev = cpus[0]
    for c in cpus[1:] + [None]:  # type: ignore[list-item]
        if c is not None and c == prev + 1:
            prev = c
            continue
        parts.append(f"{start}-{prev}" if prev != start else f"{start}")
        if c is not None:
            start = prev = c
    return ",".join(parts)


def parse_cpus(text: str) -> list[int] | None:
    """"0,2-3" -> [0, 2, 3]; "all" -> None (the caller decides). ValueError when bad."""
    text = text.strip()
    if text == "all":
        return None
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            lo, hi = int(a), int(b)
            if hi < lo:
                raise ValueError(f"bad CPU range {part!r}")
            cpus.update(range(lo, hi + 1))
        else:
            cpus.add(int(part))
    if not cpus:
        raise ValueError(f"no CPUs in {text!r}")
    if min(cpus) < 0:
        raise ValueError("CPU numbers are >= 0")
    return sorted(cpus)


def topology(root: str | Path = "/") -> dict[str, Any]:
    """Topology as ``qprof.hw.Topology.to_dict()``; a small sysfs fallback otherwise."""
    try:
        from qprof.hw import read_topology

        return read_topology(root).to_dict()
    except Exception as exc:  # reader missing or failing: degrade, say why
        reason = f"qprof.hw.read_topology unavailable ({type(exc).__name__}: {exc})"
    allowed = sorted(os.sched_getaffinity(0))
    rows = []
    for cpu in allowed:
        d = _cpu_dir(root, cpu)
        rows.append(
            {
                "cpu": cpu,
                "online": _read_str(d / "online") != "0",
                "cluster": _read_int(d / "topology/cluster_id")
                or _read_int(d / "topology/physical_package_id")
                or 0,
                "max_khz": _read_int(d / "cpufreq/cpuinfo_max_freq"),
                "uarch": None,
                "part_name": None,
            }
        )
    clusters: dict[int, list[int]] = {}
    for r in rows:
        clusters.setdefault(r["cluster"], []).append(r["cpu"])
    return {
        "root": str(root),
        "cpus": rows,
        "clusters": [{"id": k, "cpus": v} for k, v in sorted(clusters.items())],
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


def frequencies(root: str | Path, cpus: list[int]) -> dict[int, CpuFreq]:
    try:
        from qprof.hw import read_frequencies

        reading = read_frequencies(root)
        return _from_hw(reading, cpus)
    except Exception:  # fall back to sysfs below
        pass
    out = {}
    for cpu in cpus:
        d = _cpu_dir(root, cpu) / "cpufreq"
        cur = _read_int(d / "scaling_cur_freq")
        mx = _read_int(d / "scaling_max_freq")
        hw = _read_int(d / "cpuinfo_max_freq")
        capped = None if mx is None or hw is None else mx < hw
        factor = (hw / mx) if capped and mx else (1.0 if capped is False else None)
        out[cpu] = CpuFreq(
            cpu, cur, mx, hw, capped, factor, "policy" if capped else None,
            _read_str(d / "scaling_governor"), _read_int(d / "scaling_min_freq"),
        )
    return out


def _from_hw(reading: Any, cpus: list[int]) -> dict[int, CpuFreq]:
    rows = getattr(reading, "cpus", reading)
    items = list(rows.values()) if isinstance(rows, dict) else list(rows)
    out = {}
    for row in items:
        get = row.get if isinstance(row, dict) else lambda k, r=row: getattr(r, k, None)
        cpu = get("cpu")
        if cpu not in cpus:
            continue
        out[cpu] = CpuFreq(
            cpu=cpu,
            cur_khz=get("cur_khz"),
            max_khz=get("max_khz"),
            hw_max_khz=get("hw_max_khz"),
            capped=get("capped"),
            cap_factor=get("cap_factor"),
            cause=get("cap_cause"),
            governor=get("governor"),
            min_khz=get("min_khz"),
        )
    for cpu in cpus:
        out.setdefault(cpu, CpuFreq(cpu, None, None, None, None, None, None))
    return out


def env_snapshot(root: str | Path = "/") -> dict[str, Any]:
    try:
        from qprof.hw import take_env_snapshot

        return take_env_snapshot(root)
    except Exception as exc:
        snap: dict[str, Any] = {"taken_at": time.time(), "problems": [
            f"qprof.hw.take_env_snapshot unavailable ({type(exc).__name__}: {exc})"]}
        load = _read_str(Path(root) / "proc/loadavg")
        if load:
            snap["loadavg"] = [float(x) for x in load.split()[:3]]
        return snap


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
