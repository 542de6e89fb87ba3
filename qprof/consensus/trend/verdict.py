"""The verdict over time: a CPU's newest estimate with its segment's figures in place of
its own, so :func:`qprof.consensus.verdict.coverage` decides on every comparable run since
the last change. One run: the segment is that run, the verdict the run's."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace

from qprof.consensus.estimate.estimator import SuiteEstimate
from qprof.consensus.trend.model import SegmentEstimate, SeriesTrend
from qprof.consensus.vu import exact

SegmentKey = tuple[int, str, str, str]  # cpu, backend, operation, suite


def current_segments(trends: Iterable[SeriesTrend]) -> dict[SegmentKey, SegmentEstimate]:
    """The current segment of each suite, by CPU, backend, operation and suite: the one
    that holds the series' newest run (none where every run since the last change was
    undecided: those are gaps, and an older segment's figure is not today's). A later
    series of the same CPU (e.g. a renamed host) wins."""
    out: dict[SegmentKey, SegmentEstimate] = {}
    for t in trends:
        for s in t.suites:
            seg = s.current
            if seg is not None and seg.last_run == len(t.runs) - 1:
                out[(t.key.cpu, t.key.backend, t.key.operation, s.suite)] = seg
    return out


def ratio_vu(ratio: float, ratio_ci: tuple[float, float], unit_vu: int
             ) -> tuple[int, tuple[int, int]]:
    """A ratio's Verify-Unit estimate and interval: ceil(unit_vu x ratio), exact (a
    segment's, or one run's beside it)."""
    est = math.ceil(unit_vu * exact(ratio))
    lo = min(math.ceil(unit_vu * exact(ratio_ci[0])), est)
    hi = max(math.ceil(unit_vu * exact(ratio_ci[1])), est)
    return est, (lo, hi)


def segment_vu(seg: SegmentEstimate, unit_vu: int) -> tuple[int, tuple[int, int]]:
    """The segment's Verify-Unit estimate and interval: ceil(unit_vu x ratio), exact."""
    return ratio_vu(seg.ratio, seg.ratio_ci, unit_vu)


def with_segments(estimates: Iterable[SuiteEstimate],
                  segments: Mapping[SegmentKey, SegmentEstimate],
                  unit_vu: int) -> list[SuiteEstimate]:
    """The newest run's estimates, each suite's figures replaced by its segment's where the
    segment combines more than that run (``runs`` says how many); the unit and suites
    without a segment are left as they are."""
    out = []
    for e in estimates:
        seg = segments.get((e.cpu, e.backend, e.operation, e.suite))
        if seg is None or e.is_unit or seg.runs < 1:
            out.append(e)
            continue
        vu, vu_ci = segment_vu(seg, unit_vu)
        out.append(replace(e, ratio=seg.ratio, ratio_ci=seg.ratio_ci, vu_estimate=vu,
                           vu_ci=vu_ci, undecided=None, runs=seg.runs))
    return out
