"""Which verifier backends work here, and why not (cached; cheap after the first call).

The important rule: never ``import oqs`` unless the liboqs shared library was found
first. liboqs-python's ``oqs/oqs.py`` loads the library at import time from, in order,
``ctypes.util.find_library("oqs")``, then ``$OQS_INSTALL_PATH/lib/liboqs.so`` and
``.../lib64/liboqs.so`` (``$OQS_INSTALL_PATH`` defaults to ``~/_oqs``; note it wants
the unversioned ``liboqs.so`` name), and if all fail it git-clones and builds liboqs,
which is slow and fails offline. ``find_liboqs`` checks the same places (plus versioned
``liboqs.so.*`` files) and ``import_oqs`` points ``OQS_INSTALL_PATH`` at what was found
before importing.
"""

from __future__ import annotations

import ctypes.util
import functools
import importlib
import importlib.metadata
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from qprof.verify.base import BACKEND_NAMES, BackendStatus, UnknownBackendError

LIBOQS_INSTALL_HINT = (
    "run `qprof setup liboqs` (builds liboqs 0.16.0 into ~/_oqs; offline with "
    "QPROF_LIBOQS_SOURCE=the release tarball), or install liboqs yourself and set "
    "OQS_INSTALL_PATH"
)


@dataclass(frozen=True)
class LiboqsLocation:
    """Where the liboqs shared library is (``install_dir`` is None for a system lib)."""

    library: str  # path or soname that ctypes can load
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
            return found(str(lib), install_dir, source)
        if _versioned_lib_in(install_dir) is not None:
            # liboqs-python only loads the unversioned name; it would try to rebuild.
            tried.append(f"{install_dir}/lib has liboqs.so.* but no liboqs.so symlink")
        else:
            tried.append(f"no liboqs.so in {install_dir}/lib or lib64")
    system = ctypes.util.find_library("oqs")
    if system:
        return found(system, None, "system")
    tried.append("not on the system library path")
    return f"liboqs: shared library not found ({'; '.join(tried)}); {LIBOQS_INSTALL_HINT}"


_oqs_lock = threading.Lock()


class _DropInfo(logging.Filter):
    # liboqs-python logs "faulthandler is disabled" to stdout at INFO on import, which
    # would corrupt `qprof backends --json`; keep its warnings and errors.
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING


def import_oqs() -> ModuleType:
    """Import liboqs-python safely (only after the shared library was found).

    Raises ``BackendUnavailable`` with the reason when liboqs is not installed.
    """
    from qprof.verify.base import BackendUnavailable

    with _oqs_lock:
        import sys

        if "oqs" in sys.modules:
            return sys.modules["oqs"]
        where = find_liboqs()
        if isinstance(where, str):
            raise BackendUnavailable(where)
        if where.install_dir is not None:
            # Point liboqs-python at exactly what we found (it reads this at import).
            os.environ["OQS_INSTALL_PATH"] = str(where.install_dir)
        logging.getLogger("oqs.oqs").addFilter(_DropInfo())
        try:
            return importlib.import_module("oqs")
        except (Exception, SystemExit) as exc:  # liboqs-python raises SystemExit on failure
            raise BackendUnavailable(f"liboqs: liboqs-python failed to load liboqs: {exc}") from exc


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
