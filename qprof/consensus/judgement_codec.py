"""The judgement as JSON, the one shape check --json, history --json, trend --json,
export and the report's data carry: per suite the verdict's state and words, the figure
it stands on (the segment's or the run's), the run's own beside it, and the changes; and
one verdict row (:func:`coverage_json`), check's ``results`` and history's ``coverage``."""

from __future__ import annotations

from typing import Any

from qprof.consensus.estimate.statistic import STATISTIC_TEXT
from qprof.consensus.judgement import Judgement, SuiteJudgement
from qprof.consensus.trend.report import change_dict, segment_dict
from qprof.consensus.verdict_types import WORDS, BlockTimeVerdict, CoverageResult


def _figure(r: CoverageResult) -> dict[str, Any]:
    return {"vu_estimate": r.vu_estimate, "vu_ci_95": [r.vu_ci_low, r.vu_ci_high],
            "state": r.state, "words": WORDS[r.state], "headline": r.headline,
            "decision": r.decision, "policy_decision": r.policy_decision}


def suite_json(s: SuiteJudgement, unit_vu: int) -> dict[str, Any]:
    v = s.verdict
    w = v.worst_signature
    return {
        "cpu": v.cpu, "suite": v.suite, "backend": v.backend, "operation": v.operation,
        "vu_constant": v.vu_constant, **_figure(v),
        "stands_on": "segment" if s.segment is not None else "run",
        "segment": None if s.segment is None else {
            **segment_dict(s.segment, unit_vu), "text": s.segment_text(unit_vu)},
        "series_runs": s.series_runs,
        "run": _figure(s.run),
        "changes": [change_dict(c, unit_vu) for c in s.changes],
        "worst_signature": None if w is None else {
            "vu": w.vu, "vu_ci_95": list(w.vu_ci), "held_to": v.held_to},
        "ratio_binds": v.ratio_binds,
    }


def judgement_json(j: Judgement, unit_vu: int) -> dict[str, Any]:
    return {"profile": j.profile, "decision": j.decision,
            "suites": [suite_json(s, unit_vu) for s in j.suites]}


def block_time_json(bt: BlockTimeVerdict | None) -> dict[str, Any] | None:
    """A core's worst-case block against its time bound."""
    if bt is None:
        return None
    w = bt.worst
    return {
        "covered": bt.covered, "decision": bt.decision, "time_ns": bt.time_ns,
        "time_range_ns": list(bt.time_range_ns) if bt.time_range_ns else None,
        "reference_core": bt.reference_core, "reference_ns": bt.reference_ns,
        "vs_reference": bt.vs_reference, "max_vs_reference": bt.max_vs_reference,
        "interval_fraction": bt.interval_fraction,
        "max_interval_fraction": bt.max_interval_fraction,
        "composition": {s: n for s, n in w.composition}, "block": w.text(),
        "binding": list(w.binding), "verify_units": w.verify_units,
        "max_verify_units": w.max_verify_units, "auth_bytes": w.auth_bytes,
        "max_auth_bytes": w.max_auth_bytes, "unsized": list(w.unsized),
        "left_out": list(w.left_out), "why": bt.why,
    }


def coverage_json(r: CoverageResult, asked: str | None = None) -> dict[str, Any]:
    """One verdict row (keys kept across versions; new ones added). ``asked``: the
    statistic the user asked for (check's --statistic), else the one used."""
    e, bt, w = r.estimate, r.block_time, r.worst_signature
    return {
        "cpu": r.cpu, "suite": r.suite, "backend": r.backend,
        "vu_estimate": r.vu_estimate, "vu_constant": r.vu_constant, "covered": r.covered,
        "margin": r.margin, "vu_ci_95": [r.vu_ci_low, r.vu_ci_high],
        "confidence": r.confidence, "decision": r.decision,
        "basis": r.basis, "basis_label": r.basis_label,
        "capped": r.capped, "cap_factor": r.cap_factor,
        "worst_block_signatures": r.worst_block_signatures,
        "worst_block_ns": r.worst_block_ns, "reference_block_ns": r.reference_block_ns,
        "verdict": r.verdict,
        # The row's word (qprof.consensus.verdict.WORDS) and its one-line verdict.
        "state": r.state, "headline": r.headline,
        "statistic": asked or r.statistic, "statistic_used": r.statistic,
        "statistic_text": STATISTIC_TEXT[r.statistic], "statistic_why": e.statistic_why,
        # What the estimate compared, by that statistic: the suite's and the unit's time.
        "estimate_ns": r.suite_time_ns, "unit_estimate_ns": r.unit_time_ns,
        "ratio": e.ratio,
        "median_ns": e.median_ns, "p10_ns": e.p10_ns, "n": e.n, "rounds": e.rounds,
        "rounds_used": e.rounds_used, "round_medians_ns": list(e.round_medians_ns),
        "round_spread_bp": (round(e.round_spread_bp, 1)
                            if e.round_spread_bp is not None else None),
        "spread_bp": round(e.spread_bp, 1),
        "p10_spread_bp": round(e.p10_spread_bp, 1) if e.p10_spread_bp is not None else None,
        "ratio_ci": list(e.ratio_ci) if e.ratio_ci else None,
        "contended_rounds": list(e.contended_rounds),
        "quiet_turns": ({"quiet": e.quiet_turns, "of": e.turns}
                        if e.quiet_turns is not None else None),
        "vu_estimate_median": e.vu_by_statistic.get("median"),
        "vu_estimate_p10": e.vu_by_statistic.get("p10"),
        "vu_estimate_paired": e.vu_by_statistic.get("paired"),
        "vu_by_round": ({str(k): v for k, v in e.vu_by_round.items()}
                        if e.vu_by_round is not None else None),
        "estimate_from_ns": r.suite_time_ns,
        # Why this estimate decides nothing (too few quiet data; "decision" is
        # "no_estimate").
        "undecided": e.undecided,
        "contended_share": (round(e.contended_share, 3)
                            if e.contended_share is not None else None),
        "pool_signatures": e.pool_signatures,
        "pool_held": e.pool_held,
        # The chain's rule (qprof.consensus.policy).
        "ratio_binds": r.ratio_binds, "ratio_binding": r.ratio_binding_why,
        "binding_reference": r.binding_reference,
        "block_time_covered": r.block_time_covered,
        "block_time_ns": bt.time_ns if bt else None,
        "block_time_reference_ns": bt.reference_ns if bt else None,
        "block_time_reference_core": bt.reference_core if bt else None,
        "worst_block": block_time_json(bt),
        "policy_decision": r.policy_decision,
        # The worst signature an adversary can bring (qprof.consensus.adversarial).
        "vu_worst_signature": w.vu if w else None,
        "worst_signature": w.to_dict() if w else None,
        "constants_held_to": r.held_to,
    }
