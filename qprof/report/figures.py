"""The figures a report shows for a run: the estimator's estimates and intervals, what
`qprof check` gives for the same records (``statistic="auto"``), computed once per run
and operation. The one place the report modules reach the estimator."""

from __future__ import annotations

import weakref
from dataclasses import replace
from typing import cast

from qprof.consensus import Profile
from qprof.consensus.estimate.estimator import SuiteEstimate
from qprof.consensus.judgement import column_verdicts as judged_columns
from qprof.consensus.judgement import run_estimates as judged_estimates
from qprof.consensus.policy import CoreDesign
from qprof.consensus.verdict_types import CoverageResult
from qprof.measure.jsonl import RunData
from qprof.report.columns import Column, Columns

# What `qprof check` uses unless told otherwise: the report must show the same figure.
STATISTIC = "auto"


def run_estimates(run: RunData, profile: Profile | None, unit: str, op: str
                  ) -> list[SuiteEstimate]:
    """Every (cpu, backend, suite) estimate of ``op`` in one run, as `qprof check` makes
    them from the run's records."""
    return judged_estimates(run.measurements, unit, profile.unit_vu if profile else 100, op,
                            STATISTIC)


# A report asks for one run's estimates from several sections (the tables, the chain's
# rule, the headroom, the HTML charts): the estimator runs once per run and operation (a
# 2,000-CPU run is 4,000 bootstraps each time). Held while the run is.
_MEMO: dict[tuple[int, str, int, str], tuple[weakref.ref[RunData], list[SuiteEstimate]]] = {}


def _run_estimates_once(run: RunData, profile: Profile | None, unit: str, op: str
                        ) -> list[SuiteEstimate]:
    key = (id(run), unit, profile.unit_vu if profile else 100, op)
    held = _MEMO.get(key)
    if held is not None and held[0]() is run:
        return held[1]
    for gone in [k for k, (ref, _e) in _MEMO.items() if ref() is None]:
        del _MEMO[gone]
    found = run_estimates(run, profile, unit, op)
    _MEMO[key] = (weakref.ref(run), found)
    return found


def column_estimates(cols: list[Column], profile: Profile | None, unit: str, backend: str,
                     op: str) -> list[dict[str, SuiteEstimate]]:
    """Per column, suite -> the estimator's estimate (the run's, on the column's CPU)."""
    memo = cols.figures if isinstance(cols, Columns) else {}
    key = ("estimates", unit, profile.unit_vu if profile else 100, backend, op)
    if key not in memo:
        memo[key] = _column_estimates(cols, profile, unit, backend, op)
    return cast(list[dict[str, SuiteEstimate]], memo[key])


def _column_estimates(cols: list[Column], profile: Profile | None, unit: str, backend: str,
                      op: str) -> list[dict[str, SuiteEstimate]]:
    per_run: dict[int, dict[int, dict[str, SuiteEstimate]]] = {}
    out = []
    for c in cols:
        if id(c.run) not in per_run:
            mine = per_run[id(c.run)] = {}
            for e in _run_estimates_once(c.run, profile, unit, op):
                if e.backend == backend:
                    mine.setdefault(e.cpu, {})[e.suite] = e
        out.append(per_run[id(c.run)].get(c.cpu, {}))
    return out


def column_cores(cols: list[Column]) -> dict[int, CoreDesign]:
    """What each column's CPU is (its run's Meta), keyed by the column's index: the
    profile's policy matches reference cores by design or part."""
    return {i: replace(CoreDesign.from_row(c.cpu_row), cpu=i) for i, c in enumerate(cols)}


def column_verdicts(profile: Profile | None, per_col: list[dict[str, SuiteEstimate]],
                    cols: list[Column] | None = None) -> list[CoverageResult]:
    """The verdicts of :func:`column_estimates`, with the profile's policy (``cols``: what
    each column's CPU is); ``cpu`` is the column's index, so that two runs of the same CPU
    stay apart."""
    if profile is None:
        return []
    # Asked again with the same figures (a section after another): the same verdicts.
    memo = cols.figures if isinstance(cols, Columns) else {}
    key = ("verdicts", id(profile), id(per_col))
    held = memo.get(key)
    if held is not None and held[0] is per_col:
        return cast(list[CoverageResult], held[1])
    found = judged_columns(profile, [replace(e, cpu=i) for i, col in enumerate(per_col)
                               for e in col.values()],
                     cores=column_cores(cols) if cols is not None else None)
    memo[key] = (per_col, found)  # per_col held: its id stays its own
    return found
