"""qprof.verify: post-quantum signature verifiers behind one interface.

    from qprof.verify import get_verifier, get_signer, available_backends
    v = get_verifier("liboqs", "ML-DSA-44")
    v.verify(pk, msg, sig, context=b"")  # -> bool, never raises for bytes

Backends: liboqs (C), numba (qprof's kernels), openssl (pyca/cryptography), rustcrypto
(pqcrypto, Rust), reference (dilithium-py / slh-dsa, pure Python, slow). Verifier and
signer objects are not thread-safe: make one per thread.
"""

from __future__ import annotations

from qprof.verify.availability import (
    LIBOQS_INSTALL_HINT,
    available_backends,
    backend_module,
    backend_status,
    find_liboqs,
)
from qprof.verify.base import (
    BACKEND_NAMES,
    BackendStatus,
    BackendUnavailable,
    Signer,
    SuiteNotSupported,
    UnknownBackendError,
    UnknownSuiteError,
    Verifier,
)
from qprof.verify.kem import get_kem
from qprof.verify.suites import (
    KEMS,
    MAX_CONTEXT_LEN,
    ML_DSA_SUITES,
    SLH_DSA_SUITES,
    SUITES,
    KemInfo,
    SuiteInfo,
)

SIGNING_BACKENDS: tuple[str, ...] = ("liboqs", "rustcrypto", "openssl", "reference")


def _checked(backend: str, suite: str) -> SuiteInfo:
    """Validate names, then availability; raise the one error that explains it."""
    if backend not in BACKEND_NAMES:
        raise UnknownBackendError(backend)
    info = SUITES.get(suite)
    if info is None:
        raise UnknownSuiteError(suite)
    status = backend_status(backend)
    if not status.available:
        raise BackendUnavailable(status.reason)
    if suite not in status.suites:
        note = status.details.get(suite) or status.details.get(info.family)
        raise SuiteNotSupported(
            f"{backend}: does not implement {suite} here"
            + (f" ({note})" if note else "")
            + f"; its suites: {', '.join(status.suites) or 'none'}"
        )
    return info


def get_verifier(backend: str, suite: str) -> Verifier:
    """A verifier for ``suite`` on ``backend``.

    ``UnknownBackendError``/``UnknownSuiteError`` (both ``ValueError``) for names qprof
    does not know; ``BackendUnavailable`` when the backend cannot run here (the message
    says what to install), ``SuiteNotSupported`` when it lacks that suite.
    """
    info = _checked(backend, suite)
    return backend_module(backend).make_verifier(info)


def get_signer(backend: str, suite: str) -> Signer:
    """A signer (``keypair()``, ``sign(sk, msg, context)``) for backends that can sign."""
    info = _checked(backend, suite)
    module = backend_module(backend)
    if not hasattr(module, "make_signer"):
        raise SuiteNotSupported(
            f"{backend}: cannot sign; signing backends: {', '.join(SIGNING_BACKENDS)}"
        )
    return module.make_signer(info)


def warm_up(backend: str, suite: str) -> Verifier:
    """A verifier with its lazy parts (numba compilation) done; returns it."""
    verifier = get_verifier(backend, suite)
    verifier.warm_up()
    return verifier


__all__ = [
    "BACKEND_NAMES",
    "KEMS",
    "LIBOQS_INSTALL_HINT",
    "MAX_CONTEXT_LEN",
    "ML_DSA_SUITES",
    "SIGNING_BACKENDS",
    "SLH_DSA_SUITES",
    "SUITES",
    "BackendStatus",
    "BackendUnavailable",
    "KemInfo",
    "Signer",
    "SuiteInfo",
    "SuiteNotSupported",
    "UnknownBackendError",
    "UnknownSuiteError",
    "Verifier",
    "available_backends",
    "backend_status",
    "find_liboqs",
    "get_kem",
    "get_signer",
    "get_verifier",
    "warm_up",
]
