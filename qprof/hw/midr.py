"""ARM core designs: which MIDR each CPU has, when /proc/cpuinfo does not say for all.

MIDRs missing from /proc/cpuinfo (offline cores on old Android kernels, one shared
block for all CPUs) are filled, in this order, from the cluster's own CPUs, a chipset
table, the designs the shared block lists (the faster design to the faster cluster),
the big.LITTLE pairing, or the neighbouring cluster; every CPU says where its MIDR came
from (``midr_source``) and every guess leaves a problem line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from qprof.hw import parts
from qprof.hw.cpuinfo import CpuinfoData, MidrParts
from qprof.hw.model import CpuTopo
from qprof.hw.sysfs import SysRoot, format_cpulist

Assigned = dict[int, tuple[int, str]]  # cpu -> (midr, where it came from)


class HasMidr(Protocol):
    midr: MidrParts | None  # what /proc/cpuinfo attributed to the CPU


def _midr_matches(known: MidrParts | None, midr: int) -> bool:
    if known is None:
        return True
    impl, var, part, rev = parts.midr_fields(midr)
    for have, want in ((known.implementer, impl), (known.variant, var), (known.part, part),
                       (known.revision, rev)):
        if have is not None and have != want:
            return False
    return True


def _midr_rank(midr: int) -> int:
    impl, variant, part, _ = parts.midr_fields(midr)
    return parts.design_rank(parts.arm_part(impl, part, variant).uarch)


@dataclass
class _Clusters:
    """The assignment in progress: per CPU and per cluster (None: not known yet)."""

    groups: list[list[int]]
    result: Assigned = field(default_factory=dict)
    cluster_midr: list[int | None] = field(default_factory=list)

    def fill(self, i: int, midr: int, source: str) -> None:
        self.cluster_midr[i] = midr
        for c in self.groups[i]:
            self.result[c] = (midr, source)

    @property
    def unknown(self) -> list[int]:
        return [i for i, m in enumerate(self.cluster_midr) if m is None]

    @property
    def known(self) -> list[tuple[int, int]]:
        return [(i, m) for i, m in enumerate(self.cluster_midr) if m is not None]


def _from_own_cpus(groups: list[list[int]], procs: Mapping[int, HasMidr]) -> _Clusters:
    """Each cluster's most common complete MIDR, for its CPUs without one."""
    st = _Clusters(groups)
    for g in groups:
        complete = [m.midr for c in g if (m := procs[c].midr) is not None and m.complete
                    and m.midr is not None]
        if not complete:
            st.cluster_midr.append(None)
            continue
        midr = Counter(complete).most_common(1)[0][0]
        st.cluster_midr.append(midr)
        for c in g:
            pm = procs[c].midr
            if pm is not None and pm.complete:
                st.result[c] = (pm.midr if pm.midr is not None else midr, "cpuinfo")
            else:
                st.result[c] = (midr, "cluster")
    return st


def _from_chipset(st: _Clusters, leaders: dict[int, MidrParts | None], chipset: str | None,
                  n_usable: int, shared: list[int]) -> bool:
    table = parts.chipset_clusters(chipset)
    groups = st.groups
    if table is None or table.cores != n_usable or len(table.cluster_cores) != len(groups):
        return False
    if not all(len(g) == n for g, n in zip(groups, table.cluster_cores, strict=True)):
        return False
    # Checked against what /proc/cpuinfo says of the clusters' first CPUs, unless it lists
    # the designs in one shared block (then the table is what places them).
    if not shared and not all(_midr_matches(leaders[i], m)
                              for i, m in enumerate(table.cluster_midr)):
        return False
    for i in st.unknown:
        st.fill(i, table.cluster_midr[i], f"chipset table ({chipset})")
    return True


def _from_shared(st: _Clusters, shared: list[int], max_of: dict[int, int | None]) -> bool:
    """The designs a shared /proc/cpuinfo block lists, when no cluster is known."""
    if not shared or st.known:
        return False
    if len(st.groups) == 1:
        st.fill(0, shared[0], "cpuinfo")
        return True
    if len(shared) != len(st.groups):
        return False
    # "CPU part: 0xc07 & 0xc0f": the faster design goes to the faster cluster.
    designs = sorted(shared, key=_midr_rank)
    order = sorted(range(len(st.groups)), key=lambda i: (max_of[i] or 0, -i))
    for i, midr in zip(order, designs, strict=True):
        st.fill(i, midr, "cpuinfo (designs ordered by max frequency)")
    return True


