"""Topology and frequencies through ``qprof.hw`` (this machine or a ``--root`` snapshot).

The topology is read once (core designs do not change while the monitor runs); the
frequencies are read on every refresh for the live machine and once for a snapshot
directory, whose files do not change. Bad or missing hardware data never raises out of
here: the reason goes to :attr:`HardwareSource.problems` and the values stay ``None``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qprof.hw.freq import CpuFreq, read_frequencies
from qprof.hw.sysfs import kernel_text
from qprof.hw.topology import CpuTopo, Topology, read_topology
from qprof.tui.sources.child import run_child

# Run in a child process: numba (the estimate's timing loop) never enters the UI
# process, and the loop's ~100 ms per CPU never holds the UI's GIL.
_ESTIMATE_SCRIPT = """
import json, sys
from qprof.hw.estimate import estimate_cpu_khz
print(json.dumps({c: estimate_cpu_khz(int(c)) for c in sys.argv[1:]}))
"""


@dataclass(frozen=True)
class CpuFacts:
    """What the monitor shows of one CPU: a view over its topology row and its one
    frequency reading (``qprof.hw.freq.CpuFreq``; None when none was read)."""

    topo: CpuTopo
    freq: CpuFreq | None = None

    @property
    def cpu(self) -> int:
        return self.topo.cpu

    @property
    def online(self) -> bool | None:
        return self.freq.online if self.freq is not None else self.topo.online

    @property
    def cluster(self) -> int | None:
        return self.topo.cluster

    @property
    def design(self) -> str | None:
        return self.topo.uarch

    @property
    def part(self) -> str | None:
        return self.topo.part_name

    @property
    def vendor(self) -> str | None:
        return self.topo.vendor

    @property
    def core_class(self) -> str | None:
        return self.topo.core_class

    @property
    def governor(self) -> str | None:
        return self.freq.governor if self.freq else None

    @property
    def cur_khz(self) -> int | None:
        return self.freq.cur_khz if self.freq else None

    @property
    def max_khz(self) -> int | None:
        if self.freq is not None and self.freq.max_khz is not None:
            return self.freq.max_khz
        return self.topo.max_khz

    @property
    def hw_max_khz(self) -> int | None:
        return self.freq.hw_max_khz if self.freq else None

    @property
    def capped(self) -> bool | None:
        return self.freq.capped if self.freq else None

    @property
    def cap_factor(self) -> float | None:
        return self.freq.cap_factor if self.freq else None

    @property
    def cap_cause(self) -> str | None:
        return self.freq.cap_cause if self.freq else None

    @property
    def estimated(self) -> bool:
        return bool(self.freq and self.freq.estimated)


@dataclass(frozen=True)
class ClusterFacts:
    id: int
    cpus: tuple[int, ...]
    design: str | None
    max_khz: int | None


class HardwareSource:
    def __init__(self, root: str | Path = "/", live: bool | None = None) -> None:
        self.root = Path(root)
        # A root other than "/" is another machine's snapshot: nothing in it moves.
        self.live = (self.root.resolve() == Path("/")) if live is None else live
        self.problems: list[str] = []
        self._topology: Topology | None = None
        self._freq_cache: dict[int, CpuFreq] | None = None
        self._machine: dict[str, Any] | None = None

    # ------------------------------------------------------------------ topology
    def topology(self) -> Topology:
        if self._topology is None:
            self._topology = read_topology(self.root)
            self.problems.extend(str(p) for p in self._topology.problems)
        return self._topology

    def clusters(self) -> list[ClusterFacts]:
        return [ClusterFacts(id=c.id, cpus=tuple(c.cpus), design=c.uarch, max_khz=c.max_khz)
                for c in self.topology().clusters]

    def machine(self) -> dict[str, Any]:
        """Model name, arch and core designs for the header."""
        if self._machine is None:
            topo = self.topology()
            model = (topo.chipset or topo.hardware or topo.model_name
                     or _model_from_cpuinfo(self.root) or "unknown CPU")
            by_cpu = {c.cpu: c for c in topo.cpus}
            designs: list[str] = []
            for cluster in self.clusters():
                first = by_cpu.get(cluster.cpus[0]) if cluster.cpus else None
                design = cluster.design or (first.uarch if first else None)
                part = first.part_name if first else None
                label = design or part or "unknown design"
                if part and design and part != design:
                    label = f"{part} ({design})"
                designs.append(f"{label} ×{len(cluster.cpus)}")
            self._machine = {
                "model": str(model),
                "arch": topo.arch,
                "designs": " + ".join(designs) or "unknown",
            }
        return self._machine

    # ---------------------------------------------------------------- frequencies
    def frequencies(self) -> dict[int, CpuFreq]:
        if self._freq_cache is not None and not self.live:
            return self._freq_cache
        try:
            reading = read_frequencies(self.root, self.topology())
            self._freq_cache = {f.cpu: f for f in reading.cpus}
        except (OSError, ValueError) as exc:
            self.problems.append(f"frequencies: {exc}")
            self._freq_cache = {}
        return self._freq_cache

    def cpus(self) -> list[CpuFacts]:
        """Topology and current frequencies of every CPU, in CPU order."""
        freqs = self.frequencies()
        return sorted((CpuFacts(t, freqs.get(t.cpu)) for t in self.topology().cpus),
                      key=lambda c: c.cpu)


def _model_from_cpuinfo(root: Path) -> str | None:
    """'model name' (x86) or 'Hardware' (Android ARM) line of /proc/cpuinfo."""
    try:
        text = kernel_text(root / "proc" / "cpuinfo")
    except OSError:
        return None
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key in ("model name", "hardware") and value.strip():
            found.setdefault(key, value.strip())
    return found.get("hardware") or found.get("model name")


def estimate_clocks(cpus: list[int], stop: threading.Event | None = None,
                    timeout_s: float = 60.0) -> tuple[dict[int, int], list[str]]:
    """cpu -> estimated kHz (``qprof freq``'s estimate: a timed dependent-instruction
    loop, ~100 ms per CPU) for machines without cpufreq; with the problems met.
    Blocking: call it from a worker thread, once; ``stop`` kills the child (raises
    ChildStopped)."""

    if not cpus:
        return {}, []
    try:
        rc, stdout, stderr = run_child(
            [sys.executable, "-c", _ESTIMATE_SCRIPT, *map(str, cpus)], stop, timeout_s)
        answers = json.loads(stdout or "{}")
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return {}, [f"clock estimate failed: {exc}"]
    out: dict[int, int] = {}
    problems: list[str] = []
    for cpu, (khz, problem) in answers.items():
        if khz:
            out[int(cpu)] = int(khz)
        elif problem:
            problems.append(f"CPU {cpu}: {problem}")
    if rc and not out:
        problems.append(f"clock estimate failed: {stderr.strip()[-200:]}")
    return out, problems
