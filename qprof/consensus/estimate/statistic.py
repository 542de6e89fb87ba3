"""Which statistic a CPU's estimates use: the median, the 10th percentile, or quiet-turn
pairs, and why (``statistic="auto"``). The one place this choice is made."""

from __future__ import annotations

from typing import Literal

from qprof.consensus.estimate.quiet import Paired, paired_ratios
from qprof.consensus.estimate.reduce import Key, Reduced

Statistic = Literal["median", "p10", "paired"]
STATISTICS = ("median", "p10", "paired", "auto")
STATISTIC_TEXT: dict[Statistic, str] = {
    "median": "medians of all samples (the seeds' rule)",
    "p10": "10th percentiles of all samples",
    "paired": "quiet-turn pairs: each operation of a suite turn against the unit's speed "
    "in the turns on both sides, counted when both ran at the quiet speed",
}
# The seeds' bar for a steady run: ML-DSA round medians within 100 bp of each other.
STEADY_SPREAD_BP = 100.0
# Quiet-turn pairs stand for a suite only from enough of them: at least this many rounds
# kept (the interval resamples rounds: from one or two it cannot see how rounds differ)
# and this share of all its turns (5 quiet turns of 1,330 once gave a "sure" estimate).
MIN_PAIRED_ROUNDS = 3
MIN_PAIRED_SHARE = 0.1


def paired_usable(p: Paired | None) -> bool:
    """Enough quiet turns, in enough rounds, for the paired statistic (see above)."""
    return (p is not None and len(p.by_round) >= MIN_PAIRED_ROUNDS
            and p.quiet_turns >= MIN_PAIRED_SHARE * p.turns)


def paired_for(reduced: dict[Key, Reduced], cpu: int, backend: str, operation: str,
               unit_suite: str) -> dict[str, Paired]:
    """suite -> its quiet-turn pairing with the unit (interleaved rounds only)."""
    unit = reduced.get((cpu, unit_suite, backend, operation))
    out: dict[str, Paired] = {}
    if unit is None:
        return out
    for (c, suite, b, op), red in reduced.items():
        if (c, b, op) == (cpu, backend, operation) and suite != unit_suite:
            p = paired_ratios(red, unit)
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
    unit_suite: str = "ML-DSA-44",
) -> tuple[Statistic, str]:
    """(statistic, why) for ``statistic="auto"`` on one CPU and backend; ``paired``: its
    suites' quiet-turn pairings (:func:`paired_for`, which the estimate uses too).

    The median rule holds while the ML-DSA rounds agree. On a shared host (a VM whose
    vCPU is now and then slowed by a neighbour for 0.1-2 s, invisible from the guest) or
    one whose clock drifts, samples come in two speeds and each round's median lands on
    one or the other, so medians jump between rounds by thousands of bp. Interleaved
    rounds then give the quiet-turn pairs ("paired"), which estimate the same ratio of
    medians from the operations timed between two quiet unit turns. Without enough of
    them the median stays, with its wider interval: the 10th percentile is never chosen
    here, it estimates another ratio (-40 to -100 bp for SLH-DSA, whose long operations
    collect more interrupts; docs/ESTIMATOR.md). The verdict says which and why.
    """
    spreads = [
        (red.spread_bp, suite)
        for (c, suite, b, op), red in reduced.items()
        if c == cpu and b == backend and op == operation and suite.startswith("ML-DSA")
    ]
    worst_median = max((m for m, _s in spreads), default=0.0)
    if worst_median <= max_spread_bp:
        return "median", f"ML-DSA rounds agree within {worst_median:.0f} bp"
    # The ML-DSA suites decide (the steadiness bar is theirs); a suite without quiet
    # rounds of its own (SLH-DSA on a very busy host) falls back, with its unit, to the
    # median, said on its line.
    ml = {s for _m, s in spreads if s != unit_suite}
    usable = {s for s, p in paired.items() if paired_usable(p)}
    if usable and ml <= usable:
        # The suites' pair ratios per round (the unit's own quiet speed may move between
        # rounds: drift, another process; the pairs divide that out).
        worst = max(((paired_spread(paired, s, unit_suite) or 0.0) for s in ml), default=0.0)
        contended = max(len(p.contended) for s, p in paired.items() if s in ml or not ml)
        rounds = max(len(p.quiet_fraction) for p in paired.values())
        return "paired", (
            f"ML-DSA round medians {worst_median:.0f} bp apart (a busy or shared host); "
            f"quiet-turn ratios of ML-DSA rounds {worst:.0f} bp apart"
            + (f"; {contended} of {rounds} rounds under contention left out" if contended
               else "")
        )
    return "median", (f"ML-DSA round medians {worst_median:.0f} bp apart; too few quiet "
                      "turns for pairs")
