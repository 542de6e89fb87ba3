"""Pure-Python reference implementations: dilithium-py (ML-DSA) and slh-dsa (SLH-DSA).

Slow (ML-DSA ~ milliseconds, SLH-DSA ~ seconds per signature): they exist to cross-check
the fast backends in tests, not to be benchmarked. Both implement the final FIPS
204/205 "pure" interface with context strings.
"""

from __future__ import annotations

import importlib
from typing import Any

from qprof.verify.availability import distribution_version
from qprof.verify.base import BackendStatus, BackendUnavailable, Signer, Verifier
from qprof.verify.suites import SUITES, SuiteInfo

NAME = "reference"


def _reference_object(module: str, package: str, suite: SuiteInfo) -> Any:
    """The pure-Python package's object for ``suite``, or why it cannot be had."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise BackendUnavailable(
            f"reference: python package '{package}' is not installed; pip install {package}"
        ) from exc
    return getattr(mod, suite.reference_name)


def _mldsa_object(suite: SuiteInfo) -> Any:
    return _reference_object("dilithium_py.ml_dsa", "dilithium-py", suite)


def _slhdsa_params(suite: SuiteInfo) -> Any:
    return _reference_object("slhdsa", "slh-dsa", suite)


def probe() -> BackendStatus:
    dilithium = distribution_version("dilithium-py")
    slh = distribution_version("slh-dsa")
    versions = []
    if dilithium:
        versions.append(f"dilithium-py {dilithium}")
    if slh:
        versions.append(f"slh-dsa {slh}")
    suites = tuple(
        name
        for name, s in SUITES.items()
        if (s.family == "ML-DSA" and dilithium) or (s.family == "SLH-DSA" and slh)
    )
    details: dict[str, str] = {}
    if not dilithium:
        details["ML-DSA"] = "pip install dilithium-py"
    if not slh:
        details["SLH-DSA"] = "pip install slh-dsa"
    if not suites:
        return BackendStatus(
            NAME, False, "reference: neither 'dilithium-py' nor 'slh-dsa' is installed; "
            "pip install dilithium-py slh-dsa", details=details,
        )
    return BackendStatus(
        NAME, True, "ok", "; ".join(versions), suites, can_sign=True, details=details
    )


class ReferenceVerifier(Verifier):
    backend = NAME

    def __init__(self, suite: SuiteInfo) -> None:
        super().__init__(suite)
        if suite.family == "ML-DSA":
            self._mldsa = _mldsa_object(suite)
            self._slh_par = None
        else:
            self._mldsa = None
            self._slh_par = _slhdsa_params(suite)
            from slhdsa import PublicKey

            self._public_key_cls = PublicKey

    def _verify(self, public_key: bytes, message: bytes, signature: bytes, context: bytes) -> bool:
        if self._mldsa is not None:
            return bool(self._mldsa.verify(public_key, message, signature, context))
        assert self._slh_par is not None  # set for SLH-DSA suites, as _mldsa is for ML-DSA
        key = self._public_key_cls.from_digest(public_key, self._slh_par)
        return bool(key.verify_pure(message, signature, context))


class ReferenceSigner(Signer):
    backend = NAME

    def __init__(self, suite: SuiteInfo) -> None:
        super().__init__(suite)
        if suite.family == "ML-DSA":
            self._mldsa = _mldsa_object(suite)
        else:
            self._mldsa = None
            self._slh_par = _slhdsa_params(suite)

    def keypair(self) -> tuple[bytes, bytes]:
        if self._mldsa is not None:
            pk, sk = self._mldsa.keygen()
            return bytes(pk), bytes(sk)
        from slhdsa import KeyPair

        kp = KeyPair.gen(self._slh_par)
        return kp.pub.digest(), kp.sec.digest()

    def _sign(self, secret_key: bytes, message: bytes, context: bytes) -> bytes:
        if len(secret_key) != self.suite.sk_size:
            raise ValueError(
                f"{self.suite.name} secret key must be {self.suite.sk_size} bytes, "
                f"got {len(secret_key)}"
            )
        if self._mldsa is not None:
            return bytes(self._mldsa.sign(secret_key, message, context))
        from slhdsa import SecretKey

        key = SecretKey.from_digest(secret_key, self._slh_par)
        return key.sign_pure(message, randomize=True, ctx=context)


def make_verifier(suite: SuiteInfo) -> ReferenceVerifier:
    return ReferenceVerifier(suite)


def make_signer(suite: SuiteInfo) -> ReferenceSigner:
    return ReferenceSigner(suite)
