"""Writing a command's output: stdout, or a file given with ``-o``; the one place.

Files go through :mod:`qprof.atomicfile` (whole or not at all; :func:`check_output`
before any work); stdout is guarded here. A failed write is :class:`OutputError`, one
line naming where; ``qprof.cli`` prints it and exits 2. On stdout the reader leaving
(``| head``) is no error: the rest is dropped.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO, cast

from qprof.atomicfile import OutputError, check_writable, write_file
from qprof.untrusted import MAX_SHOWN, one_line, without_controls

__all__ = ["OutputError", "check_output", "emit", "guarded_stdout", "own_terminal", "shown",
           "silence_stdout", "write_file", "write_output"]


def shown(value: object, limit: int = MAX_SHOWN) -> str:
    """A string from a run, a profile, Prometheus or /sys as terminal text: one bounded
    line (``qprof.untrusted``). Whatever a command prints then passes the guard below,
    which lets no control character but newline and tab reach the terminal."""
    return one_line(value, limit)


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
        return self._do(lambda: self._raw.write(without_controls(text)))

    def writelines(self, lines: Iterable[str]) -> None:
        self._do(lambda: self._raw.writelines(without_controls(x) for x in lines))

    def flush(self) -> None:
        self._do(self._raw.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class _PlainStderr:
    """sys.stderr without control characters but newline and tab (error lines name what
    a run or a profile holds). Progress lines keep the stream they were given at import."""

    def __init__(self, raw: TextIO) -> None:
        self._raw = raw

    def write(self, text: str) -> int:
        return self._raw.write(without_controls(text))

    def writelines(self, lines: Iterable[str]) -> None:
        self._raw.writelines(without_controls(x) for x in lines)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


@contextlib.contextmanager
def guarded_stdout() -> Iterator[None]:
    """For the length of a command: stdout as :class:`_GuardedStdout`, flushed at the end
    (a short output sits in the buffer until then), and stderr as :class:`_PlainStderr`."""
    raw, raw_err = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, _GuardedStdout(raw))
    sys.stderr = cast(TextIO, _PlainStderr(raw_err))
    try:
        yield
        sys.stdout.flush()
    finally:
        sys.stdout, sys.stderr = raw, raw_err


def own_terminal() -> TextIO:
    """stdout for qprof's own terminal controls (a progress line rewritten in place with
    CR and ESC[K), which the guard would strip: only text qprof wrote goes here."""
    out = sys.stdout
    return out._raw if isinstance(out, _GuardedStdout) else out


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


def check_output(path: str | Path | None) -> None:
    """Before any work: OutputError unless ``path`` (None or ``-``: stdout) can be
    written."""
    if path is not None and str(path) != "-":
        check_writable(path)


def write_output(path: str | Path | None, text: str) -> bool:
    """``text`` to ``path``, or to stdout when it is None or ``-``; True if written (False:
    the stdout reader left)."""
    if path is None or str(path) == "-":
        return emit(text, end="")
    write_file(path, text)
    return True