def _big_little(st: _Clusters, leaders: dict[int, MidrParts | None], shared: list[int],
                max_of: dict[int, int | None], problems: list[str]) -> bool | None:
    """Two clusters, one design known: its big.LITTLE partner. True: done; None: stop
    (the known design is the slower cluster's); False: not applicable."""
    if len(st.groups) != 2:
        return False
    known = st.known
    big: int | None = None
    if shared and not known:
        big = shared[0]
    elif len(known) == 1:
        big = known[0][1]
        k, u = known[0][0], 1 - known[0][0]
        max_k, max_u = max_of[k], max_of[u]
        if max_k is not None and max_u is not None and max_k < max_u:
            # The design we know is the slower cluster's: the faster cluster's design
            # cannot be derived from it (a LITTLE core has many possible big partners).
            problems.append(f"MIDR of CPUs {format_cpulist(st.groups[u])} not reported "
                            "(faster cluster than the one /proc/cpuinfo describes): "
                            "core design unknown")
            return None
    if big is None:
        return False
    max0, max1 = max_of[0], max_of[1]
    little_i = 1 if max0 is not None and max1 is not None and max0 > max1 else 0
    guess = {little_i: parts.little_for_big(big), 1 - little_i: big}
    unknown = st.unknown
    if not all(_midr_matches(leaders[i], guess[i]) for i in unknown):
        return False
    for i in unknown:
        st.fill(i, guess[i], "big.LITTLE guess")
    problems.append("MIDR of CPUs " + ", ".join(format_cpulist(st.groups[i]) for i in unknown)
                    + " not reported; guessed from the big.LITTLE pairing")
    return True


def _from_neighbours(st: _Clusters, shared: list[int], problems: list[str]) -> None:
    known = st.known
    fallback = known[0][1] if known else (shared[0] if shared else None)
    if fallback is None:
        return
    previous: int | None = None
    for i in range(len(st.groups)):
        midr = st.cluster_midr[i]
        if midr is not None:
            previous = midr
            continue
        st.fill(i, previous if previous is not None else fallback, "assumed same as neighbour")
        problems.append(f"MIDR of CPUs {format_cpulist(st.groups[i])} not reported; assumed "
                        "the same as the neighbouring cluster")


def assign_midrs(groups: list[list[int]], procs: Mapping[int, HasMidr], info: CpuinfoData,
                 chipset: str | None, n_usable: int, max_of: dict[int, int | None],
                 problems: list[str]) -> Assigned:
    """cpu -> (midr, source) for every usable CPU whose MIDR can be known or inferred."""
    st = _from_own_cpus(groups, procs)
    if not st.unknown:
        return st.result
    shared = [m.midr for m in info.shared_midrs if m.complete and m.midr is not None]
    leaders = {i: procs[groups[i][0]].midr for i in range(len(groups))}
    if _from_chipset(st, leaders, chipset, n_usable, shared) or _from_shared(st, shared, max_of):
        return st.result
    paired = _big_little(st, leaders, shared, max_of, problems)
    if paired is None or paired:
        return st.result
    _from_neighbours(st, shared, problems)
    return st.result


def fill_arm(t: CpuTopo, assigned: tuple[int, str] | None, own: MidrParts | None,
             sr: SysRoot) -> None:
    """The CPU's ARM identity fields from its assigned MIDR (else its own partial one)."""
    if assigned is not None:
        midr, source = assigned
        impl, variant, part, rev = parts.midr_fields(midr)
        t.midr, t.midr_source = f"0x{midr:08x}", source
    elif own is not None and own.has_part:
        impl, variant, part, rev = own.implementer, own.variant, own.part, own.revision  # type: ignore
        t.midr_source = "cpuinfo (partial)"
    else:
        if t.present:
            sr.note(f"cpu{t.cpu}: core design unknown (no MIDR in /proc/cpuinfo)")
        return
    t.implementer = f"0x{impl:02x}"
    t.variant = f"0x{variant:x}" if variant is not None else None
    t.part = f"0x{part:03x}"
    t.revision = rev
    decoded = parts.arm_part(impl, part, variant)
    t.vendor, t.part_name, t.uarch = decoded.vendor, decoded.part_name, decoded.uarch
    if decoded.problem:
        sr.note(f"cpu{t.cpu}: {decoded.problem}")
