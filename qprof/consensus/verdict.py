"""The coverage verdict: a profile's constants against :mod:`qprof.consensus.estimator`'s
estimates. Entry point :func:`evaluate` (records -> one :class:`CoverageResult` per CPU,
backend and suite of the profile); `qprof check`, the daemon, `qprof history`, the monitor
and the Markdown report all take their ✓/✗ from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from qprof.consensus.basis import Basis, basis_label, verdict_basis
from qprof.consensus.estimator import REPLICATES, SuiteEstimate, estimate
from qprof.consensus.profiles import Profile, ReferenceCore
from qprof.consensus.statistic import Statistic
from qprof.consensus.vu import block_signatures
from qprof.measure.records import Measurement


@dataclass(frozen=True)
class CoverageResult:
    """One suite of the profile on one CPU and backend: estimate against constant."""

    cpu: int
    suite: str
    backend: str
    operation: str
    statistic: Statistic  # what suite_time_ns and unit_time_ns are
    suite_time_ns: float
    unit_time_ns: float
    vu_estimate: int
    vu_constant: int
    # None: a comparison figure (a verifier no node runs alone): no verdict at all.
    covered: bool | None
    margin: int | None  # constant - estimate (negative: not covered); None as covered
    capped: bool | None
    cap_factor: float | None
    worst_block_signatures: int
    worst_block_ns: float
    estimate: SuiteEstimate
    basis: Basis = "node"  # see qprof.consensus.basis
    basis_label: str = ""
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

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CoverageResult:
        """Inverse of :meth:`to_dict` after a JSON round trip (lists, string keys)."""
        e = dict(data["estimate"])
        for key in ("ratio_ci", "vu_ci", "round_medians_ns", "contended_rounds"):
            if e.get(key) is not None:
                e[key] = tuple(e[key])
        if e.get("vu_by_round") is not None:
            e["vu_by_round"] = {int(k): v for k, v in e["vu_by_round"].items()}
        known = {f.name for f in fields(cls)}
        return cls(**{**{k: v for k, v in data.items() if k in known},
                      "estimate": SuiteEstimate(**e)})


def _confidence(constant: int, low: int | None, high: int | None) -> str | None:
    if low is None or high is None:
        return None
    # The verdict is sure when the whole interval lies on one side of the constant.
    if high <= constant or low > constant:
        return "high"
    return "uncertain"


def _verdict_text(r: CoverageResult) -> str:
    ci = ""
    if r.vu_ci_low is not None and r.vu_ci_high is not None:
        ci = f" (95 % CI {r.vu_ci_low}-{r.vu_ci_high})"
    if r.covered is None or r.margin is None:
        return f"estimate {r.vu_estimate}{ci}, constant {r.vu_constant}: {r.basis_label}"
    word = "covered" if r.covered else "NOT covered"
    if r.basis == "dual":
        word += " (dual enforce)"
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


def coverage(profile: Profile, estimates: Iterable[SuiteEstimate],
             reference: ReferenceCore | None = None) -> list[CoverageResult]:
    """One result per estimate of a suite the profile has a constant for, measured with
    the unit suite on the same CPU and backend (an estimate needs both)."""
    ref = reference if reference is not None else profile.reference_core()
    estimates = list(estimates)
    units = {(e.cpu, e.backend, e.operation): e for e in estimates if e.is_unit}
    results: list[CoverageResult] = []
    for e in estimates:
        if (e.suite not in profile.verify_units or e.vu_estimate is None
                or e.unit_time_ns is None):
            continue
        constant = profile.verify_units[e.suite]
        low, high = e.vu_ci if e.vu_ci is not None else (None, None)
        nsig = block_signatures(profile, e.suite)
        block = nsig * e.suite_time_ns
        ref_block = None
        if ref is not None and e.suite in ref.verify_median_ns:
            ref_block = nsig * ref.verify_median_ns[e.suite]
        basis = verdict_basis(profile, e.backend, e.operation)
        judged = basis != "comparison"
        # A cap seen on the unit's rounds skews the ratio as much as one on the suite's.
        unit = units.get((e.cpu, e.backend, e.operation), e)
        capped = e.capped if e.capped is not None else unit.capped
        cap_factor = e.cap_factor if e.cap_factor is not None else unit.cap_factor
        r = CoverageResult(
            cpu=e.cpu, suite=e.suite, backend=e.backend, operation=e.operation,
            statistic=e.statistic, suite_time_ns=e.suite_time_ns,
            unit_time_ns=e.unit_time_ns, vu_estimate=e.vu_estimate, vu_constant=constant,
            covered=e.vu_estimate <= constant if judged else None,
            margin=constant - e.vu_estimate if judged else None,
            capped=capped, cap_factor=cap_factor,
            worst_block_signatures=nsig, worst_block_ns=block, estimate=e,
            basis=basis, basis_label=basis_label(profile, e.backend, basis),
            reference_core=ref.name if ref is not None else None,
            reference_block_ns=ref_block,
            block_vs_reference=(block / ref_block) if ref_block else None,
            block_interval_fraction=(block / (profile.target_block_interval_s * 1e9)
                                     if profile.target_block_interval_s else None),
            vu_ci_low=low, vu_ci_high=high,
            confidence=_confidence(constant, low, high) if judged else None,
        )
        results.append(replace(r, verdict=_verdict_text(r)))
    order = {s: i for i, s in enumerate(profile.suites)}
    return sorted(results, key=lambda r: (r.cpu, r.backend, r.operation, order[r.suite]))


def evaluate(profile: Profile, measurements: Iterable[Measurement],
             operation: str = "verify", statistic: str = "auto",
             replicates: int = REPLICATES) -> list[CoverageResult]:
    """The verdict over ``measurements``: :func:`~qprof.consensus.estimator.estimate`
    with the profile's unit, then each constant against its estimate."""
    return coverage(profile, estimate(
        measurements, unit_suite=profile.unit_suite, unit_vu=profile.unit_vu,
        operation=operation, statistic=statistic, replicates=replicates))
