"""CPU topology under a root directory: what each CPU is and which cluster it is in.

Clusters are frequency domains (cpufreq ``related_cpus``) refined by the topology the
kernel reports (``core_siblings``), so a domain spanning two physical clusters (some
Snapdragon 625 kernels) is split and per-core domains of one cluster (Krait) are one.
Where the kernel says nothing about some CPUs (offline cores on old Android kernels)
the usual layouts (4+4+2, 4+4, 4+2, 4+1) are tried against whatever is known, then a
sequential scan groups neighbours with matching details. MIDRs missing from
/proc/cpuinfo are filled by :mod:`qprof.hw.midr`, and every CPU says where its MIDR came
from (``midr_source``).
"""

from __future__ import annotations

import os
import platform
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from qprof.hw import isa, parts
from qprof.hw.cpuinfo import CpuinfoData, MidrParts, parse_cpuinfo
from qprof.hw.midr import assign_midrs, fill_arm
from qprof.hw.sysfs import SysRoot, format_cpulist, parse_hexmask, problems_by_cpu

CPU_DIR = "/sys/devices/system/cpu"
_CPU_NAME = re.compile(r"^cpu(\d+)$")
_POLICY_NAME = re.compile(r"^policy(\d+)$")


class NotLinuxRoot(ValueError):
    """The root directory has neither /proc/cpuinfo nor /sys/devices/system/cpu."""


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


# --- internal per-CPU facts -----------------------------------------------------------


@dataclass
class _Proc:
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


class _UnionFind:
    def __init__(self, items: list[int]) -> None:
        self.parent = {i: i for i in items}

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def groups(self) -> list[list[int]]:
        out: dict[int, list[int]] = {}
        for i in sorted(self.parent):
            out.setdefault(self.find(i), []).append(i)
        return sorted(out.values())


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


def _read_proc(sr: SysRoot, cpu: int, policies: PolicyMap, info: CpuinfoData,
               domains: dict[frozenset[int], tuple[int | None, int | None]]) -> _Proc:
    p = _Proc(cpu=cpu, midr=info.midrs.get(cpu))
    base = f"{CPU_DIR}/cpu{cpu}"
    freq_dir = f"{base}/cpufreq"
    related, prob = sr.cpulist(f"{freq_dir}/related_cpus")
    if related is None and not sr.exists(freq_dir):
        freq_dir, prob = policies.get(cpu, "") or "", None  # link gone: try the policy
        if freq_dir:
            related, prob = sr.cpulist(f"{freq_dir}/related_cpus")
    if freq_dir:
        sr.note(prob)
        if related is None:
            related, _ = sr.cpulist(f"{freq_dir}/affected_cpus")
        if related is not None and cpu not in related:
            # The directory describes another CPU's policy: none of it is this CPU's.
            sr.note(f"{freq_dir}/related_cpus: does not list cpu{cpu} itself; "
                    "its cpufreq files are ignored")
        else:
            p.related = related
            p.related_strong = related is not None and len(related) > 1
            key = frozenset(related) if related is not None and p.related_strong else None
            if key is not None and key in domains:
                # Same policy as a CPU already read (one kernel object, one answer).
                p.max_khz, p.min_khz = domains[key]
            else:
                p.max_khz, prob_max = sr.int(f"{freq_dir}/cpuinfo_max_freq")
                sr.note(prob_max)
                p.min_khz, prob_min = sr.int(f"{freq_dir}/cpuinfo_min_freq")
                sr.note(prob_min)
                if key is not None and prob_max is None and prob_min is None:
                    domains[key] = (p.max_khz, p.min_khz)
    topo = f"{base}/topology"
    sib, prob = sr.cpulist(f"{topo}/core_siblings_list")
    if sib is not None or sr.exists(topo):
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
    p.capacity, _ = sr.int(f"{base}/cpu_capacity")
    return p


