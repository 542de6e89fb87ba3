"""The store's file: where it lives, how it is opened, and what goes wrong opening it.

One file (``qprof.db`` under the state dir) in WAL mode, so the monitor can read while
the daemon writes. Writers create it; readers never do, and open it read-only.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

DB_NAME = "qprof.db"


class StoreError(RuntimeError):
    """The store cannot be opened or written (message says which file and why)."""


class StoreBusy(StoreError):
    """Another process holds the store's lock (a backup, a VACUUM): try again later."""


def damaged(path: str | Path, exc: Exception) -> str:
    """One line for a store whose pages are damaged (readers leave the file alone)."""
    return (f"{path}: the store is damaged ({exc}); the file is left as it is "
            f"(`sqlite3 {path} .recover` saves what is still readable)")


def is_busy(exc: BaseException) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED (any extended code): the lock is held elsewhere."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


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


def connect(path: str, readonly: bool) -> tuple[sqlite3.Connection, str | None]:
    """The connection, and a note when a read-only store had to be opened unusually.

    Raises StoreError for a reader whose store does not exist, sqlite3.Error or OSError
    for the rest (the caller says which file).
    """
    note = None
    if readonly:
        if path != ":memory:" and not Path(path).exists():
            raise StoreError(f"{path}: no such store (has the daemon run?)")
        db, note = _open_readonly(path)
    else:
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable across process crashes in WAL mode (only an OS crash may
        # lose the last transactions), and cheap.
        db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA busy_timeout=5000")
    return db, note


def _open_readonly(path: str) -> tuple[sqlite3.Connection, str | None]:
    """``mode=ro``; where even that cannot work (a WAL store whose -shm file cannot be
    created: a read-only filesystem or directory) the file as an immutable snapshot,
    with a note that says so."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db, None
    except sqlite3.OperationalError as exc:
        db.close()
        if (exc.sqlite_errorcode & 0xFF) != sqlite3.SQLITE_CANTOPEN:
            raise
    note = (f"{path}: on a read-only filesystem or directory; read as an immutable "
            "snapshot (what a daemon wrote since is not seen)")
    return sqlite3.connect(f"file:{path}?immutable=1", uri=True, check_same_thread=False), note


def user_version(db: sqlite3.Connection) -> int:
    """The schema version (``PRAGMA user_version``) of an open store."""
    return int(db.execute("PRAGMA user_version").fetchone()[0])
