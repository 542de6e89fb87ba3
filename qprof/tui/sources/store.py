"""Measurements, alerts and frequency history from a ``qprof.service.store.Store``.

The monitor reads the daemon's database (``<state-dir>/qprof.db``) or its own embedded
one. SQLite connections belong to the thread that opened them, so this source is used
from the UI thread only; measurement workers open their own writer (see
:mod:`qprof.tui.sources.measure`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from qprof.tui.sources.hardware import field_of

DAEMON_DB = "qprof.db"  # written by `qprof daemon` into its state directory
MONITOR_DB = "monitor.db"  # the monitor's own store when no daemon is running


def state_dir_default() -> Path:
    """The daemon's state directory ($STATE_DIRECTORY, $XDG_STATE_HOME/qprof, ~/.local/…)."""
    try:
        from qprof.service.store import default_state_dir

        return Path(default_state_dir())
    except ImportError:  # store module not installed yet: same rule, written here
        if os.environ.get("STATE_DIRECTORY"):
            return Path(os.environ["STATE_DIRECTORY"].split(":")[0])
        xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        return Path(xdg) / "qprof"


class StoreSource:
    """Read side of a Store. ``open()`` failures become :attr:`error`, never raise."""

    def __init__(self, path: str | Path, readonly: bool = True) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self.error: str | None = None
        self._store: Any = None

    def _open(self) -> Any:
        if self._store is None and self.error is None:
            try:
                from qprof.service.store import Store

                self._store = Store(self.path, readonly=self.readonly)
            except Exception as exc:  # noqa: BLE001 - a broken DB must not kill the UI
                self.error = f"cannot open store {self.path}: {exc}"
        return self._store

    def last_change(self) -> float | None:
        """Finish time of the newest run with results: a cheap "did anything new land"
        probe, so the slow evaluation runs only when it did."""
        store = self._open()
        if store is None or not hasattr(store, "last_finished_at"):
            return None
        try:
            return store.last_finished_at()
        except Exception as exc:  # noqa: BLE001
            self.error = f"reading {self.path}: {exc}"
            return None

    def alerts(self, limit: int = 50) -> list[Any]:
        store = self._open()
        if store is None or not hasattr(store, "recent_alerts"):
            return []
        try:
            alerts = list(store.recent_alerts(limit))
        except Exception as exc:  # noqa: BLE001
            self.error = f"reading alerts from {self.path}: {exc}"
            return []
        # Newest first, whatever order the store used.
        return sorted(alerts, key=lambda a: field_of(a, "ts") or 0.0, reverse=True)

    def freq_history(self, cpu: int, since: float) -> list[tuple[float, int]]:
        """(time, kHz) pairs of one CPU recorded by the daemon since ``since``."""
        store = self._open()
        if store is None or not hasattr(store, "freq_history"):
            return []
        try:
            rows = store.freq_history(cpu, since)
        except Exception:  # noqa: BLE001 - history is decoration; keep the UI up
            return []
        out: list[tuple[float, int]] = []
        for row in rows or ():
            if isinstance(row, tuple | list) and len(row) >= 2:
                ts, khz = row[0], row[1]
            else:
                ts, khz = field_of(row, "taken_at"), field_of(row, "cur_khz")
            if ts is not None and khz is not None:
                out.append((float(ts), int(khz)))
        return out

    def close(self) -> None:
        if self._store is not None and hasattr(self._store, "close"):
            with contextlib.suppress(Exception):
                self._store.close()
        self._store = None
