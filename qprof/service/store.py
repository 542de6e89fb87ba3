"""The daemon's SQLite store: runs, their records, frequency history and alerts.

One file (``qprof.db`` under the state dir) in WAL mode, so the monitor can read while
the daemon writes. Every record is committed as it arrives: a measurement that finished
is on disk before the next one starts, and a crash loses at most the one in flight.

Each run's records are kept verbatim (``records`` table, in arrival order) so an export
is the same JSONL ``qprof bench`` writes; measurements, notes, disagreements also go to
their own indexed tables for queries. ``PRAGMA user_version`` is the schema version;
``MIGRATIONS[i]`` takes a database from version i to i+1.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
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
from qprof.service.alerts import Alert
from qprof.service.retention import FREQ_MIN_SPACING_S, Retention
from qprof.service.schema import MIGRATIONS, READABLE_FROM, SCHEMA_VERSION

DB_NAME = "qprof.db"

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

class StoreError(RuntimeError):
    """The store cannot be opened or written (message says which file and why)."""


def damaged(path: str | Path, exc: Exception) -> str:
    """One line for a store whose pages are damaged (readers leave the file alone)."""
    return (f"{path}: the store is damaged ({exc}); the file is left as it is "
            f"(`sqlite3 {path} .recover` saves what is still readable)")


class StoreBusy(StoreError):
    """Another process holds the store's lock (a backup, a VACUUM): try again later."""


def is_busy(exc: BaseException) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED (any extended code): the lock is held elsewhere."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


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


def default_state_dir() -> Path:
    """``$STATE_DIRECTORY`` (systemd), else ``$XDG_STATE_HOME/qprof``, else ~/.local/state."""
    state = os.environ.get("STATE_DIRECTORY")
    if state:
        # systemd may pass several colon-separated dirs; ours is the first.
        return Path(state.split(":")[0])
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg:
        return Path(xdg) / "qprof"
    return Path.home() / ".local" / "state" / "qprof"


