"""The clustering rule: which CPUs form a cluster.

A cluster is a frequency domain: CPUs sharing a cpufreq policy (``related_cpus``),
refined by the topology the kernel reports (``core_siblings``), so a domain spanning two
physical clusters (some Snapdragon 625 kernels) is split and per-core domains of one
cluster (Krait) are one. SMT siblings always share a cluster. Where the kernel says
nothing about some CPUs (offline cores on old Android kernels) the usual layouts
(4+4+2, 4+4, 4+2, 4+1) are tried against whatever is known, then a sequential scan groups
neighbours with matching details. Atom-class x86 designs group cores sharing an L2
(modules), but never split a cpufreq policy narrower than the package.
"""

from __future__ import annotations

from typing import Any

from qprof.hw import parts
from qprof.hw.cpudir import CpuDirFacts

Procs = dict[int, CpuDirFacts]


def cluster_cpus(procs: Procs, usable: list[int], arch: str | None, x86_uarch: str | None,
                 hybrid: bool) -> tuple[list[list[int]], str]:
    """The clusters (sorted lists of CPUs) and how they were found (``grouped_by``)."""
    groups, how = _group(procs, usable, arch)
    module = parts.X86_MODULE_CORES.get(x86_uarch or "")
    if module and not hybrid:
        split = _split_x86_modules(groups, procs, module)
        if split != groups:
            how = f"{how}, {x86_uarch} modules of {module} core(s) sharing L2"
        groups = split
    return groups, how


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



def _compatible(a: CpuDirFacts, b: CpuDirFacts, use_midr: bool = True) -> bool:
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


class _Known:
    """What a group's members say about their details, each detail's one known value:
    members compatible two by two (:func:`_compatible`) agree on every detail some of
    them know, so a CPU is compatible with all of them exactly when it is with this.
    One comparison per CPU, not one per member: a scan over 20k CPUs stays linear."""

    _MIDR = ("implementer", "variant", "part", "revision")

    def __init__(self, first: CpuDirFacts) -> None:
        self.values: dict[str, object] = {}
        self.add(first)

    @classmethod
    def _details(cls, p: CpuDirFacts) -> dict[str, object]:
        d: dict[str, object] = {"max_khz": p.max_khz, "min_khz": p.min_khz}
        if p.midr is not None:
            d.update((name, getattr(p.midr, name)) for name in cls._MIDR)
        return {k: v for k, v in d.items() if v is not None}

    def admits(self, p: CpuDirFacts) -> bool:
        return all(self.values.get(k, v) == v for k, v in self._details(p).items())

    def add(self, p: CpuDirFacts) -> None:
        for k, v in self._details(p).items():
            self.values.setdefault(k, v)


_LAYOUTS = {10: (4, 4, 2), 8: (4, 4), 6: (4, 2), 5: (4, 1)}


def _group(procs: Procs, usable: list[int], arch: str | None) -> tuple[
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


def _layout_heuristic(uf: _UnionFind, procs: Procs, usable: list[int],
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


def _sequential_scan(uf: _UnionFind, procs: Procs, unassigned: list[int]) -> None:
    """Neighbours join the current group while compatible with all of its members."""
    first: int | None = None
    known: _Known | None = None
    for c in unassigned:
        if first is not None and known is not None and known.admits(procs[c]):
            uf.union(first, c)
            known.add(procs[c])
        else:
            first, known = c, _Known(procs[c])


def _split_by_details(groups: list[list[int]], procs: Procs,
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


def _merge_singletons(groups: list[list[int]], procs: Procs) -> list[list[int]]:
    """Per-core domains of identical cores (Krait, kernels reporting each core alone)."""
    singles = [g for g in groups if len(g) == 1]
    if len(singles) < 2:
        return groups
    rest = [g for g in groups if len(g) > 1]
    merged: list[tuple[list[int], _Known]] = []
    for g in singles:
        p = procs[g[0]]
        for m, known in merged:
            q = procs[m[0]]
            same_pkg = p.package is None or q.package is None or p.package == q.package
            if same_pkg and known.admits(p):
                m.append(g[0])
                known.add(p)
                break
        else:
            merged.append((list(g), _Known(p)))
    return sorted(rest + [m for m, _known in merged])


def _split_x86_modules(groups: list[list[int]], procs: Procs,
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

