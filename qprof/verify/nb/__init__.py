"""qprof's own numba verifiers ("second verifier" next to liboqs).

Submodules are imported on demand (importing numba is slow): ``keccak``, ``keccak_xn``
(4 or 8 interleaved permutations), ``slhdsa`` (FIPS 205) and ``mldsa`` (FIPS 204), all
plain ``@njit(cache=True, nogil=True)`` code. Importing this package points numba's cache
at :func:`qprof.verify.nb_cache.cache_dir` (a fresh cache whenever a kernel source or
numba changes; never beside the sources) and, on an AVX-512F host, adds
``-prefer-256-bit`` to numba's feature string so the eight-way Keccak gets one zmm per
lane; a user's ``NUMBA_CPU_FEATURES`` is kept. Why and by how much: docs/NUMBA.md.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from qprof.atomicfile import OutputError, private_dir
from qprof.verify.nb_cache import CACHE_PREFIX, cache_dir, source_digest

__all__ = ["cache_dir", "source_digest"]  # measure.runmeta reads the digest from here


def _writable_dir(path: Path) -> bool:
    try:
        private_dir(path)
    except OutputError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def _configure_numba_cache() -> None:
    from numba.core import config

    target = cache_dir()
    if not _writable_dir(target):
        # No usable cache directory (e.g. a service user without a home): a private
        # directory for this process only, so numba never falls back to writing beside
        # the sources. Kernels then compile in every process: slower, still correct.
        target = Path(tempfile.mkdtemp(prefix=CACHE_PREFIX))
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
