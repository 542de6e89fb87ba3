"""The verifier backend the timing tests run: a compiled one (no JIT warm-up), liboqs
where it is built, else rustcrypto (pqcrypto), which works without it."""

from __future__ import annotations

import pytest


def compiled_backend() -> str:
    """liboqs or rustcrypto, whichever is here; the test skips, saying why, without."""
    from qprof.verify import available_backends

    st = available_backends()
    for name in ("liboqs", "rustcrypto"):
        if st[name].available:
            return name
    pytest.skip("neither liboqs nor rustcrypto available: " + st["liboqs"].reason)
