"""Which verifier backends work here, and why not (cached; cheap after the first call).

The important rule: never ``import oqs`` unless the liboqs shared library was found and
checked first. liboqs-python loads the library at import time (``find_library("oqs")``
first, then ``$OQS_INSTALL_PATH/lib/liboqs.so``, ``~/_oqs``) and, if none loads, clones
and builds an unpinned liboqs. ``find_liboqs`` names the library (``$OQS_INSTALL_PATH``,
``~/_oqs``, then the system's; a file that is no whole ELF is passed over, saying why) and
``import_oqs`` loads exactly that one (``qprof.verify.liboqs_lib``).
"""

from __future__ import annotations

import ctypes.util
import functools
import importlib
import importlib.metadata
import logging
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from qprof.verify.base import (
    BACKEND_NAMES,
    BackendStatus,
    BackendUnavailable,
    UnknownBackendError,
)
from qprof.verify.liboqs_lib import (
    NamedLibrary,
    elf_problem,
    loaded_problem,
    only_named,
    open_named,
    system_library,
)

LIBOQS_INSTALL_HINT = (
    "run `qprof setup liboqs` (builds liboqs 0.16.0 into ~/_oqs; offline with "
    "QPROF_LIBOQS_SOURCE=the release tarball), or install liboqs yourself and set "
    "OQS_INSTALL_PATH"
)


@dataclass(frozen=True)
class LiboqsLocation:
    """Where the liboqs shared library is (``install_dir`` is None for a system lib)."""

    library: str  # the absolute path qprof loads
    install_dir: Path | None  # what OQS_INSTALL_PATH must point to, if not a system lib
    source: str  # "OQS_INSTALL_PATH" | "~/_oqs" | "system"
    # Why $OQS_INSTALL_PATH was passed over when the library came from elsewhere: the
    # user asked for that build and would otherwise silently measure another one.
    env_skipped: str | None = None


def lib_in(install_dir: Path) -> Path | None:
    """The liboqs.so liboqs-python would load from install_dir (lib/ or lib64/)."""
    for sub in ("lib", "lib64"):
        candidate = install_dir / sub / "liboqs.so"
        if candidate.exists():
            return candidate
    return None


def _versioned_lib_in(install_dir: Path) -> Path | None:
    for sub in ("lib", "lib64"):
        found = sorted((install_dir / sub).glob("liboqs.so.*"))
        if found:
            return found[0]
    return None


def find_liboqs(environ: dict[str, str] | None = None) -> LiboqsLocation | str:
    """Locate liboqs as liboqs-python would; a reason string when it is not there."""
    env = os.environ if environ is None else environ
    tried: list[str] = []
    candidates: list[tuple[Path, str]] = []
    if env.get("OQS_INSTALL_PATH"):
        candidates.append((Path(env["OQS_INSTALL_PATH"]).expanduser(), "OQS_INSTALL_PATH"))
    try:
        candidates.append((Path.home() / "_oqs", "~/_oqs"))
    except RuntimeError:  # no $HOME and no passwd entry: a systemd DynamicUser= service
        tried.append("no home directory for ~/_oqs")

    def found(library: str, install_dir: Path | None, source: str) -> LiboqsLocation:
        skipped = tried[0] if tried and env.get("OQS_INSTALL_PATH") else None
        return LiboqsLocation(library, install_dir, source, skipped)

    for install_dir, source in candidates:
        lib = lib_in(install_dir)
        if lib is not None:
            problem = elf_problem(str(lib))
            if problem is None:
                return found(str(lib.absolute()), install_dir, source)
            tried.append(f"{lib}: {problem}")
            continue
        if _versioned_lib_in(install_dir) is not None:
            # liboqs-python only loads the unversioned name; it would try to rebuild.
            tried.append(f"{install_dir}/lib has liboqs.so.* but no liboqs.so symlink")
        else:
            tried.append(f"no liboqs.so in {install_dir}/lib or lib64")
    soname = ctypes.util.find_library("oqs")
    system = system_library(soname) if soname else None
    if system:
        return found(system, None, "system")
    tried.append(f"{soname} on the system library path does not load" if soname
                 else "not on the system library path")
    return f"liboqs: shared library not found ({'; '.join(tried)}); {LIBOQS_INSTALL_HINT}"


