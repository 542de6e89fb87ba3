"""One measurement per machine: a lock every qprof process that measures or signs takes.

``/run/lock/qprof-measure.lock`` (else ``/tmp``; ``$QPROF_LOCK_DIR`` for tests): the
directory must be root's, sticky and not a link; the file is opened with O_NOFOLLOW and
must be a regular file. Who holds it (pid, user, command) comes from ``/proc/locks`` and
``/proc/PID``, never from the file; the holder's expected end is read from the file only
when it is this user's or root's. Another user's process that is not qprof is not
waited for. Pool growers never take it: they exit as soon as anyone holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from qprof.untrusted import one_line

LOCK_NAME = "qprof-measure.lock"
DIR_ENV = "QPROF_LOCK_DIR"
CANDIDATES = ("/run/lock", "/tmp")
POLL_S = 0.2
_MAX_READ = 256
_held = 0  # this process holds the lock (one measurement at a time in a process)


@dataclass(frozen=True)
class Holder:
    """The process that holds the machine lock, as the kernel says."""

    pid: int
    user: str
    command: str
    ends_at: float | None  # its own estimate (epoch seconds), when readable and trusted
    is_qprof: bool = False  # ``qprof ...`` or ``python -m qprof...``

    def text(self, now: float | None = None) -> str:
        left = ""
        if self.ends_at is not None:
            left = f", about {max(0.0, self.ends_at - (now or time.time())):.0f} s left"
        return (f"waiting for another qprof measurement to finish: pid {self.pid} "
                f"({self.user}: {self.command}){left}")


def _root_uids() -> set[int]:
    """Root as this process sees it: 0, or in a user namespace that does not map the
    host's root (systemd's PrivateUsers=), the overflow uid its files show."""
    uids = {0, os.geteuid()}
    try:
        mapped = Path("/proc/self/uid_map").read_text().split()
        if mapped[:3] != ["0", "0", "4294967295"]:
            uids.add(int(Path("/proc/sys/kernel/overflowuid").read_text()))
    except (OSError, ValueError):
        pass
    return uids


def _safe_dir(path: str) -> bool:
    """Root's (or this user's), not a link, sticky when others may write it."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid not in _root_uids():
        return False
    return not (st.st_mode & 0o002) or bool(st.st_mode & stat.S_ISVTX)


def lock_dir() -> Path | None:
    """Where the machine lock lives (None: no safe place; runs then lock per user)."""
    chosen = os.environ.get(DIR_ENV)
    for d in ((chosen,) if chosen else CANDIDATES):
        if _safe_dir(d) and os.access(d, os.W_OK | os.X_OK):
            return Path(d)
    return None


def lock_path() -> Path | None:
    d = lock_dir()
    return d / LOCK_NAME if d else None


def _open(path: Path) -> tuple[int, bool] | None:
    """(fd, trusted) of the lock file: a regular file, never a link; trusted when this
    user's or root's (only then is its content read or written)."""
    flags = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    fd = -1
    with contextlib.suppress(OSError):
        fd = os.open(path, flags | os.O_RDWR | os.O_CREAT, 0o644)
    if fd < 0:
        with contextlib.suppress(OSError):
            fd = os.open(path, flags | os.O_RDONLY)
    if fd < 0:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        return None
    return fd, st.st_uid in (0, os.geteuid())


def _proc_text(pid: int, name: str) -> str:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()[:4096].decode(errors="replace")
    except OSError:
        return ""


def _user(pid: int) -> str:
    for line in _proc_text(pid, "status").splitlines():
        if line.startswith("Uid:"):
            uid = int(line.split()[1])
            try:
                return pwd.getpwuid(uid).pw_name
            except KeyError:
                return f"uid {uid}"
    return "?"


def _lock_pids(st: os.stat_result) -> list[int]:
    """Pids holding (not waiting for) a lock on the file of ``st``, from /proc/locks."""
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/locks").read_text().splitlines():
            parts = line.split()
            if len(parts) >= 6 and parts[1] != "->" and parts[5] == key:
                with contextlib.suppress(ValueError):
                    pids.append(int(parts[4]))
    return pids


def _ends_at(fd: int, trusted: bool, pid: int) -> float | None:
    if not trusted:
        return None
    with contextlib.suppress(OSError, ValueError):
        words = os.pread(fd, _MAX_READ, 0).decode().split()
        if len(words) == 2 and int(words[0]) == pid:
            return float(words[1])
    return None


def holder(path: Path | None = None) -> Holder | None:
    """Who holds the machine lock now (None: nobody, or no lock here)."""
    path = path or lock_path()
    if path is None:
        return None
    opened = _open(path)
    if opened is None:
        return None
    fd, trusted = opened
    try:
        pids = [p for p in _lock_pids(os.fstat(fd)) if p != os.getpid()]
        if not pids:
            return None
        pid = pids[0]
        argv = _proc_text(pid, "cmdline").split("\0")
        command = one_line(" ".join(argv).strip(), 120)
        return Holder(pid, _user(pid), command or "?", _ends_at(fd, trusted, pid),
                      _qprof_argv(argv))
    finally:
        os.close(fd)


def _qprof_argv(argv: list[str]) -> bool:
    """``qprof COMMAND`` (its entry point) or ``python -m qprof[.module]``."""
    if argv[:1] and os.path.basename(argv[0]) == "qprof":
        return True
    pairs = zip(argv, argv[1:], strict=False)
    return any(a == "-m" and b.split(".")[0] == "qprof" for a, b in pairs)


def someone_measures(path: Path | None = None) -> bool:
    """A measurement holds the lock (growers check this often and yield at once)."""
    return holder(path) is not None


def _waited_for(h: Holder) -> bool:
    """A holder worth waiting for: qprof, a process of this user or root, or one this
    process may not see (a sandboxed daemon: better wait than measure beside it)."""
    me = pwd.getpwuid(os.geteuid()).pw_name if os.geteuid() else "root"
    return h.is_qprof or h.user in (me, "root", "?") or h.command == "?"


@contextlib.contextmanager
def machine_lock(expected_s: float | None = None,
                 on_wait: Callable[[Holder], None] | None = None,
                 path: Path | None = None) -> Iterator[Holder | None]:
    """Hold the machine lock for a measurement; wait while another qprof holds it
    (``on_wait`` told who, once a second). Yields who was waited for (None: nobody).
    Held already by this process (a daemon's cycle around its runs): nothing more."""
    global _held
    path = path or lock_path()
    opened = _open(path) if path is not None and not _held else None
    if opened is None:
        yield None
        return
    fd, trusted = opened
    waited: Holder | None = None
    told = 0.0
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                h = holder(path)
                if h is not None and not _waited_for(h):
                    break  # another user's non-qprof process never holds a run back
                if h is not None:
                    waited = h
                    if on_wait is not None and time.monotonic() - told >= 1.0:
                        told = time.monotonic()
                        on_wait(h)
                time.sleep(POLL_S)
            except OSError:
                break
        if trusted and expected_s is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()} {time.time() + expected_s:.0f}\n".encode(), 0)
        _held += 1
        try:
            yield waited
        finally:
            _held -= 1
    finally:
        if trusted:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
        os.close(fd)  # closing releases the lock
