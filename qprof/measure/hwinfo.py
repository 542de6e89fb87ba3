"""What the engine needs to know about CPUs: topology rows, frequency/cap state, env.

Thin views over ``qprof.hw`` (the readers over /proc and /sys), shaped for the engine's
records. Every unknown is ``None`` plus a reason; a root the readers refuse degrades to
the CPUs this process may run on, with the reason in ``problems``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from qprof.hw import (
    ClusterTopo,
    CpuTopo,
    Topology,
    read_frequencies,
    read_topology,
    take_env_snapshot,
)
from qprof.hw.choose import one_per_cluster
from qprof.hw.freq import CpuFreq
from qprof.hw.sysfs import format_cpulist, kernel_text
from qprof.measure.records_parts import EnvSnapshot


def _allowed_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def cpu_problem(cpu: int, root: str | Path = "/") -> str | None:
    """Why ``cpu`` cannot be measured here, or None when it can."""
    allowed = _allowed_cpus()
    base = Path(root) / "sys/devices/system/cpu"
    if base.is_dir() and not (base / f"cpu{cpu}").is_dir():
        return f"CPU {cpu} does not exist on this machine (CPUs here: {format_cpus(allowed)})"
    try:
        online = kernel_text(base / f"cpu{cpu}" / "online").strip()
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


def topology(root: str | Path = "/") -> Topology:
    """The root's topology; when the readers refuse the root, the CPUs this process may
    run on, one cluster, and why."""
    try:
        return read_topology(root)
    except Exception as exc:  # degrade, say why: a measurement must not die here
        reason = f"qprof.hw.read_topology failed ({type(exc).__name__}: {exc})"
    cpus = _allowed_cpus()
    cluster = ClusterTopo(id=0, cpus=cpus, online_cpus=cpus, uarch=None, part_name=None,
                          vendor=None, midr=None, max_khz=None, min_khz=None,
                          core_class=None, grouped_by="affinity")
    return Topology(root=str(root), arch=None,
                    cpus=[CpuTopo(cpu=c, online=True, cluster=0) for c in cpus],
                    clusters=[cluster] if cpus else [], problems=[reason])


def default_cpus(topo: Topology, live: bool = False) -> list[int]:
    """One CPU per cluster (:func:`qprof.hw.choose.one_per_cluster`); without clusters,
    the highest online CPU. ``live``: only CPUs this process may run on (a container's
    effective cpuset bounds its affinity)."""
    online = {c.cpu for c in topo.cpus if c.online is not False}
    if live and online & set(_allowed_cpus()):
        online &= set(_allowed_cpus())
    clusters = {c.id: c.cpus for c in topo.clusters}
    chosen, _problems = one_per_cluster(clusters, online)
    if not chosen and online:
        chosen = [max(online)]
    return sorted(set(chosen)) or [0]


def frequencies(root: str | Path, cpus: list[int],
                topology: Topology | None = None) -> dict[int, CpuFreq]:
    """Frequency and cap state of ``cpus``; all-unknown rows when the readers fail.

    Pass ``topology`` when calling in a loop: without it the reader reads it again.
    """
    unknown = {cpu: CpuFreq(cpu, None) for cpu in cpus}
    try:
        reading = read_frequencies(root, topology)
    except Exception:  # a refused root: nothing known, which records say as None
        return unknown
    wanted = set(cpus)
    return {**unknown, **{f.cpu: f for f in reading.cpus if f.cpu in wanted}}


def env_snapshot(root: str | Path = "/") -> EnvSnapshot:
    """The root's :func:`qprof.hw.take_env_snapshot`, typed; its time and why when the
    readers refuse the root."""
    try:
        return EnvSnapshot.from_dict(take_env_snapshot(root), "snapshot")
    except Exception as exc:
        why = f"qprof.hw.take_env_snapshot failed ({type(exc).__name__}: {exc})"
        return EnvSnapshot(taken_at=time.time(), problems=(why,),
                           keys=("taken_at", "problems"))
