"""Where a step lies and how large it is: ruptures's exact single-change segmentation of
the runs since the last change (least squares on the log ratio, each run weighted by its
precision), a Welch t test that confirms the alarm, the test that keeps a step found
looking back (:func:`step_pvalue`), and the step's size with its 95 % interval from the
two segments' estimates (:mod:`qprof.consensus.trend.segment`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from qprof.consensus.trend.model import SegmentEstimate

CONFIRM_P = 0.05  # an alarm is a change once the runs either side differ at this level
MIN_SIDE = 2  # runs on each side of a located step


def weighted_l2(min_size: int = MIN_SIDE) -> type:
    """ruptures's cost for a weighted mean: each run weighs by its precision, so a
    contended run moves the split less than a quiet one (ruptures's own l2 weighs all
    alike)."""
    import numpy as np
    from ruptures.base import BaseCost

    class WeightedL2(BaseCost):  # type: ignore[misc]
        model = "weighted_l2"

        def __init__(self) -> None:
            self.min_size = min_size

        def fit(self, signal: np.ndarray) -> WeightedL2:
            self.signal = signal
            y, w = signal[:, 0], signal[:, 1]
            self.cw = np.concatenate(([0.0], np.cumsum(w)))
            self.cwy = np.concatenate(([0.0], np.cumsum(w * y)))
            self.cwy2 = np.concatenate(([0.0], np.cumsum(w * y * y)))
            return self

        def error(self, start: int, end: int) -> float:
            sw = self.cw[end] - self.cw[start]
            swy = self.cwy[end] - self.cwy[start]
            return float(self.cwy2[end] - self.cwy2[start] - swy * swy / sw)

    return WeightedL2


def locate(points: Sequence[tuple[float, float]]) -> int | None:
    """The index of the first run after the one step that best splits ``points`` ((log
    ratio, error variance) each; least squares weighted by precision, ruptures's exact
    search); None when too few runs for two sides.

    A run's weight is 1 / (its variance + the median run's): its interval says how far a
    contended run may stray, but a narrow one is not trusted past the typical run's, since
    the runs also wander with the host between them. Measured on the three real series'
    block bootstraps (2 % steps located within 2 runs, 256s / 128s): 171 -> 183 and
    176 -> 181 of 200 on the third, 195 -> 194 and 197 -> 197 on the second, 174 and 186
    -> 185 on the first (docs/TREND.md)."""
    if len(points) < 2 * MIN_SIDE:
        return None
    import numpy as np
    import ruptures

    typical = float(np.median([v for _y, v in points]))
    signal = np.asarray([(y, 1.0 / (v + typical)) for y, v in points], dtype=float)
    algo = ruptures.Dynp(custom_cost=weighted_l2()(), min_size=MIN_SIDE, jump=1).fit(signal)
    return int(algo.predict(n_bkps=1)[0])


def differ(before: Sequence[float], after: Sequence[float], p: float = CONFIRM_P) -> bool:
    """Whether two runs' sets differ in mean (Welch's t test), ``p`` two-sided."""
    if len(before) < MIN_SIDE or len(after) < MIN_SIDE:
        return False
    if len(set(before)) == 1 and len(set(after)) == 1:  # no spread: equal or not
        return before[0] != after[0]
    import warnings

    from scipy.stats import ttest_ind

    with warnings.catch_warnings():  # identical values: no variance, no difference
        warnings.simplefilter("ignore", RuntimeWarning)
        res = ttest_ind(list(before), list(after), equal_var=False)
    pvalue = float(res.pvalue)
    return math.isfinite(pvalue) and pvalue < p


def _se(seg: SegmentEstimate, without_pool: bool) -> float:
    """The segment's standard error of ln ratio (less its pool's share when asked)."""
    from scipy.stats import t as student_t

    lo, hi = seg.ratio_ci
    se = math.log(hi / lo) / (2 * float(student_t.ppf(0.975, seg.df)))
    if without_pool:
        se = math.sqrt(max(se ** 2 - (seg.pool_bp / 1e4) ** 2, (0.1 * se) ** 2))
    return se


def _welch(before: SegmentEstimate, after: SegmentEstimate) -> tuple[float, float]:
    """(standard error, degrees of freedom) of the log step from both segments' own
    errors (Welch-Satterthwaite). Segments of one signature pool share its deviation,
    which then cancels in the difference."""
    same_pool = (before.pool_signatures is not None
                 and before.pool_signatures == after.pool_signatures)
    sb, sa = _se(before, same_pool), _se(after, same_pool)
    se = math.hypot(sb, sa)
    df = se ** 4 / (sb ** 4 / before.df + sa ** 4 / after.df) if se > 0 else 1000.0
    return se, max(df, 1.0)


OWN_SE_FROM = 8  # runs from which a segment's own error (HAC: its drift) stands in a test


def _step(before: SegmentEstimate, after: SegmentEstimate) -> tuple[float, float, float]:
    """(log step, its standard error, degrees of freedom): one rule for the test that
    keeps a step and for its interval. The runs' pooled run-to-run variance (each run's
    own error and the wander, as the segments measured them) over each side's runs, a
    side's error no smaller than its own estimate's once it has OWN_SE_FROM runs (its
    autocorrelation in it), nor the step's error than the segments' own (:func:`_welch`).
    A step leaves the host's noise as it was, so a short side borrows the other's: 5 runs
    cannot tell their wander (docs/TREND.md has what this did to the interval)."""
    n1, n2 = before.runs, after.runs
    d = math.log(after.ratio / before.ratio)
    welch_se, welch_df = _welch(before, after)
    if n1 + n2 < 3:
        return d, welch_se, welch_df
    same_pool = (before.pool_signatures is not None
                 and before.pool_signatures == after.pool_signatures)

    def per_run(g: SegmentEstimate) -> float:
        return (g.within_bp ** 2 + g.between_bp ** 2) / 1e8

    s2 = ((n1 - 1) * per_run(before) + (n2 - 1) * per_run(after)) / (n1 + n2 - 2)
    errs = []
    for g in (before, after):
        own = _se(g, same_pool) if g.runs >= OWN_SE_FROM else 0.0
        errs.append(max(math.sqrt(s2 / g.runs), own))
    se = max(math.hypot(*errs), welch_se)
    return d, se, max(n1 + n2 - 2.0, welch_df)  # the segments' own df, where more


def step_pvalue(before: SegmentEstimate, after: SegmentEstimate, size: float = 0.0
                ) -> float:
    """The two-sided p-value of a step of ``size`` (log; no step by default) between two
    adjacent segments (:func:`_step`)."""
    from scipy.stats import t as student_t

    if before.runs + after.runs < 3:
        return 1.0
    d, se, df = _step(before, after)
    if se <= 0:
        return 0.0 if d != size else 1.0
    return float(2 * student_t.sf(abs(d - size) / se, df))


def step_size(before: SegmentEstimate, after: SegmentEstimate, level_var: float = 0.0
              ) -> tuple[float, tuple[float, float]]:
    """(change in bp, its 95 % interval in bp): after against before, the interval from
    the error the step was kept on (:func:`_step`) and the host's level move at a run
    (``level_var``, wander.py)."""
    from scipy.stats import t as student_t

    d, se, df = _step(before, after)
    half = float(student_t.ppf(0.975, df)) * math.sqrt(se * se + level_var)

    def bp(x: float) -> float:
        return 1e4 * (math.exp(x) - 1)

    return bp(d), (bp(d - half), bp(d + half))
