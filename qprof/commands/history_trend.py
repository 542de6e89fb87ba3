"""`qprof history`'s verdict over time: per CPU and suite, the current segment (every
comparable run since the last change point) and each change, sized and explained
(the judgement's trends: :mod:`qprof.consensus.judgement`). Runs whose points the store
did not keep, beyond the few a reader computes, are left out and counted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qprof.consensus.judgement import Judgement
from qprof.consensus.trend.report import change_text, segment_text, trend_dict


@dataclass(frozen=True)
class HistoryTrend:
    series: list[dict[str, Any]]  # `qprof trend --json`'s shape, per series
    lines: list[str]  # the text: per CPU and suite, the segment, then its changes
    left_out: int  # runs without stored points


def history_trend(judgement: Judgement, unit_vu: int, left_out: int) -> HistoryTrend:
    """The judgement's trends as `qprof trend --json` gives them, and their lines."""

    lines = []
    for t in judgement.trends:
        for s in t.suites:
            seg = s.current
            if seg is None:
                continue
            lines.append(f"  cpu {t.key.cpu:<3} {s.suite:<20} {t.key.backend:<8} "
                         f"segment of runs {seg.first_run + 1}-{seg.last_run + 1} of "
                         f"{len(t.runs)}: {segment_text(seg, unit_vu)}")
            lines += [f"      change: {change_text(c, unit_vu)}" for c in s.changes]
    if left_out:
        lines.append(f"  {left_out} run{'s' if left_out != 1 else ''} without "
                     "stored points left out (qprof trend --state-dir DIR reads them from "
                     "their records)")
    return HistoryTrend([trend_dict(t, unit_vu) for t in judgement.trends], lines, left_out)
