"""Where numba caches qprof's kernels: a directory named after their sources' digest.

numba invalidates a cached kernel only when its own file changes, not a helper it
inlines, so the cache directory is keyed on every kernel source and numba's version.
Outside the ``nb`` package so reading the digest or the directory does not import numba;
:func:`configure_numba` (which does) points numba at it, for every kernel qprof compiles.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.metadata
import os
import shutil
import tempfile
from pathlib import Path

from qprof.atomicfile import OutputError, private_dir

KERNELS_DIR = Path(__file__).resolve().parent / "nb"
CACHE_PREFIX = "qprof-nb-"


def source_digest() -> str:
    """Digest of the kernel sources and the numba/llvmlite versions they compile with."""
    numba = importlib.metadata.version("numba")
    llvmlite = importlib.metadata.version("llvmlite")
    h = hashlib.sha256(f"{numba}/{llvmlite}".encode())
    for path in sorted(KERNELS_DIR.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    """Where this version's kernels are cached: under $NUMBA_CACHE_DIR when set (the
    systemd unit points it at its CacheDirectory=), else $XDG_CACHE_HOME/qprof/numba,
    else ~/.cache/qprof/numba."""
    name = CACHE_PREFIX + source_digest()
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user:
        return Path(user) / name
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "qprof" / "numba" / name


def _writable_dir(path: Path) -> bool:
    try:
        private_dir(path)
    except OutputError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


_configured = False


def configure_numba() -> None:
    """Point numba's cache at :func:`cache_dir` and, on an AVX-512F host, add
    ``-prefer-256-bit`` to its feature string (the eight-way Keccak gets one zmm per
    lane; a user's ``NUMBA_CPU_FEATURES`` is kept). Once per process; imports numba."""
    global _configured
    if _configured:
        return
    _configured = True
    from numba.core import config
    from numba.core.codegen import get_host_cpu_features

    target = cache_dir()
    if not _writable_dir(target):
        # No usable cache directory (e.g. a service user without a home): a private
        # directory for this process only, so numba never falls back to writing beside
        # the sources. Kernels then compile in every process: slower, still correct.
        target = Path(tempfile.mkdtemp(prefix=CACHE_PREFIX))
        atexit.register(shutil.rmtree, target, ignore_errors=True)
    config.CACHE_DIR = str(target)  # type: ignore[attr-defined]
    if config.CPU_FEATURES is None:  # type: ignore[attr-defined]
        features = get_host_cpu_features()
        if "+avx512f" in features.split(","):
            config.CPU_FEATURES = features + ",-prefer-256-bit"  # type: ignore[attr-defined]
