"""A file its owner holds locked for its life, so anyone can tell a live owner from one
killed outright (SIGKILL, the OOM killer, power loss): the kernel lets go of the lock
with the process. It is locked under a temporary name and only then renamed into place,
so nobody sees it unlocked while its owner lives. Never opened through a link."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

_OPEN = os.O_CLOEXEC | os.O_NOFOLLOW


def hold(path: Path) -> int:
    """Create ``path`` locked; the descriptor that holds it (close it to let go).
    OSError when it cannot be made (``path`` there already included)."""
    starting = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(starting, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if path.exists() or path.is_symlink():
            raise FileExistsError(f"{path} exists")
        os.rename(starting, path)  # the lock goes with the open file
    except BaseException:
        os.close(fd)
        os.unlink(starting)
        raise
    return fd


def take_if_abandoned(path: Path) -> int | None:
    """The lock of ``path`` when its owner is gone (a descriptor holding it: remove what
    it guarded, then close it); None while an owner holds it, or when there is no such
    regular file (missing, a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | _OPEN)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def state(path: Path) -> bool | None:
    """True: an owner holds ``path``; False: it is there and nobody holds it (its owner
    is gone); None: no such file."""
    fd = take_if_abandoned(path)
    if fd is None:
        return True if os.path.isfile(path) and not os.path.islink(path) else None
    os.close(fd)
    return False
