"""A run's ``Meta`` record: versions, machine, CPUs, settings; and the choice of clock."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from qprof import __version__
from qprof.hw import Topology
from qprof.hw.load import read_loadavg
from qprof.hw.sysfs import kernel_text
from qprof.measure import hwinfo
from qprof.measure.config import AUTO_CPU_TIMER_LOAD, TIMERS, BenchConfig
from qprof.measure.plan import EngineError, Plan, interleaving_text
from qprof.measure.records import Meta
from qprof.measure.records_parts import CpuRow, MachineInfo, RunSettings
from qprof.verify import BackendStatus
from qprof.verify.availability import find_liboqs
from qprof.verify.nb_cache import source_digest

TIMER_CLOCKS = {"cpu": "time.thread_time (CLOCK_THREAD_CPUTIME_ID)", "wall": "time.perf_counter"}


def _git_commit() -> str | None:
    repo = Path(__file__).resolve().parents[2]
    if not (repo / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def liboqs_linked_version(status: BackendStatus | None) -> str | None:
    """The liboqs library version in a liboqs BackendStatus, None when it did not load."""
    if status is None or not status.version:
        return None
    # BackendStatus.version: "liboqs 0.16.0; liboqs-python 0.16.0.1"
    for part in status.version.split(";"):
        part = part.strip()
        if part.startswith("liboqs "):
            return part.split(" ", 1)[1]
    return None


def _file_digest(path: str) -> str | None:
    """A short sha256 of a file (a build's identity: the same version built otherwise
    is another build)."""
    import hashlib

    try:
        with open(os.path.realpath(path), "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()[:16]
    except OSError:
        return None


def liboqs_build(status: BackendStatus | None) -> str | None:
    """Digest of the liboqs shared object that was loaded, None when none was."""
    if status is None or not status.available:
        return None
    where = find_liboqs()
    return None if isinstance(where, str) else _file_digest(where.library)


def kernels_digest(status: BackendStatus | None) -> str | None:
    """The numba kernels' digest (their sources, numba and llvmlite), when numba ran."""
    if status is None or not status.available:
        return None
    return str(source_digest())


def collect_versions(statuses: dict[str, BackendStatus]) -> dict[str, str | None]:
    import ssl

    linked = liboqs_linked_version(statuses.get("liboqs"))
    openssl = statuses.get("openssl")
    return {
        "qprof": __version__,
        "qprof_commit": _git_commit(),
        "python": platform.python_version(),
        "numba": dist_version("numba"),
        "numpy": dist_version("numpy"),
        "pyperf": dist_version("pyperf"),
        "liboqs_linked": linked,
        "liboqs_build": liboqs_build(statuses.get("liboqs")),
        "qprof_kernels": kernels_digest(statuses.get("numba")),
        "liboqs_python": dist_version("liboqs-python"),
        "openssl": ssl.OPENSSL_VERSION,
        "cryptography": openssl.version if openssl is not None else None,
        "pqcrypto": dist_version("pqcrypto"),
    }


def cpuinfo_field(root: str, *keys: str) -> str | None:
    try:
        for line in kernel_text(Path(root) / "proc/cpuinfo").splitlines():
            if line.lower().startswith(keys) and ":" in line:
                return line.split(":", 1)[1].strip()[:200]
    except OSError:
        pass
    return None


def _cpu_rows(topo: Topology, cpus: list[int], root: str) -> list[CpuRow]:
    """Each CPU's topology row (as ``Topology.to_dict`` writes it) with its frequency
    state, read back as :class:`CpuRow` so what is written is what readers accept."""
    freqs = hwinfo.frequencies(root, cpus)
    by_cpu = dict(zip([c.cpu for c in topo.cpus], topo.to_dict()["cpus"], strict=True))
    rows: list[CpuRow] = []
    for cpu in cpus:
        row = dict(by_cpu.get(cpu, {"cpu": cpu}))
        f = freqs.get(cpu)
        if f is not None:
            row.update({
                "governor": f.governor, "cur_khz": f.cur_khz, "min_khz": f.min_khz,
                "scaling_max_khz": f.max_khz, "hw_max_khz": f.hw_max_khz,
                "capped": f.capped, "cap_factor": f.cap_factor, "cap_cause": f.cap_cause,
            })
        rows.append(CpuRow.from_dict(row, f"cpus[{len(rows)}]"))
    return rows


def choose_timer(timer: str, root: str = "/") -> tuple[str, str | None]:
    """(clock, note): resolve "auto" from the 1-minute load average."""
    if timer not in TIMERS:
        raise EngineError(f"unknown timer {timer!r}; timers: {', '.join(TIMERS)}")
    if timer != "auto":
        return timer, None
    load = read_loadavg(root)
    if load is None or load.one < AUTO_CPU_TIMER_LOAD:
        return "wall", None
    return "cpu", (
        f"machine busy (1-minute load {load.one:.2f}): timing the CPU time of the worker "
        "thread, so time spent waiting behind other processes is not counted; run on a "
        "quiet machine (or --timer wall) for the seeds' wall-clock method"
    )


def build_meta(run_id: str, cfg: BenchConfig, plan: Plan, topo: Topology,
               cpus: list[int], timer: str) -> Meta:
    return Meta(
        run_id=run_id,
        started_at=time.time(),
        qprof_version=__version__,
        command=list(cfg.command or sys.argv),
        versions=collect_versions(plan.statuses),
        machine=MachineInfo(
            hostname=platform.node(),
            kernel=platform.release(),
            arch=platform.machine(),
            cpu_model=cpuinfo_field(cfg.root, "model name", "hardware", "cpu model"),
            microcode=cpuinfo_field(cfg.root, "microcode"),
            online_cpus=tuple(c.cpu for c in topo.cpus if c.online),
            clusters=tuple(c.to_dict() for c in topo.clusters),
            topology_problems=tuple(topo.problems),
            keys=MachineInfo.every_key(),
        ),
        cpus=_cpu_rows(topo, [c for c in cpus if hwinfo.cpu_problem(c, cfg.root) is None],
                       cfg.root),
        profile=cfg.profile,
        settings=RunSettings(
            mode=cfg.mode,
            suites=tuple(plan.suites),
            unit_suite=plan.unit,
            backends=tuple(plan.backends),
            operations=tuple(plan.operations),
            dual=tuple(plan.dual) if plan.dual else None,
            rounds=plan.rounds,
            max_rounds=plan.max_rounds,
            adaptive=cfg.adaptive,
            budget_s=plan.budget,
            min_n=plan.min_n,
            max_n=plan.max_n,
            nice=cfg.nice,
            interleaving=interleaving_text(plan.interleave_block_s),
            interleave_block_s=plan.interleave_block_s,
            timer=timer,
            timer_clock=TIMER_CLOCKS[timer],
            values="one operation per value (loops=1), clock overhead subtracted",
            backend_versions={
                n: st.version for n, st in plan.statuses.items() if st.available
            },
            keys=RunSettings.every_key(),
        ),
    )
