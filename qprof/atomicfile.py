"""Every file qprof writes (``-o`` of check, report, export, calibrate; ``report --html``;
``adversary --out`` and its cache; the monitor's export): the one writer.

A regular file (or a new one) is written whole or not at all: ``NAME.PID.tmp`` beside it,
then renamed over it, so a full disk or ``ulimit -f`` leaves the file as it was, never a
partial or 0-byte one. Anything else is written in place and never renamed over: a device
(``-o /dev/full`` as root once replaced the device node with a regular file), a FIFO,
``/dev/stdout``; a symlink is followed (its target written as above), never replaced.

:func:`check_writable` says before any work is done whether a path can be written (a
directory, ``file/sub.jsonl``, ``/proc/version``, a missing directory, no permission), so
a run of minutes is not lost at its end. A failed write or check is :class:`OutputError`,
one line naming the path; ``qprof.cli`` prints it and exits 2.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TextIO

from qprof.userfile import kernel_tree


class OutputError(Exception):
    """The output could not be written (the message names where, and why)."""


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _in_place(path: Path) -> bool:
    """Write into ``path`` itself: it exists and is not a regular file (after symlinks)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        # A dangling symlink or /proc/self/fd/N of a pipe: open() knows what to do.
        return os.path.islink(path)
    except OSError:
        return False  # the checks below say why
    return not stat.S_ISREG(mode)


def _target(path: Path) -> Path:
    """The file a rename replaces: a symlink's target (the link is kept)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def check_writable(path: str | Path) -> Path:
    """``path`` if it can be written, else :class:`OutputError` saying why (call it before
    the work whose result goes there)."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        parent = next((p for p in path.parents if p.exists()), None)
        raise OutputError(f"cannot write {path}: {parent} is not a directory") from None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {_why(exc)}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"cannot write {path}: it is a directory")
    tree = kernel_tree(path)
    if st is not None and stat.S_ISREG(st.st_mode) and tree is not None:
        raise OutputError(f"cannot write {path}: a kernel file under {tree}")
    if _in_place(path):
        if st is not None and not os.access(path, os.W_OK):
            raise OutputError(f"cannot write {path}: permission denied")
        return path
    if st is not None and not os.access(path, os.W_OK):
        raise OutputError(f"cannot write {path}: permission denied")
    parent = _target(path).parent
    if not parent.is_dir():
        why = "is not a directory" if parent.exists() else "does not exist"
        raise OutputError(f"cannot write {path}: the directory {parent} {why}")
    # The one sure test: create the temporary file the write will use, and remove it.
    probe = AtomicFile(path)
    probe.discard()
    return path


class AtomicFile:
    """A file written in pieces and then :meth:`commit`-ted: renamed over ``path`` (a
    regular file), or written in place (a device, FIFO). Until then ``path`` is as it was;
    :meth:`discard` removes what was written."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._tmp: Path | None = None
        self._target = self.path
        self._failed: str | None = None
        self._fh: TextIO | None = None
        try:
            if _in_place(self.path):
                self._fh = open(self.path, "w", encoding="utf-8")  # noqa: SIM115
                return
            target = _target(self.path)
            self._tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
            fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                         0o666)
            with contextlib.suppress(OSError):  # keep an existing file's permissions
                os.chmod(fd, stat.S_IMODE(os.stat(target).st_mode))
            self._fh = open(fd, "w", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            self.discard()
            raise OutputError(f"cannot write {self.path}: {_why(exc)}") from None
        self._target = target

    def _fail(self, exc: OSError) -> OutputError:
        self.discard()
        self._failed = f"cannot write {self.path}: {_why(exc)}"
        return OutputError(self._failed)

    def write(self, text: str) -> None:
        if self._failed:
            raise OutputError(self._failed)
        assert self._fh is not None
        try:
            self._fh.write(text)
        except OSError as exc:
            raise self._fail(exc) from None

    def flush(self) -> None:
        """Hand what was written to the kernel (a crash of qprof then loses none of it:
        it is in the temporary file)."""
        if self._failed:
            raise OutputError(self._failed)
        assert self._fh is not None
        try:
            self._fh.flush()
        except OSError as exc:
            raise self._fail(exc) from None

    def commit(self) -> Path:
        """The file complete at ``path``; OutputError (and ``path`` as it was) if not."""
        if self._failed:
            raise OutputError(self._failed)
        assert self._fh is not None
        try:
            self._fh.flush()
            if self._tmp is not None:
                os.fsync(self._fh.fileno())
            self._fh.close()
            if self._tmp is not None:
                os.replace(self._tmp, self._target)
                self._tmp = None
        except OSError as exc:
            raise self._fail(exc) from None
        return self.path

    def discard(self) -> None:
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                self._tmp.unlink()
            self._tmp = None


def write_file(path: str | Path, text: str) -> Path:
    """``text`` into ``path``, whole or not at all; the path written."""
    out = AtomicFile(path)
    out.write(text)
    return out.commit()
