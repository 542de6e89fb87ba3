"""A signature pool's mix of costs, held to the population's: an SLH-DSA pool draws its
mix of chain steps once and every run keeps the draw, an error no number of runs
averages out. Each value is brought to the population's signature at its rank (known
exactly: ``verify.slhdsa_calls.signature_steps_cdf``); ``RESIDUAL_SD`` is what the count
does not explain. Evidence and figures: docs/ESTIMATOR.md.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from qprof.verify.slhdsa_calls import signature_steps_cdf

# A signature's cost beyond its permutation count (ln, one sd): the largest rms error of
# the time model over a fitted pool of 64 (0.8 %, 15 rounds, AMD EPYC guest: it holds
# the timing noise of each signature's quickest round too, so it bounds the residual).
RESIDUAL_SD = 0.008


def population_factors(suite: str, permutations: Sequence[int], fixed: int
                       ) -> tuple[float, ...] | None:
    """Per pool signature (in pool order): the factor that brings its value to the
    population's signature at its rank. None: not SLH-DSA, or counts that cannot be a
    verification of ``suite`` (fewer permutations than every signature makes)."""
    if not suite.startswith("SLH-DSA") or not permutations or fixed < 0:
        return None
    return _factors(suite, tuple(permutations), fixed)


@functools.lru_cache(maxsize=64)  # every round's record of a run carries the same pool
def _factors(suite: str, permutations: tuple[int, ...], fixed: int
             ) -> tuple[float, ...] | None:
    import numpy as np  # heavy: loaded when a pool is weighed, not with the verdict

    steps = np.asarray(permutations, dtype=np.float64) - fixed
    if (steps < 0).any():
        return None
    try:
        cdf = np.asarray(signature_steps_cdf(suite))
    except ValueError:
        return None
    n = steps.size
    order = np.argsort(steps, kind="stable")
    where = (np.arange(n) + 0.5) / n
    # The quantile function by linear interpolation of the CDF (steps are integers,
    # their spread ~80-110: the interpolation moves a quantile by under one step).
    target = np.interp(where, cdf, np.arange(cdf.size, dtype=np.float64))
    factors = np.empty(n, dtype=np.float64)
    factors[order] = (fixed + target) / (fixed + steps[order])
    return tuple(float(f) for f in factors)


def residual_se(signatures: int) -> float:
    """The matched pool's share of an estimate's error (ln, one se)."""
    return RESIDUAL_SD / math.sqrt(max(signatures, 1))


Z95 = 1.959963984540054


def with_residual(ci: tuple[float, float], center: float, signatures: int
                  ) -> tuple[float, float]:
    """``ci`` (of the measurement alone, around ``center``) widened on each side by the
    matched pool's share, in quadrature on the log scale."""
    if center <= 0 or min(ci) <= 0:
        return ci
    extra = (Z95 * residual_se(signatures)) ** 2
    low = math.log(center / min(ci[0], center))
    high = math.log(max(ci[1], center) / center)
    return (center * math.exp(-math.sqrt(low ** 2 + extra)),
            center * math.exp(math.sqrt(high ** 2 + extra)))
