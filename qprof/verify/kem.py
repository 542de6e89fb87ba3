"""ML-KEM-1024 keygen/encaps/decaps through liboqs (qprof times these per core).

Like the liboqs verifier, calls the C functions through private ctypes function
pointers on one ``OQS_KEM`` struct per object, passing ``bytes`` straight in; only the
output buffers are allocated per call. Not thread-safe: one object per thread.
"""

from __future__ import annotations

import ctypes as ct
from typing import Any

from qprof.verify.availability import import_oqs
from qprof.verify.base import BACKEND_NAMES, UnknownBackendError, UnknownSuiteError
from qprof.verify.suites import KEMS, KemInfo

_KEM_BACKENDS = ("liboqs",)


class LiboqsKem:
    """``keypair() -> (pk, sk)``, ``encaps(pk) -> (ct, ss)``, ``decaps(sk, ct) -> ss``.

    Wrong-length keys or ciphertexts raise ``ValueError`` (a KEM has no "False" answer;
    ML-KEM decapsulation of a well-formed but wrong ciphertext returns a pseudo-random
    secret, as FIPS 203 specifies).
    """

    backend = "liboqs"

    def __init__(self, info: KemInfo) -> None:
        self.info = info
        self.name = info.name
        oqs = import_oqs()
        self._kem = oqs.KeyEncapsulation(info.liboqs_name)  # kept alive for _ptr
        self._ptr = ct.cast(self._kem._kem, ct.c_void_p)
        native = oqs.native()
        self._keypair = self._bind(native, "OQS_KEM_keypair", 3)
        self._encaps = self._bind(native, "OQS_KEM_encaps", 4)
        self._decaps = self._bind(native, "OQS_KEM_decaps", 4)

    @staticmethod
    def _bind(native: Any, symbol: str, nargs: int) -> Any:
        fn = native[symbol]  # a fresh function object: argtypes stay private to us
        fn.argtypes = [ct.c_void_p] * nargs
        fn.restype = ct.c_int
        return fn

    def _check(self, what: str, value: bytes, size: int) -> bytes:
        value = bytes(value)
        if len(value) != size:
            raise ValueError(f"{self.name} {what} must be {size} bytes, got {len(value)}")
        return value

    def keypair(self) -> tuple[bytes, bytes]:
        pk = ct.create_string_buffer(self.info.pk_size)
        sk = ct.create_string_buffer(self.info.sk_size)
        if self._keypair(self._ptr, pk, sk) != 0:
            raise RuntimeError(f"liboqs {self.name} keypair failed")
        return pk.raw, sk.raw

    def encaps(self, public_key: bytes) -> tuple[bytes, bytes]:
        pk = self._check("public key", public_key, self.info.pk_size)
        ciphertext = ct.create_string_buffer(self.info.ct_size)
        shared = ct.create_string_buffer(self.info.ss_size)
        if self._encaps(self._ptr, ciphertext, shared, pk) != 0:
            raise ValueError(f"liboqs {self.name} encaps rejected the public key")
        return ciphertext.raw, shared.raw

    def decaps(self, secret_key: bytes, ciphertext: bytes) -> bytes:
        sk = self._check("secret key", secret_key, self.info.sk_size)
        ctext = self._check("ciphertext", ciphertext, self.info.ct_size)
        shared = ct.create_string_buffer(self.info.ss_size)
        if self._decaps(self._ptr, shared, ctext, sk) != 0:
            raise ValueError(f"liboqs {self.name} decaps failed")
        return shared.raw



def get_kem(backend: str = "liboqs", name: str = "ML-KEM-1024") -> LiboqsKem:
    """A KEM object; ``BackendUnavailable`` when liboqs is not installed here."""
    if backend not in _KEM_BACKENDS:
        if backend not in BACKEND_NAMES:
            raise UnknownBackendError(backend)
        raise ValueError(
            f"backend {backend!r} has no KEM in qprof; KEM backends: {', '.join(_KEM_BACKENDS)}"
        )
    info = KEMS.get(name)
    if info is None:
        raise UnknownSuiteError(name, tuple(KEMS))
    return LiboqsKem(info)
