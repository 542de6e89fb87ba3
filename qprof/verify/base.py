"""The verifier/signer interface every backend implements, and its errors.

Contract (docs/ARCHITECTURE.md, qprof.verify): ``Verifier.verify(public_key, message,
signature, context=b"") -> bool`` is FIPS 204/205 *pure* verification with a context
string (as liboqs ``OQS_SIG_verify_with_ctx_str``). It never raises for bytes input:
wrong lengths, a context over 255 bytes and malformed encodings all give ``False``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qprof.verify.suites import MAX_CONTEXT_LEN, SUITES, SuiteInfo

BACKEND_NAMES: tuple[str, ...] = ("liboqs", "numba", "openssl", "rustcrypto", "reference")


class UnknownBackendError(ValueError):
    """The backend name is not one qprof knows (message lists the known ones)."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"unknown verifier backend {name!r}; known backends: {', '.join(BACKEND_NAMES)}"
        )
        self.name = name


class UnknownSuiteError(ValueError):
    """The suite name is not in ``SUITES``/``KEMS`` (message lists the known ones)."""

    def __init__(self, name: str, known: tuple[str, ...] | None = None) -> None:
        known = tuple(SUITES) if known is None else known
        super().__init__(f"unknown suite {name!r}; known suites: {', '.join(known)}")
        self.name = name


class BackendUnavailable(RuntimeError):
    """The backend exists but cannot be used here (the message says what to install)."""


class SuiteNotSupported(BackendUnavailable):
    """The backend works here but does not implement this suite."""


@dataclass(frozen=True)
class BackendStatus:
    """Whether one backend works on this machine, and why not."""

    name: str
    available: bool
    reason: str  # "ok" when available; otherwise a stable, actionable sentence
    version: str | None = None  # e.g. "liboqs 0.16.0; liboqs-python 0.16.0.1"
    suites: tuple[str, ...] = ()  # suites it can verify here
    can_sign: bool = False
    details: dict[str, str] = field(default_factory=dict)  # per-suite notes, paths

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "available": self.available,
            "reason": self.reason,
            "version": self.version,
            "suites": list(self.suites),
            "can_sign": self.can_sign,
            "details": dict(self.details),
        }


def as_bytes(value: object) -> bytes | None:
    """``bytes`` for bytes-like input (bytes, bytearray, memoryview), else ``None``."""
    if type(value) is bytes:
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return None


class Verifier:
    """Base class: holds the suite, does the up-front checks shared by all backends.

    Subclasses implement ``_verify`` for inputs already known to have the right lengths;
    ``verify`` is the public, never-raising entry point. Hot loops may call ``verify``
    directly: the checks are a few ``len`` comparisons.
    """

    backend: str = "?"
    # Longest context this backend accepts. FIPS 204/205 allow 255; a backend with a
    # known deviation lowers it (and says so in its BackendStatus.details) so tests and
    # the differential run can tell a documented limitation from a new disagreement.
    max_context_len: int = MAX_CONTEXT_LEN

    def __init__(self, suite: SuiteInfo) -> None:
        self.suite = suite
        self.suite_name = suite.name
        self._pk_size = suite.pk_size
        self._sig_size = suite.sig_size

    def verify(
        self, public_key: bytes, message: bytes, signature: bytes, context: bytes = b""
    ) -> bool:
        if (
            type(public_key) is not bytes
            or type(message) is not bytes
            or type(signature) is not bytes
            or type(context) is not bytes
        ):
            pk, msg, sig, ctx = (as_bytes(v) for v in (public_key, message, signature, context))
            if pk is None or msg is None or sig is None or ctx is None:
                return False
            public_key, message, signature, context = pk, msg, sig, ctx
        if (
            len(public_key) != self._pk_size
            or len(signature) != self._sig_size
            or len(context) > MAX_CONTEXT_LEN
        ):
            return False
        try:
            return bool(self._verify(public_key, message, signature, context))
        except Exception:  # a library rejecting a malformed encoding is a "no"
            return False

    def _verify(self, public_key: bytes, message: bytes, signature: bytes, context: bytes) -> bool:
        raise NotImplementedError

    def warm_up(self) -> None:
        """Compile/load anything lazy so the first timed call is not special (no-op here)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.backend}/{self.suite_name}>"


class Signer:
    """Base class for signers: ``keypair() -> (pk, sk)``, ``sign(sk, msg, ctx) -> sig``.

    The secret key format is the backend's own (FIPS encoding, except openssl which
    keeps the 32-byte seed); public keys and signatures are the FIPS encodings and
    interoperate across backends. Bad input raises ``ValueError`` (signing is not on
    the never-raise path).
    """

    backend: str = "?"
    max_context_len: int = MAX_CONTEXT_LEN  # lowered by backends with a known limit

    def __init__(self, suite: SuiteInfo) -> None:
        self.suite = suite
        self.suite_name = suite.name

    def keypair(self) -> tuple[bytes, bytes]:
        raise NotImplementedError

    def sign(self, secret_key: bytes, message: bytes, context: bytes = b"") -> bytes:
        if len(context) > MAX_CONTEXT_LEN:
            raise ValueError(f"context is {len(context)} bytes; FIPS 204/205 allow at most 255")
        return self._sign(bytes(secret_key), bytes(message), bytes(context))

    def _sign(self, secret_key: bytes, message: bytes, context: bytes) -> bytes:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.backend}/{self.suite_name}>"
