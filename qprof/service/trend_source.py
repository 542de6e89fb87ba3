"""A daemon's (or the monitor's) store as run points: the source of `qprof trend
--state-dir DIR`; and recorded JSONL runs with their records, as `qprof history` reads
them beside the stores.

The store keeps every finished run's points (``Store.points``, written when the run
ends, kept past retention). Runs recorded before that table existed, or whose points were
not written, are turned into points from their records here, as the daemon would have
(:func:`qprof.consensus.trend.from_records.run_points`): the newest ``MAX_COMPUTED`` of
them, each a few seconds of the estimator's bootstrap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from qprof.consensus.trend.from_records import run_points
from qprof.consensus.trend.model import RunPoint, SeriesKey
from qprof.measure.jsonl import RunData
from qprof.measure.records import Meta, Record
from qprof.measure.units import NO_PROFILE_UNIT
from qprof.service.run_files import OnDone, read_run_files
from qprof.service.store import RESULT_STATUSES, RunInfo, Store

# Runs without stored points computed from their records, newest first: enough for weeks
# of hourly runs; older ones are counted and said.
MAX_COMPUTED = 400
# Runs listed from the store: a year of hourly runs.
MAX_RUNS = 10_000


@dataclass(frozen=True)
class StorePoints:
    points: list[tuple[SeriesKey, RunPoint]]
    stored: int  # runs whose points the store kept
    computed: int  # runs whose points were computed from their records here
    left_out: int  # runs without points beyond ``max_computed``
    profiles: list[str]  # the profiles the runs were measured against, newest first


def store_points(store: Store, unit_suite: str | None = None, operation: str = "verify",
                 newest: int | None = None, max_computed: int = MAX_COMPUTED
                 ) -> StorePoints:
    """The runs' points: the stored ones (``newest``: at most that many per series, the
    newest), and from their records those of the newest ``max_computed`` runs without
    stored points (``unit_suite``: the unit they are computed against, else the run's
    own)."""
    points = store.points.run_points(operation=operation, newest=newest)
    have = {p.run_id for _k, p in points}
    # A run without measurements (qprof adversary's) has no points to compute.
    runs = [r for r in store.runs(limit=MAX_RUNS)
            if r.status in RESULT_STATUSES and r.measurements]
    missing = [r.run_id for r in runs if r.run_id not in have
               and (newest is None or not store.points.has(r.run_id))]
    computed = 0
    for run_id in missing[:max_computed]:
        try:
            records = list(store.run_records(run_id))
        except KeyError:
            continue  # dropped by the daemon's retention meanwhile
        points += run_points(records, operation=operation,
                             unit_suite=unit_suite or run_unit(records))
        computed += 1
    profiles = list(dict.fromkeys(r.profile for r in runs if r.profile))
    return StorePoints(points=points, stored=len(have), computed=computed,
                       left_out=max(len(missing) - max_computed, 0), profiles=profiles)


def run_unit(records: list[Record]) -> str:
    """The unit suite the run was measured against (its settings)."""
    meta = next((r for r in records if isinstance(r, Meta)), None)
    unit = meta.settings.unit_suite if meta is not None else None
    return unit or NO_PROFILE_UNIT.suite


@dataclass(frozen=True)
class FileRuns:
    """Recorded runs (JSONL files, .xz and .gz too), listed as a store lists its runs."""

    runs: list[RunInfo]  # newest first
    newest: RunData  # the newest run's records: what its judgement is of
    points: list[tuple[SeriesKey, RunPoint]]
    problems: list[str]  # bad lines skipped, "file:line: reason"


def file_runs(paths: Sequence[str | Path], unit_suite: str | None = None,
              on_read: OnDone | None = None) -> FileRuns:
    """Each file's run, records and points, read side by side (RunFileError: the first
    file that gives none, one line naming it)."""
    files = read_run_files(paths, unit_suite, with_run=True, on_read=on_read)
    runs = sorted((f.run for f in files if f.run is not None),
                  key=lambda r: r.meta.started_at if r.meta else 0.0, reverse=True)
    return FileRuns(runs=[_run_info(r) for r in runs], newest=runs[0],
                    points=[pt for f in files for pt in f.points],
                    problems=[x for f in files for x in f.problems])


def _run_info(run: RunData) -> RunInfo:
    s, end = run.summary(), run.end
    return RunInfo(run_id=s.run_id, started_at=run.meta.started_at if run.meta else 0.0,
                   finished_at=end.finished_at if end else None, status=s.status,
                   reason=s.reason, profile=run.meta.profile if run.meta else None,
                   cpus=s.cpus, measurements=len(s.measurements), checks=s.checks,
                   disagreements=s.disagreements)
