"""Rust implementations through the ``pqcrypto`` PyPI package (PyO3).

pqcrypto wraps backbone-hq's Rust crates (on RustCrypto's ``keccak``/``sha2``): FIPS
204/205 pure verification with a context, FIPS-encoded keys and signatures, all nine
qprof suites. Its ML-DSA refuses contexts of 254 or 255 bytes, so ``probe`` measures the
real limit per family, reports it in ``BackendStatus.details`` and sets
``max_context_len`` on the verifiers (the deviation: docs/FUNCTIONAL.md).
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType

from qprof.verify.availability import distribution_version
from qprof.verify.base import BackendStatus, BackendUnavailable, Signer, Verifier
from qprof.verify.suites import MAX_CONTEXT_LEN, SUITES, SuiteInfo

NAME = "rustcrypto"


def _module(suite: SuiteInfo) -> ModuleType:
    try:
        return importlib.import_module(f"pqcrypto.sign.{suite.pqcrypto_module}")
    except ImportError as exc:
        raise BackendUnavailable(
            f"rustcrypto: pqcrypto has no module pqcrypto.sign.{suite.pqcrypto_module} ({exc})"
        ) from exc


@functools.cache
def context_limit(family: str) -> int:
    """Longest context this pqcrypto signs with for ``family`` (255 if it follows FIPS).

    Probed on the fastest suite of the family: the limit lives in the per-family crate.
    """
    suite = SUITES["ML-DSA-44" if family == "ML-DSA" else "SLH-DSA-SHAKE-128f"]
    mod = _module(suite)
    _pk, sk = mod.keygen()
    for length in range(MAX_CONTEXT_LEN, -1, -1):
        try:
            mod.sign(sk, b"qprof context probe", b"c" * length)
        except ValueError:
            continue
        return length
    return 0


def probe() -> BackendStatus:
    version = distribution_version("pqcrypto")
    if version is None:
        return BackendStatus(
            NAME, False, "rustcrypto: python package 'pqcrypto' is not installed; "
            "pip install 'pqcrypto>=0.3'"
        )
    try:
        importlib.import_module("pqcrypto.sign")
    except Exception as exc:
        return BackendStatus(
            NAME, False, f"rustcrypto: pqcrypto {version} failed to import: {exc}",
            version=f"pqcrypto {version}",
        )
    suites: list[str] = []
    details: dict[str, str] = {}
    for name, suite in SUITES.items():
        try:
            mod = _module(suite)
        except BackendUnavailable:
            details[name] = "not in this pqcrypto"
            continue
        if (suite.pk_size, suite.sig_size) != (mod.PUBLIC_KEY_SIZE, mod.SIGNATURE_SIZE):
            details[name] = "sizes differ from FIPS; not used"
            continue
        suites.append(name)
    for family in sorted({SUITES[name].family for name in suites}):
        limit = context_limit(family)
        if limit < MAX_CONTEXT_LEN:
            details["context_limit"] = (
                details.get("context_limit", "") + ("; " if "context_limit" in details else "")
                + f"{family}: contexts over {limit} bytes rejected (FIPS allows 255)"
            )
    if not suites:
        return BackendStatus(
            NAME, False, f"rustcrypto: pqcrypto {version} implements none of the qprof suites",
            version=f"pqcrypto {version}", details=details,
        )
    return BackendStatus(
        NAME, True, "ok", f"pqcrypto {version}", tuple(suites), can_sign=True, details=details
    )


class RustcryptoVerifier(Verifier):
    backend = NAME

    def __init__(self, suite: SuiteInfo) -> None:
        super().__init__(suite)
        self._verify_fn = _module(suite).verify
        self.max_context_len = context_limit(suite.family)

    def _verify(self, public_key: bytes, message: bytes, signature: bytes, context: bytes) -> bool:
        try:
            self._verify_fn(public_key, message, signature, context)
        except ValueError:  # InvalidSignatureError and malformed-input errors
            return False
        return True


class RustcryptoSigner(Signer):
    backend = NAME

    def __init__(self, suite: SuiteInfo) -> None:
        super().__init__(suite)
        self._mod = _module(suite)
        self.max_context_len = context_limit(suite.family)

    def keypair(self) -> tuple[bytes, bytes]:
        pk, sk = self._mod.keygen()
        return bytes(pk), bytes(sk)

    def _sign(self, secret_key: bytes, message: bytes, context: bytes) -> bytes:
        return bytes(self._mod.sign(secret_key, message, context))


def make_verifier(suite: SuiteInfo) -> RustcryptoVerifier:
    return RustcryptoVerifier(suite)


def make_signer(suite: SuiteInfo) -> RustcryptoSigner:
    return RustcryptoSigner(suite)
