"""Verify-Unit verdict from measurements: coverage with confidence intervals."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from qprof.consensus import CoverageResult, Profile, SuiteMedian, coverage, vu_estimate
from qprof.measure.records import Measurement
from qprof.measure.reduce import ratio_ci, reduce_measurements, vu_by_round

STATISTICS = ("median", "p10")


def evaluate(
    profile: Profile, measurements: Iterable[Measurement], operation: str = "verify",
    statistic: str = "median",
) -> list[tuple[CoverageResult, dict[str, Any]]]:
    """(result, extras) per (cpu, backend, suite); extras: n, rounds, spread_bp, ratio CI.

    ``statistic="median"`` is the rule (seeds, profiles). ``"p10"`` compares 10th
    percentiles instead: on a shared machine samples mix quiet and contended times and
    the median follows the mix; the 10th percentile stays near the quiet speed.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose from {', '.join(STATISTICS)}")
    q = 0.5 if statistic == "median" else 0.1
    reduced = reduce_measurements(m for m in measurements if m.operation == operation)
    medians: list[SuiteMedian] = []
    extras: dict[tuple[int, str, str], dict[str, Any]] = {}
    for (cpu, suite, backend, _op), red in reduced.items():
        unit = reduced.get((cpu, profile.unit_suite, backend, operation))
        ci = (ratio_ci(red, unit, quantile=q)
              if unit is not None and suite != profile.unit_suite else None)
        value = red.median_ns if statistic == "median" else (red.p10_ns or red.median_ns)
        medians.append(SuiteMedian(cpu, backend, suite, value, red.capped,
                                   red.cap_factor, ci, red.n))
        extras[(cpu, backend, suite)] = {
            "statistic": statistic,
            "median_ns": red.median_ns,
            "p10_ns": red.p10_ns,
            "n": red.n,
            "rounds": len(red.round_medians),
            "round_medians_ns": [red.round_medians[r] for r in sorted(red.round_medians)],
            "spread_bp": round(red.spread_bp, 1),
            "p10_spread_bp": (round(red.p10_spread_bp, 1)
                              if red.p10_spread_bp is not None else None),
            "ratio_ci": list(ci) if ci else None,
            # Not the verdict (that is the median rule): what the estimate would be from
            # the quiet-machine speed, to tell a busy machine from a real change.
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
