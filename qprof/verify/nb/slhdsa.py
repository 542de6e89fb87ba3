"""SLH-DSA-SHAKE verification (FIPS 205 pure interface) on numba kernels.

``slhdsa_verify`` is the per-call entry point: it checks lengths in Python, turns the
byte strings into read-only ``uint8`` views and makes exactly one call into the
compiled ``verify_kernel`` -- one specialisation shared by all six parameter sets, so
``warm_up`` loads everything the hot path needs from the numba cache.
"""

from __future__ import annotations

import numpy as np

from qprof.verify.nb.keccak_xn import WAYS
from qprof.verify.nb.slhdsa_kernels import verify_kernel
from qprof.verify.nb.slhdsa_params import PARAMS, SlhParams

__all__ = ["PARAMS", "SlhParams", "slhdsa_verify", "warm_up"]

MAX_CONTEXT_BYTES = 255
VECTOR_WAYS = WAYS  # hash WAYS WOTS+ chains / FORS trees at once


def _as_bytes(value: object) -> bytes | None:
    """bytes for bytes-like input (bytearray, memoryview), None for anything else.

    The kernel is compiled for read-only arrays (what ``np.frombuffer`` gives for
    ``bytes``); passing a writable array would trigger a second compilation.
    """
    if type(value) is bytes:
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return None


def slhdsa_verify(
    params: str,
    public_key: bytes,
    message: bytes,
    signature: bytes,
    context: bytes = b"",
    *,
    ways: int = VECTOR_WAYS,
) -> bool:
    """True iff ``signature`` is a valid pure SLH-DSA signature of ``message``.

    Never raises for bytes input: an unknown parameter set, wrong key or signature
    length, or a context longer than 255 bytes all give False.  ``ways=1`` selects
    the scalar-permutation path (same result; for tests and benchmarks).
    """
    p = PARAMS.get(params)
    if p is None:
        return False
    pk, msg, sig, ctx = (_as_bytes(v) for v in (public_key, message, signature, context))
    if pk is None or msg is None or sig is None or ctx is None:
        return False
    if len(pk) != p.public_key_bytes or len(sig) != p.signature_bytes:
        return False
    if len(ctx) > MAX_CONTEXT_BYTES:
        return False
    return bool(
        verify_kernel(
            p.n,
            p.h,
            p.d,
            p.hp,
            p.a,
            p.k,
            p.m,
            np.frombuffer(pk, dtype=np.uint8),
            np.frombuffer(msg, dtype=np.uint8),
            np.frombuffer(sig, dtype=np.uint8),
            np.frombuffer(ctx, dtype=np.uint8),
            VECTOR_WAYS if ways == VECTOR_WAYS else 1,
        )  # fmt: skip
    )


def warm_up(params: str | None = None) -> None:
    """Compile (first run) or load from the numba cache every kernel verify uses.

    One all-zero signature is enough: the kernel always runs every layer (there is
    no early exit) and takes ``ways`` as an argument, so every function either path
    calls gets compiled.  ``params`` only picks which parameter set to exercise; the
    compiled code is shared by all of them.  Unknown names raise ``ValueError``.
    """
    name = params if params is not None else "SLH-DSA-SHAKE-128f"
    p = PARAMS.get(name)
    if p is None:
        raise ValueError(f"unknown SLH-DSA parameter set {name!r}; known: {', '.join(PARAMS)}")
    slhdsa_verify(p.name, bytes(p.public_key_bytes), b"", bytes(p.signature_bytes), b"")
