"""Every file qprof writes: the one writer (history of each rule: docs/ARCHITECTURE.md).

A file the user names (``-o``, ``report --html``, ``adversary --out``) is written whole or
not at all (``NAME.PID.tmp`` beside it, then renamed); a device or FIFO in place, a
symlink's target as above. Files qprof names itself (the state dir's lock and exports, caches,
snapshots) go into a :func:`private_dir` (0700, this user's or root's) by
:func:`write_private` / :func:`open_private`: never through a symlink (``O_NOFOLLOW`` from
the directory's descriptor), nothing qprof did not write replaced or removed. Every
failure is :class:`OutputError`, one line naming the path (``qprof.cli``: exit 2).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
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
            fd, self._tmp = _new_tmp(target)
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


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _new_tmp(target: Path, dir_fd: int | None = None) -> tuple[int, Path]:
    """A temporary file beside ``target`` made for this write (``NAME.PID.tmp``, or a
    random name where one is there): never an existing file or a link's target."""
    names = [f"{target.name}.{os.getpid()}.tmp"]
    names += [f"{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp" for _ in range(8)]
    for name in names:
        tmp = target.with_name(name)
        try:
            return os.open(name if dir_fd is not None else tmp, _CREATE, 0o666,
                           dir_fd=dir_fd), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{target}: no free temporary name beside it")


def _check_dir(path: Path, st: os.stat_result) -> None:
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(f"cannot write in {path}: it is not a directory")
    if st.st_uid not in (os.geteuid(), 0):
        raise OutputError(f"cannot write in {path}: owned by uid {st.st_uid}, not by this "
                          "user; qprof writes only into its own directories")
    if st.st_mode & 0o002 and not st.st_mode & stat.S_ISVTX:
        raise OutputError(f"cannot write in {path}: anyone may write there; qprof writes "
                          "only into its own directories")


def make_dirs(path: str | Path) -> Path:
    """``path`` and its missing parents made, each 0700 (OutputError saying why not)."""
    p = Path(path)
    missing = [d for d in (p, *p.parents) if not os.path.lexists(d)]
    try:
        for d in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(d, 0o700)
    except OSError as exc:
        raise OutputError(f"cannot write in {p}: {_why(exc)}") from None
    return p


def private_dir(path: str | Path) -> Path:
    """``path`` as a directory qprof writes its own files into: made 0700 where missing
    (:func:`make_dirs`), else checked: a directory of this user (or root) that others
    cannot write. :class:`OutputError` saying why not."""
    p = make_dirs(path)
    try:
        st = os.stat(p)
    except OSError as exc:
        raise OutputError(f"cannot write in {p}: {_why(exc)}") from None
    _check_dir(p, st)
    return p


def open_new(path: str | Path) -> TextIO:
    """A new file at ``path`` written line by line (``bench -o``): its directory made
    where missing, never an existing file or a link's target (O_EXCL, O_NOFOLLOW)."""
    p = Path(path)
    make_dirs(p.parent)
    try:
        return open(os.open(p, _CREATE, 0o666), "w", encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"cannot write {p}: {_why(exc)}") from None


@contextlib.contextmanager
def _dir_fd(directory: Path) -> Iterator[int]:
    """The descriptor of :func:`private_dir` ``directory`` (checked again on it)."""
    private_dir(directory)
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise OutputError(f"cannot write in {directory}: {_why(exc)}") from None
    try:
        _check_dir(directory, os.fstat(fd))
        yield fd
    finally:
        os.close(fd)


def _lmode(name: str, dir_fd: int) -> int:
    return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode


def _not_ours(path: Path, mode: int) -> OutputError:
    kind = ("a symbolic link" if stat.S_ISLNK(mode) else
            "a directory" if stat.S_ISDIR(mode) else "not a regular file")
    return OutputError(f"cannot write {path}: it is {kind}, which qprof did not write "
                       "there; it is left as it is (remove it to let qprof write)")


def open_private(directory: str | Path, name: str, flags: int = os.O_RDWR) -> int:
    """The descriptor of ``name`` in :func:`private_dir` ``directory``, created 0600
    where missing and never through a symlink: a regular file, else OutputError."""
    d = Path(directory)
    with _dir_fd(d) as dfd:
        try:
            fd = os.open(name, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                         | os.O_NOCTTY | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                mode = _lmode(name, dfd)
                if not stat.S_ISREG(mode):
                    raise _not_ours(d / name, mode) from None
            raise OutputError(f"cannot write {d / name}: {_why(exc)}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _not_ours(d / name, mode)
    return fd


def write_private(directory: str | Path, name: str, data: str | bytes,
                  replace: bool = True) -> Path:
    """``data`` as ``name`` in :func:`private_dir` ``directory``, whole or not at all and
    never through a symlink: a temporary file made there, then renamed over a regular
    file of that name (``replace``) or linked where nothing is (else FileExistsError).
    Anything else found at ``name`` is left as it is: OutputError."""
    d = Path(directory)
    raw = data.encode() if isinstance(data, str) else data
    with _dir_fd(d) as dfd:
        try:
            mode = _lmode(name, dfd)
        except FileNotFoundError:
            mode = None
        except OSError as exc:
            raise OutputError(f"cannot write {d / name}: {_why(exc)}") from None
        if mode is not None and not (replace and stat.S_ISREG(mode)):
            if not replace and (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                raise FileExistsError(f"{d / name}: exists")
            raise _not_ours(d / name, mode)
        try:
            fd, tmp = _new_tmp(d / name, dfd)
        except OSError as exc:
            raise OutputError(f"cannot write {d / name}: {_why(exc)}") from None
        try:
            with open(fd, "wb") as out:
                out.write(raw)
                out.flush()
                os.fsync(out.fileno())
            if replace:
                os.replace(tmp.name, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            else:
                os.link(tmp.name, name, src_dir_fd=dfd, dst_dir_fd=dfd,
                        follow_symlinks=False)
        except FileExistsError:
            raise
        except OSError as exc:
            raise OutputError(f"cannot write {d / name}: {_why(exc)}") from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp.name, dir_fd=dfd)
    return d / name
