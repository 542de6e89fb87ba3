"""The ratio over time in the reports (issue 29): when a report is given several runs of
one series (one machine's CPU, backend and mode), their estimates combined into segments
of comparable runs, with the change points between them sized and explained
(:mod:`qprof.consensus.trend`, the same analysis as `qprof trend`).

:func:`report_trends` computes it once for the Markdown and the HTML report;
:func:`trend_section` is the Markdown section (the HTML one is
:mod:`qprof.report.html_trend`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from qprof.consensus import Profile
from qprof.consensus.trend.analysis import analyze, group
from qprof.consensus.trend.from_records import run_points
from qprof.consensus.trend.model import SeriesTrend
from qprof.consensus.trend.report import change_text, segment_text
from qprof.measure.jsonl import RunData
from qprof.measure.markdown import md_code, md_table, md_text

DEFAULT_UNIT = ("ML-DSA-44", 100)  # a report without a profile: the estimator's default

INTRO = ("Runs of one series (the same machine's CPU, backend and mode), in order of "
         "start, combined into segments: every comparable run since the last change point "
         "(a change of liboqs, its build, numba, qprof's kernels, the kernel or the "
         "microcode, or a step the detector found and confirmed). A segment's 95 % "
         "interval holds each run's own error, the wander between runs and their "
         "autocorrelation; an undecided run (too contended to estimate) is a gap, counted, "
         "never an estimate. Each change is sized with its interval and said with what "
         "else changed between the runs either side.")


def unit_of(profile: Profile | None) -> tuple[str, int]:
    return (profile.unit_suite, profile.unit_vu) if profile is not None else DEFAULT_UNIT


def report_trends(runs: Sequence[RunData], profile: Profile | None) -> list[SeriesTrend]:
    """The series of at least two runs among ``runs``, analysed (nothing is computed for
    a single run: its report has no trend)."""
    if len(runs) < 2:
        return []

    unit, _vu = unit_of(profile)
    points = [p for run in runs for p in run_points(run.records, unit_suite=unit)]
    return analyze([s for s in group(points) if len(s.runs) >= 2])


def run_names(runs: Sequence[RunData]) -> dict[str, str]:
    """run id -> the file it was read from."""
    return {r.meta.run_id: Path(r.path).name for r in runs if r.meta is not None}


def series_title(t: SeriesTrend) -> str:
    k = t.key
    model = f" ({k.cpu_model})" if k.cpu_model else ""
    return f"{k.node} CPU {k.cpu}{model}, {k.backend}, {k.mode}: {len(t.runs)} runs"


def run_order(t: SeriesTrend, names: dict[str, str]) -> str:
    """'0 run-1.jsonl (2026-12-02 04:38 UTC), 1 ...': which run each index is."""
    return ", ".join(
        f"{i} {names.get(r.run_id, r.run_id)} "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(r.started_at))})"
        for i, r in enumerate(t.runs))


def trend_section(trends: Sequence[SeriesTrend], profile: Profile | None,
                  runs: Sequence[RunData]) -> list[str]:
    """The Markdown section; no lines when no series has two runs."""
    if not trends:
        return []

    _unit, unit_vu = unit_of(profile)
    names = run_names(runs)
    lines = ["## The ratio over time", "", md_text(INTRO), ""]
    for t in trends:
        lines += [f"### {md_text(series_title(t))}", "",
                  f"Runs in order of start: {md_text(run_order(t, names))}.", ""]
        rows = [[s.suite, f"{g.first_run}-{g.last_run}", segment_text(g, unit_vu)]
                for s in t.suites for g in s.segments]
        lines += md_table(["Suite", "Runs", "Segment estimate, VU (95 % CI)"], rows) + [""]
        for s in t.suites:
            lines += [f"- Change: {md_text(change_text(c, unit_vu))}." for c in s.changes]
            if s.gaps:
                lines.append(f"- {md_text(s.suite)}: {s.gaps} undecided run"
                             f"{'s' if s.gaps != 1 else ''} (gaps, not estimates).")
            if s.alarm is not None:
                lines.append(f"- {md_text(s.suite)}: the detector's alarm at run "
                             f"{s.alarm.run_index} ({s.alarm.direction}) is not confirmed "
                             "yet: measure again.")
        if not any(s.changes for s in t.suites):
            lines.append(f"- No change point: every run of {md_code(t.key.backend)} on CPU "
                         f"{t.key.cpu} is one segment.")
        lines.append("")
    return lines
