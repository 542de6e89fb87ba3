"""CPU topology under a root directory: what each CPU is and which cluster it is in.

The reader that builds the models of :mod:`qprof.hw.model`. It brings together: the
cpuN directories (:mod:`qprof.hw.cpudir`), the clustering rule, clusters = frequency domains
(:mod:`qprof.hw.clustering`), the core designs (:mod:`qprof.hw.x86`, and for ARM
:mod:`qprof.hw.midr`, where every CPU says where its MIDR came from), the instruction-set
features (:mod:`qprof.hw.isa`), then labels each cluster performance or efficiency.
"""

from __future__ import annotations

import os
import platform
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qprof.hw import parts, x86
from qprof.hw.clustering import cluster_cpus
from qprof.hw.cpudir import CPU_DIR, CPU_NAME, CpuDirFacts, DomainRanges, PolicyMap, read_cpu_dir
from qprof.hw.cpuinfo import CpuinfoData, parse_cpuinfo
from qprof.hw.isa import fill_isa, missing
from qprof.hw.midr import assign_midrs, fill_arm
from qprof.hw.model import ClusterTopo, CpuTopo, Topology
from qprof.hw.sysfs import SysRoot


class NotLinuxRoot(ValueError):
    """The root directory has neither /proc/cpuinfo nor /sys/devices/system/cpu."""


# --- the reader -------------------------------------------------------------------------


@dataclass
class _CpuLists:
    all: list[int]  # possible CPUs
    usable: list[int]  # present ones (all, when the kernel does not say)
    present: set[int] | None
    online: set[int] | None  # None: the global list is unreadable
    dirs: set[int]  # CPUs with a cpuN directory


def read_topology(root: str | Path = "/") -> Topology:
    sr = SysRoot(root)
    has_cpuinfo = os.path.exists(sr.path("/proc/cpuinfo"))
    has_sys = os.path.isdir(sr.path(CPU_DIR))
    if not has_cpuinfo and not has_sys:
        raise NotLinuxRoot(f"{root}: not a Linux root (no /proc/cpuinfo and no {CPU_DIR})")

    text, prob = sr.text("/proc/cpuinfo")
    sr.note(prob)
    info = parse_cpuinfo(text or "")
    for problem in info.problems:
        sr.note(problem)
    arch = _detect_arch(sr, info)
    is_x86 = arch in ("x86", "x86_64")
    lists = _read_cpu_lists(sr, info)
    procs = _read_cpu_dirs(sr, lists, info)
    hybrid = is_x86 and _mark_hybrid(sr, procs)
    # x86 identity before clustering: module clustering depends on the design.
    blocks = x86.blocks_by_cpu(info, lists.all) if is_x86 else {}
    model_name = info.globals.get("Processor")
    if is_x86:
        model_name = next(iter(info.processors.values()), {}).get("model name") or model_name

    groups, how = cluster_cpus(procs, lists.usable, arch, x86.design(blocks), hybrid)
    chipset = parts.chipset_name(info.hardware)
    cluster_of = {c: i for i, g in enumerate(groups) for c in g}
    cpus = [_cpu_model(sr, lists, procs[c], cluster_of.get(c)) for c in lists.all]
    if is_x86:
        for t in cpus:
            x86.fill_x86(t, blocks.get(t.cpu, {}), hybrid, sr)
    else:
        _fill_midrs(sr, cpus, groups, procs, info, chipset, len(lists.usable))
    fill_isa(cpus, groups, info, is_x86, arch, sr)

    clusters = _make_clusters(groups, cpus, how, is_x86, arch)
    _classify(cpus, clusters, hybrid)
    return Topology(root=str(root), arch=arch, cpus=cpus, clusters=clusters,
                    hardware=info.hardware, chipset=chipset, model_name=model_name,
                    hybrid=hybrid, problems=sr.problems)


def _detect_arch(sr: SysRoot, info: CpuinfoData) -> str | None:
    first = next(iter(info.processors.values()), {})
    if "vendor_id" in first or "vendor_id" in info.globals:
        return "x86_64" if "lm" in first.get("flags", "").split() else "x86"
    if info.midrs or info.shared_midrs or "CPU implementer" in first:
        arch_field = (first.get("CPU architecture") or "")
        if info.shared_midrs and info.shared_midrs[0].architecture:
            arch_field = info.shared_midrs[0].architecture
        processor = info.globals.get("Processor", "")
        if "AArch64" in processor or arch_field in ("8", "AArch64"):
            return "arm64"
        return "arm"
    modalias, _ = sr.word(f"{CPU_DIR}/modalias")
    if modalias:
        if modalias.startswith("x86cpu:"):
            return "x86_64"
        if "aarch64" in modalias:
            return "arm64"
    if os.path.abspath(sr.root) == "/":
        machine = platform.machine()
        return {"aarch64": "arm64", "armv7l": "arm", "AMD64": "x86_64"}.get(machine, machine)
    return None

def _read_cpu_lists(sr: SysRoot, info: CpuinfoData) -> _CpuLists:
    possible, prob = sr.cpulist(f"{CPU_DIR}/possible")
    sr.note(prob)
    present, prob = sr.cpulist(f"{CPU_DIR}/present")
    sr.note(prob)
    online, prob = sr.cpulist(f"{CPU_DIR}/online")
    sr.note(prob)
    dirs = {int(m.group(1)) for n in sr.listdir(CPU_DIR) if (m := CPU_NAME.match(n))}
    if possible is None:
        possible = (present or set()) | dirs | set(info.processors)
    all_cpus = sorted(possible)
    usable = [c for c in all_cpus if present is None or c in present]
    return _CpuLists(all=all_cpus, usable=usable, present=present, online=online, dirs=dirs)


