"""What `qprof check --json` shows of the chain's rule (``qprof.consensus.policy``): where
each ratio binds, each core's worst-case block against the reference core, and the
decision that counts; and the CPUs over their time bound, for the text's verdict line
(``qprof.commands.check_text`` words the rest). The decisions are consensus's."""

from __future__ import annotations

from qprof.consensus.verdict_types import BlockTimeVerdict, CoverageResult
from qprof.measure.units import fmt_ns


def block_time_json(bt: BlockTimeVerdict | None) -> dict[str, object] | None:
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


def policy_json(r: CoverageResult) -> dict[str, object]:
    """The policy keys of one `qprof check --json` result row."""
    bt = r.block_time
    return {
        "ratio_binds": r.ratio_binds, "ratio_binding": r.ratio_binding_why,
        "binding_reference": r.binding_reference,
        "block_time_covered": r.block_time_covered,
        "block_time_ns": bt.time_ns if bt else None,
        "block_time_reference_ns": bt.reference_ns if bt else None,
        "block_time_reference_core": bt.reference_core if bt else None,
        "worst_block": block_time_json(bt),
        "policy_decision": r.policy_decision,
    }


def over_time(results: list[CoverageResult]) -> str:
    seen = {}
    for r in results:
        if r.block_time_covered is False and r.block_time is not None:
            seen[(r.cpu, r.backend)] = r.block_time
    return ", ".join(f"CPU {cpu} ({fmt_ns(bt.time_ns)} > {fmt_ns(bt.reference_ns or 0)} on "
                     f"{bt.reference_core})" for (cpu, _), bt in sorted(seen.items()))
