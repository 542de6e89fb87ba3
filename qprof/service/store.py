"""The daemon's SQLite store: runs and their records; opening, migrating, retention.

Every record is committed as it arrives, so a crash loses at most the one in flight.
Each run's records are kept verbatim (an export is the JSONL ``qprof bench`` writes), and
measurements, notes and disagreements also in indexed tables. The frequency history
(``Store.freq``), alerts (``Store.alerts``) and run points (``Store.points``) live in
the same database; the file is :mod:`qprof.service.store_file`, the schema and its
migrations :mod:`qprof.service.schema`.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qprof.measure.records import (
    Disagreement,
    End,
    FreqSample,
    Measurement,
    Meta,
    Note,
    Record,
    record_from_dict,
)
from qprof.service.retention import Retention
from qprof.service.run_locks import CUT_SHORT, RunLocks
from qprof.service.schema import MIGRATIONS, READABLE_FROM, SCHEMA_VERSION
from qprof.service.store_alerts import AlertLog
from qprof.service.store_file import (
    FileEvent,
    OnConnection,
    StoreBusy,
    StoreConnection,
    StoreError,
    is_busy,
    user_version,
)
from qprof.service.store_freq import FreqHistory
from qprof.service.store_points import RunPoints

# Run states. "running" only while the daemon works on it; a run found "running" at
# start-up was cut short by a crash and becomes "aborted".
RUN_STATUSES = ("running", "finished", "partial", "aborted")
# Runs whose measurements count as results (an aborted run's records stay exportable).
RESULT_STATUSES = ("finished", "partial")
_RESULT_SQL = "(" + ", ".join(f"'{s}'" for s in RESULT_STATUSES) + ")"


def _measurements(rows: list[tuple[str]]) -> list[Measurement]:
    """Decode ``SELECT rec.json`` rows of the measurements table."""
    out = []
    for (text,) in rows:
        rec = record_from_dict(json.loads(text))
        assert isinstance(rec, Measurement)
        out.append(rec)
    return out


@dataclass
class RunInfo:
    run_id: str
    started_at: float
    finished_at: float | None
    status: str
    reason: str | None
    profile: str | None
    cpus: list[int]
    measurements: int
    checks: int
    disagreements: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Store(OnConnection):
    """SQLite store. Thread-safe: one connection guarded by a lock (writes are tiny),
    shared with ``freq`` (frequency history) and ``alerts`` (the alert log)."""

    def __init__(self, path: str | Path, readonly: bool = False) -> None:
        self.path = str(path)
        self.readonly = readonly
        try:
            self._conn = StoreConnection(self.path, readonly)
            self._migrate()
        except (sqlite3.Error, OSError) as exc:
            error = StoreBusy if is_busy(exc) else StoreError
            raise error(f"{self.path}: cannot open store: {exc}") from None
        self.note = self._conn.note  # how a read-only store had to be opened, if unusual
        self.freq = FreqHistory(self._conn)
        self.alerts = AlertLog(self._conn)
        self.points = RunPoints(self._conn)
        self.run_locks = RunLocks(self.path)

    def check_file(self) -> list[FileEvent]:
        """Check that the path still names the file open (each write does), and return
        what was found and done since the last call (StoreConnection)."""
        self._conn.check_file()
        with self._lock:
            events, self._conn.events = self._conn.events, []
        return events

    # -- schema ---------------------------------------------------------------------

    def _migrate(self) -> None:
        version = user_version(self._db)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: schema version {version} is newer than this qprof "
                f"({SCHEMA_VERSION}); upgrade qprof"
            )
        if version == SCHEMA_VERSION:
            return
        if self.readonly and version >= READABLE_FROM:
            return  # readers use only what version 1 has: an older daemon's store is fine
        if self.readonly:
            raise StoreError(f"{self.path}: schema version {version} needs migrating; "
                             "run the daemon once or open it writable")
        with self._lock:
            for step in range(version, SCHEMA_VERSION):
                self._db.executescript("BEGIN;" + MIGRATIONS[step]
                                       + f"PRAGMA user_version={step + 1}; COMMIT;")

    def schema_version(self) -> int:
        return user_version(self._db)

    def integrity_check(self) -> str:
        return str(self._db.execute("PRAGMA integrity_check").fetchone()[0])

    def close(self) -> None:
        self.run_locks.let_go()
        self._conn.close()

    # -- runs and records -----------------------------------------------------------

    def begin_run(self, meta: Meta) -> str:
        cpus = [c.cpu for c in meta.cpus]
        self.run_locks.hold(meta.run_id)  # before the row: never seen unheld
        with self._conn.writing():
            self._db.execute(
                "INSERT INTO runs(run_id, started_at, status, profile, cpus) "
                "VALUES (?, ?, 'running', ?, ?)",
                (meta.run_id, meta.started_at, meta.profile, json.dumps(cpus)),
            )
            self._insert_record(meta)
        return meta.run_id

    def add(self, record: Record) -> None:
        """Commit one record. A Meta begins its run, an End finishes it."""
        if isinstance(record, Meta):
            self.begin_run(record)
            return
        with self._conn.writing():
            self._ensure_run(record.run_id)  # type: ignore[attr-defined]
            record_id = self._insert_record(record)
            if isinstance(record, Measurement):
                self._db.execute(
                    "INSERT INTO measurements(record_id, run_id, cpu, suite, backend, "
                    "operation, round, median_ns, p95_ns, finished_at, capped, cap_factor) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (record_id, record.run_id, record.cpu, record.suite, record.backend,
                     record.operation, record.round, record.median_ns, record.p95_ns,
                     record.finished_at if record.finished_at is not None else time.time(),
                     None if record.capped is None else int(record.capped),
                     record.cap_factor),
                )
            elif isinstance(record, Note):
                self._db.execute(
                    "INSERT INTO notes(run_id, level, kind, cpu, text) VALUES (?,?,?,?,?)",
                    (record.run_id, record.level, record.kind, record.cpu, record.text),
                )
            elif isinstance(record, Disagreement):
                self._db.execute(
                    "INSERT INTO disagreements(record_id, run_id, cpu, suite, found_at) "
                    "VALUES (?,?,?,?,?)",
                    (record_id, record.run_id, record.cpu, record.suite, record.found_at),
                )
            elif isinstance(record, End):
                self._set_finished(record.run_id, record.status, record.reason,
                                   record.finished_at, record.checks, record.disagreements)
                self.run_locks.release(record.run_id)
            elif isinstance(record, FreqSample):
                self.freq.insert(record.cpu, record.taken_at, record.cur_khz, record.max_khz,
                                 record.hw_max_khz, record.capped, force=False)

    def finish_run(self, run_id: str, status: str, reason: str | None = None) -> None:
        """Close a run that did not end with its own End record (adds one, for export)."""
        if status not in RUN_STATUSES or status == "running":
            raise ValueError(f"run status must be finished, partial or aborted, not {status!r}")
        with self._conn.writing():
            row = self._db.execute(
                "SELECT status FROM runs WHERE run_id=?", (run_id,)).fetchone()
            if row is None:
                raise KeyError(run_id)
            if row[0] != "running":
                return  # its End record already closed it
            end = End(run_id=run_id, finished_at=time.time(), status=status, reason=reason)
            self._insert_record(end)
            self._set_finished(run_id, status, reason, end.finished_at, None, None)
        self.run_locks.release(run_id)

    def mark_unfinished_runs_aborted(self, reason: str = "daemon stopped during the run "
                                     "(crash, kill or power loss)") -> list[str]:
        """At the daemon's start: its runs still 'running' were cut short (those another
        process still writes, a user's check in this store, are left to it); closed as
        aborted."""
        with self._lock:
            ids = [r[0] for r in self._db.execute(
                "SELECT run_id FROM runs WHERE status='running'")
                if not self.run_locks.held(r[0])]
        for run_id in ids:
            self.finish_run(run_id, "aborted", reason)
            self.run_locks.clear(run_id)
        return ids

    def _ensure_run(self, run_id: str) -> None:
        # A record for a run with no Meta (should not happen) still gets a row, so it
        # is exportable and visible rather than dropped.
        self._db.execute(
            "INSERT OR IGNORE INTO runs(run_id, started_at, status) VALUES (?, ?, 'running')",
            (run_id, time.time()),
        )

    def _insert_record(self, record: Record) -> int:
        cur = self._db.execute(
            "INSERT INTO records(run_id, type, json) VALUES (?,?,?)",
            (record.run_id, record.type, record.to_json()),  # type: ignore[attr-defined]
        )
        return int(cur.lastrowid or 0)

    def _set_finished(self, run_id: str, status: str, reason: str | None, finished_at: float,
                      checks: int | None, disagreements: int | None) -> None:
        self._db.execute(
            "UPDATE runs SET status=?, reason=?, finished_at=?, "
            "checks=COALESCE(?, checks), disagreements=COALESCE(?, disagreements) "
            "WHERE run_id=?",
            (status, reason, finished_at, checks, disagreements, run_id),
        )

    def runs(self, limit: int = 20) -> list[RunInfo]:
        with self._lock:
            rows = self._db.execute(
                "SELECT r.run_id, r.started_at, r.finished_at, r.status, r.reason, r.profile, "
                "r.cpus, (SELECT COUNT(*) FROM measurements m WHERE m.run_id=r.run_id), "
                "r.checks, r.disagreements FROM runs r ORDER BY r.started_at DESC, r.rowid "
                "DESC LIMIT ?", (limit,)).fetchall()
        # A run left 'running' by a writer gone since reads as what it is; the daemon's
        # start closes its own (and alerts), and nothing else rewrites it.
        return [RunInfo(run_id=r[0], started_at=r[1], finished_at=r[2],
                        status="aborted" if cut else r[3], reason=CUT_SHORT if cut else r[4],
                        profile=r[5], cpus=json.loads(r[6] or "[]"),
                        measurements=r[7], checks=r[8], disagreements=r[9])
                for r in rows
                for cut in [r[3] == "running" and self.run_locks.cut_short(r[0])]]

    def run_status(self, run_id: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT status FROM runs WHERE run_id=?",
                                   (run_id,)).fetchone()
        return row[0] if row else None

    def run_records(self, run_id: str) -> Iterator[Record]:
        """The run's records in arrival order (raises KeyError for an unknown run)."""
        if self.run_status(run_id) is None:
            raise KeyError(run_id)
        with self._lock:
            rows = self._db.execute(
                "SELECT json FROM records WHERE run_id=? ORDER BY id", (run_id,)).fetchall()
        for (text,) in rows:
            yield record_from_dict(json.loads(text))

    def newest_runs_records(self, record_type: str, runs: int) -> list[Record]:
        """The records of one type of the newest ``runs`` runs with results, oldest
        first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT rec.json FROM records rec JOIN (SELECT run_id, started_at FROM runs "
                f"WHERE status IN {_RESULT_SQL} ORDER BY started_at DESC LIMIT ?) r "
                "ON r.run_id=rec.run_id WHERE rec.type=? ORDER BY r.started_at, rec.id",
                (runs, record_type)).fetchall()
        return [record_from_dict(json.loads(text)) for (text,) in rows]

    def latest_measurements(self, cpu: int | None = None,
                            backend: str | None = None) -> list[Measurement]:
        """Newest measurement per (cpu, suite, backend, operation) of finished/partial runs."""
        where = [f"r.status IN {_RESULT_SQL}"]
        params: list[Any] = []
        if cpu is not None:
            where.append("m.cpu=?")
            params.append(cpu)
        if backend is not None:
            where.append("m.backend=?")
            params.append(backend)
        sql = (
            "SELECT rec.json FROM measurements m JOIN runs r ON r.run_id=m.run_id "
            "JOIN records rec ON rec.id=m.record_id WHERE m.id IN ("
            " SELECT MAX(m.id) FROM measurements m JOIN runs r ON r.run_id=m.run_id "
            f" WHERE {' AND '.join(where)} GROUP BY m.cpu, m.suite, m.backend, m.operation) "
            "ORDER BY m.cpu, m.suite, m.backend, m.operation"
        )
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        return _measurements(rows)

    def newest_run_measurements(self, operation: str = "verify") -> list[Measurement]:
        """Every round of each (cpu, suite, backend) from the newest finished/partial run
        that measured it: what a result (median of round medians) is computed from."""
        sql = (
            "SELECT rec.json FROM measurements m JOIN records rec ON rec.id=m.record_id "
            "JOIN (SELECT newest.cpu, newest.suite, newest.backend, newest.run_id FROM "
            "      measurements newest JOIN (SELECT MAX(m2.id) AS id FROM measurements m2 "
            "      JOIN runs r ON r.run_id=m2.run_id "
            f"      WHERE r.status IN {_RESULT_SQL} AND m2.operation=? "
            "      GROUP BY m2.cpu, m2.suite, m2.backend) ids ON ids.id=newest.id) k "
            "ON k.cpu=m.cpu AND k.suite=m.suite AND k.backend=m.backend AND k.run_id=m.run_id "
            "WHERE m.operation=? ORDER BY m.id"
        )
        with self._lock:
            rows = self._db.execute(sql, (operation, operation)).fetchall()
        return _measurements(rows)

    def newest_meta(self) -> Meta | None:
        """The Meta of the newest run with results, measurements among them (what it was
        measured with: the daemon compares its libraries, kernel and microcode with
        today's)."""
        with self._lock:
            row = self._db.execute(
                "SELECT rec.json FROM records rec JOIN runs r ON r.run_id=rec.run_id "
                f"WHERE rec.type='meta' AND r.status IN {_RESULT_SQL} AND EXISTS (SELECT 1 "
                "FROM measurements m WHERE m.run_id=r.run_id) "
                "ORDER BY r.started_at DESC, rec.id DESC LIMIT 1").fetchone()
        if row is None:
            return None
        rec = record_from_dict(json.loads(row[0]))
        return rec if isinstance(rec, Meta) else None

    def last_finished_at(self) -> float | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT MAX(finished_at) FROM runs WHERE status IN {_RESULT_SQL}"
            ).fetchone()
        return row[0] if row else None

    # -- retention ------------------------------------------------------------------------

    def _result_run_ids(self) -> set[str]:
        """Runs holding the newest result of some (cpu, suite, backend, operation)."""
        rows = self._db.execute(
            "SELECT DISTINCT m.run_id FROM measurements m WHERE m.id IN ("
            " SELECT MAX(m2.id) FROM measurements m2 JOIN runs r ON r.run_id=m2.run_id "
            f" WHERE r.status IN {_RESULT_SQL} "
            " GROUP BY m2.cpu, m2.suite, m2.backend, m2.operation)").fetchall()
        return {r[0] for r in rows}

    def maintain(self, retention: Retention | None = None, now: float | None = None
                 ) -> dict[str, int]:
        """Apply the retention policy; returns what it removed (counts by kind).

        Always writes (a watermark), so it doubles as the start-up check that the store
        is writable. Cheap when there is nothing to do; the daemon calls it hourly.
        """
        ret = retention or Retention()
        now = time.time() if now is None else now
        out = {"runs": 0, "stripped_runs": 0, "alerts": 0, "freq_samples": 0,
               "run_points": 0}
        with self._conn.writing():
            keep = self._result_run_ids()
            if ret.keep_s > 0:
                out["runs"] = self._drop_runs(now - ret.keep_s, keep, ret.max_runs)
                out["alerts"] = self.alerts.prune(now - ret.keep_s)
            if ret.keep_samples_s > 0:
                out["stripped_runs"] = self._strip_samples(now - ret.keep_samples_s, keep,
                                                           ret.max_runs)
            out["freq_samples"] = self.freq.thin(ret, now)
            if ret.points_keep_s() > 0:
                out["run_points"] = self.points.prune(now - ret.points_keep_s())
        return out

    def _drop_runs(self, before: float, keep: set[str], limit: int) -> int:
        """Remove up to ``limit`` runs started before ``before``, oldest first."""
        old = [r[0] for r in self._db.execute(
            "SELECT run_id FROM runs WHERE status!='running' AND started_at<? "
            "ORDER BY started_at", (before,)) if r[0] not in keep][:limit]
        for table in ("measurements", "disagreements", "notes", "records", "runs"):
            self._db.executemany(f"DELETE FROM {table} WHERE run_id=?", [(r,) for r in old])
        return len(old)

    def _strip_samples(self, before: float, keep: set[str], limit: int) -> int:
        """Drop the per-sample timings of up to ``limit`` runs started before ``before``."""
        strip = [r[0] for r in self._db.execute(
            "SELECT run_id FROM runs WHERE status!='running' AND samples_stripped=0 "
            "AND started_at<? ORDER BY started_at", (before,)) if r[0] not in keep][:limit]
        # Round medians, p95 etc. stay; the samples (most of the bytes) go.
        self._db.executemany(
            "UPDATE records SET json=json_set(json, '$.samples_ns', json('null')) "
            "WHERE run_id=? AND type='measurement'", [(r,) for r in strip])
        self._db.executemany("UPDATE runs SET samples_stripped=1 WHERE run_id=?",
                             [(r,) for r in strip])
        return len(strip)
