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
The cache lives in the user's cache directory, never beside the sources: an installed
package is read-only or shared between users. Caches of older digests are left where
they are (importing a package must not delete directories); removing them is safe.

Vector width: LLVM's tuning for Intel AVX-512 cores (Skylake-SP up to Emerald Rapids,
which a KVM guest may report as "rocketlake") prefers 256-bit vectors, so the
eight-way Keccak of ``keccak_xn`` compiled to two ymm halves per lane. When numba
compiles for the host and the host has AVX-512F, importing this package adds the
target feature ``-prefer-256-bit`` to numba's feature string (a code-generation
option, like ``NUMBA_CPU_FEATURES``; still plain numba): one zmm per lane made the
eight-way permutation 1.8x faster on an Emerald Rapids guest. That holds with an
explicit ``NUMBA_CPU_NAME`` too (numba then takes the host's features): compiled for
``sapphirerapids`` or ``emeraldrapids`` with the tuning's 256-bit preference, ML-DSA
verify ran 1.34-1.65x liboqs on an AVX-512 Zen 4 guest, without it 1.14-1.22x. An
explicit ``NUMBA_CPU_FEATURES`` is left as the user set it, and numba keys its cache
on the feature string, so no entry compiled for one width is used for the other.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from qprof.atomicfile import OutputError, private_dir

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
        private_dir(path)
    except OutputError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def cache_dir() -> Path:
    """Where this version's kernels are cached: under $NUMBA_CACHE_DIR when set (the
    systemd unit points it at its CacheDirectory=), else $XDG_CACHE_HOME/qprof/numba,
    else ~/.cache/qprof/numba."""
    name = _PREFIX + source_digest()
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user:
        return Path(user) / name
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "qprof" / "numba" / name


def _configure_numba_cache() -> None:
    from numba.core import config

    target = cache_dir()
    if not _writable_dir(target):
        # No usable cache directory (e.g. a service user without a home): a private
        # directory for this process only, so numba never falls back to writing beside
        # the sources. Kernels then compile in every process: slower, still correct.
        target = Path(tempfile.mkdtemp(prefix=_PREFIX))
        atexit.register(shutil.rmtree, target, ignore_errors=True)
    config.CACHE_DIR = str(target)


def _configure_vector_width() -> None:
    from numba.core import config
    from numba.core.codegen import get_host_cpu_features

    if config.CPU_FEATURES is not None:  # type: ignore[attr-defined]
        return  # the user's feature string, as set
    features = get_host_cpu_features()
    if "+avx512f" in features.split(","):
        config.CPU_FEATURES = features + ",-prefer-256-bit"  # type: ignore[attr-defined]


_configure_numba_cache()
_configure_vector_width()
