"""Writes the store could not take (a full disk), held in memory in their order and
written once it takes them again: the run's End with them, so the run is closed too.
Lost only if the daemon stops first (it says how many)."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections import deque

from qprof.measure.records import Record
from qprof.service.alerts import Alert
from qprof.service.store import Store

log = logging.getLogger("qprof.daemon")

MAX_HELD = 20_000  # records and alerts; a cycle makes tens, a day of full disk a few thousand


class HeldWrites:
    """Run records and alerts for the store, in order; what fails waits here."""

    def __init__(self, store: Store, max_held: int = MAX_HELD) -> None:
        self.store = store
        self.max_held = max_held
        self.error: str | None = None  # why the oldest held item could not be written
        self.dropped = 0  # the oldest, dropped past max_held
        self._held: deque[Record | Alert] = deque()
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        return len(self._held)

    def put(self, item: Record | Alert) -> bool:
        """Write the held items, then ``item``; False when some are held (see ``error``)."""
        with self._lock:
            self._held.append(item)
            if len(self._held) > self.max_held:
                self._held.popleft()
                self.dropped += 1
                if self.dropped == 1:
                    log.error("store: over %d writes held in memory; the oldest are dropped",
                              self.max_held)
            return self._write_held()

    def flush(self) -> bool:
        """Write what is held; True when nothing is held any more."""
        with self._lock:
            return self._write_held()

    def _write_held(self) -> bool:
        while self._held:
            item = self._held[0]
            try:
                if isinstance(item, Alert):
                    self.store.alerts.add(item)
                else:
                    self.store.add(item)
            except (sqlite3.IntegrityError, sqlite3.DataError) as exc:
                # Not the disk: this write would fail again and hold up all the others.
                log.error("store: %s %s not saved: %s", type(item).__name__.lower(),
                          getattr(item, "run_id", None) or getattr(item, "kind", ""), exc)
            except sqlite3.Error as exc:  # full, read-only, I/O error, locked: wait
                self.error = str(exc)
                return False
            self._held.popleft()
        self.error = None
        return True
