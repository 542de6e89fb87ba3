"""Measurements, alerts and frequency history from a ``qprof.service.store.Store``.

The monitor reads the daemon's database (``<state-dir>/qprof.db``) or its own embedded
one (``monitor.db``; where a user's stores are: :mod:`qprof.service.store_paths`).
SQLite connections belong to the thread that opened them, so this source is used from
the UI thread only; measurement workers open their own writer (see
:mod:`qprof.tui.sources.measure`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from qprof.service.alerts import Alert
from qprof.service.store import Store


class StoreSource:
    """Read side of a Store. ``open()`` failures become ``error``, never raise."""

    def __init__(self, path: str | Path, readonly: bool = True) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self.error: str | None = None
        self._store: Store | None = None

    def _open(self) -> Store | None:
        if self._store is None and self.error is None:
            try:
                self._store = Store(self.path, readonly=self.readonly)
            except Exception as exc:  # noqa: BLE001 - a broken DB must not kill the UI
                self.error = f"cannot open store {self.path}: {exc}"
        return self._store

    def last_change(self) -> float | None:
        """Finish time of the newest run with results: a cheap "did anything new land"
        probe, so the slow evaluation runs only when it did."""
        store = self._open()
        if store is None:
            return None
        try:
            return store.last_finished_at()
        except Exception as exc:  # noqa: BLE001
            self.error = f"reading {self.path}: {exc}"
            return None

    def alerts(self, limit: int = 50) -> list[Alert]:
        store = self._open()
        if store is None:
            return []
        try:
            alerts = list(store.alerts.recent(limit))
        except Exception as exc:  # noqa: BLE001
            self.error = f"reading alerts from {self.path}: {exc}"
            return []
        # Newest first, whatever order the store used.
        return sorted(alerts, key=lambda a: a.ts, reverse=True)

    def freq_history(self, cpu: int, since: float) -> list[tuple[float, int]]:
        """(time, kHz) pairs of one CPU recorded by the daemon since ``since``."""
        store = self._open()
        if store is None:
            return []
        try:
            rows = store.freq.history(cpu, since)
        except Exception:  # noqa: BLE001 - history is decoration; keep the UI up
            return []
        return [(float(ts), int(khz)) for ts, khz, _max in rows if khz is not None]

    def close(self) -> None:
        if self._store is not None:
            with contextlib.suppress(Exception):
                self._store.close()
        self._store = None
