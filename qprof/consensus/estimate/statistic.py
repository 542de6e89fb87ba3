"""Which statistic a CPU's estimates use: the median, the 10th percentile, or quiet-turn
pairs, and why (``statistic="auto"``). The one place this choice is made."""

from __future__ import annotations

from typing import Literal

from qprof.consensus.estimate.quiet import Paired, paired_ratios, round_quiet
from qprof.consensus.estimate.reduce import Key, Reduced
from qprof.measure.units import NO_PROFILE_UNIT

Statistic = Literal["median", "p10", "paired"]
STATISTICS = ("median", "p10", "paired", "auto")
STATISTIC_TEXT: dict[Statistic, str] = {
    "median": "medians of all samples (the seeds' rule)",
    "p10": "10th percentiles of all samples",
    "paired": "the quiet ratio: each operation of a suite turn against the unit's speed "
    "in the turns on both sides, brought to the unit's quiet speed along the run's own "
    "contention curve",
}
# The seeds' bar for a steady run: ML-DSA round medians within 100 bp of each other.
STEADY_SPREAD_BP = 100.0


def paired_usable(p: Paired | None) -> bool:
    """Enough quiet operations, in enough rounds, for the paired statistic."""
    return p is not None and p.usable


def paired_for(reduced: dict[Key, Reduced], cpu: int, backend: str, operation: str,
               unit_suite: str) -> dict[str, Paired]:
    """suite -> its quiet-turn pairing with the unit (interleaved rounds only)."""
    unit = reduced.get((cpu, unit_suite, backend, operation))
    out: dict[str, Paired] = {}
    if unit is None:
        return out
    run = round_quiet(unit)  # the unit's quiet speed, once for all its suites
    for (c, suite, b, op), red in reduced.items():
        if (c, b, op) == (cpu, backend, operation) and suite != unit_suite:
            p = paired_ratios(red, unit, run)
            if p is not None:
                out[suite] = p
    return out


def paired_spread(paired: dict[str, Paired], suite: str, unit_suite: str) -> float | None:
    """Round spread (bp) under the paired statistic: of the per-round ratios for a suite,
    of the per-round quiet speed for the unit itself."""
    if suite == unit_suite:
        anyp = next((p for p in paired.values() if p.unit_by_round), None)
        return anyp.unit_spread_bp if anyp else None
    p = paired.get(suite)
    return p.spread_bp if p is not None and p.by_round else None


def choose_statistic(
    reduced: dict[Key, Reduced], cpu: int, backend: str, paired: dict[str, Paired],
    operation: str = "verify", max_spread_bp: float = STEADY_SPREAD_BP,
    unit_suite: str = NO_PROFILE_UNIT.suite,
) -> tuple[Statistic, str]:
    """(statistic, why) for ``statistic="auto"`` on one CPU and backend; ``paired``: its
    suites' quiet-turn pairings (:func:`paired_for`, which the estimate uses too).

    Interleaved rounds give the quiet ratio ("paired") always: a shared host slows the
    core now and then and the slowdown moves the ratio itself, so the median of all
    samples estimates a mixture of phases (on the Xeon guest here 300 bp below the quiet
    ratio, with ML-DSA rounds agreeing: every round was equally contended). On a quiet
    host the two agree. A suite without enough quiet data gets no decided verdict
    (``SuiteEstimate.undecided``). Rounds timed one suite after the other (the seeds')
    keep the median; the 10th percentile is never chosen here, it estimates another ratio
    (-40 to -100 bp for SLH-DSA, docs/ESTIMATOR.md).
    """
    spreads = [
        (red.spread_bp, suite)
        for (c, suite, b, op), red in reduced.items()
        if c == cpu and b == backend and op == operation and suite.startswith("ML-DSA")
    ]
    worst_median = max((m for m, _s in spreads), default=0.0)
    if paired:
        share = max(p.contended_share for p in paired.values())
        usable = [s for s, p in paired.items() if paired_usable(p)]
        slopes = ", ".join(f"{s} {p.slope_bp:+.0f} bp" for s, p in sorted(paired.items())
                           if p.slope_bp is not None and s.startswith("SLH"))
        return "paired", (
            f"interleaved turns; the host was contended {share:.0%} of the time"
            + (f" (ratio per 1 % of slowdown: {slopes})" if slopes else "")
            + ("" if usable else "; too few quiet turns for any suite"))
    if worst_median <= max_spread_bp:
        return "median", f"ML-DSA rounds agree within {worst_median:.0f} bp"
    return "median", (f"ML-DSA round medians {worst_median:.0f} bp apart; rounds not "
                      "interleaved (no quiet turns to pair)")
