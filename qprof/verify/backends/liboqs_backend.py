"""liboqs (C, via liboqs-python) — the reference cost qprof reports ratios against.

The verifier keeps one ``OQS_SIG`` per object and calls ``OQS_SIG_verify_with_ctx_str``
through a ctypes function pointer with the caller's ``bytes`` passed straight through:
liboqs-python's own wrapper copies every argument on each call (and zero-pads a short
public key), which a timing loop does not want. Objects are not thread-safe: one
verifier or signer per thread (ctypes releases the GIL during the call).
"""

from __future__ import annotations

import ctypes as ct
from typing import Any

from qprof.verify.availability import (
    distribution_version,
    find_liboqs,
    import_oqs,
    named_liboqs,
)
from qprof.verify.base import BackendStatus, BackendUnavailable, Signer, Verifier
from qprof.verify.suites import MAX_CONTEXT_LEN, SUITES, SuiteInfo

NAME = "liboqs"
_OQS_SUCCESS = 0


def _bound(oqs: Any, symbol: str, argtypes: list[Any]) -> Any:
    # CDLL.__getitem__ returns a new function object each time, so setting argtypes
    # here does not change the one liboqs-python itself calls.
    fn = oqs.native()[symbol]
    fn.argtypes = argtypes
    fn.restype = ct.c_int
    return fn


def probe() -> BackendStatus:
    where = find_liboqs()
    if isinstance(where, str):
        return BackendStatus(NAME, False, where, version=_python_version_only())
    try:
        oqs = import_oqs()
    except BackendUnavailable as exc:
        return BackendStatus(NAME, False, str(exc), version=_python_version_only())
    named = named_liboqs()
    assert named is not None  # import_oqs loaded it
    enabled = set(oqs.get_enabled_sig_mechanisms())
    suites = tuple(name for name, s in SUITES.items() if s.liboqs_name in enabled)
    missing = [name for name, s in SUITES.items() if s.liboqs_name not in enabled]
    version = f"liboqs {named.version}; liboqs-python {oqs.oqs_python_version()}"
    details = {"library": where.library, "found_via": where.source,
               "sha256": named.digest}
    if where.env_skipped:
        details["warning"] = f"OQS_INSTALL_PATH not used ({where.env_skipped})"
    if missing:
        details["not_enabled"] = ", ".join(missing)
    if not suites:
        return BackendStatus(
            NAME,
            False,
            "liboqs: none of the qprof suites is enabled in this liboqs build "
            "(build with ML-DSA and SLH-DSA-SHAKE pure enabled)",
            version=version,
            details=details,
        )
    return BackendStatus(NAME, True, "ok", version, suites, can_sign=True, details=details)


def _python_version_only() -> str | None:
    v = distribution_version("liboqs-python")
    return f"liboqs-python {v}" if v else None


class LiboqsVerifier(Verifier):
    backend = NAME

    def __init__(self, suite: SuiteInfo) -> None:
        super().__init__(suite)
        oqs = import_oqs()
        self._sig = oqs.Signature(suite.liboqs_name)  # kept alive: _ptr points into it
        if (
            self._sig.length_public_key != suite.pk_size
            or self._sig.length_signature != suite.sig_size
        ):
            raise BackendUnavailable(
                f"liboqs: {suite.liboqs_name} sizes differ from FIPS "
                f"(pk {self._sig.length_public_key}, sig {self._sig.length_signature})"
            )
        self._ptr = ct.cast(self._sig._sig, ct.c_void_p)
        self._fn = _bound(
            oqs,
            "OQS_SIG_verify_with_ctx_str",
            [ct.c_void_p, ct.c_char_p, ct.c_size_t, ct.c_char_p, ct.c_size_t,
             ct.c_char_p, ct.c_size_t, ct.c_char_p],
        )

    def verify(
        self, public_key: bytes, message: bytes, signature: bytes, context: bytes = b""
    ) -> bool:
        # Inlined fast path for the common all-bytes call; anything else goes through
        # the generic checks in Verifier.verify.
        if (
            type(public_key) is bytes
            and type(message) is bytes
            and type(signature) is bytes
            and type(context) is bytes
        ):
            if (
                len(public_key) != self._pk_size
                or len(signature) != self._sig_size
                or len(context) > MAX_CONTEXT_LEN
            ):
                return False
            return (
                self._fn(
                    self._ptr, message, len(message), signature, len(signature),
                    context or None, len(context), public_key,
                )
                == _OQS_SUCCESS
            )
        return super().verify(public_key, message, signature, context)

    def _verify(self, public_key: bytes, message: bytes, signature: bytes, context: bytes) -> bool:
        return (
            self._fn(
                self._ptr, message, len(message), signature, len(signature),
                context or None, len(context), public_key,
            )
            == _OQS_SUCCESS
        )



class LiboqsSigner(Signer):
    backend = NAME

    def __init__(self, suite: SuiteInfo) -> None:
        super().__init__(suite)
        self._oqs = import_oqs()

    def keypair(self) -> tuple[bytes, bytes]:
        with self._oqs.Signature(self.suite.liboqs_name) as sig:
            pk = sig.generate_keypair()
            sk = sig.export_secret_key()
        return bytes(pk), bytes(sk)

    def _sign(self, secret_key: bytes, message: bytes, context: bytes) -> bytes:
        if len(secret_key) != self.suite.sk_size:
            raise ValueError(
                f"{self.suite.name} secret key must be {self.suite.sk_size} bytes, "
                f"got {len(secret_key)}"
            )
        with self._oqs.Signature(self.suite.liboqs_name, secret_key) as sig:
            return bytes(sig.sign_with_ctx_str(message, context))


def make_verifier(suite: SuiteInfo) -> LiboqsVerifier:
    return LiboqsVerifier(suite)


def make_signer(suite: SuiteInfo) -> LiboqsSigner:
    return LiboqsSigner(suite)
