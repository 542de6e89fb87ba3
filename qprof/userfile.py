"""Reading a file that a user or a recorded run names (a profile, a --config, a
``qprof block --json`` file, the caches, a store SQLite opens): the one bounded read.

A regular file only, read up to a size cap, opened with O_NONBLOCK, and never under /proc
or /sys: their files are "regular" to stat() yet unbounded or blocking (``/proc/kmsg``
waited for kernel messages and drained the log; ``/dev/zero`` read until MemoryError).
Every way the file is unusable is one :class:`UserFileError` line starting with its path.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, TextIO

# Kernel trees whose files report a size of 0 and produce data (or block) when read.
KERNEL_TREES = ("/proc", "/sys")


class UserFileError(ValueError):
    """The file cannot be read as asked; the message starts with its path."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def kernel_tree(path: str | Path) -> str | None:
    """The kernel tree (/proc, /sys) ``path`` really lies in, else None."""
    real = os.path.realpath(path)
    return next((t for t in KERNEL_TREES if real == t or real.startswith(t + "/")), None)


def regular_or_absent(path: str | Path, what: str = "file") -> bool:
    """Whether ``path`` exists, for a library that opens it itself (SQLite): a regular
    file, never under /proc or /sys, else :class:`UserFileError` (a FIFO would hang the
    library's open)."""
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise UserFileError(f"{p}: cannot read: {exc.strerror or exc}") from None
    tree = kernel_tree(p)
    if tree is not None:
        raise UserFileError(f"{p}: a kernel file under {tree}, not a {what}")
    if not stat.S_ISREG(mode):
        raise UserFileError(f"{p}: is {_kind(mode)}, not a {what}")
    return True


def open_regular(path: str | Path, what: str = "file") -> int:
    """A descriptor of ``path`` for reading: a regular file (checked on what was opened),
    O_NONBLOCK, never under /proc or /sys; else :class:`UserFileError`. The caller bounds
    what it reads (a run's JSONL line by line)."""
    p = Path(path)
    tree = kernel_tree(p)
    if tree is not None:
        raise UserFileError(f"{p}: a kernel file under {tree}, not a {what}")
    try:
        mode = os.stat(p).st_mode
        if not stat.S_ISREG(mode):
            raise UserFileError(f"{p}: is {_kind(mode)}, not a {what}")
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise UserFileError(f"{p}: cannot read: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode  # what was opened, not what stat() saw before
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UserFileError(f"{p}: is {_kind(mode)}, not a {what}")
    return fd


def open_text(path: str | Path, what: str = "file") -> TextIO:
    """:func:`open_regular` as text (UTF-8, undecodable bytes replaced)."""
    return open(open_regular(path, what), encoding="utf-8", errors="replace")


def read_bounded(path: str | Path, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of ``path``, a regular file of at most ``max_bytes`` (``what`` names the
    kind of file in the error, e.g. "TOML file")."""
    p = Path(path)
    fd = open_regular(p, what)
    try:
        st = os.fstat(fd)
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes and st.st_size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except BlockingIOError:
        raise UserFileError(f"{p}: reading would wait for data: not a {what}") from None
    except OSError as exc:
        raise UserFileError(f"{p}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if total > max_bytes or st.st_size > max_bytes:
        size = f"{max_bytes >> 10} KiB" if max_bytes < 4 << 20 else f"{max_bytes >> 20} MiB"
        raise UserFileError(f"{p}: larger than {size}, not a {what} qprof reads")
    return b"".join(chunks)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number qprof reads")


def read_json(path: str | Path, max_bytes: int, what: str = "JSON file") -> Any:
    """The JSON value in ``path`` (:func:`read_bounded`); NaN and Infinity are refused,
    as is nesting past the parser's recursion limit, each one :class:`UserFileError`."""
    raw = read_bounded(path, max_bytes, what)
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise UserFileError(f"{path}: not UTF-8, not a {what}") from None
    except RecursionError:
        raise UserFileError(f"{path}: nested too deeply, not a {what}") from None
    except ValueError as exc:  # JSONDecodeError, a NaN, a 5000-digit number
        raise UserFileError(f"{path}: not a {what}: {str(exc)[:120]}") from None
