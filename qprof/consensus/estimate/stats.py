"""The estimator's arithmetic on rounds, pinned by tests/test_measure_stats.py.

- round spread: (largest - smallest round median) / smallest, in basis points;
- drift: (last - first) / first of the unit suite's round medians, in basis points;
- ratio CI: two-level bootstrap (rounds, then samples within each round) of
  median(suite) / median(unit), so drift between rounds widens the interval as it should.
"""

from __future__ import annotations

from collections.abc import Sequence


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
