"""qprof's own numba verifiers ("second verifier" next to liboqs).

Submodules are imported on demand (importing numba costs ~0.5 s):
``keccak`` (Keccak-f[1600], SHAKE128/256), ``keccak_xn`` (4 or 8 interleaved permutations),
``slhdsa`` (SLH-DSA-SHAKE verify, FIPS 205) and ``mldsa`` (ML-DSA verify, FIPS 204).
Everything is plain ``@njit(cache=True, nogil=True)`` code: no C extension, no
hand-written LLVM IR.

Cache key: numba invalidates a cached kernel only when *its own* source file changes,
not when a module it inlines (``keccak``, ``mldsa_poly`` ...) does, so an edit or an
upgrade that touches only a helper would keep running the old machine code. Importing
this package therefore points numba's cache at a directory named after a digest of
every kernel source here and of the numba version: any change starts a fresh cache.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_PREFIX = "qprof-nb-"


def source_digest() -> str:
    """Digest of the kernel sources and the numba/llvmlite versions they compile with."""
    import llvmlite
    import numba

    h = hashlib.sha256(f"{numba.__version__}/{llvmlite.__version__}".encode())
    for path in sorted(_HERE.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _writable_dir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def cache_dir() -> Path:
    """Where this version's kernels are cached: under $NUMBA_CACHE_DIR when the user set
    one (the systemd unit does), else in the package's __pycache__ when writable, else
    under $XDG_CACHE_HOME/qprof."""
    name = _PREFIX + source_digest()
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user:
        return Path(user) / name
    local = _HERE / "__pycache__"
    if _writable_dir(local):
        return local / name
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(xdg) / "qprof" / name


def _configure_numba_cache() -> None:
    from numba.core import config

    target = cache_dir()
    if not _writable_dir(target):
        return  # numba then compiles in memory each run; slower, still correct
    config.CACHE_DIR = str(target)
    # Drop caches of older sources next to it, best effort: they can never be used.
    for sibling in target.parent.glob(_PREFIX + "*"):
        if sibling != target and sibling.is_dir():
            shutil.rmtree(sibling, ignore_errors=True)


_configure_numba_cache()
