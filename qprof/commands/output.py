"""Writing a command's output: stdout, or a file given with ``-o``; the one place.

A regular file (or a new one) is written whole or not at all: ``NAME.tmp`` beside it,
then renamed over it, so a full disk leaves the file as it was and no partial or
0-byte file. Anything else is written in place and never renamed over: a device
(``-o /dev/full`` as root once replaced the device node with a regular file), a FIFO,
``/dev/stdout``; a symlink is followed (its target written as above), never replaced.

A failed write is :class:`OutputError`, one line naming where; ``qprof.cli`` prints it
and exits 2. On stdout the reader leaving (``| head``) is no error: the rest is dropped.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO, cast


class OutputError(Exception):
    """The output could not be written (the message names where, and why)."""


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def silence_stdout() -> None:
    """Point fd 1 at /dev/null: Python's flush at exit then has nothing to fail on."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class _GuardedStdout:
    """sys.stdout whose failed writes (but a broken pipe) are :class:`OutputError`: every
    ``print`` of every command then ends in one line and exit 2, not a traceback."""

    def __init__(self, raw: TextIO) -> None:
        self._raw = raw
        self._start: int | None = None  # where a regular file stood, to cut back to
        with contextlib.suppress(OSError, ValueError):
            fd = raw.fileno()
            if stat.S_ISREG(os.fstat(fd).st_mode):
                raw.flush()
                self._start = os.lseek(fd, 0, os.SEEK_CUR)

    def _do(self, fn: Callable[[], int | None]) -> int | None:
        try:
            return fn()
        except BrokenPipeError:
            raise
        except OSError as exc:
            if self._start is not None:  # `> FILE` on a full disk: no partial output
                with contextlib.suppress(OSError, ValueError):
                    os.ftruncate(self._raw.fileno(), self._start)
            silence_stdout()
            raise OutputError(f"cannot write to stdout: {_why(exc)}") from None

    def write(self, text: str) -> int | None:
        return self._do(lambda: self._raw.write(text))

    def writelines(self, lines: Iterable[str]) -> None:
        self._do(lambda: self._raw.writelines(lines))

    def flush(self) -> None:
        self._do(self._raw.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


@contextlib.contextmanager
def guarded_stdout() -> Iterator[None]:
    """For the length of a command: stdout as :class:`_GuardedStdout`, flushed at the end
    (a short output sits in the buffer until then)."""
    raw = sys.stdout
    sys.stdout = cast(TextIO, _GuardedStdout(raw))
    try:
        yield
        sys.stdout.flush()
    finally:
        sys.stdout = raw


def emit(text: str, end: str = "\n") -> bool:
    """``text`` to stdout, flushed; False (and stdout silenced) if the reader went away."""
    try:
        sys.stdout.write(text + end)
        sys.stdout.flush()
        return True
    except BrokenPipeError:
        silence_stdout()
        return False
    except OSError as exc:  # a full disk or device behind the redirection
        silence_stdout()
        raise OutputError(f"cannot write to stdout: {_why(exc)}") from None


def _in_place(path: Path) -> bool:
    """Write into ``path`` itself: it exists and is not a regular file (after symlinks)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        # A dangling symlink or /proc/self/fd/N of a pipe: open() knows what to do.
        return os.path.islink(path)
    except OSError:
        return False  # open() below says why
    return not stat.S_ISREG(mode)


def write_file(path: str | Path, text: str) -> Path:
    """``text`` into ``path`` (see the module's docstring); the path written."""
    path = Path(path)
    if _in_place(path):
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {_why(exc)}") from None
        return path
    # A symlink to a regular file: replace its target, keep the link.
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    tmp = target.with_name(target.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutputError(f"cannot write {path}: {_why(exc)}") from None
    return path


def write_output(path: str | Path | None, text: str) -> bool:
    """``text`` to ``path``, or to stdout when it is None or ``-``; True if written (False:
    the stdout reader left)."""
    if path is None or str(path) == "-":
        return emit(text, end="")
    write_file(path, text)
    return True
