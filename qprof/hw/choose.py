"""Which CPUs stand for the machine: one per cluster (the engine's default CPUs, the
daemon's ``cpus = "clusters"``, the monitor's first measurement).

The rule: the highest-numbered online CPU of each cluster. The members of a cluster are
one core design in one frequency domain, so any of them gives the cluster's costs; CPU 0
(the lowest of the first cluster) takes more interrupts and housekeeping work on Linux
(timers, boot-time IRQ affinity), which would show as noise in its rounds.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence


def one_per_cluster(clusters: Mapping[int, Sequence[int]], online: Container[int]
                    ) -> tuple[list[int], list[str]]:
    """(CPUs, problems): the highest online CPU of each cluster, in cluster order; a
    cluster with no online CPU is a problem."""
    chosen: list[int] = []
    problems: list[str] = []
    for cid, members in sorted(clusters.items()):
        live = [c for c in members if c in online]
        if live:
            chosen.append(max(live))
        else:
            problems.append(f"cluster {cid} has no online CPU")
    return chosen, problems