def _compatible(a: _Proc, b: _Proc, use_midr: bool = True) -> bool:
    if a.max_khz is not None and b.max_khz is not None and a.max_khz != b.max_khz:
        return False
    if a.min_khz is not None and b.min_khz is not None and a.min_khz != b.min_khz:
        return False
    if use_midr and a.midr is not None and b.midr is not None:
        for name in ("implementer", "variant", "part", "revision"):
            x, y = getattr(a.midr, name), getattr(b.midr, name)
            if x is not None and y is not None and x != y:
                return False
    return True


_LAYOUTS = {10: (4, 4, 2), 8: (4, 4), 6: (4, 2), 5: (4, 1)}


def _group(procs: dict[int, _Proc], usable: list[int], arch: str | None) -> tuple[
        list[list[int]], str]:
    uf = _UnionFind(usable)
    usable_set = set(usable)
    how = "cpufreq"
    any_related = any(procs[c].related_strong for c in usable)
    any_siblings = any(procs[c].siblings for c in usable)
    if not any_related:
        how = "topology" if any_siblings else "heuristic"

    def rel_veto(c: int, d: int) -> bool:
        pc, pd = procs[c], procs[d]
        return (pc.related_strong and d not in pc.related) or (  # type: ignore[operator]
            pd.related_strong and c not in pd.related)  # type: ignore[operator]

    def sib_veto(c: int, d: int) -> bool:
        pc, pd = procs[c], procs[d]
        return (pc.siblings is not None and d not in pc.siblings) or (
            pd.siblings is not None and c not in pd.siblings)

    for c in usable:
        p = procs[c]
        if p.related_strong:
            for d in sorted(p.related & usable_set):  # type: ignore[operator]
                if not sib_veto(c, d):
                    uf.union(c, d)
        if p.siblings:
            for d in sorted(p.siblings & usable_set):
                if not rel_veto(c, d):
                    uf.union(c, d)
        if p.threads:  # SMT siblings always share a core, hence a clock
            for d in sorted(p.threads & usable_set):
                uf.union(c, d)

    groups = uf.groups()
    size = {c: len(g) for g in groups for c in g}
    assigned = {c for c in usable if size[c] > 1 or procs[c].related_strong
                or procs[c].siblings is not None}
    unassigned = [c for c in usable if c not in assigned]
    if unassigned:
        if not _layout_heuristic(uf, procs, usable, assigned):
            _sequential_scan(uf, procs, unassigned)
        elif how != "cpufreq":
            how = "layout heuristic"
        groups = uf.groups()

    groups = _split_by_details(groups, procs, arch)
    groups = _merge_singletons(groups, procs)
    return groups, how


def _layout_heuristic(uf: _UnionFind, procs: dict[int, _Proc], usable: list[int],
                      assigned: set[int]) -> bool:
    layout = _LAYOUTS.get(len(usable))
    if layout is None:
        return False
    chunks: list[list[int]] = []
    i = 0
    for n in layout:
        chunks.append(usable[i:i + n])
        i += n
    for chunk in chunks:
        first = chunk[0]
        if first in assigned:
            leader = uf.find(first)
            if leader != first or any(c not in assigned or uf.find(c) != leader
                                      for c in chunk[1:]):
                return False
            group_size = sum(1 for c in usable if uf.find(c) == leader)
            if group_size != len(chunk):
                return False
        else:
            if any(c in assigned for c in chunk):
                return False
            if not all(_compatible(procs[chunk[0]], procs[c]) for c in chunk[1:]):
                return False
    for chunk in chunks:
        for c in chunk[1:]:
            uf.union(chunk[0], c)
    return True


def _sequential_scan(uf: _UnionFind, procs: dict[int, _Proc], unassigned: list[int]) -> None:
    current: list[int] = []
    for c in unassigned:
        if current and all(_compatible(procs[m], procs[c]) for m in current):
            uf.union(current[0], c)
            current.append(c)
        else:
            current = [c]


