"""Which of a store's 'running' runs are still being written: the writer holds a lock file
per run beside the store (``STORE.running/RUN_ID``, :mod:`qprof.owner_lock`) from its
Meta to its End or the writer's end. A run whose file is there and free was cut short
(kill, crash, power loss): readers say so, and the daemon's start closes it. A run without
a file (an older qprof's, or a writer that could not make one) is taken as it says."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from qprof import owner_lock
from qprof.atomicfile import OutputError, private_dir

CUT_SHORT = "its process ended before the run did: killed, crashed or powered off"
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class RunLocks:
    """The locks of the runs this process writes into the store at ``db_path``."""

    def __init__(self, db_path: str) -> None:
        self.dir = Path(f"{db_path}.running")
        self._held: dict[str, int] = {}

    def _file(self, run_id: str) -> Path | None:
        return self.dir / run_id if _RUN_ID.fullmatch(run_id) else None

    def hold(self, run_id: str) -> None:
        """Lock ``run_id`` for as long as this process writes it (best effort: a run
        whose lock cannot be made is only never called cut short)."""
        path = self._file(run_id)
        if path is None or run_id in self._held:
            return
        with contextlib.suppress(OSError, OutputError):
            private_dir(self.dir)  # a link or another user's: never written through
            self.clear(run_id)  # one cut short under this id: its lock is stale
            self._held[run_id] = owner_lock.hold(path)  # held by another: FileExistsError

    def release(self, run_id: str) -> None:
        """The run ended: its file removed, its lock let go."""
        fd = self._held.pop(run_id, None)
        if fd is None:
            return
        path = self._file(run_id)
        with contextlib.suppress(OSError):
            if path is not None:
                os.unlink(path)
        os.close(fd)

    def let_go(self) -> None:
        """Every lock let go as this process's end would: a run not ended by then reads
        as cut short."""
        for fd in self._held.values():
            os.close(fd)
        self._held.clear()

    def clear(self, run_id: str) -> None:
        """The stale file of a run cut short removed (a held one is left)."""
        path = self._file(run_id)
        fd = owner_lock.take_if_abandoned(path) if path is not None else None
        if fd is not None and path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)
            os.close(fd)

    def cut_short(self, run_id: str) -> bool:
        """The run's writer is gone (its lock file is there and nobody holds it)."""
        if run_id in self._held:
            return False
        path = self._file(run_id)
        return path is not None and owner_lock.state(path) is False

    def held(self, run_id: str) -> bool:
        """A writer (this process or another) holds the run."""
        if run_id in self._held:
            return True
        path = self._file(run_id)
        return path is not None and owner_lock.state(path) is True
