"""Where numba caches qprof's kernels: a directory named after their sources' digest.

numba invalidates a cached kernel only when its own file changes, not a helper it
inlines, so the cache directory is keyed on every kernel source and numba's version.
Outside the ``nb`` package so reading the digest or the directory does not import numba.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from pathlib import Path

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
