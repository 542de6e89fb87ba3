"""The store's run points (``run_points``): every finished run's estimates per series, as
:mod:`qprof.consensus.trend.codec` writes them, so a run stays judgeable after retention
strips its samples or drops the run (Retention.points_keep_s). What the daemon's trend,
its metrics and `qprof trend --state-dir` read: :meth:`RunPoints.run_points` is the input
of :func:`qprof.consensus.trend.analysis.group`."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from qprof.consensus.trend.codec import (
    key_from_dict,
    key_to_dict,
    point_from_dict,
    point_to_dict,
)
from qprof.consensus.trend.model import RunPoint, SeriesKey
from qprof.service.store_file import OnConnection, StoreConnection, user_version

log = logging.getLogger("qprof.daemon")

POINTS_FROM_VERSION = 3  # the schema version that has the table


class RunPoints(OnConnection):
    """Run points in the store's database (its connection and lock)."""

    def __init__(self, conn: StoreConnection) -> None:
        self._conn = conn

    def _has_table(self) -> bool:
        return user_version(self._db) >= POINTS_FROM_VERSION  # an older store read-only

    def add(self, run_id: str, points: Iterable[tuple[SeriesKey, RunPoint]]) -> int:
        """Store one run's points (a point stored again replaces the old); returns how
        many."""
        rows = [(run_id, json.dumps(key_to_dict(key), sort_keys=True), key.cpu, key.backend,
                 key.operation, point.started_at, json.dumps(point_to_dict(point)))
                for key, point in points]
        with self._conn.writing():
            self._db.executemany(
                "INSERT OR REPLACE INTO run_points(run_id, series, cpu, backend, operation, "
                "started_at, point) VALUES (?,?,?,?,?,?,?)", rows)
        return len(rows)

    def run_points(self, since: float | None = None, operation: str | None = None,
                   newest: int | None = None) -> list[tuple[SeriesKey, RunPoint]]:
        """Every stored point (``since``: started at or after; ``newest``: at most that
        many per series, the newest), oldest first, for ``analysis.group``. A row that
        does not decode is logged and left out (it stays in the store)."""
        if not self._has_table():
            return []
        where: list[str] = []
        params: list[object] = []
        if since is not None:
            where.append("started_at>=?")
            params.append(since)
        if operation is not None:
            where.append("operation=?")
            params.append(operation)
        filters = " WHERE " + " AND ".join(where) if where else ""
        # Numbered newest first within each series: ``newest`` keeps the first ones.
        sql = ("SELECT run_id, series, point FROM (SELECT run_id, series, point, started_at, "
               "ROW_NUMBER() OVER (PARTITION BY series ORDER BY started_at DESC, run_id DESC)"
               f" AS k FROM run_points{filters}) WHERE ?<0 OR k<=? ORDER BY started_at, run_id")
        params += [-1, 0] if newest is None else [newest, newest]
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        out = []
        for run_id, series, point in rows:
            try:
                out.append((key_from_dict(json.loads(series)), point_from_dict(json.loads(point))))
            except (ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
                log.warning("store: run point of %s not read: %s", run_id, exc)
        return out

    def has(self, run_id: str) -> bool:
        if not self._has_table():
            return False
        with self._lock:
            return self._db.execute("SELECT 1 FROM run_points WHERE run_id=? LIMIT 1",
                                    (run_id,)).fetchone() is not None

    def missing(self, limit: int) -> list[str]:
        """Runs with results and their samples but no points (stored before points were,
        or their write failed), newest first: what the daemon computes them for."""
        if not self._has_table():
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT r.run_id FROM runs r WHERE r.status IN ('finished', 'partial') "
                "AND r.samples_stripped=0 AND NOT EXISTS (SELECT 1 FROM run_points p "
                "WHERE p.run_id=r.run_id) ORDER BY r.started_at DESC LIMIT ?",
                (limit,)).fetchall()
        return [r[0] for r in rows]

    def count(self) -> int:
        if not self._has_table():
            return 0
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM run_points").fetchone()[0])

    def prune(self, before: float) -> int:
        """Remove points of runs started before ``before``; the caller holds the lock and
        a transaction."""
        return int(self._db.execute("DELETE FROM run_points WHERE started_at<?",
                                    (before,)).rowcount)
