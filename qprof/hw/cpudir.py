"""What the kernel's cpuN directories say about one CPU: its cpufreq policy (frequency
domain, hardware range) and its topology files (package, core, siblings, capacity).

These are the raw facts the clustering rule (:mod:`qprof.hw.clustering`) groups; the
public model built from them is :class:`qprof.hw.topology.CpuTopo`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qprof.hw.cpuinfo import CpuinfoData, MidrParts
from qprof.hw.sysfs import SysRoot, parse_hexmask

CPU_DIR = "/sys/devices/system/cpu"
CPU_NAME = re.compile(r"^cpu(\d+)$")
_POLICY_NAME = re.compile(r"^policy(\d+)$")

# A cpufreq policy's hardware range, read once per policy: (cpuinfo_max_freq, _min_freq).
DomainRanges = dict[frozenset[int], tuple[int | None, int | None]]


@dataclass
class CpuDirFacts:
    cpu: int
    related: set[int] | None = None
    related_strong: bool = False  # more than the CPU itself
    siblings: set[int] | None = None  # core_siblings (package/cluster)
    threads: set[int] | None = None
    max_khz: int | None = None
    min_khz: int | None = None
    midr: MidrParts | None = None  # attributed by /proc/cpuinfo
    package: int | None = None
    core_id: int | None = None
    core_type: str | None = None
    capacity: int | None = None


class PolicyMap:
    """cpu -> cpufreq policy directory, for CPUs whose cpuN/cpufreq link is gone
    (offline CPUs). Read on first use only: most readings never need it."""

    def __init__(self, sr: SysRoot) -> None:
        self._sr = sr
        self._map: dict[int, str] | None = None

    def get(self, cpu: int, default: str | None = None) -> str | None:
        if self._map is None:
            self._map = {}
            base = f"{CPU_DIR}/cpufreq"
            for name in self._sr.listdir(base):
                if _POLICY_NAME.match(name):
                    related, _ = self._sr.cpulist(f"{base}/{name}/related_cpus")
                    for c in related or ():
                        self._map.setdefault(c, f"{base}/{name}")
        return self._map.get(cpu, default)


def read_cpu_dir(sr: SysRoot, cpu: int, policies: PolicyMap, info: CpuinfoData,
                 domains: DomainRanges) -> CpuDirFacts:
    p = CpuDirFacts(cpu=cpu, midr=info.midrs.get(cpu))
    base = f"{CPU_DIR}/cpu{cpu}"
    _read_policy(sr, p, f"{base}/cpufreq", policies, domains)
    _read_topology_files(sr, p, f"{base}/topology")
    p.capacity, _ = sr.int(f"{base}/cpu_capacity")
    return p


def _read_policy(sr: SysRoot, p: CpuDirFacts, freq_dir: str, policies: PolicyMap,
                 domains: DomainRanges) -> None:
    cpu = p.cpu
    related, prob = sr.cpulist(f"{freq_dir}/related_cpus")
    if related is None and not sr.exists(freq_dir):
        freq_dir, prob = policies.get(cpu, "") or "", None  # link gone: try the policy
        if freq_dir:
            related, prob = sr.cpulist(f"{freq_dir}/related_cpus")
    if not freq_dir:
        return
    sr.note(prob)
    if related is None:
        related, _ = sr.cpulist(f"{freq_dir}/affected_cpus")
    if related is not None and cpu not in related:
        # The directory describes another CPU's policy: none of it is this CPU's.
        sr.note(f"{freq_dir}/related_cpus: does not list cpu{cpu} itself; "
                "its cpufreq files are ignored")
        return
    p.related = related
    p.related_strong = related is not None and len(related) > 1
    key = frozenset(related) if related is not None and p.related_strong else None
    if key is not None and key in domains:
        # Same policy as a CPU already read (one kernel object, one answer).
        p.max_khz, p.min_khz = domains[key]
        return
    p.max_khz, prob_max = sr.int(f"{freq_dir}/cpuinfo_max_freq")
    sr.note(prob_max)
    p.min_khz, prob_min = sr.int(f"{freq_dir}/cpuinfo_min_freq")
    sr.note(prob_min)
    if key is not None and prob_max is None and prob_min is None:
        domains[key] = (p.max_khz, p.min_khz)


def _read_topology_files(sr: SysRoot, p: CpuDirFacts, topo: str) -> None:
    cpu = p.cpu
    sib, _ = sr.cpulist(f"{topo}/core_siblings_list")
    if sib is None and not sr.exists(topo):
        return
    if sib is None:
        sib, _ = sr.cpulist(f"{topo}/package_cpus_list")
    if sib is None:
        text, _ = sr.text(f"{topo}/core_siblings")
        if text is not None:
            sib, _ = parse_hexmask(text)
    if sib is not None and cpu not in sib:
        sr.note(f"{topo}/core_siblings_list: does not list cpu{cpu} itself; ignored")
        sib = None
    p.siblings = sib
    thr, _ = sr.cpulist(f"{topo}/thread_siblings_list")
    if thr is None:
        thr, _ = sr.cpulist(f"{topo}/core_cpus_list")
    p.threads = thr
    p.package, _ = sr.int(f"{topo}/physical_package_id")
    p.core_id, _ = sr.int(f"{topo}/core_id")
