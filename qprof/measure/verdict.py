"""Verify-Unit verdict from measurements: coverage with confidence intervals."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from qprof.consensus import CoverageResult, Profile, SuiteMedian, coverage, vu_estimate
from qprof.measure.records import Measurement
from qprof.measure.reduce import ratio_ci, reduce_measurements, vu_by_round

STATISTICS = ("median", "p10", "auto")
# The seeds' bar for a steady run: ML-DSA round medians within 100 bp of each other.
STEADY_SPREAD_BP = 100.0


def choose_statistic(
    reduced: dict, cpu: int, backend: str, operation: str = "verify",
    max_spread_bp: float = STEADY_SPREAD_BP,
) -> tuple[str, str]:
    """(statistic, why) for ``statistic="auto"`` on one CPU and backend.

    The median rule holds while the ML-DSA rounds agree. On a shared host (a VM whose
    vCPU is now and then taken by a neighbour) samples come in two speeds and each
    short round's median lands on one or the other, so medians jump between rounds by
    thousands of bp while the 10th percentile, the speed when nothing else ran, stays
    put. Then the 10th percentile is the steadier estimate of the same cost, and the
    verdict says it used it.
    """
    spreads = [
        (red.spread_bp, red.p10_spread_bp)
        for (c, suite, b, op), red in reduced.items()
        if c == cpu and b == backend and op == operation and suite.startswith("ML-DSA")
    ]
    worst_median = max((m for m, _ in spreads), default=0.0)
    if worst_median <= max_spread_bp:
        return "median", f"ML-DSA rounds agree within {worst_median:.0f} bp"
    worst_p10 = max((p if p is not None else float("inf") for _, p in spreads), default=0.0)
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
    reduced = reduce_measurements(m for m in measurements if m.operation == operation)
    medians: list[SuiteMedian] = []
    extras: dict[tuple[int, str, str], dict[str, Any]] = {}
    for (cpu, suite, backend, _op), red in reduced.items():
        used, why = statistic, "asked for"
        if statistic == "auto":
            used, why = choose_statistic(reduced, cpu, backend, operation)
        q = 0.5 if used == "median" else 0.1
        unit = reduced.get((cpu, profile.unit_suite, backend, operation))
        ci = (ratio_ci(red, unit, quantile=q)
              if unit is not None and suite != profile.unit_suite else None)
        value = red.median_ns if used == "median" else (red.p10_ns or red.median_ns)
        medians.append(SuiteMedian(cpu, backend, suite, value, red.capped,
                                   red.cap_factor, ci, red.n))
        extras[(cpu, backend, suite)] = {
            "statistic": statistic,
            "statistic_used": used,
            "statistic_why": why,
            "median_ns": red.median_ns,
            "p10_ns": red.p10_ns,
            "n": red.n,
            "rounds": len(red.round_medians),
            "round_medians_ns": [red.round_medians[r] for r in sorted(red.round_medians)],
            "spread_bp": round(red.spread_bp, 1),
            "p10_spread_bp": (round(red.p10_spread_bp, 1)
                              if red.p10_spread_bp is not None else None),
            "ratio_ci": list(ci) if ci else None,
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
            "vu_by_round": (
                {str(k): round(v, 1) for k, v in vu_by_round(red, unit, profile.unit_vu).items()}
                if unit is not None and suite != profile.unit_suite else None
            ),
        }
    return [(r, extras[(r.cpu, r.backend, r.suite)]) for r in coverage(profile, medians)]
