"""A run's working directory (job files, results, fixtures) in the temporary directory,
and the sweep of those a killed run left behind (SIGKILL, the OOM killer, ``os._exit``):
its run holds a lock file inside for its life (:mod:`qprof.owner_lock`), so a directory
whose lock is free belongs to nobody.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from qprof import owner_lock

PREFIX = "qprof-run-"
LOCK = "owner.lock"
# A directory without a lock file: a qprof before the lock, or one being created. Left
# alone until this old (its mtime moves with every file the run writes).
UNLOCKED_AGE_S = 3600.0


class RunDir:
    """A new directory for one run, held until :meth:`remove`."""

    def __init__(self, base: Path | None = None) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
        self._fd = owner_lock.hold(self.path / LOCK)

    def remove(self) -> None:
        """Delete the directory, then let go of its lock."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _abandoned(path: str, now: float) -> int | None:
    """An open descriptor keeping the run directory ``path`` while it is removed, when
    its run is gone; None when a run holds it or it is young and unlocked."""
    lock = Path(path) / LOCK
    if os.path.lexists(lock):
        return owner_lock.take_if_abandoned(lock)
    with contextlib.suppress(OSError):
        if now - os.stat(path, follow_symlinks=False).st_mtime > UNLOCKED_AGE_S:
            return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    return None


def sweep(base: Path | None = None) -> list[Path]:
    """Remove this user's run directories under ``base`` (default: the temporary
    directory) that no run holds; the directories removed. Links, other users' entries
    and anything not named as a run directory are left alone."""
    root = base or Path(tempfile.gettempdir())
    removed: list[Path] = []
    now = time.time()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(PREFIX):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue
        fd = _abandoned(entry.path, now)
        if fd is None:
            continue
        try:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
        finally:
            os.close(fd)
    return removed
