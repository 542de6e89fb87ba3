"""One suite's ratio over a segment of comparable runs: a random-effects combination of
the runs' estimates, with an interval that holds each run's own error, the between-run
wander, the runs' autocorrelation and the signature pool's shared error. A young segment
borrows the wander of the series' earlier segments (:class:`Wander`). The model and its
checks on real series: docs/TREND.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from qprof.consensus.trend.model import SegmentEstimate, SuiteRun

Z95 = 1.959963984540054
# Degrees of freedom of one run's own error: a run's interval comes from a bootstrap of
# tens of rounds, so its variance is well known next to the between-run part.
RUN_DF = 30.0
# A run more than WILD_SD robust sds (1.4826 MAD of the segment's runs, or its own error
# where larger) from the median is wild: iid normal runs reach it in 0.27 % of runs.
WILD_SD = 3.0
MIN_ROBUST = 8  # decided runs before a median and MAD can tell a wild run
# Decided runs from which a segment's own runs tell its wander: fewer borrow the series'
# earlier segments'. Measured on the committed series (bench/trend_young.py): young
# segments alone held the whole series' ratio in 82 / 88 / 91 / 94 % at 1 / 2 / 3 / 5
# runs, with the history's wander 97 / 96 / 96 / 98 %; alone at 8 runs, 96 %.
OWN_WANDER_FROM = 8


def run_se(s: SuiteRun) -> float:
    """A run's own standard error of ln(ratio), from its 95 % interval."""
    assert s.ratio_ci is not None
    lo, hi = s.ratio_ci
    return max((math.log(hi) - math.log(lo)) / (2 * Z95), 1e-6)


def measurement_var(s: SuiteRun) -> float:
    """A run's measurement share of its error variance: its error less its pool's (never
    under a tenth of it); what differs from run to run of one pool."""
    se = run_se(s)
    return max(se ** 2 - (s.pool_se or 0.0) ** 2, (0.1 * se) ** 2)


def hac_lags(n: int) -> int:
    """Newey-West's rule of thumb for the lags of the HAC variance (0 under 8 runs, where
    the autocorrelation cannot be told from noise)."""
    return 0 if n < 8 else max(1, int(4 * (n / 100) ** (2 / 9)))


def winsorize(y: Sequence[float], v: Sequence[float]) -> tuple[list[float], int]:
    """``y`` with its wild runs pulled in to WILD_SD robust sds of the median (a run's own
    error widens its allowance), and how many were."""
    if len(y) < MIN_ROBUST:
        return list(y), 0
    from statistics import median

    mid = median(y)
    spread = 1.4826 * median(abs(yi - mid) for yi in y)
    out: list[float] = []
    for yi, vi in zip(y, v, strict=True):
        allow = WILD_SD * max(spread, math.sqrt(vi))
        out.append(min(max(yi, mid - allow), mid + allow))
    return out, sum(a != b for a, b in zip(y, out, strict=True))


@dataclass(frozen=True)
class Wander:
    """The between-run wander of a series' earlier segments, pooled: what a young segment
    borrows."""

    tau2: float  # between-run variance of ln ratio
    df: float  # degrees of freedom: the segments' decided runs, less one each
    runs: int  # the segments' decided runs


def pooled_wander(segments: Sequence[SegmentEstimate]) -> Wander | None:
    """The wander of ``segments`` (each its own runs' ``between_bp``), pooled by their
    degrees of freedom; None without a segment of two runs or more."""
    used = [g for g in segments if g.runs >= 2]
    df = sum(g.runs - 1 for g in used)
    if df <= 0:
        return None
    tau2 = sum((g.runs - 1) * (g.between_bp / 1e4) ** 2 for g in used) / df
    return Wander(tau2=tau2, df=float(df), runs=sum(g.runs for g in used))


def _tau2(y: Sequence[float], v: Sequence[float]) -> float:
    import numpy as np
    from statsmodels.stats.meta_analysis import combine_effects

    res = combine_effects(np.asarray(y), np.asarray(v), method_re="pm")
    tau2 = float(res.tau2)
    return tau2 if math.isfinite(tau2) and tau2 > 0 else 0.0


def _hac_se(y: Sequence[float], w: Sequence[float], lags: int) -> float:
    import numpy as np
    from statsmodels.regression.linear_model import WLS

    fit = WLS(np.asarray(y), np.ones(len(y)), weights=np.asarray(w)).fit(
        cov_type="HAC", cov_kwds={"maxlags": lags, "use_correction": True})
    se = float(fit.bse[0])
    return se if math.isfinite(se) else 0.0


def _lag1(r: Sequence[float]) -> float:
    if len(r) < 8:
        return 0.0
    mean = sum(r) / len(r)
    d = [x - mean for x in r]
    den = sum(x * x for x in d)
    return 0.0 if den <= 0 else sum(a * b for a, b in zip(d, d[1:], strict=False)) / den


