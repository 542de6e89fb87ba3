"""Verify-Unit verdict from measurements: coverage with confidence intervals."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from qprof.consensus import CoverageResult, Profile, SuiteMedian, coverage, vu_estimate
from qprof.measure.clock import steady_measurements
from qprof.measure.records import Measurement
from qprof.measure.reduce import (
    Key,
    Paired,
    Reduced,
    paired_ci,
    paired_ratios,
    ratio_ci,
    reduce_measurements,
    unit_quiet,
    vu_by_round,
)

STATISTICS = ("median", "p10", "paired", "auto")
STATISTIC_TEXT = {
    "median": "medians of all samples (the seeds' rule)",
    "p10": "10th percentiles of all samples",
    "paired": "quiet-turn pairs: each suite turn against the unit turns on both sides, "
    "counted when both ran at the quiet speed",
}
# The seeds' bar for a steady run: ML-DSA round medians within 100 bp of each other.
STEADY_SPREAD_BP = 100.0


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
    reduced: dict[Key, Reduced], cpu: int, backend: str, operation: str = "verify",
    max_spread_bp: float = STEADY_SPREAD_BP, unit_suite: str = "ML-DSA-44",
) -> tuple[str, str]:
    """(statistic, why) for ``statistic="auto"`` on one CPU and backend.

    The median rule holds while the ML-DSA rounds agree. On a shared host (a VM whose
    vCPU is now and then slowed by a neighbour for 0.1-2 s, invisible from the guest)
    samples come in two speeds and each round's median lands on one or the other, so
    medians jump between rounds by thousands of bp. Interleaved rounds then give the
    quiet-turn pairs ("paired"); otherwise the 10th percentile, the speed when nothing
    else ran, when it is steadier. The verdict says which and why.
    """
    spreads = [
        (red.spread_bp, red.p10_spread_bp, suite)
        for (c, suite, b, op), red in reduced.items()
        if c == cpu and b == backend and op == operation and suite.startswith("ML-DSA")
    ]
    worst_median = max((m for m, _p, _s in spreads), default=0.0)
    if worst_median <= max_spread_bp:
        return "median", f"ML-DSA rounds agree within {worst_median:.0f} bp"
    paired = paired_for(reduced, cpu, backend, operation, unit_suite)
    # The ML-DSA suites decide (the steadiness bar is theirs); a suite without quiet
    # rounds of its own (SLH-DSA on a very busy host) falls back to its 10th percentile,
    # said on its line.
    ml = {s for _m, _p, s in spreads if s != unit_suite}
    if paired and any(p.by_round for p in paired.values()) and ml <= {
            s for s, p in paired.items() if p.by_round}:
        worst = max((paired_spread(paired, s, unit_suite) or 0.0) for _m, _p, s in spreads)
        contended = max(len(p.contended) for s, p in paired.items() if s in ml or not ml)
        rounds = max(len(p.quiet_fraction) for p in paired.values())
        return "paired", (
            f"ML-DSA round medians {worst_median:.0f} bp apart (a busy or shared host); "
            f"from quiet turns only, ML-DSA rounds {worst:.0f} bp apart"
            + (f"; {contended} of {rounds} rounds under contention left out" if contended
               else "")
        )
    worst_p10 = max((p if p is not None else float("inf") for _m, p, _s in spreads),
                    default=0.0)
    if worst_p10 < worst_median:
        return "p10", (
            f"ML-DSA round medians {worst_median:.0f} bp apart (a busy or shared host); "
            f"10th percentiles {worst_p10:.0f} bp apart"
        )
    return "median", f"ML-DSA rounds {worst_median:.0f} bp apart; no steadier statistic"


def evaluate(
    profile: Profile, measurements: Iterable[Measurement], operation: str = "verify",
    statistic: str = "median",
) -> list[tuple[CoverageResult, dict[str, Any]]]:
    """(result, extras) per (cpu, backend, suite); extras: n, rounds, spread_bp, ratio CI.

    ``statistic="median"`` is the rule (seeds, profiles). ``"p10"`` compares 10th
    percentiles instead: on a shared machine samples mix quiet and contended times and
    the median follows the mix; the 10th percentile stays near the quiet speed.
    ``"auto"`` picks per CPU and backend with :func:`choose_statistic`; each result's
    extras say which was used (``statistic_used``) and why.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose from {', '.join(STATISTICS)}")
    # Rounds timed at one clock: a cap that came or went mid-run is left out (when enough
    # rounds remain; the run's note says which, or that it could not).
    steady, _changes = steady_measurements(measurements, profile.unit_suite)
    reduced = reduce_measurements(m for m in steady if m.operation == operation)
    medians: list[SuiteMedian] = []
    extras: dict[tuple[int, str, str], dict[str, Any]] = {}
    paired_cache: dict[tuple[int, str], dict[str, Paired]] = {}
    for (cpu, suite, backend, _op), red in reduced.items():
        used, why = statistic, "asked for"
        if statistic == "auto":
            used, why = choose_statistic(reduced, cpu, backend, operation,
                                         unit_suite=profile.unit_suite)
        if (cpu, backend) not in paired_cache:
            paired_cache[(cpu, backend)] = paired_for(reduced, cpu, backend, operation,
                                                      profile.unit_suite)
        paired = paired_cache[(cpu, backend)]
        unit = reduced.get((cpu, profile.unit_suite, backend, operation))
        is_unit = suite == profile.unit_suite
        pair = paired.get(suite)
        anyp = next((p for p in paired.values() if p.by_round), None)
        if used == "paired" and (anyp is None or (not is_unit and (pair is None
                                                                   or not pair.by_round))):
            used, why = "p10", ("no round of this suite had enough quiet turns"
                                if pair is not None else "rounds not interleaved")
        ci = None
        if used == "paired":
            assert anyp is not None
            if is_unit:
                value = anyp.unit_quiet_ns
            else:
                assert pair is not None
                value = pair.ratio * pair.unit_quiet_ns
                ci = paired_ci(pair)
            spread = paired_spread(paired, suite, profile.unit_suite)
            rounds_used = len(anyp.unit_by_round if is_unit else pair.by_round)  # type: ignore[union-attr]
        else:
            q = 0.5 if used == "median" else 0.1
            ci = (ratio_ci(red, unit, quantile=q)
                  if unit is not None and not is_unit else None)
            value = red.median_ns if used == "median" else (red.p10_ns or red.median_ns)
            spread = (red.p10_spread_bp if used == "p10" and red.p10_spread_bp is not None
                      else red.spread_bp)
            rounds_used = len(red.round_medians)
        medians.append(SuiteMedian(cpu, backend, suite, value, red.capped,
                                   red.cap_factor, ci, red.n))
        if used == "paired":
            by_round = ({str(r): round(100 * profile.unit_vu / 100 * v, 1)
                         for r, v in pair.by_round.items()}  # type: ignore[union-attr]
                        if not is_unit else None)
        else:
            by_round = (
                {str(k): round(v, 1) for k, v in
                 vu_by_round(red, unit, profile.unit_vu, used).items()}
                if unit is not None and not is_unit else None
            )
        ref = pair if pair is not None else anyp
        extras[(cpu, backend, suite)] = {
            "statistic": statistic,
            "statistic_used": used,
            "statistic_text": STATISTIC_TEXT[used],
            "statistic_why": why,
            "estimate_ns": value,
            "median_ns": red.median_ns,
            "p10_ns": red.p10_ns,
            "n": red.n,
            "rounds": len(red.round_medians),
            "rounds_used": rounds_used,
            "round_medians_ns": [red.round_medians[r] for r in sorted(red.round_medians)],
            # The spread of what the estimate used (bp): round medians, round 10th
            # percentiles, or (paired) the per-round ratios / the unit's quiet speed.
            "round_spread_bp": round(spread, 1) if spread is not None else None,
            "spread_bp": round(red.spread_bp, 1),
            "p10_spread_bp": (round(red.p10_spread_bp, 1)
                              if red.p10_spread_bp is not None else None),
            "ratio_ci": list(ci) if ci else None,
            # Rounds (0-based, as the keys of vu_by_round) without enough quiet turns: for
            # the unit, rounds where it rarely ran at its quiet speed; for a suite, also
            # where the suite did not.
            "contended_rounds": (
                unit_quiet(unit)[2] if is_unit and unit is not None
                else list(ref.contended) if ref is not None else []),
            "quiet_turns": ({"quiet": ref.quiet_turns, "of": ref.turns}
                            if ref is not None and not is_unit else None),
            # Both rules side by side, whichever the verdict used: a busy machine shows
            # as the two disagreeing, a real change as both moving.
            "vu_estimate_median": (
                vu_estimate(red.median_ns, unit.median_ns, profile.unit_vu)
                if unit is not None else None
            ),
            "vu_estimate_p10": (
                vu_estimate(red.p10_ns, unit.p10_ns, profile.unit_vu)
                if unit is not None and red.p10_ns and unit.p10_ns else None
            ),
            "vu_estimate_paired": (
                vu_estimate(pair.ratio * pair.unit_quiet_ns, pair.unit_quiet_ns,
                            profile.unit_vu)
                if pair is not None and pair.by_round else (
                    profile.unit_vu if is_unit and anyp is not None else None)
            ),
            "vu_by_round": by_round,
        }
    return [(r, extras[(r.cpu, r.backend, r.suite)]) for r in coverage(profile, medians)]
