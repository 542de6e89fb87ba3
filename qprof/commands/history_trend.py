"""`qprof history`'s verdict over time: per CPU and suite, the current segment (every
comparable run since the last change point) and each change, sized and explained
(:mod:`qprof.consensus.trend`, from the store's run points, as the daemon reads them).

Runs whose points the store did not keep are left out and counted: reading them from
their records takes the estimator seconds a run (`qprof trend --state-dir DIR` does)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qprof.consensus import Profile


@dataclass(frozen=True)
class HistoryTrend:
    series: list[dict[str, Any]]  # `qprof trend --json`'s shape, per series
    lines: list[str]  # the text: per CPU and suite, the segment, then its changes
    left_out: int  # runs without stored points


def history_trend(store: Any, profile: Profile | None) -> HistoryTrend:
    from qprof.consensus.trend.report import change_text, segment_text, trend_dict
    from qprof.service.trend import TREND_RUNS, read_trends
    from qprof.service.trend_source import store_points

    unit, unit_vu = (profile.unit_suite, profile.unit_vu) if profile else ("ML-DSA-44", 100)
    points = store_points(store, unit, newest=TREND_RUNS, max_computed=0)
    trends = read_trends(points.points)
    lines = []
    for t in trends:
        for s in t.suites:
            seg = s.current
            if seg is None:
                continue
            lines.append(f"  cpu {t.key.cpu:<3} {s.suite:<20} {t.key.backend:<8} "
                         f"segment of runs {seg.first_run}-{seg.last_run} of {len(t.runs)}: "
                         f"{segment_text(seg, unit_vu)}")
            lines += [f"      change: {change_text(c, unit_vu)}" for c in s.changes]
    if points.left_out:
        lines.append(f"  {points.left_out} run{'s' if points.left_out != 1 else ''} without "
                     "stored points left out (qprof trend --state-dir DIR reads them from "
                     "their records)")
    return HistoryTrend([trend_dict(t, unit_vu) for t in trends], lines, points.left_out)
