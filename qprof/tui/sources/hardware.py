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

# Run in a child process: numba (the estimate's timing loop) never enters the UI
# process, and the loop's ~100 ms per CPU never holds the UI's GIL.
_ESTIMATE_SCRIPT = """
import json, sys
from qprof.hw.estimate import estimate_cpu_khz
print(json.dumps({c: estimate_cpu_khz(int(c)) for c in sys.argv[1:]}))
"""


def field_of(obj: Any, name: str, default: Any = None) -> Any:
    """Attribute or mapping key: the hw dataclasses and their to_dict() both work."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


@dataclass(frozen=True)
class CpuFacts:
    """What the monitor needs of one CPU, from topology + frequencies."""

    cpu: int
    online: bool | None
    cluster: int | None
    design: str | None
    part: str | None
    vendor: str | None
    core_class: str | None
    governor: str | None = None
    cur_khz: int | None = None
    max_khz: int | None = None
    hw_max_khz: int | None = None
    capped: bool | None = None
    cap_factor: float | None = None
    cap_cause: str | None = None
    estimated: bool = False


@dataclass(frozen=True)
class ClusterFacts:
    id: int
    cpus: tuple[int, ...]
    design: str | None
    max_khz: int | None


def _per_cpu(reading: Any) -> dict[int, Any]:
    """FreqReading -> {cpu: per-CPU entry}, whatever container the reader used."""
    if reading is None:
        return {}
    entries = field_of(reading, "cpus")
    if entries is None and hasattr(reading, "to_dict"):
        entries = reading.to_dict().get("cpus")
    if entries is None:
        entries = reading
    if isinstance(entries, dict):
        return {int(k): v for k, v in entries.items()}
    out: dict[int, Any] = {}
    for entry in entries or ():
        cpu = field_of(entry, "cpu")
        if cpu is not None:
            out[int(cpu)] = entry
    return out


class HardwareSource:
    def __init__(self, root: str | Path = "/", live: bool | None = None) -> None:
        self.root = Path(root)
        # A root other than "/" is another machine's snapshot: nothing in it moves.
        self.live = (self.root.resolve() == Path("/")) if live is None else live
        self.problems: list[str] = []
        self._topology: Any = None
        self._freq_cache: dict[int, Any] | None = None
        self._machine: dict[str, Any] | None = None

    # ------------------------------------------------------------------ topology
    def topology(self) -> Any:
        if self._topology is None:
            from qprof.hw import read_topology  # light: file reads only

            self._topology = read_topology(self.root)
            self.problems.extend(str(p) for p in (field_of(self._topology, "problems") or ()))
        return self._topology

    def clusters(self) -> list[ClusterFacts]:
        out = []
        for c in field_of(self.topology(), "clusters") or ():
            cid = field_of(c, "id")
            if cid is None:
                continue
            out.append(
                ClusterFacts(
                    id=int(cid),
                    cpus=tuple(int(x) for x in field_of(c, "cpus") or ()),
                    design=field_of(c, "uarch"),
                    max_khz=field_of(c, "max_khz"),
                )
            )
        return out

    def machine(self) -> dict[str, Any]:
        """Model name, arch and core designs for the header."""
        if self._machine is None:
            topo = self.topology()
            model = (
                field_of(topo, "chipset")
                or field_of(topo, "hardware")
                or field_of(topo, "model_name")
                or _model_from_cpuinfo(self.root)
                or "unknown CPU"
            )
            designs: list[str] = []
            for cluster in self.clusters():
                first = self._topo_cpu(cluster.cpus[0]) if cluster.cpus else None
                design = cluster.design or field_of(first, "uarch")
                part = field_of(first, "part_name")
                label = design or part or "unknown design"
                if part and design and part != design:
                    label = f"{part} ({design})"
                designs.append(f"{label} ×{len(cluster.cpus)}")
            self._machine = {
                "model": str(model),
                "arch": field_of(topo, "arch"),
                "designs": " + ".join(designs) or "unknown",
            }
        return self._machine

    def _topo_cpu(self, cpu: int) -> Any:
        for entry in field_of(self.topology(), "cpus") or ():
            if field_of(entry, "cpu") == cpu:
                return entry
        return None

    # ---------------------------------------------------------------- frequencies
    def frequencies(self) -> dict[int, Any]:
        if self._freq_cache is not None and not self.live:
            return self._freq_cache
        from qprof.hw import read_frequencies

        try:
            reading = read_frequencies(self.root, self.topology())
        except (OSError, ValueError) as exc:
            self.problems.append(f"frequencies: {exc}")
            reading = None
        self._freq_cache = _per_cpu(reading)
        return self._freq_cache

    def cpus(self) -> list[CpuFacts]:
        """Topology and current frequencies of every CPU, in CPU order."""
        freqs = self.frequencies()
        out = []
        for entry in field_of(self.topology(), "cpus") or ():
            cpu = field_of(entry, "cpu")
            if cpu is None:
                continue
            f = freqs.get(int(cpu))
            out.append(
                CpuFacts(
                    cpu=int(cpu),
                    online=field_of(entry, "online"),
                    cluster=field_of(entry, "cluster"),
                    design=field_of(entry, "uarch"),
                    part=field_of(entry, "part_name"),
                    vendor=field_of(entry, "vendor"),
                    core_class=field_of(entry, "core_class"),
                    governor=field_of(f, "governor"),
                    cur_khz=field_of(f, "cur_khz"),
                    max_khz=field_of(f, "max_khz", field_of(entry, "max_khz")),
                    hw_max_khz=field_of(f, "hw_max_khz"),
                    capped=field_of(f, "capped"),
                    cap_factor=field_of(f, "cap_factor"),
                    cap_cause=field_of(f, "cap_cause"),
                    estimated=bool(field_of(f, "estimated", False)),
                )
            )
        return sorted(out, key=lambda c: c.cpu)


def _model_from_cpuinfo(root: Path) -> str | None:
    """'model name' (x86) or 'Hardware' (Android ARM) line of /proc/cpuinfo."""
    try:
        text = (root / "proc" / "cpuinfo").read_text(errors="replace")
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
    from qprof.tui.sources.child import run_child

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
