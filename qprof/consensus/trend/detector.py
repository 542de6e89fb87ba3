"""The sequential detector: a self-starting, two-sided CUSUM on a suite's runs, clipped so
one wild run cannot raise it alone. It is the daemon's early alarm; the retrospective
search (:mod:`qprof.consensus.trend.changepoints`) finds the changes of an ended series.
The method, its delayed reference and its measured run lengths: docs/TREND.md
(``bench/trend_arl.py``, ``bench/trend_detection.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class DetectorConfig:
    arl0: float = 20_000.0  # the chart's nominal in-control run length, per series and suite
    shift: float = 1.25  # the shift (in run sds) the chart is tuned for: k = shift / 2
    clip: float = 4.0  # a run's score is clipped to +-clip
    warmup: int = 5  # decided runs of a segment before its chart starts
    # Runs the reference holds before its updates are delayed (fewer: every run joins at
    # once), and the delay: a 1 % step on SLH-DSA is confirmed 8-16 runs after it starts.
    lagged_from: int = 15
    reference_lag: int = 10

    @property
    def k(self) -> float:
        return self.shift / 2

    @property
    def h(self) -> float:
        return threshold(self.arl0, self.k)


def siegmund_arl(h: float, k: float) -> float:
    """One-sided CUSUM's in-control ARL for N(0, 1) scores (Siegmund's approximation)."""
    b = h + 1.166
    return (math.exp(2 * k * b) - 2 * k * b - 1) / (2 * k * k)


@lru_cache(maxsize=32)
def threshold(arl0: float, k: float) -> float:
    """The h giving a two-sided chart the in-control ARL ``arl0``."""
    from scipy.optimize import brentq

    return float(brentq(lambda h: siegmund_arl(h, k) - 2 * arl0, 0.01, 100.0))


def score(y: float, v: float, before: Sequence[tuple[float, float]]) -> float | None:
    """The self-starting normal score of a run (log ratio ``y``, its own error variance
    ``v``) against the runs ``before`` it ((y, v) each): the deviation from their
    random-effects mean (DerSimonian-Laird's between-run variance, closed form: the chart
    asks it at every run) over the run's own error, the between-run wander and the mean's
    error, brought through the t distribution with their degrees of freedom to a normal
    score. A precise run counts for more than a contended one. None under three runs."""
    m = len(before)
    if m < 3:
        return None
    w = [1.0 / bv for _by, bv in before]
    sw = sum(w)
    mean_fe = sum(wi * by for wi, (by, _bv) in zip(w, before, strict=True)) / sw
    q = sum(wi * (by - mean_fe) ** 2 for wi, (by, _bv) in zip(w, before, strict=True))
    c = sw - sum(wi * wi for wi in w) / sw
    tau2 = max(0.0, (q - (m - 1)) / c) if c > 0 else 0.0
    wr = [1.0 / (bv + tau2) for _by, bv in before]
    swr = sum(wr)
    mean = sum(wi * by for wi, (by, _bv) in zip(wr, before, strict=True)) / swr
    var = v + tau2 + 1.0 / swr
    if var <= 0:
        return None
    from scipy.stats import norm
    from scipy.stats import t as student_t

    t = (y - mean) / math.sqrt(var)
    p = float(student_t.cdf(t, m - 1))
    p = min(max(p, 1e-300), 1 - 1e-16)
    return float(norm.ppf(p))


@dataclass
class Cusum:
    """The two one-sided sums of one suite's chart."""

    config: DetectorConfig
    up: float = 0.0
    down: float = 0.0

    def add(self, z: float) -> None:
        c = self.config
        z = min(max(z, -c.clip), c.clip)
        self.up = max(0.0, self.up + z - c.k)
        self.down = max(0.0, self.down - z - c.k)

    @property
    def alarm(self) -> str | None:
        h = self.config.h
        if self.up > h:
            return "up"
        if self.down > h:
            return "down"
        return None

    @property
    def value(self) -> float:
        return max(self.up, self.down)

    def reset(self) -> None:
        self.up = self.down = 0.0
