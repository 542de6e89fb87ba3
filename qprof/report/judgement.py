"""The judgement in the reports: the runs given (and the stores' kept runs) through
:func:`qprof.consensus.judgement.judge`, computed once for the Markdown and the HTML
report, and its lines: the overall verdict first, then one line per suite in the
verdict's words, with the figure it stands on and the newest run's beside it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from qprof.consensus import Profile
from qprof.consensus.judgement import Judgement, SuiteJudgement, judge
from qprof.consensus.policy import cores_from_records
from qprof.consensus.trend.model import RunPoint, SeriesKey
from qprof.consensus.verdict_types import WORDS, CoverageResult
from qprof.measure.jsonl import RunData
from qprof.measure.records import Record
from qprof.report.trend import unit_of

# Runs' records and the unit suite -> each run's points, in order.
PointsOf = Callable[[Sequence[Sequence[Record]], str], list[list[tuple[SeriesKey, RunPoint]]]]

OVERALL = {"covered": "covered: every binding verdict holds",
           "not_covered": "NOT covered: a binding verdict is broken",
           "unsure": "unsure: an interval straddles a binding constant",
           "no_estimate": "no reliable estimate: the host was too contended",
           "comparison": "none: comparison figures only"}


def report_judgement(runs: Sequence[RunData], profile: Profile | None,
                     kept: Sequence[tuple[SeriesKey, RunPoint]], points_of: PointsOf
                     ) -> Judgement:
    """The judgement of the newest run among ``runs`` with every run's points (and the
    stores' ``kept`` points) behind it; ``points_of`` computes runs' points
    (qprof.service.run_files's, side by side)."""
    unit, _vu = unit_of(profile)
    # A run's points only where a store did not keep them, and none for one run alone:
    # its own estimates are its verdict (as `check --from` without a store).
    have = {p.run_id for _k, p in kept}
    todo = [run for run in runs if run.meta is None or run.meta.run_id not in have]
    points: list[tuple[SeriesKey, RunPoint]] = []
    if kept or len(runs) > 1:
        computed = points_of([run.records for run in todo], unit)
        points = [*kept, *(p for one in computed for p in one)]
    return judge([m for run in runs for m in run.measurements], profile, points,
                 cores=cores_from_records(r for run in runs for r in run.records))


def _figure(r: CoverageResult) -> str:
    if r.decision == "no_estimate":
        return "no figure"
    ci = f" ({r.vu_ci_low}-{r.vu_ci_high})" if r.vu_ci_low is not None else ""
    return f"{r.vu_estimate}{ci}"


def suite_line(s: SuiteJudgement, unit_vu: int) -> str:
    v = s.verdict
    where = (s.segment_text(unit_vu) if s.segment is not None and s.segment.runs > 1
             else "the newest run alone")
    changes = f"; {len(s.changes)} change{'s' * (len(s.changes) != 1)}" if s.changes else ""
    return (f"CPU {v.cpu} {v.suite} ({v.backend}): {WORDS[v.state]}: {_figure(v)}, "
            f"constant {v.vu_constant}; stands on {where}; newest run {_figure(s.run)}"
            f"{changes}")


def judgement_lines(j: Judgement, profile: Profile | None) -> list[str]:
    """The overall verdict, then one line per suite (the unit's left out)."""
    if profile is None or not j.suites:
        return []
    _unit, unit_vu = unit_of(profile)
    return [f"Verdict ({profile.name}): {OVERALL[j.decision]}.",
            *(suite_line(s, unit_vu) for s in j.suites if not s.run.estimate.is_unit)]
