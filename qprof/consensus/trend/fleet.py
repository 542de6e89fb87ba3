"""Across a fleet: changes of one suite on several nodes close in time are one fleet-wide
change (a rollout: a library, a kernel); a change on one node alone points at that node
(a neighbour, its hardware)."""

from __future__ import annotations

from collections.abc import Iterable

from qprof.consensus.trend.model import Change, FleetChange, SeriesTrend

# Changes this close (seconds) on several nodes are one: a rollout reaches a fleet within
# a few measurement cycles.
DEFAULT_WINDOW_S = 6 * 3600.0


def fleet_changes(trends: Iterable[SeriesTrend], window_s: float = DEFAULT_WINDOW_S
                  ) -> list[FleetChange]:
    """Every change that moved a ratio grouped with the changes of the same suite and
    direction on other nodes within ``window_s`` of the group's first (a known change
    point that moved nothing is no fleet's change: its sign is noise)."""
    items: list[tuple[str, Change]] = []
    for t in trends:
        for s in t.suites:
            items += [(t.key.node, c) for c in s.changes if c.moved]
    items.sort(key=lambda nc: (nc[1].suite, nc[1].started_at))
    groups: list[list[tuple[str, Change]]] = []
    for node, c in items:
        for g in groups:
            first = g[0][1]
            if (first.suite == c.suite and (first.change_bp > 0) == (c.change_bp > 0)
                    and c.started_at - first.started_at <= window_s
                    and node not in {n for n, _ in g}):
                g.append((node, c))
                break
        else:
            groups.append([(node, c)])
    out = []
    for g in groups:
        nodes = tuple(dict.fromkeys(n for n, _ in g))
        out.append(FleetChange(suite=g[0][1].suite, started_at=g[0][1].started_at,
                               nodes=nodes, changes=tuple(c for _, c in g),
                               fleet_wide=len(nodes) > 1))
    return sorted(out, key=lambda f: f.started_at)