def _read_cpu_dirs(sr: SysRoot, lists: _CpuLists, info: CpuinfoData) -> dict[int, CpuDirFacts]:
    policies = PolicyMap(sr)
    domains: DomainRanges = {}
    # CPUs that are possible but have no cpuN directory (not present: VMs often declare
    # many more possible CPUs than they have) have no files to read.
    procs = {c: read_cpu_dir(sr, c, policies, info, domains) if (c in lists.dirs or not lists.dirs)
             else CpuDirFacts(cpu=c, midr=info.midrs.get(c)) for c in lists.all}
    if lists.usable and not any(procs[c].max_khz for c in lists.usable):
        sr.note("no cpufreq data: hardware frequency range unknown (VM or cpufreq disabled)")
    return procs


def _mark_hybrid(sr: SysRoot, procs: dict[int, CpuDirFacts]) -> bool:
    """Intel hybrid: P- and E-cores listed under /sys/devices/cpu_core and cpu_atom."""
    hybrid = False
    for kind in ("cpu_core", "cpu_atom"):
        members, _ = sr.cpulist(f"/sys/devices/{kind}/cpus")
        if members:
            hybrid = True
            for c in members:
                if c in procs:
                    procs[c].core_type = kind
    return hybrid


def _cpu_model(sr: SysRoot, lists: _CpuLists, p: CpuDirFacts, cluster: int | None) -> CpuTopo:
    c = p.cpu
    # The global list is one read for all CPUs; cpuN/online when the list is unreadable.
    if lists.online is not None:
        online: bool | None = c in lists.online
    else:
        own_online, _ = sr.int(f"{CPU_DIR}/cpu{c}/online")
        online = bool(own_online) if own_online is not None else None
    return CpuTopo(cpu=c, online=online, present=(lists.present is None or c in lists.present),
                   cluster=cluster, max_khz=p.max_khz, min_khz=p.min_khz,
                   package=p.package, core_id=p.core_id, capacity=p.capacity,
                   core_type=p.core_type,
                   smt_siblings=sorted(p.threads - {c}) if p.threads else [],
                   freq_domain=sorted(p.related) if p.related else None)


def _fill_midrs(sr: SysRoot, cpus: list[CpuTopo], groups: list[list[int]],
                procs: dict[int, CpuDirFacts], info: CpuinfoData, chipset: str | None,
                n_usable: int) -> None:
    max_of = {i: max((k for c in g if (k := procs[c].max_khz)), default=None)
              for i, g in enumerate(groups)}
    midrs = assign_midrs(groups, procs, info, chipset, n_usable, max_of, sr.problems)
    for t in cpus:
        fill_arm(t, midrs.get(t.cpu), procs[t.cpu].midr, sr)


def _make_clusters(groups: list[list[int]], cpus: list[CpuTopo], how: str, x86: bool = False,
                   arch: str | None = None) -> list[ClusterTopo]:
    by_cpu = {c.cpu: c for c in cpus}
    clusters = []
    for i, g in enumerate(groups):
        members = [by_cpu[c] for c in g]

        def common(attr: str, members: list[CpuTopo] = members) -> Any:
            values = [getattr(m, attr) for m in members if getattr(m, attr) is not None]
            return Counter(values).most_common(1)[0][0] if values else None

        clusters.append(ClusterTopo(
            id=i, cpus=list(g), online_cpus=[m.cpu for m in members if m.online],
            uarch=common("uarch"), part_name=common("part_name"), vendor=common("vendor"),
            midr=common("midr"), max_khz=max((m.max_khz for m in members if m.max_khz),
                                             default=None),
            min_khz=min((m.min_khz for m in members if m.min_khz), default=None),
            core_class=None, grouped_by=how))
        lists = [m.isa for m in members if m.isa is not None]
        if lists:
            common_isa = [f for f in lists[0] if all(f in other for other in lists[1:])]
            clusters[-1].isa = common_isa
            clusters[-1].isa_missing = missing(common_isa, x86, arch)
    return clusters


def _classify(cpus: list[CpuTopo], clusters: list[ClusterTopo], hybrid: bool) -> None:
    """performance / efficiency per cluster: hybrid sysfs, cpu_capacity, design, max freq."""
    by_cpu = {c.cpu: c for c in cpus}
    classes: dict[int, str] = {}
    if hybrid:
        for cl in clusters:
            kinds = {by_cpu[c].core_type for c in cl.cpus}
            if kinds == {"cpu_atom"}:
                classes[cl.id] = "efficiency"
            elif kinds == {"cpu_core"}:
                classes[cl.id] = "performance"
    else:
        def tiers(score: dict[int, Any]) -> dict[int, str] | None:
            if len(score) != len(clusters) or len(set(score.values())) < 2:
                return None
            low = min(score.values())
            return {i: "efficiency" if s == low else "performance" for i, s in score.items()}

        caps = {cl.id: max(by_cpu[c].capacity or 0 for c in cl.cpus) for cl in clusters
                if any(by_cpu[c].capacity for c in cl.cpus)}
        ranks = {cl.id: parts.design_rank(cl.uarch) for cl in clusters
                 if parts.design_rank(cl.uarch)}
        freqs = {cl.id: cl.max_khz for cl in clusters if cl.max_khz}
        found = tiers(caps) or tiers(ranks) or tiers(freqs)
        if found is not None:
            classes = found
        elif len(clusters) >= 1 and (
                len(set(caps.values())) == 1 or len({cl.uarch for cl in clusters}) == 1):
            classes = {cl.id: "uniform" for cl in clusters}
    for cl in clusters:
        cl.core_class = classes.get(cl.id)
        for c in cl.cpus:
            by_cpu[c].core_class = cl.core_class
