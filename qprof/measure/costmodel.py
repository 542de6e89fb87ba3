"""Per-signature cost: the distribution of a pool's times and time = b x Keccak-f
permutations."""

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
class PermutationModel:
    """time_ns = ns_per_permutation x Keccak-f[1600] permutations, over one suite/core.

    Permutations are the unit with one price: a WOTS+ chain step (F) is one, a WOTS+
    public-key compression (T_len) 5-17, and verification is almost nothing but them, so
    the line goes through the origin.  Its one parameter is then fitted on the level of
    every point, not on the pool's narrow spread of chain steps (a free intercept,
    a + b x calls, extrapolates that spread's slope to crafted signatures far beyond it).
    Fitted in relative error, which is what it is judged by:
    b = sum(x / y) / sum((x / y)^2).
    """

    ns_per_permutation: float
    points: int
    max_error: float  # largest |predicted - measured| / measured over the fitted points
    rms_error: float

    def predict(self, permutations: int) -> float:
        return self.ns_per_permutation * permutations

    def error(self, permutations: int, time_ns: float) -> float:
        """(predicted - measured) / measured."""
        return self.predict(permutations) / time_ns - 1

    @classmethod
    def fit(cls, permutations: Sequence[int], times_ns: Sequence[float]) -> PermutationModel:
        """ValueError without points, or with a count or time that is not positive."""
        if not permutations or len(permutations) != len(times_ns):
            raise ValueError("the fit needs one time per permutation count, at least one")
        if min(permutations) <= 0 or min(times_ns) <= 0:
            raise ValueError("permutation counts and times must be positive")
        r = [x / y for x, y in zip(permutations, times_ns, strict=True)]
        b = sum(r) / sum(v * v for v in r)
        errors = [abs(b * v - 1) for v in r]
        return cls(b, len(r), max(errors), statistics.fmean(e * e for e in errors) ** 0.5)
