"""The sequential detector: a self-starting, two-sided CUSUM on a suite's runs, clipped so
one wild run cannot raise it alone.

Each decided run is standardised against the runs of its segment before it (Hawkins's
self-starting chart: the deviation from their mean over their sample sd, brought through
the t distribution with their degrees of freedom to a normal score), so the chart needs no
long baseline and the estimation of the segment's mean and spread is counted. The score is
clipped to +-``clip``; the two one-sided sums ``S+ = max(0, S+ + z - k)`` and ``S- = max(0,
S- - z - k)`` raise an alarm past ``h``. ``k`` is half the shift the chart is tuned for
(in run sds); ``h`` follows from the in-control average run length asked for (ARL0, per
series and suite) by Siegmund's approximation, each side taking twice the ARL0 (two sides
alarm twice as often). No library offers a self-starting CUSUM; the recursion is five
lines. Its false-alarm rate and detection delays on real series: docs/TREND.md and
``bench/trend_detection.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class DetectorConfig:
    arl0: float = 10_000.0  # in-control average run length, per series and suite
    shift: float = 1.25  # the shift (in run sds) the chart is tuned for: k = shift / 2
    clip: float = 4.0  # a run's score is clipped to +-clip
    warmup: int = 5  # decided runs of a segment before its chart starts

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


def score(y: float, before: Sequence[float]) -> float | None:
    """The self-starting normal score of ``y`` against the runs ``before`` it (None under
    three of them, or when they do not vary)."""
    m = len(before)
    if m < 3:
        return None
    mean = sum(before) / m
    var = sum((x - mean) ** 2 for x in before) / (m - 1)
    if var <= 0:
        return None
    from scipy.stats import norm
    from scipy.stats import t as student_t

    t = (y - mean) / math.sqrt(var * (1 + 1 / m))
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
