"""The liboqs shared object qprof names: checked whole before it is loaded, loaded by its
absolute path, and compared after liboqs-python has loaded it.

A file where qprof looks may be truncated (dlopen would map pages past its end), and
liboqs-python prefers whatever ``find_library`` finds (``LD_LIBRARY_PATH``, the system)
and, when nothing loads, clones and builds an unpinned liboqs. So the ELF's tables and
segments must lie inside the file, the import runs with ``find_library`` answering the
named path and liboqs-python's installer disabled, and the library it then holds must be
the named file: same object, version and sha256 (the digest the known answers are keyed on).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import os
import stat
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from qprof.untrusted import one_line

ELF_MAGIC = b"\x7fELF"
ET_DYN = 3
PT_LOAD = 1
# liboqs-python installs liboqs when PYOQS_VERSION is a release; this is none, so its
# installer raises ValueError before any git clone (checked by the tests).
NO_INSTALL = "qprof-never-installs-liboqs"


@dataclass(frozen=True)
class NamedLibrary:
    """The liboqs file qprof loads: its resolved path, OQS_version() and sha256."""

    path: str
    version: str
    digest: str


def _header(fd: int, size: int) -> str | None:
    """Why the open ELF file is not a whole shared object, or None."""
    ident = os.pread(fd, 64, 0)
    if ident[:4] != ELF_MAGIC[:len(ident)] or not ident:
        return "not an ELF file"
    if len(ident) < (64 if ident[4:5] == b"\x02" else 52):
        return f"cut short ({size} bytes: not even its ELF header)"
    if ident[4] not in (1, 2) or ident[5] not in (1, 2):
        return "an ELF header qprof cannot read"
    bits64, order = ident[4] == 2, "<" if ident[5] == 1 else ">"
    if bits64:
        e_type, phoff, shoff = struct.unpack_from(order + "H14xQQ", ident, 16)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(order + "HHHH", ident, 54)
    else:
        e_type, phoff, shoff = struct.unpack_from(order + "H10xII", ident, 16)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(order + "HHHH", ident, 42)
    if e_type != ET_DYN:
        return "an ELF file but not a shared object"
    if phoff + phnum * phentsize > size or shoff + shnum * shentsize > size:
        return f"cut short ({size} bytes: its ELF tables lie past the end)"
    table = os.pread(fd, phnum * phentsize, phoff)
    for i in range(phnum):
        at = i * phentsize
        if bits64:
            p_type, p_offset, p_filesz = struct.unpack_from(order + "I4xQ16xQ", table, at)
        else:
            p_type, p_offset, p_filesz = struct.unpack_from(order + "II8xI", table, at)
        if p_type == PT_LOAD and p_offset + p_filesz > size:
            return f"cut short ({size} bytes: a segment lies past the end)"
    return None


def elf_problem(path: str) -> str | None:
    """Why ``path`` is not a whole ELF shared object (read without loading it), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        return _header(fd, st.st_size)
    except (OSError, struct.error) as exc:
        return f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
    finally:
        os.close(fd)


def file_digest(path: str) -> str:
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        while block := os.read(fd, 1 << 20):
            digest.update(block)
    finally:
        os.close(fd)
    return digest.hexdigest()


class _LinkMap(ctypes.Structure):
    _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p)]


def _dlinfo() -> Any:
    for name in (None, "libdl.so.2"):
        with contextlib.suppress(OSError, AttributeError):
            fn = ctypes.CDLL(name).dlinfo
            fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
            fn.restype = ctypes.c_int
            return fn
    raise OSError("no dlinfo in this C library")


RTLD_DI_LINKMAP = 2


def object_file(handle: ctypes.CDLL) -> str | None:
    """The file the dynamic loader mapped for ``handle`` (its link map's name)."""
    found = ctypes.POINTER(_LinkMap)()
    try:
        if _dlinfo()(handle._handle, RTLD_DI_LINKMAP, ctypes.byref(found)) != 0:
            return None
    except OSError:
        return None
    name = found.contents.l_name if found else None
    return os.path.realpath(os.fsdecode(name)) if name else None


def _version(handle: ctypes.CDLL) -> str:
    fn = handle.OQS_version
    fn.restype = ctypes.c_char_p
    raw: bytes | None = fn()
    return one_line((raw or b"").decode("utf-8", "replace"), 40)


def open_named(path: str) -> NamedLibrary | str:
    """Check ``path`` whole, load it by its resolved absolute path and read its version;
    a reason (one line) when it is not a liboqs that loads."""
    real = os.path.realpath(path)
    problem = elf_problem(real)
    if problem:
        return f"{path}: {problem}"
    try:
        digest = file_digest(real)
        handle = ctypes.CDLL(real)
        return NamedLibrary(real, _version(handle), digest)
    except AttributeError:
        return f"{path} is not liboqs (no OQS_version)"
    except OSError as exc:
        return f"{path} does not load ({one_line(exc)})"


def system_library(soname: str) -> str | None:
    """The absolute path the dynamic loader picks for ``soname``."""
    try:
        return object_file(ctypes.CDLL(soname))
    except OSError:
        return None


def loaded_problem(native: ctypes.CDLL, named: NamedLibrary, version: str) -> str | None:
    """Why the library liboqs-python holds is not ``named`` (None: it is)."""
    loaded = object_file(native)
    if loaded is None:
        return "cannot tell which file liboqs-python loaded"
    if loaded != named.path:
        return (f"liboqs-python loaded {loaded} (version {version}), not the named "
                f"{named.path} (version {named.version})")
    if version != named.version:
        return f"{loaded} says version {version} now, {named.version} before loading"
    if file_digest(loaded) != named.digest:
        return f"{loaded} changed while it was being loaded (its sha256 differs)"
    return None


@contextlib.contextmanager
def only_named(path: str) -> Iterator[None]:
    """While liboqs-python is imported: ``find_library`` answers ``path`` for liboqs and
    its installer cannot run (see NO_INSTALL)."""
    original = ctypes.util.find_library
    saved = os.environ.get("PYOQS_VERSION")

    def named(name: str) -> str | None:
        return path if name in ("oqs", "liboqs") else original(name)

    ctypes.util.find_library = named
    os.environ["PYOQS_VERSION"] = NO_INSTALL
    try:
        yield
    finally:
        ctypes.util.find_library = original
        if saved is None:
            os.environ.pop("PYOQS_VERSION", None)
        else:
            os.environ["PYOQS_VERSION"] = saved