def _split_by_details(groups: list[list[int]], procs: dict[int, _Proc],
                      arch: str | None) -> list[list[int]]:
    """Split groups whose members are known to differ (design, max frequency, core type)."""
    out: list[list[int]] = []
    x86 = arch in ("x86", "x86_64")
    for g in groups:
        subs: list[tuple[dict[str, Any], list[int]]] = []
        for c in g:
            p = procs[c]
            key: dict[str, Any] = {"core_type": p.core_type}
            if not x86:
                key["max"] = p.max_khz
                key["part"] = (p.midr.implementer, p.midr.part) if p.midr and p.midr.has_part \
                    else None
            for known, members in subs:
                if all(known[k] is None or key[k] is None or known[k] == key[k] for k in key):
                    members.append(c)
                    for k, v in key.items():
                        if known[k] is None:
                            known[k] = v
                    break
            else:
                subs.append((dict(key), [c]))
        out.extend(m for _, m in subs)
    return sorted(out)


def _merge_singletons(groups: list[list[int]], procs: dict[int, _Proc]) -> list[list[int]]:
    """Per-core domains of identical cores (Krait, kernels reporting each core alone)."""
    singles = [g for g in groups if len(g) == 1]
    if len(singles) < 2:
        return groups
    rest = [g for g in groups if len(g) > 1]
    merged: list[list[int]] = []
    for g in singles:
        p = procs[g[0]]
        for m in merged:
            q = procs[m[0]]
            same_pkg = p.package is None or q.package is None or p.package == q.package
            if same_pkg and all(_compatible(procs[x], p) for x in m):
                m.append(g[0])
                break
        else:
            merged.append(list(g))
    return sorted(rest + merged)


