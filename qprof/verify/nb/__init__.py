"""qprof's own numba verifiers ("second verifier" next to liboqs).

Submodules are imported on demand (importing numba is slow): ``keccak``, ``keccak_xn``
(4 or 8 interleaved permutations), ``slhdsa`` (FIPS 205) and ``mldsa`` (FIPS 204), all
plain ``@njit(cache=True, nogil=True)`` code. Importing this package runs
:func:`qprof.verify.nb_cache.configure_numba`: numba's cache at a fresh directory
whenever a kernel source or numba changes (never beside the sources), and 256-bit vectors
preferred on AVX-512F hosts. Why and by how much: docs/NUMBA.md.
"""

from __future__ import annotations

from qprof.verify.nb_cache import cache_dir, configure_numba, source_digest

__all__ = ["cache_dir", "source_digest"]  # measure.runmeta reads the digest from here

configure_numba()