def _pool_var(runs: Sequence[SuiteRun]) -> float:
    """The pool's share of the segment's variance. Runs of one pool (one size) share its
    deviation, so it stays whole over them; k pools of equal weight divide it. A run's
    bootstrap gives its pool share with some of the run's measurement noise in it (the
    resampled signatures carry their noisy timings), so a pool's share is the smallest any
    of its runs gives: an upper bound on what they share."""
    by_pool: dict[int | None, float] = {}
    counts: dict[int | None, int] = {}
    for s in runs:
        share = (s.pool_se or 0.0) ** 2
        key = s.pool_signatures
        by_pool[key] = min(by_pool.get(key, share), share)
        counts[key] = counts.get(key, 0) + 1
    n = len(runs)
    return sum((counts[k] / n) ** 2 * v for k, v in by_pool.items())


def combine(suite: str, runs: Sequence[tuple[int, SuiteRun]], gaps: int = 0,
            first: int | None = None, last: int | None = None,
            history: Wander | None = None) -> SegmentEstimate | None:
    """The segment estimate of ``suite`` over ``runs`` ((series index, run) of the decided
    runs, in order); None without any. ``first``/``last`` bound the segment when it starts
    or ends with undecided runs. ``history``: the series' earlier segments' wander, pooled
    with this segment's own where it is the larger, while the segment has fewer than
    OWN_WANDER_FROM decided runs; one run's interval then holds it too (the estimate
    stays the run's).

    A run's own error is its measurement's (independent between runs) and its signature
    pool's (shared by every run of that pool): the model combines the first, the second
    is added whole (runs of one pool cannot average it away; a larger pool shrinks it)."""
    decided = [(i, s) for i, s in runs if s.decided]
    if not decided:
        return None
    first = decided[0][0] if first is None else first
    last = decided[-1][0] if last is None else last
    pools = {s.pool_signatures for _i, s in decided}
    pool = pools.pop() if len(pools) == 1 else None
    from scipy.stats import t as student_t

    if len(decided) == 1:
        s = decided[0][1]
        assert s.ratio is not None and s.ratio_ci is not None
        one = SegmentEstimate(suite=suite, first_run=first, last_run=last, runs=1,
                              gaps=gaps, ratio=s.ratio, ratio_ci=s.ratio_ci,
                              within_bp=1e4 * run_se(s), between_bp=0.0, autocorr=0.0,
                              df=RUN_DF, pool_bp=1e4 * (s.pool_se or 0.0),
                              pool_signatures=pool)
        if history is None or history.tau2 <= 0:
            return one
        own = run_se(s) ** 2
        se1 = math.sqrt(own + history.tau2)
        df1 = min(se1 ** 4 / (own ** 2 / RUN_DF + history.tau2 ** 2 / history.df), 1000.0)
        half1 = float(student_t.ppf(0.975, df1)) * se1
        return replace(one, ratio_ci=(s.ratio * math.exp(-half1), s.ratio * math.exp(half1)),
                       df=df1, wander_bp=1e4 * math.sqrt(history.tau2),
                       wander_from=history.runs)

    n = len(decided)
    v = [measurement_var(s) for _i, s in decided]
    y, clipped = winsorize([math.log(s.ratio) for _i, s in decided if s.ratio is not None], v)
    pool_var = _pool_var([s for _i, s in decided])
    own_tau2 = _tau2(y, v)
    tau2, tau_df, borrowed = own_tau2, float(n - 1), 0
    if history is not None and n < OWN_WANDER_FROM:
        pooled = (history.df * history.tau2 + (n - 1) * own_tau2) / (history.df + n - 1)
        if pooled > own_tau2:
            tau2, tau_df, borrowed = pooled, history.df + n - 1, history.runs
    w = [1.0 / (vi + tau2) for vi in v]
    wsum = sum(w)
    mu = sum(wi * yi for wi, yi in zip(w, y, strict=True)) / wsum
    se_model = math.sqrt(1.0 / wsum)
    se_hac = _hac_se(y, w, hac_lags(n))
    resid = [(yi - mu) * math.sqrt(wi) for wi, yi in zip(w, y, strict=True)]
    mean_v = sum(v) / n
    if se_hac > se_model:
        df_runs = float(n - 1)  # the runs' own spread carries the error
    else:
        df_runs = (mean_v + tau2) ** 2 / (mean_v ** 2 / (RUN_DF * n) + tau2 ** 2 / tau_df)
        df_runs = min(max(df_runs, n - 1.0), 1000.0)
    se_runs2 = max(se_model, se_hac) ** 2
    se = math.sqrt(se_runs2 + pool_var)
    # The pool's share comes from each run's bootstrap: well known next to the runs'.
    df = se ** 4 / (se_runs2 ** 2 / df_runs + pool_var ** 2 / (RUN_DF * n))
    df = min(max(df, n - 1.0), 1000.0)
    half = float(student_t.ppf(0.975, df)) * se
    return SegmentEstimate(
        suite=suite, first_run=first, last_run=last, runs=n, gaps=gaps,
        ratio=math.exp(mu), ratio_ci=(math.exp(mu - half), math.exp(mu + half)),
        within_bp=1e4 * math.sqrt(mean_v), between_bp=1e4 * math.sqrt(own_tau2),
        autocorr=_lag1(resid), df=df, pool_bp=1e4 * math.sqrt(pool_var),
        pool_signatures=pool, clipped=clipped,
        wander_bp=1e4 * math.sqrt(tau2) if borrowed else None, wander_from=borrowed)
