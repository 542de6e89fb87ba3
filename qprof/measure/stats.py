"""What a Measurement record carries about its samples, pinned by
tests/test_measure_stats.py (the estimator's statistics: qprof.consensus.estimate).

- median: middle value (mean of the two middle values for an even count);
- p95: linear interpolation between closest ranks (numpy's default "linear" method).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("median of no values")
    return float(statistics.median(values))


def percentile(values: Sequence[float], q: float) -> float:
    """q in [0, 100]; linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} outside [0, 100]")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    frac = pos - lo
    return float(ordered[lo] + (ordered[hi] - ordered[lo]) * frac)


def p95(values: Sequence[float]) -> float:
    return percentile(values, 95.0)


@dataclass
class Summary:
    n: int
    median_ns: float
    p95_ns: float
    mean_ns: float
    stdev_ns: float | None
    min_ns: float
    max_ns: float


def summarize(values: Sequence[float]) -> Summary:
    return Summary(
        n=len(values),
        median_ns=median(values),
        p95_ns=p95(values),
        mean_ns=float(statistics.fmean(values)),
        stdev_ns=float(statistics.stdev(values)) if len(values) > 1 else None,
        min_ns=float(min(values)),
        max_ns=float(max(values)),
    )
