"""Every change of one suite's ratio over a whole stretch of runs, found looking back at all
of them (not only after the sequential detector's alarm): ruptures's Pelt on the log
ratios, each run weighted by its precision (its own error less its pool's share, as the
chart's), its penalty a multiple of the stretch's measured run-to-run noise, then each step
kept only while the two segments either side of it differ at ``keep_p`` (their estimates'
intervals: the wander and the runs' autocorrelation in them). A wild run is pulled in to
its nearer side's neighbours first, so one contended run cannot be a segment; a step moves
one side's median, not both, so a step is not a wild run. docs/TREND.md
("Retrospective changes") has the calibration and the bench."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median

from qprof.consensus.trend.model import SegmentEstimate
from qprof.consensus.trend.segmentation import weighted_l2


@dataclass(frozen=True)
class RetroConfig:
    # Pelt's penalty per change, in run-to-run variances x ln(runs): BIC-like.
    penalty: float = 3.0
    min_side: int = 3  # decided runs on each side of a change
    # ... and after one at a stretch's newest runs: 3 runs that read apart may be a host
    # excursion (the detector alarms on them meanwhile).
    end_side: int = 5
    # A step stays while its segments differ at this two-sided level (the pruning step).
    keep_p: float = 0.001
    # A step with a side of fewer runs is kept only at a short_factor-th of its level: that
    # side cannot tell the host's slow drift (its HAC error), and a host excursion at a
    # stretch's end is just such a side (docs/TREND.md, "as recorded").
    short_side: int = 5
    short_factor: float = 10.0
    # A step found against the sibling suite's ratio (covariate.py) is a second look at
    # the same runs, with noise the adjusted runs themselves measured: a stricter level.
    sibling_keep_p: float = 0.0001
    # ... and under 16 runs decided in both (b = 1, not estimated; fewer runs to look at).
    sibling_short_keep_p: float = 0.0003
    # A step at a run where another suite's ratio changed by about as much (the unit's
    # time moves every ratio alike) is tested at that one run, not searched for: a looser level.
    joint_p: float = 0.01
    # ... and where that suite's ratio moved as much but too little to show (not told from
    # the other's step at alike_p, a noisy ratio over few runs), the unit's own time alone
    # names the step there, carrying it at the stricter unit_alone_p.
    alike_p: float = 0.05
    unit_alone_p: float = 0.005
    wild_sd: float = 4.0  # a run this many robust sds off both sides' medians is clipped
    wild_side: int = 3  # the wild rule's neighbours: this many decided runs each side

    @property
    def needs(self) -> int:
        """Decided runs before a change can be found."""
        return self.min_side + max(self.min_side, self.end_side)


def _side_medians(y: Sequence[float], k: int) -> list[tuple[float | None, float | None]]:
    """Each run's neighbours' medians: the ``k`` runs before it and the ``k`` after."""
    n = len(y)
    return [(median(y[max(0, i - k):i]) if i else None,
             median(y[i + 1:i + 1 + k]) if i < n - 1 else None) for i in range(n)]


def tamed(y: Sequence[float], v: Sequence[float], cfg: RetroConfig) -> list[float]:
    """``y`` with each run further than ``wild_sd`` robust sds (or its own error, where
    larger) from both sides' neighbours (the median of the ``wild_side`` runs before it,
    and of those after) pulled in to that distance from the nearer. A
    step moves one side's median, never both, so the runs either side of it stay; one
    run of the host's other level beside a step does not move it either."""
    if len(y) < 2 * cfg.wild_side - 1:  # too few runs to tell a wild one
        return list(y)
    sides = _side_medians(y, cfg.wild_side)

    def nearest(yi: float, side: tuple[float | None, float | None]) -> float:
        return min((m for m in side if m is not None), key=lambda m: abs(yi - m))

    near = [nearest(yi, side) for yi, side in zip(y, sides, strict=True)]
    spread = 1.4826 * median(abs(a - b) for a, b in zip(y, near, strict=True))
    out = []
    for yi, mi, vi in zip(y, near, v, strict=True):
        allow = cfg.wild_sd * max(spread, math.sqrt(vi))
        out.append(min(max(yi, mi - allow), mi + allow))
    return out


def noise_var(y: Sequence[float], w: Sequence[float]) -> float:
    """How many times its weight's variance (1 / w) a run strays from run to run, from the
    successive differences (robust: the median absolute one), so that a step moves one
    difference, not the spread."""
    d = [abs(b - a) / math.sqrt(1 / wa + 1 / wb)
         for a, b, wa, wb in zip(y, y[1:], w, w[1:], strict=False)]
    s = median(d) / 0.6745 if d else 0.0  # |N(0, 1)|'s median is 0.6745
    return max(s * s, 1e-12)


def pelt(y: Sequence[float], v: Sequence[float], cfg: RetroConfig) -> list[int]:
    """Positions (into ``y``) of the first run after each change Pelt finds."""
    n = len(y)
    if n < cfg.needs:
        return []
    import numpy as np
    import ruptures

    typical = float(median(v))
    w = [1.0 / (vi + typical) for vi in v]
    sigma2 = noise_var(y, w)
    signal = np.asarray([(yi, wi / sigma2) for yi, wi in zip(y, w, strict=True)], dtype=float)
    algo = ruptures.Pelt(custom_cost=weighted_l2(cfg.min_side)(), min_size=cfg.min_side,
                         jump=1).fit(signal)
    return [int(b) for b in algo.predict(pen=cfg.penalty * math.log(n))[:-1]]


Segmenter = Callable[[int, int], SegmentEstimate | None]
Tester = Callable[[SegmentEstimate, SegmentEstimate], float]


def prune(bounds: list[int], segment: Segmenter, pvalue: Tester, cfg: RetroConfig,
          keep_p: float | None = None) -> list[int]:
    """The inner bounds of ``bounds`` (series indices, first and last the stretch's) whose
    segments either side differ at ``keep_p`` (the config's by default; a short_factor-th
    of it where a side has fewer than short_side runs): the weakest step (its p over its
    level) is merged away, and its neighbours tested again, until every step left holds."""
    level = cfg.keep_p if keep_p is None else keep_p
    inner = list(bounds)
    while len(inner) > 2:
        worst, worst_p = None, 1.0
        for j in range(1, len(inner) - 1):
            a, b = segment(inner[j - 1], inner[j]), segment(inner[j], inner[j + 1])
            p = 1.0 if a is None or b is None else pvalue(a, b)
            if b is not None and j == len(inner) - 2 and b.runs < cfg.end_side:
                p = 1.0
            if a is not None and b is not None and min(a.runs, b.runs) < cfg.short_side:
                p *= cfg.short_factor
            if p / level >= worst_p:
                worst, worst_p = j, p / level
        if worst is None:
            break
        del inner[worst]
    return inner[1:-1]


def candidates(ys: Sequence[tuple[int, float, float]], cfg: RetroConfig) -> list[int]:
    """Pelt's changes over one stretch between known change points (``ys``: series index,
    log ratio and own error variance of its decided runs, wild ones tamed first): the
    series index of the first run after each, before :func:`prune`."""
    if len(ys) < cfg.needs:
        return []
    v = [p[2] for p in ys]
    return [ys[k][0] for k in pelt(tamed([p[1] for p in ys], v, cfg), v, cfg)]
