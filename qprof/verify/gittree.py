"""A directory's git tree hash, computed by qprof from the files themselves while they are
copied: what a source checkout holds, whatever its ``.git`` says.

A checkout's HEAD, refs and ``refs/replace`` are its own to set (issue 49, finding 9: a
two-file project passed as liboqs 0.16.0); its files' tree hash is not. The hash is git's
(``git write-tree`` of the same files): blobs, executable bits, symbolic links, no empty
directories; the top ``.git`` is left out. The copy is what gets built, so the files
checked are the files compiled.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from qprof.userfile import kernel_tree

MAX_BYTES = 512 << 20  # the liboqs 0.16.0 tree is 78 MB
MAX_ENTRIES = 60_000  # and 7,132 files and directories


class TreeError(ValueError):
    """The directory cannot be hashed (a special file, unreadable, too large)."""


def _object(kind: bytes, data: bytes) -> bytes:
    return hashlib.sha1(b"%s %d\0" % (kind, len(data)) + data).digest()


class _Copy:
    def __init__(self) -> None:
        self.bytes = 0
        self.entries = 0

    def count(self, size: int, where: Path) -> None:
        self.bytes += size
        self.entries += 1
        if self.bytes > MAX_BYTES or self.entries > MAX_ENTRIES:
            raise TreeError(f"{where}: more than {MAX_BYTES >> 20} MB or {MAX_ENTRIES} "
                            "entries: not the source tree")

    def file(self, src: Path, dest: Path) -> tuple[bytes, bytes]:
        """(mode, blob id) of one regular file, copied to ``dest``."""
        try:
            fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise TreeError(f"{src}: cannot read: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise TreeError(f"{src}: not a regular file")
            self.count(st.st_size, src)
            data = f.read(st.st_size + 1)
        if len(data) != st.st_size:
            raise TreeError(f"{src}: changed while it was read")
        executable = bool(st.st_mode & stat.S_IXUSR)
        mode = 0o755 if executable else 0o644
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                      | os.O_CLOEXEC, mode)
        with os.fdopen(out, "wb") as w:
            w.write(data)
        return (b"100755" if executable else b"100644"), _object(b"blob", data)

    def tree(self, src: Path, dest: Path, top: bool) -> bytes | None:
        """The tree id of ``src`` (None: it holds no file, as git keeps no such tree)."""
        dest.mkdir(mode=0o700)
        entries: list[tuple[bytes, bytes, bytes, bytes]] = []
        try:
            listing = sorted(os.scandir(src), key=lambda e: e.name)
        except OSError as exc:
            raise TreeError(f"{src}: cannot list: {exc.strerror or exc}") from None
        for entry in listing:
            if top and entry.name == ".git":
                continue
            name = os.fsencode(entry.name)
            st = entry.stat(follow_symlinks=False)
            self.count(0, Path(entry.path))
            if stat.S_ISDIR(st.st_mode):
                sub = self.tree(Path(entry.path), dest / entry.name, False)
                if sub is not None:
                    entries.append((name + b"/", b"40000", name, sub))
            elif stat.S_ISLNK(st.st_mode):
                target = os.readlink(entry.path)
                os.symlink(target, dest / entry.name)
                entries.append((name, b"120000", name, _object(b"blob", os.fsencode(target))))
            elif stat.S_ISREG(st.st_mode):
                mode, blob = self.file(Path(entry.path), dest / entry.name)
                entries.append((name, mode, name, blob))
            else:
                raise TreeError(f"{entry.path}: not a regular file, directory or link")
        if not entries and not top:
            return None
        entries.sort(key=lambda e: e[0])
        return _object(b"tree", b"".join(m + b" " + n + b"\0" + d for _, m, n, d in entries))


def copy_tree(src: Path, dest: Path) -> str:
    """Copy the directory ``src`` (its top ``.git`` left out) to the new ``dest``; its git
    tree hash (hex)."""
    tree = kernel_tree(src)
    if tree is not None:
        raise TreeError(f"{src}: under {tree}, not a source tree")
    try:
        root = _Copy().tree(src, dest, True)
    except OSError as exc:
        raise TreeError(f"{exc.filename or src}: cannot copy: {exc.strerror or exc}") from None
    assert root is not None
    return root.hex()
