"""OpenSSL ML-DSA through pyca/cryptography (>= 46; 50 bundles OpenSSL 4 with ML-DSA).

cryptography exposes ML-DSA-44/65/87 with FIPS 204 context strings
(``MLDSA44PublicKey.from_public_bytes(pk).verify(sig, data, context)``); it has no
SLH-DSA, so this backend covers the ML-DSA suites only.

The public key is parsed on every call: a chain sees a different key per transaction,
and liboqs also takes the raw key each time, so caching the parsed key would flatter
OpenSSL. Signers keep the 32-byte seed as the secret key (cryptography only exports
the seed form).
"""

from __future__ import annotations

from typing import Any

from qprof.verify.availability import distribution_version
from qprof.verify.base import BackendStatus, BackendUnavailable, Signer, Verifier
from qprof.verify.suites import SUITES, SuiteInfo

NAME = "openssl"
_MIN_CRYPTOGRAPHY = (46, 0)


def _version_tuple(text: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in text.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def probe() -> BackendStatus:
    version = distribution_version("cryptography")
    if version is None:
        return BackendStatus(
            NAME, False, "openssl: python package 'cryptography' is not installed; "
            "pip install 'cryptography>=46'"
        )
    if _version_tuple(version) < _MIN_CRYPTOGRAPHY:
        return BackendStatus(
            NAME, False, f"openssl: cryptography {version} has no ML-DSA; "
            "pip install 'cryptography>=46'", version=f"cryptography {version}"
        )
    from cryptography.hazmat.backends.openssl.backend import backend

    full_version = f"cryptography {version}; {backend.openssl_version_text()}"
    if not backend.mldsa_supported():
        return BackendStatus(
            NAME, False, "openssl: the OpenSSL linked by cryptography has no ML-DSA "
            "(needs OpenSSL >= 3.5 or the wheel's bundled OpenSSL)", version=full_version
        )
    suites = tuple(name for name, s in SUITES.items() if s.openssl_name is not None)
    return BackendStatus(
        NAME, True, "ok", full_version, suites, can_sign=True,
        details={"SLH-DSA": "cryptography exposes ML-DSA only"},
    )


def _classes(suite: SuiteInfo) -> tuple[Any, Any]:
    if suite.openssl_name is None:
        raise BackendUnavailable(f"openssl: cryptography does not implement {suite.name}")
    from cryptography.hazmat.primitives.asymmetric import mldsa

    return (
        getattr(mldsa, f"{suite.openssl_name}PublicKey"),
        getattr(mldsa, f"{suite.openssl_name}PrivateKey"),
    )


class OpensslVerifier(Verifier):
    backend = NAME

    def __init__(self, suite: SuiteInfo) -> None:
        super().__init__(suite)
        public_cls, _ = _classes(suite)
        self._from_public_bytes = public_cls.from_public_bytes
        from cryptography.exceptions import InvalidSignature

        self._invalid = InvalidSignature

    def _verify(self, public_key: bytes, message: bytes, signature: bytes, context: bytes) -> bool:
        key = self._from_public_bytes(public_key)
        try:
            key.verify(signature, message, context or None)
        except self._invalid:
            return False
        return True


class OpensslSigner(Signer):
    backend = NAME

    def __init__(self, suite: SuiteInfo) -> None:
        super().__init__(suite)
        _, self._private_cls = _classes(suite)

    def keypair(self) -> tuple[bytes, bytes]:
        private = self._private_cls.generate()
        return private.public_key().public_bytes_raw(), private.private_bytes_raw()

    def _sign(self, secret_key: bytes, message: bytes, context: bytes) -> bytes:
        if len(secret_key) != 32:
            raise ValueError(f"openssl secret keys are 32-byte seeds, got {len(secret_key)}")
        private = self._private_cls.from_seed_bytes(secret_key)
        return private.sign(message, context or None)


def make_verifier(suite: SuiteInfo) -> OpensslVerifier:
    return OpensslVerifier(suite)


def make_signer(suite: SuiteInfo) -> OpensslSigner:
    return OpensslSigner(suite)
