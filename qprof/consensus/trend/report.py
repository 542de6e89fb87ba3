"""The trend as data for people and programs: `qprof trend --json`'s shape (per CPU,
backend and suite: ``segments`` and ``changes``, estimates in Verify Units as in
`qprof check --json`) and the one-line texts every view shows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from qprof.consensus.trend.model import (
    Alarm,
    Change,
    FleetChange,
    SegmentEstimate,
    SeriesTrend,
    SuiteTrend,
)
from qprof.consensus.trend.verdict import segment_vu


def segment_dict(seg: SegmentEstimate, unit_vu: int) -> dict[str, Any]:
    vu, vu_ci = segment_vu(seg, unit_vu)
    return {"first_run": seg.first_run, "last_run": seg.last_run, "runs": seg.runs,
            "gaps": seg.gaps, "estimate": vu, "ci_95": list(vu_ci), "ratio": seg.ratio,
            "ratio_ci_95": list(seg.ratio_ci), "half_width_bp": round(seg.half_width_bp, 2),
            "within_bp": round(seg.within_bp, 2), "between_bp": round(seg.between_bp, 2),
            "autocorr": round(seg.autocorr, 3), "df": round(seg.df, 1), "clipped": seg.clipped,
            "wander_bp": None if seg.wander_bp is None else round(seg.wander_bp, 2),
            "wander_from_runs": seg.wander_from}


def change_dict(c: Change, unit_vu: int) -> dict[str, Any]:
    return {"run_index": c.run_index, "run_id": c.run_id, "started_at": c.started_at,
            "before": unit_vu * c.before, "after": unit_vu * c.after,
            "change_bp": round(c.change_bp, 1),
            "ci_95_bp": [round(c.ci_95_bp[0], 1), round(c.ci_95_bp[1], 1)],
            "cause": c.cause, "what_changed": list(c.what_changed),
            "found_on": None if c.found_on is None else {
                "reading": c.found_on.reading, "change_bp": round(c.found_on.change_bp, 1),
                "ci_95_bp": [round(x, 1) for x in c.found_on.ci_95_bp]}}


def trend_dict(t: SeriesTrend, unit_vu: int) -> dict[str, Any]:
    return {
        "node": t.key.node, "cpu": t.key.cpu, "cpu_model": t.key.cpu_model,
        "backend": t.key.backend, "operation": t.key.operation, "mode": t.key.mode,
        "runs": len(t.runs),
        "run_ids": [r.run_id for r in t.runs],
        "known_changes": [{"run_index": k.run_index, "what": list(k.what)} for k in t.known],
        "suites": {
            s.suite: {
                "segments": [segment_dict(g, unit_vu) for g in s.segments],
                "changes": [change_dict(c, unit_vu) for c in s.changes],
                "gaps": s.gaps,
                "runs_needed": s.runs_needed,
                "alarm": None if s.alarm is None else {
                    "run_index": s.alarm.run_index, "direction": s.alarm.direction,
                    "statistic": round(s.alarm.statistic, 2),
                    "threshold": round(s.alarm.threshold, 2)},
            } for s in t.suites},
    }


def fleet_dict(f: FleetChange, unit_vu: int) -> dict[str, Any]:
    return {"suite": f.suite, "started_at": f.started_at, "nodes": list(f.nodes),
            "fleet_wide": f.fleet_wide,
            "changes": [{"node": k.node, "cpu": k.cpu, "backend": k.backend,
                         **change_dict(c, unit_vu)}
                        for k, c in zip(f.series, f.changes, strict=True)]}


def when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M")


FACTOR = 1.5  # a step this many times up or down reads as a factor, not in bp


def step_words(change_bp: float, ci_95_bp: tuple[float, float] | None = None) -> str:
    """A step as read: "+94 bp, 95 % +70 to +117" under a factor of FACTOR, else as a
    factor and a percentage, "÷3.9, -74 %, 95 % -75 to -73 %"."""
    f = 1 + change_bp / 1e4
    if 1 / FACTOR < f < FACTOR:
        ci = "" if ci_95_bp is None else f", 95 % {ci_95_bp[0]:+.0f} to {ci_95_bp[1]:+.0f}"
        return f"{change_bp:+.0f} bp{ci}"
    factor = f"×{f:.2g}" if f >= 1 else f"÷{1 / f:.2g}"
    ci = ("" if ci_95_bp is None
          else f", 95 % {ci_95_bp[0] / 100:+.0f} to {ci_95_bp[1] / 100:+.0f} %")
    return f"{factor}, {change_bp / 100:+.0f} %{ci}"


def change_text(c: Change, unit_vu: int) -> str:
    """One line: the suite's step, its size with interval, and what changed (runs counted
    from 1, as people count them)."""
    why = "; ".join(c.what_changed) or "nothing else recorded changed"
    return (f"{c.suite}: {unit_vu * c.before:.1f} -> {unit_vu * c.after:.1f} VU "
            f"({step_words(c.change_bp, c.ci_95_bp)}) at run {c.run_index + 1} "
            f"({when(c.started_at)}, {c.cause}): {why}")


def waiting_text(st: SuiteTrend) -> str | None:
    """Said of a suite with no change while too few decided runs can show one."""
    if st.changes or st.runs_needed <= 0:
        return None
    n = st.runs_needed
    return (f"no change found; {n} more decided run{'s are' if n != 1 else ' is'} needed "
            "before a change can be found")


def segment_text(seg: SegmentEstimate, unit_vu: int) -> str:
    vu, (lo, hi) = segment_vu(seg, unit_vu)
    gaps = f", {seg.gaps} undecided" if seg.gaps else ""
    wild = f", {seg.clipped} wild pulled in" if seg.clipped else ""
    borrowed = (f", the wander of {seg.wander_from} earlier runs" if seg.wander_from
                else "")
    return (f"{vu} (95 % {lo}-{hi}) over {seg.runs} run{'s' if seg.runs != 1 else ''}"
            f"{gaps}{wild}{borrowed}, ratio {unit_vu * seg.ratio:.2f} "
            f"+-{seg.half_width_bp:.0f} bp")


def alarm_text(a: Alarm) -> str:
    """The detector's pending alarm: which way, since which run, how far past its limit."""
    way = "rising" if a.direction == "up" else "falling"
    return (f"{way} at run {a.run_index + 1} (CUSUM {a.statistic:.1f} past its limit "
            f"{a.threshold:.1f}), not yet confirmed or dismissed by the runs after it")


def fleet_text(f: FleetChange) -> str:
    """One line: a change of one suite on several nodes at once (a rollout), or on one
    node alone (a neighbour, its hardware), with each node's step."""
    steps = ", ".join(f"{k.node} cpu {k.cpu} {step_words(c.change_bp)}"
                      for k, c in zip(f.series, f.changes, strict=True))
    head = (f"fleet-wide change on {len(f.nodes)} nodes" if f.fleet_wide
            else f"node {f.nodes[0]} alone")
    return f"{head}: {f.suite} from {when(f.started_at)} ({steps})"