class Store:
    """SQLite store. Thread-safe: one connection guarded by a lock (writes are tiny)."""

    def __init__(self, path: str | Path, readonly: bool = False) -> None:
        self.path = str(path)
        self.readonly = readonly
        self.note: str | None = None  # how a read-only store had to be opened, if unusual
        self._lock = threading.RLock()
        self._last_freq: dict[int, tuple[float, int | None, int | None]] = {}
        try:
            if readonly:
                if self.path != ":memory:" and not Path(self.path).exists():
                    raise StoreError(f"{self.path}: no such store (has the daemon run?)")
                self._db = self._open_readonly()
            else:
                if self.path != ":memory:":
                    Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.path, check_same_thread=False)
                self._db.execute("PRAGMA journal_mode=WAL")
                # NORMAL is durable across process crashes in WAL mode (only an OS crash
                # may lose the last transactions), and cheap.
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._migrate()
        except (sqlite3.Error, OSError) as exc:
            error = StoreBusy if is_busy(exc) else StoreError
            raise error(f"{self.path}: cannot open store: {exc}") from None

    def _open_readonly(self) -> sqlite3.Connection:
        """``mode=ro``; where even that cannot work (a WAL store whose -shm file cannot
        be created: a read-only filesystem or directory) the file as an immutable
        snapshot, and ``self.note`` says so."""
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.OperationalError as exc:
            db.close()
            if (exc.sqlite_errorcode & 0xFF) != sqlite3.SQLITE_CANTOPEN:
                raise
        self.note = (f"{self.path}: on a read-only filesystem or directory; read as an "
                     "immutable snapshot (what a daemon wrote since is not seen)")
        return sqlite3.connect(f"file:{self.path}?immutable=1", uri=True,
                               check_same_thread=False)

    # -- schema ---------------------------------------------------------------------

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
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
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def integrity_check(self) -> str:
        return str(self._db.execute("PRAGMA integrity_check").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- runs and records -----------------------------------------------------------

    def begin_run(self, meta: Meta) -> str:
        cpus = [c.get("cpu") for c in meta.cpus if isinstance(c, dict)]
        with self._lock, self._db:
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
        with self._lock, self._db:
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
            elif isinstance(record, FreqSample):
                self._add_freq(record.cpu, record.taken_at, record.cur_khz, record.max_khz,
                               record.hw_max_khz, record.capped, force=False)

    def finish_run(self, run_id: str, status: str, reason: str | None = None) -> None:
        """Close a run that did not end with its own End record (adds one, for export)."""
        if status not in RUN_STATUSES or status == "running":
            raise ValueError(f"run status must be finished, partial or aborted, not {status!r}")
        with self._lock, self._db:
            row = self._db.execute(
                "SELECT status FROM runs WHERE run_id=?", (run_id,)).fetchone()
            if row is None:
                raise KeyError(run_id)
            if row[0] != "running":
                return  # its End record already closed it
            end = End(run_id=run_id, finished_at=time.time(), status=status, reason=reason)
            self._insert_record(end)
            self._set_finished(run_id, status, reason, end.finished_at, None, None)

    def mark_unfinished_runs_aborted(self, reason: str = "daemon stopped during the run "
                                     "(crash, kill or power loss)") -> list[str]:
        """At start-up: runs still 'running' were cut short; close them as aborted."""
        with self._lock:
            ids = [r[0] for r in self._db.execute(
                "SELECT run_id FROM runs WHERE status='running'")]
        for run_id in ids:
            self.finish_run(run_id, "aborted", reason)
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
        return [RunInfo(run_id=r[0], started_at=r[1], finished_at=r[2], status=r[3],
                        reason=r[4], profile=r[5], cpus=json.loads(r[6] or "[]"),
                        measurements=r[7], checks=r[8], disagreements=r[9]) for r in rows]

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

    def last_finished_at(self) -> float | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT MAX(finished_at) FROM runs WHERE status IN {_RESULT_SQL}"
            ).fetchone()
        return row[0] if row else None

    # -- frequency history ------------------------------------------------------------

    def add_freq_samples(self, samples: list[tuple[int, float, int | None, int | None,
                                                   int | None, bool | None]],
                         force: bool = False) -> int:
        """Store (cpu, ts, cur_khz, max_khz, hw_max_khz, capped) samples, downsampled.

        A sample is kept when its CPU has none in the last FREQ_MIN_SPACING_S seconds or
        its max_khz/capped changed (so cap edges are exact); returns how many were kept.
        """
        kept = 0
        with self._lock, self._db:
            for cpu, ts, cur, mx, hw, capped in samples:
                kept += self._add_freq(cpu, ts, cur, mx, hw, capped, force)
        return kept

    def _add_freq(self, cpu: int, ts: float, cur: int | None, mx: int | None,
                  hw: int | None, capped: bool | None, force: bool) -> int:
        if cur is None and mx is None and hw is None and capped is None:
            return 0  # no cpufreq data (a VM): a row would say nothing
        last = self._last_freq.get(cpu)
        if (not force and last is not None and ts - last[0] < FREQ_MIN_SPACING_S
                and last[1] == mx and last[2] == (None if capped is None else int(capped))):
            return 0
        self._db.execute(
            "INSERT INTO freq_samples(cpu, ts, cur_khz, max_khz, hw_max_khz, capped) "
            "VALUES (?,?,?,?,?,?)",
            (cpu, ts, cur, mx, hw, None if capped is None else int(capped)),
        )
        self._last_freq[cpu] = (ts, mx, None if capped is None else int(capped))
        return 1

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
        out = {"runs": 0, "stripped_runs": 0, "alerts": 0, "freq_samples": 0}
        with self._lock, self._db:
            keep = self._result_run_ids()
            if ret.keep_s > 0:
                old = [r[0] for r in self._db.execute(
                    "SELECT run_id FROM runs WHERE status!='running' AND started_at<? "
                    "ORDER BY started_at", (now - ret.keep_s,)) if r[0] not in keep]
                old = old[:ret.max_runs]
                for table in ("measurements", "disagreements", "notes", "records", "runs"):
                    self._db.executemany(f"DELETE FROM {table} WHERE run_id=?",
                                         [(r,) for r in old])
                out["runs"] = len(old)
                counts = self._db.execute("SELECT kind, COUNT(*) FROM alerts WHERE ts<? "
                                          "GROUP BY kind", (now - ret.keep_s,)).fetchall()
                for kind, n in counts:
                    self._db.execute(
                        "INSERT INTO alert_totals(kind, pruned) VALUES (?, ?) ON CONFLICT"
                        "(kind) DO UPDATE SET pruned=pruned+excluded.pruned", (kind, n))
                self._db.execute("DELETE FROM alerts WHERE ts<?", (now - ret.keep_s,))
                out["alerts"] = sum(n for _, n in counts)
            if ret.keep_samples_s > 0:
                strip = [r[0] for r in self._db.execute(
                    "SELECT run_id FROM runs WHERE status!='running' AND samples_stripped=0 "
                    "AND started_at<? ORDER BY started_at", (now - ret.keep_samples_s,))
                    if r[0] not in keep][:ret.max_runs]
                # Round medians, p95 etc. stay; the samples (most of the bytes) go.
                self._db.executemany(
                    "UPDATE records SET json=json_set(json, '$.samples_ns', json('null')) "
                    "WHERE run_id=? AND type='measurement'", [(r,) for r in strip])
                self._db.executemany("UPDATE runs SET samples_stripped=1 WHERE run_id=?",
                                     [(r,) for r in strip])
                out["stripped_runs"] = len(strip)
            out["freq_samples"] = self._thin_freq(ret, now)
        return out

    def _thin_freq(self, ret: Retention, now: float) -> int:
        removed = 0
        if ret.keep_freq_s > 0:
            removed += self._db.execute("DELETE FROM freq_samples WHERE ts<?",
                                        (now - ret.keep_freq_s,)).rowcount
        row = self._db.execute(
            "SELECT value FROM store_meta WHERE key='freq_thinned_until'").fetchone()
        start = float(row[0]) if row else 0.0
        if ret.keep_freq_s > 0:
            start = max(start, now - ret.keep_freq_s)
        oldest = self._db.execute("SELECT MIN(ts) FROM freq_samples").fetchone()[0]
        if oldest is not None:
            start = max(start, float(oldest))
        end = min(now - ret.freq_full_s, start + ret.max_freq_span_s)
        if ret.freq_bucket_s > 0 and end > start:
            # Past full resolution: one sample per CPU per bucket, plus every sample where
            # the cap state or the allowed maximum changed (cap edges stay exact).
            last: dict[int, tuple[int, Any, Any]] = {}
            drop: list[tuple[int]] = []
            for rowid, cpu, ts, mx, capped in self._db.execute(
                    "SELECT rowid, cpu, ts, max_khz, capped FROM freq_samples "
                    "WHERE ts>=? AND ts<? ORDER BY cpu, ts", (start, end)):
                bucket = int(ts // ret.freq_bucket_s)
                prev = last.get(cpu)
                if prev is not None and prev == (bucket, mx, capped):
                    drop.append((rowid,))
                else:
                    last[cpu] = (bucket, mx, capped)
            self._db.executemany("DELETE FROM freq_samples WHERE rowid=?", drop)
            removed += len(drop)
        self._db.execute("INSERT OR REPLACE INTO store_meta(key, value) "
                         "VALUES ('freq_thinned_until', ?)", (str(max(start, end)),))
        return removed

    def freq_history(self, cpu: int, since: float = 0.0) -> list[tuple[float, int | None,
                                                                        int | None]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT ts, cur_khz, max_khz FROM freq_samples WHERE cpu=? AND ts>=? "
                "ORDER BY ts", (cpu, since)).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    # -- alerts -------------------------------------------------------------------------

    def add_alert(self, alert: Alert) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT INTO alerts(ts, kind, severity, cpu, cluster, message, details) "
                "VALUES (?,?,?,?,?,?,?)",
                (alert.ts, alert.kind, alert.severity, alert.cpu, alert.cluster,
                 alert.message, json.dumps(alert.details, default=str)),
            )

    def recent_alerts(self, limit: int = 50) -> list[Alert]:
        with self._lock:
            rows = self._db.execute(
                "SELECT ts, kind, severity, cpu, cluster, message, details FROM alerts "
                "ORDER BY ts DESC, id DESC LIMIT ?", (limit,)).fetchall()
        return [Alert(ts=r[0], kind=r[1], severity=r[2], cpu=r[3], cluster=r[4],
                      message=r[5], details=json.loads(r[6] or "{}")) for r in rows]

    def alert_counts(self) -> dict[str, int]:
        """Alerts ever stored, per kind (so qprof_alerts_total survives restarts),
        including those retention removed since."""
        if self.schema_version() < 2:  # read-only view of an older store
            with self._lock:
                rows = self._db.execute("SELECT kind, COUNT(*) FROM alerts GROUP BY kind")
                return {k: int(n) for k, n in rows}
        with self._lock:
            rows = self._db.execute(
                "SELECT kind, SUM(n) FROM (SELECT kind, COUNT(*) AS n FROM alerts GROUP BY "
                "kind UNION ALL SELECT kind, pruned FROM alert_totals) GROUP BY kind")
            return {k: int(n) for k, n in rows}
