"""The judgement as JSON, the one shape check --json, history --json, trend --json,
export and the report's data carry: per suite the verdict's state and words, the figure
it stands on (the segment's or the run's), the run's own beside it, and the changes."""

from __future__ import annotations

from typing import Any

from qprof.consensus.judgement import Judgement, SuiteJudgement
from qprof.consensus.trend.report import change_dict, segment_dict
from qprof.consensus.verdict_types import WORDS, CoverageResult


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
