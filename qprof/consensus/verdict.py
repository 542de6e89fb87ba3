"""The coverage verdict: a profile's constants against :mod:`qprof.consensus.estimate.estimator`'s
estimates. Entry point :func:`evaluate` (records -> one :class:`CoverageResult` per CPU,
backend and suite of the profile); `qprof check`, the daemon, `qprof history`, the monitor
and the Markdown report all take their ✓/✗ from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from qprof.consensus.adversarial import (
    describe,
    for_estimate,
    load_factors,
    valid_factors,
)
from qprof.consensus.basis import basis_label, verdict_basis
from qprof.consensus.estimate.estimator import REPLICATES, SuiteEstimate, estimate
from qprof.consensus.functional import undecided_where_mismatched
from qprof.consensus.policy import CoreDesign, apply_policy
from qprof.consensus.profiles import Profile, ReferenceCore
from qprof.consensus.verdict_types import (
    WORDS,
    CoverageResult,
    Decision,
    contended_text,
)
from qprof.consensus.vu import block_signatures
from qprof.measure.records import Measurement

# The time bound's decision (BlockTimeVerdict.decision) in words, in every view.
TIME_WORDS = {"covered": "within", "not_covered": "EXCEEDED", "unsure": "unsure",
              "none": "no verdict"}
# What a user can do when the interval straddles the constant.
UNSURE_ADVICE = ("to decide, measure longer (a larger --time-limit), on a quieter host "
                 "(nothing else running on that core), or on another core")


def _decision(constant: int, estimate: int, low: int | None, high: int | None,
              judged: bool) -> Decision:
    if not judged:
        return "comparison"
    if low is None or high is None:  # no samples kept: the point estimate alone
        return "covered" if estimate <= constant else "not_covered"
    if high <= constant:
        return "covered"
    if low > constant:
        return "not_covered"
    return "unsure"


def _verdict_text(r: CoverageResult) -> str:
    """The verdict in words that follow from the estimate, its interval and the margin,
    the word first (:data:`WORDS`)."""
    low, high, c = r.vu_ci_low, r.vu_ci_high, r.vu_constant
    ci = f" (95 % CI {low}-{high})" if low is not None and high is not None else ""
    head = f"estimate {r.vu_estimate}{ci}"
    dual = " (dual enforce)" if r.basis == "dual" else ""
    if r.decision == "comparison":
        return f"{WORDS['comparison']}: {head}, constant {c}: {r.basis_label}"
    if r.estimate.is_unit:
        return f"estimate {r.vu_estimate}: the unit suite ({c} by definition)"
    if r.decision == "no_estimate":
        return (f"{WORDS['no_estimate']}{dual}: {contended_text(r.estimate)}; "
                f"{r.estimate.undecided}")
    if r.decision == "unsure":
        return (f"unsure{dual}: {head} straddles the constant {c}; {UNSURE_ADVICE}")
    if r.decision == "covered":
        sure = (f": the whole interval is at or below the constant ({c - high} VU to spare "
                "at its top)" if high is not None else
                " (no interval: too few samples to say how sure)")
        return f"covered{dual}: {head}, constant {c}, margin {c - r.vu_estimate}{sure}"
    sure = (f": even the interval's low end exceeds it by {low - c}" if low is not None
            else " (no interval: too few samples to say how sure)")
    return (f"NOT covered{dual}: {head} exceeds the constant {c} by "
            f"{r.vu_estimate - c}{sure}")


def coverage(profile: Profile, estimates: Iterable[SuiteEstimate],
             reference: ReferenceCore | None = None,
             cores: Mapping[int, CoreDesign] | None = None) -> list[CoverageResult]:
    """One result per estimate of a suite the profile has a constant for, measured with
    the unit suite on the same CPU and backend (an estimate needs both), with the
    profile's policy on it (``qprof.consensus.policy``; ``cores`` says what each CPU is:
    a CPU it does not name is held to the ratio)."""
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
        decision = _decision(constant, e.vu_estimate, low, high, judged)
        if e.undecided and judged and not e.is_unit:
            decision = "no_estimate"  # too few quiet data: the median's figures decide nothing
        # A cap seen on the unit's rounds skews the ratio as much as one on the suite's.
        unit = units.get((e.cpu, e.backend, e.operation), e)
        capped = e.capped if e.capped is not None else unit.capped
        cap_factor = e.cap_factor if e.cap_factor is not None else unit.cap_factor
        r = CoverageResult(
            cpu=e.cpu, suite=e.suite, backend=e.backend, operation=e.operation,
            statistic=e.statistic, suite_time_ns=e.suite_time_ns,
            unit_time_ns=e.unit_time_ns, vu_estimate=e.vu_estimate, vu_constant=constant,
            decision=decision,
            covered={"covered": True, "not_covered": False}.get(decision),
            margin=(constant - e.vu_estimate
                    if judged and decision != "no_estimate" else None),
            capped=capped, cap_factor=cap_factor,
            worst_block_signatures=nsig, worst_block_ns=block, estimate=e,
            basis=basis, basis_label=basis_label(profile, e.backend, basis),
            reference_core=ref.name if ref is not None else None,
            reference_block_ns=ref_block,
            block_vs_reference=(block / ref_block) if ref_block else None,
            block_interval_fraction=(block / (profile.target_block_interval_s * 1e9)
                                     if profile.target_block_interval_s else None),
            vu_ci_low=low, vu_ci_high=high,
            confidence=(None if not judged or low is None or decision == "no_estimate"
                        else "uncertain" if decision == "unsure" else "high"),
        )
        results.append(replace(r, verdict=_verdict_text(r)))
    order = {s: i for i, s in enumerate(profile.suites)}
    results = [_with_worst_signature(profile, r) for r in results]
    results = apply_policy(profile, results, cores)
    return sorted(results, key=lambda r: (r.cpu, r.backend, r.operation, order[r.suite]))


def _with_worst_signature(profile: Profile, r: CoverageResult) -> CoverageResult:
    """The worst-signature figure beside the median one; when the profile holds its
    constants to it, the decision is that figure's against the constant."""
    binds = profile.constants_held_to == "worst_signature"
    # Held to the worst signature, a block's constants cover the worst *valid* one (ground,
    # or the pool's costliest): a crafted invalid signature makes the block invalid; its
    # cost is the invalid-block figure (qprof.consensus.headroom), not a constant's.
    factors = valid_factors(load_factors(r.suite)) if binds else None
    w = for_estimate(r.suite, profile.unit_vu, r.estimate.ratio, r.estimate.ratio_ci,
                     factors=factors)
    r = replace(r, worst_signature=w, held_to=profile.constants_held_to)
    if (w is None or not binds or r.decision in ("comparison", "no_estimate")
            or r.estimate.is_unit):
        return r
    decision = _decision(r.vu_constant, w.vu, w.vu_ci[0], w.vu_ci[1], True)
    return replace(r, decision=decision,
                   covered={"covered": True, "not_covered": False}.get(decision),
                   margin=r.vu_constant - w.vu,
                   confidence="uncertain" if decision == "unsure" else "high",
                   verdict=describe(w, r.vu_constant, binds=True))


def evaluate(profile: Profile, measurements: Iterable[Measurement],
             operation: str = "verify", statistic: str = "auto",
             replicates: int = REPLICATES,
             cores: Mapping[int, CoreDesign] | None = None) -> list[CoverageResult]:
    """The verdict over ``measurements``: :func:`~qprof.consensus.estimate.estimator.estimate`
    with the profile's unit, then each constant against its estimate (never decided where
    the backend failed its functional check: qprof.consensus.functional)."""

    measurements = list(measurements)
    return coverage(profile, undecided_where_mismatched(estimate(
        measurements, unit_suite=profile.unit_suite, unit_vu=profile.unit_vu,
        operation=operation, statistic=statistic, replicates=replicates), measurements,
        profile.unit_suite), cores=cores)
