"""The store's SQLite schema: ``MIGRATIONS[i]`` takes a database from version i to i+1
(``PRAGMA user_version`` is the version)."""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # 0 -> 1
    """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        started_at REAL NOT NULL,
        finished_at REAL,
        status TEXT NOT NULL,
        reason TEXT,
        profile TEXT,
        cpus TEXT NOT NULL DEFAULT '[]',
        checks INTEGER NOT NULL DEFAULT 0,
        disagreements INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE records (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(run_id),
        type TEXT NOT NULL,
        json TEXT NOT NULL
    );
    CREATE INDEX records_run ON records(run_id, id);
    CREATE TABLE measurements (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        record_id INTEGER NOT NULL REFERENCES records(id),
        run_id TEXT NOT NULL,
        cpu INTEGER NOT NULL,
        suite TEXT NOT NULL,
        backend TEXT NOT NULL,
        operation TEXT NOT NULL,
        round INTEGER NOT NULL,
        median_ns REAL NOT NULL,
        p95_ns REAL NOT NULL,
        finished_at REAL,
        capped INTEGER,
        cap_factor REAL
    );
    CREATE INDEX measurements_key ON measurements(cpu, suite, backend, operation, id);
    CREATE TABLE notes (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL,
        level TEXT NOT NULL,
        kind TEXT,
        cpu INTEGER,
        text TEXT NOT NULL
    );
    CREATE TABLE disagreements (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        record_id INTEGER NOT NULL REFERENCES records(id),
        run_id TEXT NOT NULL,
        cpu INTEGER NOT NULL,
        suite TEXT NOT NULL,
        found_at REAL
    );
    CREATE TABLE freq_samples (
        cpu INTEGER NOT NULL,
        ts REAL NOT NULL,
        cur_khz INTEGER,
        max_khz INTEGER,
        hw_max_khz INTEGER,
        capped INTEGER
    );
    CREATE INDEX freq_cpu_ts ON freq_samples(cpu, ts);
    CREATE TABLE alerts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        ts REAL NOT NULL,
        kind TEXT NOT NULL,
        severity TEXT NOT NULL,
        cpu INTEGER,
        cluster INTEGER,
        message TEXT NOT NULL,
        details TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX alerts_ts ON alerts(ts);
    """,
    # 1 -> 2: retention (Store.maintain) deletes by run and by time; alerts it removes
    # still count in alert_counts (qprof_alerts_total is a counter and must not drop).
    """
    CREATE INDEX measurements_run ON measurements(run_id);
    CREATE INDEX notes_run ON notes(run_id);
    CREATE INDEX disagreements_run ON disagreements(run_id);
    CREATE INDEX runs_started ON runs(started_at);
    CREATE INDEX freq_ts ON freq_samples(ts);
    ALTER TABLE runs ADD COLUMN samples_stripped INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE alert_totals (kind TEXT PRIMARY KEY, pruned INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT);
    """,
    # 2 -> 3: every run's estimates per series (consensus.trend's run points, as
    # codec.point_to_dict JSON), kept after retention strips or drops the run itself, so a
    # series stays judgeable (store_points.py). ``series`` is the series key's JSON.
    """
    CREATE TABLE run_points (
        run_id TEXT NOT NULL,
        series TEXT NOT NULL,
        cpu INTEGER NOT NULL,
        backend TEXT NOT NULL,
        operation TEXT NOT NULL,
        started_at REAL NOT NULL,
        point TEXT NOT NULL,
        PRIMARY KEY (run_id, series)
    );
    CREATE INDEX run_points_started ON run_points(started_at);
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
# A read-only Store (history, export, the monitor) can read any version from this on.
READABLE_FROM = 1
