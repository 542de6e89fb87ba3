"""The hardware models every reader fills: a CPU, a cluster, the machine's topology.

Their own module so the readers (:mod:`qprof.hw.x86`, :mod:`qprof.hw.midr`,
:mod:`qprof.hw.isa`) and :mod:`qprof.hw.topology`, which calls them, import the models
rather than each other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from qprof.hw.sysfs import format_cpulist, problems_by_cpu


@dataclass
class CpuTopo:
    cpu: int
    online: bool | None = None
    present: bool | None = None
    vendor: str | None = None  # implementer / CPU vendor name
    part_name: str | None = None  # e.g. "Kryo 4XX Silver"; x86: model name
    uarch: str | None = None  # core design, e.g. "Cortex-A55", "Zen 3"
    cluster: int | None = None
    core_class: str | None = None  # "performance" | "efficiency" | "uniform"
    max_khz: int | None = None  # cpuinfo_max_freq (hardware maximum)
    min_khz: int | None = None  # cpuinfo_min_freq
    # ARM
    implementer: str | None = None  # "0x51"
    variant: str | None = None  # "0x7"
    part: str | None = None  # "0x805"
    revision: int | None = None
    midr: str | None = None  # "0x517f805e"
    midr_source: str | None = None  # "cpuinfo", "cluster", "chipset table", ...
    # x86: "cpuid"; in a VM "hypervisor cpu model" (labelled as reported) or "flags" (the
    # model named a design its flags contradict)
    uarch_source: str | None = None
    vendor_id: str | None = None
    family: int | None = None
    model: int | None = None
    stepping: int | None = None
    model_name: str | None = None
    core_type: str | None = None  # "cpu_core" | "cpu_atom" on Intel hybrid
    # topology
    package: int | None = None
    core_id: int | None = None
    smt_siblings: list[int] = field(default_factory=list)
    capacity: int | None = None  # cpu_capacity (1024 = fastest)
    freq_domain: list[int] | None = None  # related_cpus
    # ISA features that change verification costs (qprof.hw.isa), None = not listed
    isa: list[str] | None = None
    isa_missing: list[str] | None = None
    isa_source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ClusterTopo:
    id: int
    cpus: list[int]
    online_cpus: list[int]
    uarch: str | None
    part_name: str | None
    vendor: str | None
    midr: str | None
    max_khz: int | None
    min_khz: int | None
    core_class: str | None
    grouped_by: str  # "cpufreq", "topology", "layout heuristic", ...
    isa: list[str] | None = None  # features every member with a known list has
    isa_missing: list[str] | None = None

    @property
    def cpulist(self) -> str:
        return format_cpulist(self.cpus)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cpulist"] = self.cpulist
        return d


@dataclass
class Topology:
    root: str
    arch: str | None
    cpus: list[CpuTopo]
    clusters: list[ClusterTopo]
    hardware: str | None = None  # /proc/cpuinfo "Hardware" (ARM SoC)
    chipset: str | None = None
    model_name: str | None = None
    hybrid: bool = False
    problems: list[str] = field(default_factory=list)

    def cpu(self, n: int) -> CpuTopo | None:
        for c in self.cpus:
            if c.cpu == n:
                return c
        return None

    def cluster_of(self, n: int) -> ClusterTopo | None:
        c = self.cpu(n)
        if c is None or c.cluster is None:
            return None
        return self.clusters[c.cluster]

    def domains(self) -> dict[int, list[int]]:
        """cpu -> its cpufreq domain (policyN is named after a member N)."""
        return {c.cpu: c.freq_domain for c in self.cpus if c.freq_domain}

    def to_dict(self) -> dict[str, Any]:
        per_cpu = problems_by_cpu(self.problems, self.domains())
        return {
            "root": self.root,
            "arch": self.arch,
            "hardware": self.hardware,
            "chipset": self.chipset,
            "model_name": self.model_name,
            "hybrid": self.hybrid,
            "cpus": [dict(c.to_dict(), problems=per_cpu.get(c.cpu, [])) for c in self.cpus],
            "clusters": [c.to_dict() for c in self.clusters],
            "problems": list(self.problems),
        }
