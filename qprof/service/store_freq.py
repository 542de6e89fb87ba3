"""The store's frequency history (``freq_samples``): downsampled as it arrives, thinned
with age, cap edges always kept exact."""

from __future__ import annotations

from typing import Any

from qprof.service.retention import FREQ_MIN_SPACING_S, Retention
from qprof.service.store_file import OnConnection, StoreConnection

# (cpu, ts, cur_khz, max_khz, hw_max_khz, capped)
FreqRow = tuple[int, float, int | None, int | None, int | None, bool | None]


class FreqHistory(OnConnection):
    """Per-CPU frequency samples in the store's database (its connection and lock)."""

    def __init__(self, conn: StoreConnection) -> None:
        self._conn = conn
        # Per CPU, the last kept sample's (ts, max_khz, capped): what downsampling compares to.
        self._last: dict[int, tuple[float, int | None, int | None]] = {}

    def add(self, samples: list[FreqRow], force: bool = False) -> int:
        """Store samples, downsampled; returns how many were kept.

        A sample is kept when its CPU has none in the last FREQ_MIN_SPACING_S seconds or
        its max_khz/capped changed (so cap edges are exact).
        """
        kept = 0
        with self._conn.writing():
            for cpu, ts, cur, mx, hw, capped in samples:
                kept += self.insert(cpu, ts, cur, mx, hw, capped, force)
        return kept

    def insert(self, cpu: int, ts: float, cur: int | None, mx: int | None,
               hw: int | None, capped: bool | None, force: bool) -> int:
        """One sample, downsampled (1 if kept); the caller holds the lock and a transaction."""
        if cur is None and mx is None and hw is None and capped is None:
            return 0  # no cpufreq data (a VM): a row would say nothing
        last = self._last.get(cpu)
        if (not force and last is not None and ts - last[0] < FREQ_MIN_SPACING_S
                and last[1] == mx and last[2] == (None if capped is None else int(capped))):
            return 0
        self._db.execute(
            "INSERT INTO freq_samples(cpu, ts, cur_khz, max_khz, hw_max_khz, capped) "
            "VALUES (?,?,?,?,?,?)",
            (cpu, ts, cur, mx, hw, None if capped is None else int(capped)),
        )
        self._last[cpu] = (ts, mx, None if capped is None else int(capped))
        return 1

    def history(self, cpu: int, since: float = 0.0) -> list[tuple[float, int | None,
                                                                   int | None]]:
        """(ts, cur_khz, max_khz) of one CPU since ``since``, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT ts, cur_khz, max_khz FROM freq_samples WHERE cpu=? AND ts>=? "
                "ORDER BY ts", (cpu, since)).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def thin(self, ret: Retention, now: float) -> int:
        """Apply the retention policy to the history; returns how many samples went.
        The caller holds the lock and a transaction."""
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
