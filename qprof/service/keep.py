"""Every run kept: a command's run into the user's store as its records come, and its
run points when it ends, as the daemon keeps its own; what history, trend, report and
every later verdict read. A store that cannot take it is said once, never fatal."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from qprof.consensus.profiles import Profile
from qprof.consensus.trend.from_records import run_points
from qprof.consensus.trend.model import RunPoint, SeriesKey
from qprof.consensus.verdict_types import CoverageResult
from qprof.measure.records import AdversaryFactors, Meta, Record, RecordError
from qprof.service.judged import store_judgement
from qprof.service.store import Store
from qprof.service.store_file import StoreError
from qprof.service.store_paths import StoreLocation, read_store, user_stores

# The newest runs whose adversary factors a reader takes (qprof adversary's own runs and
# the check runs carrying the node's last ones).
FACTOR_RUNS = 100


class RunKeeper:
    """A run's records into one store (``add`` as they come, ``finish`` at the end)."""

    def __init__(self, location: StoreLocation, unit_suite: str) -> None:
        self.location = location
        self.unit_suite = unit_suite
        self.error: str | None = None
        self._records: list[Record] = []
        self._store: Store | None = None
        try:
            self._store = Store(location.path)  # its directory made by store_file
        except (StoreError, sqlite3.Error, OSError, RecordError, ValueError) as exc:
            self.error = f"run not kept in {location.path}: {exc}"

    @property
    def path(self) -> Path:
        return self.location.path

    def add(self, record: Record) -> None:
        self._records.append(record)
        if self._store is None:
            return
        try:
            self._store.add(record)
        except (StoreError, sqlite3.Error, OSError, ValueError) as exc:
            self.error = f"run not kept in {self.location.path}: {exc}"
            self._close()

    def finish(self) -> None:
        """The run's points stored beside its records (none computed for a store that
        could not take the run); the store closed."""
        if self._store is not None:
            try:
                keep_points(self._store, self._records, self.unit_suite)
            except (StoreError, sqlite3.Error, OSError, ValueError) as exc:
                self.error = f"run points not kept in {self.location.path}: {exc}"
        self._close()

    def _close(self) -> None:
        if self._store is not None:
            try:
                self._store.close()
            finally:
                self._store = None


def keep_points(store: Store, records: list[Record], unit_suite: str
                ) -> list[tuple[SeriesKey, RunPoint]]:
    """A finished run's points (the estimator, as check runs it) into ``store`` beside
    its records: what every later judgement stands on. Returns them."""
    points = run_points(records, unit_suite=unit_suite)
    meta = next((r for r in records if isinstance(r, Meta)), None)
    if meta is not None and points:
        store.points.add(meta.run_id, points)
    return points


def keeper(state_dir: Path | None, unit_suite: str) -> RunKeeper:
    """A keeper for the user's store (:meth:`UserStores.for_writing`)."""
    return RunKeeper(user_stores(state_dir).for_writing(), unit_suite)


def kept_points(state_dir: Path | None) -> tuple[list[tuple[SeriesKey, RunPoint]], list[str]]:
    """Every run point of the user's stores (the runs kept by check, the monitor and the
    daemon), and a line for each store that could not be read."""
    points: list[tuple[SeriesKey, RunPoint]] = []
    problems: list[str] = []
    for loc in user_stores(state_dir).existing():
        try:
            points += read_store(loc.path, lambda s: s.points.run_points())
        except StoreError as exc:
            problems.append(str(exc))
    return points, problems


def kept_factors(store: Store, runs: int = FACTOR_RUNS) -> list[AdversaryFactors]:
    """The adversary factors the store's newest ``runs`` runs carry, oldest first (the
    newest of each suite and kind last)."""
    return [r for r in store.newest_runs_records(AdversaryFactors.type, runs)
            if isinstance(r, AdversaryFactors)]


@dataclass(frozen=True)
class KeptNode:
    """This node as the user's stores keep it: the judgement's coverage (the daemon's
    store first, else the monitor's) and every adversary factor kept, oldest first."""

    coverage: tuple[CoverageResult, ...]
    factors: tuple[AdversaryFactors, ...]
    problems: tuple[str, ...]  # a line per store that could not be read


def kept_node(state_dir: Path | None, profile: Profile) -> KeptNode:
    """What `qprof calibrate --state-dir` takes of this node."""
    coverage: tuple[CoverageResult, ...] = ()
    factors: list[AdversaryFactors] = []
    problems: list[str] = []
    for loc in user_stores(state_dir).existing():
        try:
            judged, kept = read_store(loc.path, lambda s: (
                store_judgement(s, profile).judgement.coverage, kept_factors(s)))
        except StoreError as exc:
            problems.append(str(exc))
            continue
        coverage = coverage or tuple(judged)
        factors += kept
    return KeptNode(coverage, tuple(sorted(factors, key=lambda f: f.measured_at)),
                    tuple(problems))
