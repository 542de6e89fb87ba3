"""The store's file: where it lives, how it is opened, and what goes wrong opening it.

One file (``qprof.db`` under the state dir) in WAL mode, so the monitor can read while
the daemon writes. Writers create it; readers never do, and open it read-only.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from qprof.atomicfile import OutputError, private_dir
from qprof.userfile import UserFileError, regular_or_absent

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

    Raises StoreError for a reader whose store does not exist and for a path that is not
    a regular file (a FIFO would hang SQLite's open), sqlite3.Error or OSError for the
    rest (the caller says which file).
    """
    note = None
    try:
        exists = path == ":memory:" or regular_or_absent(path, "store")
        if not readonly and not exists:
            private_dir(Path(path).parent)
    except (UserFileError, OutputError) as exc:
        why = str(exc).removeprefix(f"{path}: ")
        raise StoreError(f"{path}: cannot open store: {why}") from None
    if readonly:
        if not exists:
            raise StoreError(f"{path}: no such store (has the daemon run?)")
        db, note = _open_readonly(path)
    else:
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


FileIdentity = tuple[int, int]  # (st_dev, st_ino)


def file_identity(path: str) -> FileIdentity | None:
    """The file a path names now (None: nothing there)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


@dataclass(frozen=True)
class FileEvent:
    """The store's file was replaced or removed under a writer, and what was done."""

    message: str
    restored: bool  # the store is back at its path (else writes go to the unlinked file)


class StoreConnection:
    """The store's one connection and its lock, shared by Store, FreqHistory and AlertLog.

    A writer remembers the file it opened and, before each write, checks that its path
    still names it. A file moved over it (`cp qprof.db t; ...; mv t qprof.db`, or a
    restore while the daemon runs) or its removal would otherwise go unnoticed: SQLite
    writes on into the unlinked file, lost at the next stop, while readers open the new
    file with the old WAL beside it. So the open store, everything committed (SQLite's
    backup API reads through the WAL), is put back at its path, the file found there is
    kept beside it as ``qprof.db.replaced-<time>``, and writing goes on. ``events`` gets
    a ``FileEvent`` saying what happened, for the daemon's loop to take (the writer that
    found it may hold locks: nobody is called from here).
    """

    RETRY_S = 60.0  # putting the store back failed (a full disk): try again this late

    def __init__(self, path: str, readonly: bool) -> None:
        self.path = path
        self.lock = threading.RLock()
        self.db, self.note = connect(path, readonly)
        self._identity = (None if readonly or path == ":memory:"
                          else file_identity(path))
        self.events: list[FileEvent] = []
        self._retry_at = 0.0

    @contextlib.contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """The lock, the file checked, and a transaction (committed at the end)."""
        with self.lock:
            self._check_file()
            with self.db:
                yield self.db

    def check_file(self) -> None:
        """The check each write makes, on its own (the daemon's loop: a replacement is
        found within a second even when nothing is written)."""
        with self.lock:
            self._check_file()

    def close(self) -> None:
        with self.lock:
            self.db.close()

    def _check_file(self) -> None:
        if self._identity is None:
            return
        found = file_identity(self.path)
        if found == self._identity or time.monotonic() < self._retry_at:
            return
        what = "replaced by another file" if found is not None else "removed"
        try:
            aside = self._put_back(found is not None)
        except (OSError, sqlite3.Error) as exc:
            self._retry_at = time.monotonic() + self.RETRY_S
            self.events.append(FileEvent(
                f"{self.path} was {what} while the daemon had it open, and putting the "
                f"store back failed ({exc}); writing goes on into the open (unlinked) "
                f"file, lost when the daemon stops; trying again in {self.RETRY_S:.0f} s",
                restored=False))
            return
        self.events.append(FileEvent(
            f"{self.path} was {what} while the daemon had it open; the store the daemon "
            "had open, everything it recorded, is back at that path"
            + (f", and the file found there is kept as {aside}" if aside else "")
            + " (to use another store file, stop the daemon first)", restored=True))

    def _put_back(self, replaced: bool) -> str | None:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        copy = f"{self.path}.restoring-{os.getpid()}"
        for leftover in (copy, copy + "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)
        target = sqlite3.connect(copy)
        try:
            self.db.backup(target)
        finally:
            target.close()
        aside = None
        if replaced:
            aside = f"{self.path}.replaced-{stamp}"
            os.rename(self.path, aside)
        os.rename(copy, self.path)
        # Closed before the copy is opened: closing checkpoints into the unlinked file
        # and removes the WAL beside the path, which belongs to it, not to the copy.
        self.db.close()
        self.db, _ = connect(self.path, readonly=False)
        self._identity = file_identity(self.path)
        return aside


class OnConnection:
    """What Store, FreqHistory and AlertLog share: the one :class:`StoreConnection`, read
    through it at every use (putting a replaced store back swaps its ``db``)."""

    _conn: StoreConnection

    @property
    def _db(self) -> sqlite3.Connection:
        return self._conn.db

    @property
    def _lock(self) -> threading.RLock:
        return self._conn.lock
