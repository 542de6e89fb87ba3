"""A suite's ratio with the wander it shares with a sibling suite taken out. Both
SLH-DSA-SHAKE suites are Keccak-bound: much of their run-to-run wander is common, and a
step of one suite's own time does not move the other's ratio. Steps are looked for on
``ln ratio - b ln sibling`` (``b`` a robust regression of their successive differences);
one found there is the suite's only where its own ratio moved more than the sibling's
(:func:`attributed`). docs/TREND.md ("The sibling's wander") has the figures."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from qprof.consensus.trend.changepoints import noise_var
from qprof.consensus.trend.model import Series, SuiteRun
from qprof.consensus.trend.segment import Z95, measurement_var, run_se

MIN_RUNS = 16  # runs decided in both from which the slope is estimated (8 a side)
MAX_SLOPE = 1.5
# Below MIN_RUNS the slope is physics': a host speed factor for Keccak scales both suites'
# own times alike, so b = 1 on the log ratios (RLM gives 0.6-1.1 on the long series).
PRIOR_SLOPE = 1.0
MIN_PAIRS = 6  # runs decided in both before the sibling can stand in at all


def sibling(suite: str, names: Sequence[str]) -> str | None:
    """The one other suite of ``suite``'s hash family (SLH-DSA-SHAKE-128s for -256s);
    None for ML-DSA or where there is not exactly one."""
    if not suite.startswith("SLH-DSA-"):
        return None
    family = suite.rsplit("-", 1)[0]
    others = [n for n in names if n != suite and n.rsplit("-", 1)[0] == family]
    return others[0] if len(others) == 1 else None


def _log(s: SuiteRun) -> float:
    assert s.ratio is not None  # decided
    return math.log(s.ratio)


def _both(series: Series, suite: str, other: str, lo: int, hi: int
          ) -> list[tuple[int, SuiteRun, SuiteRun]]:
    out = []
    for i in range(lo, hi):
        a, b = series.runs[i].suite(suite), series.runs[i].suite(other)
        if a is not None and b is not None and a.decided and b.decided:
            out.append((i, a, b))
    return out


def slope(pairs: Sequence[tuple[int, SuiteRun, SuiteRun]]) -> float | None:
    """How much of the sibling's log ratio moves with the suite's from run to run: a
    robust regression (statsmodels' RLM, Tukey's biweight) of successive differences, so
    a step, which moves one difference, weighs nothing; clamped to [0, MAX_SLOPE].
    Under MIN_RUNS runs, PRIOR_SLOPE; None under MIN_PAIRS."""
    if len(pairs) < MIN_PAIRS:
        return None
    if len(pairs) < MIN_RUNS:
        return PRIOR_SLOPE
    import numpy as np
    from statsmodels.robust.norms import TukeyBiweight
    from statsmodels.robust.robust_linear_model import RLM

    da = np.diff([_log(a) for _i, a, _b in pairs])
    db = np.diff([_log(b) for _i, _a, b in pairs])
    if not np.any(db):
        return None
    b = float(RLM(da, db, M=TukeyBiweight()).fit().params[0])
    return min(max(b, 0.0), MAX_SLOPE) if math.isfinite(b) else None


def adjusted(series: Series, suite: str, other: str, lo: int, hi: int
             ) -> tuple[Series, float] | None:
    """``series`` with ``suite``'s decided runs in [lo, hi) read against the sibling
    (ratio times ``(sibling / its median) ** -b``, the sibling's own error added to the
    run's, scaled to the runs' run-to-run noise where that is smaller), runs the sibling
    did not decide undecided; and ``b``. None without a slope, or where the sibling's
    pool changed."""
    pairs = _both(series, suite, other, lo, hi)
    if len({s.pool_signatures for _i, _a, s in pairs}) > 1:
        return None  # a growing pool moves the sibling's ratio: it cannot stand in
    b = slope(pairs)
    if b is None or b == 0:
        return None
    mid = sorted(_log(s) for _i, _a, s in pairs)[len(pairs) // 2]
    at = {i: (a, s) for i, a, s in pairs}
    z = {i: _log(a) - b * (_log(s) - mid) for i, a, s in pairs}
    var = {i: run_se(a) ** 2 + b * b * (measurement_var(s) + (s.pool_se or 0.0) ** 2)
           for i, a, s in pairs}
    # A run's own error holds the wander the two share within the run too: scaled down
    # (its pool's share with it) to the adjusted runs' run-to-run noise where smaller.
    shrink = min(1.0, noise_var([z[i] for i in z], [1 / var[i] for i in z]))
    runs = []
    for i, p in enumerate(series.runs):
        mine = p.suite(suite)
        if mine is None or not lo <= i < hi:
            runs.append(p)
            continue
        if i not in at:
            new = replace(mine, undecided=mine.undecided or "sibling undecided")
        else:
            a, s = at[i]
            ratio = math.exp(z[i])
            pool = math.sqrt(shrink) * math.hypot(a.pool_se or 0.0, b * (s.pool_se or 0.0))
            se = math.sqrt(shrink * var[i])
            new = replace(a, ratio=ratio, pool_se=pool,
                          ratio_ci=(ratio * math.exp(-Z95 * se), ratio * math.exp(Z95 * se)))
        runs.append(replace(p, suites=tuple(new if s.suite == suite else s for s in p.suites)))
    return Series(series.key, tuple(runs)), b


def attributed(mine: float, theirs: float, adjusted_step: float, b: float) -> bool:
    """Whether a step of ``adjusted_step`` (log) in the adjusted ratio is the suite's:
    its own ratio's step (``mine``) and the sibling's (``theirs``) over the same runs lie
    nearer to "the suite moved" (mine = step, theirs = 0) than to "the sibling moved"
    (mine = 0, b x theirs = -step), and the suite's own moved the same way."""
    if mine * adjusted_step <= 0:
        return False
    as_mine = math.hypot(mine - adjusted_step, b * theirs)
    as_theirs = math.hypot(mine, b * theirs + adjusted_step)
    return as_mine < as_theirs
