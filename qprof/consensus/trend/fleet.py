"""Across a fleet: changes of one suite on several nodes close in time are one fleet-wide
change (a rollout: a library, a kernel); a change on one node alone points at that node
(a neighbour, its hardware)."""

from __future__ import annotations

from collections.abc import Iterable

from qprof.consensus.trend.model import Change, FleetChange, SeriesKey, SeriesTrend

# Changes this close (seconds) on several nodes are one: a rollout reaches a fleet within
# a few measurement cycles.
DEFAULT_WINDOW_S = 6 * 3600.0


def fleet_changes(trends: Iterable[SeriesTrend], window_s: float = DEFAULT_WINDOW_S
                  ) -> list[FleetChange]:
    """Every change that moved a ratio grouped with the changes of the same suite and
    direction on other series (other nodes, another CPU of the node) within ``window_s``
    of the group's first (a known change point that moved nothing is no fleet's change:
    its sign is noise)."""
    items: list[tuple[SeriesKey, Change]] = []
    for t in trends:
        for s in t.suites:
            items += [(t.key, c) for c in s.changes if c.moved]
    items.sort(key=lambda kc: (kc[1].suite, kc[1].started_at))
    groups: list[list[tuple[SeriesKey, Change]]] = []
    for key, c in items:
        for g in groups:
            first = g[0][1]
            if (first.suite == c.suite and (first.change_bp > 0) == (c.change_bp > 0)
                    and c.started_at - first.started_at <= window_s
                    and key not in {k for k, _ in g}):
                g.append((key, c))
                break
        else:
            groups.append([(key, c)])
    out = []
    for g in groups:
        nodes = tuple(dict.fromkeys(k.node for k, _ in g))
        out.append(FleetChange(suite=g[0][1].suite, started_at=g[0][1].started_at,
                               nodes=nodes, changes=tuple(c for _, c in g),
                               fleet_wide=len(nodes) > 1, series=tuple(k for k, _ in g)))
    return sorted(out, key=lambda f: f.started_at)
