"""Verify Units, coverage and worst-case blocks.

Estimate = ceil(100 x median(suite) / median(unit)) with both medians from the same CPU,
backend and run. The division is done on exact fractions of the medians' decimal values:
with floats, 100 x 166.6 / 59.0 or an exact 2.9 x 100 can land a hair above an integer
and ceil would add a unit that the measurement does not justify.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

from qprof.consensus.profiles import Profile, ReferenceCore


def _exact(x: float | int | Fraction) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int):
        return Fraction(x)
    if not math.isfinite(x):
        raise ValueError(f"not a finite number: {x!r}")
    # repr gives the shortest decimal that round-trips: the value the measurement printed.
    return Fraction(repr(float(x)))


def vu_ratio(median_suite_ns: float, median_unit_ns: float, unit_vu: int = 100) -> Fraction:
    if median_unit_ns <= 0 or median_suite_ns <= 0:
        raise ValueError("medians must be positive")
    return Fraction(unit_vu) * _exact(median_suite_ns) / _exact(median_unit_ns)


def vu_estimate(median_suite_ns: float, median_unit_ns: float, unit_vu: int = 100) -> int:
    """ceil(unit_vu x suite / unit), exact."""
    return math.ceil(vu_ratio(median_suite_ns, median_unit_ns, unit_vu))


def block_signatures(profile: Profile, suite: str) -> int:
    """How many signatures of one suite fit in a block: floor(MAX_VU / constant)."""
    return profile.max_block_verify_units // profile.verify_units[suite]


def worst_block_ns(profile: Profile, suite: str, median_ns: float) -> float:
    return block_signatures(profile, suite) * float(median_ns)


@dataclass
class SuiteMedian:
    """Input of :func:`coverage`: one suite's verify median on one CPU and backend."""

    cpu: int
    backend: str
    suite: str
    median_ns: float
    capped: bool | None = None
    cap_factor: float | None = None
    # Confidence interval of median(suite)/median(unit), when the measurement has one.
    ratio_ci: tuple[float, float] | None = None
    samples: int | None = None


@dataclass
class CoverageResult:
    cpu: int
    suite: str
    backend: str
    median_ns: float
    unit_median_ns: float
    vu_estimate: int
    vu_constant: int
    covered: bool
    margin: int  # constant - estimate (negative: not covered)
    capped: bool | None
    cap_factor: float | None
    worst_block_signatures: int
    worst_block_ns: float
    reference_core: str | None = None
    reference_block_ns: float | None = None  # the same block on the profile's reference core
    block_vs_reference: float | None = None  # worst_block_ns / reference_block_ns
    block_interval_fraction: float | None = None  # worst block / target block interval
    vu_ci_low: int | None = None
    vu_ci_high: int | None = None
    confidence: str | None = None  # "high" | "uncertain"
    verdict: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _confidence(constant: int, low: int | None, high: int | None) -> str | None:
    if low is None or high is None:
        return None
    # The verdict is sure when the whole interval lies on one side of the constant.
    if high <= constant or low > constant:
        return "high"
    return "uncertain"


def _verdict(r: CoverageResult) -> str:
    word = "covered" if r.covered else "NOT covered"
    ci = ""
    if r.vu_ci_low is not None and r.vu_ci_high is not None:
        ci = f" (95 % CI {r.vu_ci_low}-{r.vu_ci_high})"
    if r.covered:
        room = f"margin {r.margin}"
    else:
        room = f"exceeds the constant {r.vu_constant} by {-r.margin}"
    sure = ""
    if r.confidence == "high":
        sure = " with high confidence"
    elif r.confidence == "uncertain":
        sure = ", but the interval straddles the constant: measure longer"
    return f"estimate {r.vu_estimate}{ci}, {room}: {word}{sure}"


def coverage(
    profile: Profile,
    medians: Iterable[SuiteMedian],
    reference: ReferenceCore | None = None,
) -> list[CoverageResult]:
    """One result per (cpu, backend, suite of the profile) that has both medians.

    Suites without a constant in the profile, and groups without the unit suite, give no
    result (an estimate needs the unit on the same CPU and backend).
    """
    ref = reference if reference is not None else profile.reference_core()
    groups: dict[tuple[int, str], dict[str, SuiteMedian]] = {}
    for m in medians:
        groups.setdefault((m.cpu, m.backend), {})[m.suite] = m
    results: list[CoverageResult] = []
    for (cpu, backend), by_suite in sorted(groups.items()):
        unit = by_suite.get(profile.unit_suite)
        if unit is None:
            continue
        for suite in profile.suites:
            found = by_suite.get(suite)
            if found is None:
                continue
            m = found
            constant = profile.verify_units[suite]
            estimate = (
                profile.unit_vu
                if suite == profile.unit_suite
                else vu_estimate(m.median_ns, unit.median_ns, profile.unit_vu)
            )
            low = high = None
            if suite == profile.unit_suite:
                low = high = profile.unit_vu
            elif m.ratio_ci is not None:
                low = math.ceil(profile.unit_vu * _exact(m.ratio_ci[0]))
                high = math.ceil(profile.unit_vu * _exact(m.ratio_ci[1]))
            nsig = block_signatures(profile, suite)
            block = nsig * float(m.median_ns)
            ref_block = None
            if ref is not None and suite in ref.verify_median_ns:
                ref_block = nsig * ref.verify_median_ns[suite]
            interval = (
                block / (profile.target_block_interval_s * 1e9)
                if profile.target_block_interval_s
                else None
            )
            capped = m.capped if m.capped is not None else unit.capped
            factor = m.cap_factor if m.cap_factor is not None else unit.cap_factor
            r = CoverageResult(
                cpu=cpu,
                suite=suite,
                backend=backend,
                median_ns=float(m.median_ns),
                unit_median_ns=float(unit.median_ns),
                vu_estimate=estimate,
                vu_constant=constant,
                covered=estimate <= constant,
                margin=constant - estimate,
                capped=capped,
                cap_factor=factor,
                worst_block_signatures=nsig,
                worst_block_ns=block,
                reference_core=ref.name if ref is not None else None,
                reference_block_ns=ref_block,
                block_vs_reference=(block / ref_block) if ref_block else None,
                block_interval_fraction=interval,
                vu_ci_low=low,
                vu_ci_high=high,
                confidence=_confidence(constant, low, high),
            )
            r.verdict = _verdict(r)
            results.append(r)
    return results
