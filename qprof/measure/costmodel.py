"""Per-signature cost: the distribution of a pool's times and time = a + b x hash calls."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of a non-empty sequence."""
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


@dataclass(frozen=True)
class Distribution:
    count: int
    median: float
    p90: float
    p99: float
    max: float
    min: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Distribution:
        if not values:
            raise ValueError("no values")
        return cls(len(values), statistics.median(values), _quantile(values, 0.90),
                   _quantile(values, 0.99), max(values), min(values))

    def relative(self) -> dict[str, float]:
        """Each figure over the median."""
        return {"p90": self.p90 / self.median, "p99": self.p99 / self.median,
                "max": self.max / self.median, "min": self.min / self.median}


@dataclass(frozen=True)
class CallModel:
    """time_ns = intercept_ns + ns_per_call x calls, least squares over one suite/core."""

    intercept_ns: float
    ns_per_call: float
    points: int
    max_error: float  # largest |predicted - measured| / measured over the points
    rms_error: float

    def predict(self, calls: int) -> float:
        return self.intercept_ns + self.ns_per_call * calls

    @classmethod
    def fit(cls, calls: Sequence[int], times_ns: Sequence[float]) -> CallModel:
        """ValueError with fewer than two distinct call counts."""
        if len(calls) != len(times_ns) or len(set(calls)) < 2:
            raise ValueError("the fit needs at least two different call counts")
        mx = statistics.fmean(calls)
        my = statistics.fmean(times_ns)
        sxx = sum((x - mx) ** 2 for x in calls)
        sxy = sum((x - mx) * (y - my) for x, y in zip(calls, times_ns, strict=True))
        b = sxy / sxx
        a = my - b * mx
        errors = [abs(a + b * x - y) / y for x, y in zip(calls, times_ns, strict=True)]
        return cls(a, b, len(calls), max(errors),
                   statistics.fmean(e * e for e in errors) ** 0.5)
