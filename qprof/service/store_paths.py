"""Where one user's stores are: the one rule `qprof history`, `export`, `report`, `trend`
and the monitor follow.

A user's results live in the state directory (:func:`~qprof.service.store_file.
default_state_dir`): the daemon's ``qprof.db`` and the monitor's own ``monitor.db`` (the
monitor writes there when no daemon's store exists; with one, it attaches to it and
writes there). Readers look in both, the daemon's first; the monitor's exports go to
``exports/`` beside them unless told otherwise.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from qprof.measure.records import RecordError
from qprof.service.store import RESULT_STATUSES, Store
from qprof.service.store_file import DB_NAME, StoreError, damaged, default_state_dir

DAEMON_DB = DB_NAME  # written by `qprof daemon`
MONITOR_DB = "monitor.db"  # the monitor's own store when no daemon's store exists
EXPORTS_DIR = "exports"  # the monitor's `e` writes its report here by default


@dataclass(frozen=True)
class StoreLocation:
    """One store file and who writes it."""

    path: Path
    kind: str  # "daemon" | "monitor"

    @property
    def label(self) -> str:
        return f"{self.kind} store {self.path}"


@dataclass(frozen=True)
class UserStores:
    """The stores and export directory of one state directory."""

    state_dir: Path

    @property
    def daemon(self) -> StoreLocation:
        return StoreLocation(self.state_dir / DAEMON_DB, "daemon")

    @property
    def monitor(self) -> StoreLocation:
        return StoreLocation(self.state_dir / MONITOR_DB, "monitor")

    @property
    def exports(self) -> Path:
        return self.state_dir / EXPORTS_DIR

    def all(self) -> tuple[StoreLocation, ...]:
        """Every store a reader looks in, the daemon's first."""
        return (self.daemon, self.monitor)

    def existing(self) -> list[StoreLocation]:
        return [s for s in self.all() if s.path.exists()]

    def for_writing(self) -> StoreLocation:
        """Where a run of this user's is kept: the daemon's store when it exists and this
        user may write it (the monitor attaches to it too), else the monitor's own."""
        daemon = self.daemon.path
        if daemon.exists() and os.access(daemon, os.W_OK):
            return self.daemon
        return self.monitor

    def none_yet(self) -> str:
        """One line for a state directory holding no store yet."""
        return (f"no results yet in {self.state_dir}: neither the daemon's {DAEMON_DB} "
                f"(`qprof daemon`) nor the monitor's {MONITOR_DB} (`qprof monitor`) "
                "exists there (another directory: --state-dir)")


def user_stores(state_dir: Path | None = None) -> UserStores:
    """The user's stores: in ``state_dir``, else the default state directory."""
    return UserStores(Path(state_dir) if state_dir is not None else default_state_dir())


def locate_run(stores: UserStores, run_id: str) -> tuple[StoreLocation, str]:
    """The store holding ``run_id`` and the run's id; ``"latest"``: the newest run with
    results over all the user's stores (else the newest run). Raises
    :class:`~qprof.service.store_file.StoreError` with one line when there is none, or a
    store cannot be read."""
    found = stores.existing()
    if not found:
        raise StoreError(stores.none_yet())
    best: tuple[tuple[bool, float], StoreLocation, str] | None = None
    for loc in found:
        if run_id != "latest":
            if read_store(loc.path, lambda s: s.run_status(run_id)) is not None:
                return loc, run_id
            continue
        runs = read_store(loc.path, lambda s: s.runs(100))
        # A cycle cut short (aborted, often empty) is rarely what "latest" means, nor a
        # run that measured nothing (qprof adversary's).
        with_results = [r for r in runs if r.status in RESULT_STATUSES and r.measurements]
        for r in (with_results or runs)[:1]:
            key = (bool(with_results), r.started_at)
            if best is None or key > best[0]:
                best = (key, loc, r.run_id)
    where = " or ".join(str(s.path) for s in found)
    if run_id != "latest":
        raise StoreError(f"no run {run_id!r} in {where} (see qprof history)")
    if best is None:
        raise StoreError(f"{where}: no runs recorded yet")
    return best[1], best[2]


T = TypeVar("T")


def read_store(path: Path, read: Callable[[Store], T]) -> T:
    """Open the store at ``path`` read-only, ``read`` it and close it: any damage found on
    the way (an SQLite error, a record that does not decode) is a StoreError naming the
    file, the one error every reader of a user's stores says in one line."""
    try:
        store = Store(path, readonly=True)
    except (sqlite3.DatabaseError, RecordError, ValueError) as exc:
        raise StoreError(damaged(path, exc)) from exc
    try:
        return read(store)
    except (sqlite3.DatabaseError, RecordError, ValueError) as exc:
        raise StoreError(damaged(path, exc)) from exc
    finally:
        store.close()