def _split_x86_modules(groups: list[list[int]], procs: dict[int, _Proc],
                       cores_per_module: int) -> list[list[int]]:
    """Atom-class x86: cores sharing an L2 form the cluster (module), but a cluster never
    splits a cpufreq policy narrower than the package: such a policy is a frequency domain
    the kernel names (policies 0-3 and 4-7 on an 8-core SoC are two clusters of four). A
    policy spanning the whole package names none, and the modules stand."""
    out: list[list[int]] = []
    for g in groups:
        uf = _UnionFind(g)
        first_of_module: dict[Any, int] = {}
        for c in g:
            p = procs[c]
            key = (p.package, p.core_id // cores_per_module) if p.core_id is not None else c
            uf.union(first_of_module.setdefault(key, c), c)
        for c in g:
            p = procs[c]
            if p.related_strong and p.siblings and not p.siblings <= p.related:  # type: ignore[operator]
                for d in sorted(p.related & set(g)):  # type: ignore[operator]
                    uf.union(c, d)
        out.extend(uf.groups())
    return sorted(out)


# --- public entry point -----------------------------------------------------------------


def _int_field(fields: dict[str, str], key: str) -> int | None:
    try:
        return int(fields[key].strip())
    except (KeyError, ValueError):
        return None


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
    x86 = arch in ("x86", "x86_64")

    possible, prob = sr.cpulist(f"{CPU_DIR}/possible")
    sr.note(prob)
    present, prob = sr.cpulist(f"{CPU_DIR}/present")
    sr.note(prob)
    online_list, prob = sr.cpulist(f"{CPU_DIR}/online")
    sr.note(prob)
    dirs = {int(m.group(1)) for n in sr.listdir(CPU_DIR) if (m := _CPU_NAME.match(n))}
    if possible is None:
        possible = (present or set()) | dirs | set(info.processors)
    all_cpus = sorted(possible)
    usable = [c for c in all_cpus if present is None or c in present]

    policies = PolicyMap(sr)
    domains: dict[frozenset[int], tuple[int | None, int | None]] = {}
    # CPUs that are possible but have no cpuN directory (not present: VMs often declare
    # many more possible CPUs than they have) have no files to read.
    procs = {c: _read_proc(sr, c, policies, info, domains) if (c in dirs or not dirs)
             else _Proc(cpu=c, midr=info.midrs.get(c)) for c in all_cpus}
    if usable and not any(procs[c].max_khz for c in usable):
        sr.note("no cpufreq data: hardware frequency range unknown (VM or cpufreq disabled)")

    hybrid = False
    for kind in ("cpu_core", "cpu_atom") if x86 else ():
        members, _ = sr.cpulist(f"/sys/devices/{kind}/cpus")
        if members:
            hybrid = True
            for c in members:
                if c in procs:
                    procs[c].core_type = kind

    # x86 identity first: module clustering depends on the design.
    x86_by_cpu: dict[int, dict[str, str]] = {}
    model_name = info.globals.get("Processor")
    if x86:
        any_block = next(iter(info.processors.values()), {})
        for c in all_cpus:
            x86_by_cpu[c] = info.processors.get(c, any_block)
        model_name = any_block.get("model name") or model_name

    groups, how = _group(procs, usable, arch)
    x86_uarch: str | None = None
    if x86 and x86_by_cpu:
        first = next(iter(x86_by_cpu.values()))
        x86_uarch = parts.x86_part(first.get("vendor_id"), _int_field(first, "cpu family"),
                                   _int_field(first, "model")).uarch
        module = parts.X86_MODULE_CORES.get(x86_uarch or "")
        if module and not hybrid:
            split = _split_x86_modules(groups, procs, module)
            if split != groups:
                how = f"{how}, {x86_uarch} modules of {module} core(s) sharing L2"
            groups = split

    cluster_of = {c: i for i, g in enumerate(groups) for c in g}
    max_of = {i: max((k for c in g if (k := procs[c].max_khz)), default=None)
              for i, g in enumerate(groups)}
    chipset = parts.chipset_name(info.hardware)
    midrs: dict[int, tuple[int, str]] = {}
    if not x86:
        midrs = assign_midrs(groups, procs, info, chipset, len(usable), max_of, sr.problems)

    cpus: list[CpuTopo] = []
    for c in all_cpus:
        p = procs[c]
        # The global list is one read for all CPUs; cpuN/online when the list is unreadable.
        if online_list is not None:
            online: bool | None = c in online_list
        else:
            own_online, _ = sr.int(f"{CPU_DIR}/cpu{c}/online")
            online = bool(own_online) if own_online is not None else None
        t = CpuTopo(cpu=c, online=online, present=(present is None or c in present),
                    cluster=cluster_of.get(c), max_khz=p.max_khz, min_khz=p.min_khz,
                    package=p.package, core_id=p.core_id, capacity=p.capacity,
                    core_type=p.core_type,
                    smt_siblings=sorted(p.threads - {c}) if p.threads else [],
                    freq_domain=sorted(p.related) if p.related else None)
        if x86:
            _fill_x86(t, x86_by_cpu.get(c, {}), hybrid, sr)
        else:
            fill_arm(t, midrs.get(c), p.midr, sr)
        cpus.append(t)
    _fill_isa(cpus, groups, info, x86, arch, sr)

    clusters = _make_clusters(groups, cpus, how, x86, arch)
    _classify(cpus, clusters, hybrid)
    return Topology(root=str(root), arch=arch, cpus=cpus, clusters=clusters,
                    hardware=info.hardware, chipset=chipset, model_name=model_name,
                    hybrid=hybrid, problems=sr.problems)


def _fill_x86(t: CpuTopo, fields: dict[str, str], hybrid: bool, sr: SysRoot) -> None:
    t.vendor_id = fields.get("vendor_id")
    t.family = _int_field(fields, "cpu family")
    t.model = _int_field(fields, "model")
    t.stepping = _int_field(fields, "stepping")
    t.model_name = fields.get("model name")
    decoded = parts.x86_part(t.vendor_id, t.family, t.model)
    t.vendor, t.uarch, t.part_name = decoded.vendor, decoded.uarch, t.model_name
    t.uarch_source = "cpuid" if decoded.uarch else None
    if decoded.problem:
        sr.note(f"cpu{t.cpu}: {decoded.problem}")
    flags = set(fields.get("flags", "").split())
    if "hypervisor" in flags and decoded.uarch:
        _label_vm_design(t, decoded.uarch, flags, sr)
        return
    if hybrid and t.core_type:
        designs = parts.intel_hybrid_designs(decoded.uarch)
        if designs:
            t.uarch = designs[0] if t.core_type == "cpu_core" else designs[1]
        else:
            kind = "P-core" if t.core_type == "cpu_core" else "E-core"
            t.uarch = f"{decoded.uarch or 'unknown'} {kind}"


def _label_vm_design(t: CpuTopo, reported: str, flags: set[str], sr: SysRoot) -> None:
    """Under a hypervisor, family/model are the hypervisor's CPU model, not necessarily the
    host's design: label it as reported, and where the flags show a feature that design
    never had, say what the flags suggest instead of naming it."""
    ident = f"family {t.family} model {t.model}"
    hint = parts.x86_flag_contradiction(t.vendor, reported, flags)
    if hint is None:
        t.uarch, t.uarch_source = f"{reported}, VM-reported", "hypervisor cpu model"
        sr.note(f"under a hypervisor: core design {reported} is the hypervisor's CPU model "
                f"({ident}), as reported; the host's design may differ")
        return
    t.uarch, t.uarch_source = f"{hint.label}, by flags", "flags"
    sr.note(f"under a hypervisor: its CPU model ({ident}) says {reported}, but the flags "
            f"show {hint.flag}, which {reported} never had: by the flags, {hint.suggests}")


def _fill_isa(cpus: list[CpuTopo], groups: list[list[int]], info: CpuinfoData, x86: bool,
              arch: str | None, sr: SysRoot) -> None:
    """Per-CPU feature lists from /proc/cpuinfo; CPUs it leaves out (offline, old ARM
    kernels printing one block) take their cluster's; py-cpuinfo on the live machine
    when the kernel lists no features at all."""
    key = "flags" if x86 else "Features"
    blocks = [c for c, fields in info.processors.items() if key in fields]
    shared: str | None = info.globals.get(key)
    one_block = len(blocks) == 1 and len(info.processors) > 1
    if one_block:
        # Old ARM kernels: one Features line after all processor lines, for every CPU.
        shared = info.processors[blocks[0]][key]
    by_cpu = {c.cpu: c for c in cpus}
    for t in cpus:
        own = None if one_block else info.processors.get(t.cpu, {}).get(key)
        if own is not None:
            t.isa, t.isa_source = isa.pick(own, x86), isa.FROM_CPUINFO
        elif shared is not None and t.present:
            t.isa, t.isa_source = isa.pick(shared, x86), isa.FROM_SHARED_BLOCK
    for g in groups:
        known = [by_cpu[c] for c in g if by_cpu[c].isa is not None]
        for c in g:
            t = by_cpu[c]
            if t.isa is None and known and t.present:
                t.isa, t.isa_source = list(known[0].isa or []), isa.FROM_CLUSTER
    if arch == "arm64":
        # arm64 kernels print the system-wide hwcaps on every CPU: one line holds for all.
        known_any = next((t.isa for t in cpus if t.isa is not None), None)
        for t in cpus:
            if t.isa is None and known_any is not None and t.present:
                t.isa, t.isa_source = list(known_any), isa.FROM_SYSTEM_WIDE
    if not any(t.isa is not None for t in cpus) and info.processors:
        flags = isa.py_cpuinfo_flags() if os.path.abspath(sr.root) == "/" else None
        if flags:
            for t in cpus:
                if t.present:
                    t.isa, t.isa_source = isa.pick(flags, x86), isa.FROM_PY_CPUINFO
        else:
            sr.note(f"/proc/cpuinfo: no {key} line: instruction-set features unknown")
    for t in cpus:
        t.isa_missing = isa.missing(t.isa, x86, arch)


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
            clusters[-1].isa_missing = isa.missing(common_isa, x86, arch)
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