_oqs_lock = threading.Lock()
_named: NamedLibrary | None = None  # what import_oqs loaded
_refused: str | None = None  # why the library liboqs-python loaded is not used


class _DropInfo(logging.Filter):
    # liboqs-python logs "faulthandler is disabled" to stdout at INFO on import, which
    # would corrupt `qprof backends --json`; keep its warnings and errors.
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING


def import_oqs() -> ModuleType:
    """Import liboqs-python with the named library loaded (only after it was found, checked
    whole and loaded by its absolute path; compared with what liboqs-python holds).

    Raises ``BackendUnavailable`` with the reason when there is no such library.
    """
    global _named, _refused
    with _oqs_lock:
        if _refused is not None:
            raise BackendUnavailable(_refused)
        if "oqs" in sys.modules and _named is not None:
            return sys.modules["oqs"]
        where = find_liboqs()
        if isinstance(where, str):
            raise BackendUnavailable(where)
        named = open_named(where.library)
        if isinstance(named, str):
            raise BackendUnavailable(f"liboqs: {named}; {LIBOQS_INSTALL_HINT}")
        if where.install_dir is not None:
            # Children (workers) name the same build.
            os.environ["OQS_INSTALL_PATH"] = str(where.install_dir)
        logging.getLogger("oqs.oqs").addFilter(_DropInfo())
        try:
            with only_named(named.path):
                oqs = importlib.import_module("oqs")
            problem = loaded_problem(oqs.native(), named, oqs.oqs_version())
        except (Exception, SystemExit) as exc:  # liboqs-python raises SystemExit on failure
            raise BackendUnavailable(f"liboqs: liboqs-python failed to load liboqs: {exc}") from exc
        if problem is not None:
            _refused = f"liboqs: {problem}"
            raise BackendUnavailable(_refused)
        _named = named
        return oqs


def named_liboqs() -> NamedLibrary | None:
    """The library :func:`import_oqs` loaded (path, version, sha256), None before."""
    return _named


def distribution_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


_BACKEND_MODULES: dict[str, str] = {
    "liboqs": "qprof.verify.backends.liboqs_backend",
    "numba": "qprof.verify.backends.numba_backend",
    "openssl": "qprof.verify.backends.openssl_backend",
    "rustcrypto": "qprof.verify.backends.rustcrypto_backend",
    "reference": "qprof.verify.backends.reference_backend",
}
assert tuple(_BACKEND_MODULES) == BACKEND_NAMES


def backend_module(name: str) -> ModuleType:
    """The module implementing backend ``name`` (``UnknownBackendError`` if none)."""
    if name not in _BACKEND_MODULES:
        raise UnknownBackendError(name)
    return importlib.import_module(_BACKEND_MODULES[name])


_status_lock = threading.Lock()


@functools.cache
def _probe(name: str) -> BackendStatus:
    try:
        status: BackendStatus = backend_module(name).probe()
    except Exception as exc:  # a broken optional package must not break `qprof backends`
        status = BackendStatus(name, False, f"{name}: probe failed: {type(exc).__name__}: {exc}")
    return status


def backend_status(name: str) -> BackendStatus:
    """Status of one backend (cached per process)."""
    if name not in _BACKEND_MODULES:
        raise UnknownBackendError(name)
    with _status_lock:
        return _probe(name)


def available_backends() -> dict[str, BackendStatus]:
    """Every known backend with whether it works here, why not, versions and suites."""
    return {name: backend_status(name) for name in BACKEND_NAMES}
