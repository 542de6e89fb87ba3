"""The store's alert log (``alerts``, and ``alert_totals``: what retention removed, so
the count of alerts ever raised never drops)."""

from __future__ import annotations

import json

from qprof.service.alerts import Alert
from qprof.service.store_file import OnConnection, StoreConnection, user_version


class AlertLog(OnConnection):
    """Alerts in the store's database (its connection and lock)."""

    def __init__(self, conn: StoreConnection) -> None:
        self._conn = conn

    def add(self, alert: Alert) -> None:
        with self._conn.writing():
            self._db.execute(
                "INSERT INTO alerts(ts, kind, severity, cpu, cluster, message, details) "
                "VALUES (?,?,?,?,?,?,?)",
                (alert.ts, alert.kind, alert.severity, alert.cpu, alert.cluster,
                 alert.message, json.dumps(alert.details, default=str)),
            )

    def recent(self, limit: int = 50) -> list[Alert]:
        """The newest ``limit`` alerts, newest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT ts, kind, severity, cpu, cluster, message, details FROM alerts "
                "ORDER BY ts DESC, id DESC LIMIT ?", (limit,)).fetchall()
        return [Alert(ts=r[0], kind=r[1], severity=r[2], cpu=r[3], cluster=r[4],
                      message=r[5], details=json.loads(r[6] or "{}")) for r in rows]

    def newest_of(self, kinds: tuple[str, ...], limit: int = 2000) -> list[Alert]:
        """The newest ``limit`` alerts of ``kinds``, newest first (what a restarted daemon
        last announced of a state)."""
        marks = ",".join("?" * len(kinds))
        with self._lock:
            rows = self._db.execute(
                "SELECT ts, kind, severity, cpu, cluster, message, details FROM alerts "
                f"WHERE kind IN ({marks}) ORDER BY ts DESC, id DESC LIMIT ?",
                (*kinds, limit)).fetchall()
        return [Alert(ts=r[0], kind=r[1], severity=r[2], cpu=r[3], cluster=r[4],
                      message=r[5], details=json.loads(r[6] or "{}")) for r in rows]

    def counts(self) -> dict[str, int]:
        """Alerts ever stored, per kind (so qprof_alerts_total survives restarts),
        including those retention removed since."""
        with self._lock:
            if user_version(self._db) < 2:  # read-only view of an older store
                rows = self._db.execute("SELECT kind, COUNT(*) FROM alerts GROUP BY kind")
                return {k: int(n) for k, n in rows}
            rows = self._db.execute(
                "SELECT kind, SUM(n) FROM (SELECT kind, COUNT(*) AS n FROM alerts GROUP BY "
                "kind UNION ALL SELECT kind, pruned FROM alert_totals) GROUP BY kind")
            return {k: int(n) for k, n in rows}

    def prune(self, before: float) -> int:
        """Remove alerts older than ``before``, adding them to the totals; returns how
        many. The caller holds the lock and a transaction."""
        counts = self._db.execute("SELECT kind, COUNT(*) FROM alerts WHERE ts<? "
                                  "GROUP BY kind", (before,)).fetchall()
        for kind, n in counts:
            self._db.execute(
                "INSERT INTO alert_totals(kind, pruned) VALUES (?, ?) ON CONFLICT"
                "(kind) DO UPDATE SET pruned=pruned+excluded.pruned", (kind, n))
        self._db.execute("DELETE FROM alerts WHERE ts<?", (before,))
        return sum(n for _, n in counts)
