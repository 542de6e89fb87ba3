"""Every run kept: a command's run into the user's store as its records come, and its
run points when it ends, as the daemon keeps its own; what history, trend, report and
every later verdict read. A store that cannot take it is said once, never fatal."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from qprof.consensus.trend.from_records import run_points
from qprof.consensus.trend.model import RunPoint, SeriesKey
from qprof.measure.records import Meta, Record, RecordError
from qprof.service.store import Store
from qprof.service.store_file import StoreError
from qprof.service.store_paths import StoreLocation, read_store, user_stores

log = logging.getLogger("qprof.keep")


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

    def finish(self) -> list[tuple[SeriesKey, RunPoint]]:
        """The run's points, stored beside its records; the store closed."""
        points = run_points(self._records, unit_suite=self.unit_suite)
        meta = next((r for r in self._records if isinstance(r, Meta)), None)
        if self._store is not None and meta is not None and points:
            try:
                self._store.points.add(meta.run_id, points)
            except (StoreError, sqlite3.Error, OSError, ValueError) as exc:
                self.error = f"run points not kept in {self.location.path}: {exc}"
        self._close()
        return points

    def stored_points(self) -> list[tuple[SeriesKey, RunPoint]]:
        """Every run point the store holds (this run's included, once finished)."""
        try:
            store = Store(self.location.path, readonly=True)
        except (StoreError, sqlite3.Error, OSError, RecordError, ValueError):
            return []
        try:
            return store.points.run_points()
        except (sqlite3.Error, ValueError):
            return []
        finally:
            store.close()

    def _close(self) -> None:
        if self._store is not None:
            try:
                self._store.close()
            finally:
                self._store = None


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
