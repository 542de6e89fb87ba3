"""Reduction rules, pinned by tests/test_measure_stats.py.

- median: middle value (mean of the two middle values for an even count);
- p95: linear interpolation between closest ranks (numpy's default "linear" method);
- round spread: (largest - smallest round median) / smallest, in basis points;
- drift: (last - first) / first of the unit suite's round medians, in basis points;
- ratio CI: two-level bootstrap (rounds, then samples within each round) of
  median(suite) / median(unit), so drift between rounds widens the interval as it should.
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


def bp(fraction: float) -> float:
    """A relative difference in basis points (1 bp = 0.01 %)."""
    return fraction * 10_000.0


def round_spread_bp(round_medians: Sequence[float]) -> float:
    """(max - min) / min of the round medians of one measurement, in basis points."""
    if len(round_medians) < 2:
        return 0.0
    lo, hi = min(round_medians), max(round_medians)
    return bp((hi - lo) / lo)


def drift_bp(first: float, last: float) -> float:
    """Signed change of the unit suite from the first round to the last, in bp."""
    return bp((last - first) / first)


def bootstrap_ratio_ci(
    suite_rounds: Sequence[Sequence[float]],
    unit_rounds: Sequence[Sequence[float]],
    replicates: int = 1000,
    confidence: float = 0.95,
    seed: int = 20261014,
    per_round: int = 200,
    quantile: float = 0.5,
) -> tuple[float, float]:
    """CI of median(pooled suite samples) / median(pooled unit samples) (or of another
    ``quantile`` of both).

    Each replicate draws rounds with replacement, then ``per_round`` samples with
    replacement inside every drawn round (fewer when rounds are smaller), pools them and
    takes the median: sampling noise and drift between rounds both widen the interval.
    Vectorized over replicates; deterministic for a given seed.
    """
    import numpy as np

    rng = np.random.default_rng(seed)

    def medians(groups: Sequence[Sequence[float]]) -> np.ndarray:
        rounds = [np.asarray(r, dtype=float) for r in groups if len(r)]
        if not rounds:
            raise ValueError("bootstrap needs samples of both the suite and the unit")
        k = len(rounds)
        sizes = np.array([len(r) for r in rounds])
        m = int(min(per_round, int(np.median(sizes))))
        padded = np.zeros((k, int(sizes.max())))
        for i, r in enumerate(rounds):
            padded[i, : len(r)] = r
        picked = rng.integers(0, k, size=(replicates, k))  # rounds, with replacement
        idx = (rng.random((replicates, k, m)) * sizes[picked][..., None]).astype(np.int64)
        values = padded[picked[..., None], idx].reshape(replicates, k * m)
        out: np.ndarray = (np.median(values, axis=1) if quantile == 0.5
                           else np.quantile(values, quantile, axis=1))
        return out

    ratios = medians(suite_rounds) / medians(unit_rounds)
    alpha = (1.0 - confidence) / 2.0
    return float(np.quantile(ratios, alpha)), float(np.quantile(ratios, 1.0 - alpha))
