"""Sign with liboqs using randomness the signer chose.

liboqs 0.16's pure SLH-DSA signing draws ``addrnd`` (FIPS 205's opt_rand, n bytes) from
``OQS_randombytes`` and derives R = PRF_msg(SK.prf, opt_rand, M'); any R gives a valid
signature, and the key owner may pick it (that is how it grinds the digest).  liboqs
exposes ``OQS_randombytes_custom_algorithm``: for one signing call qprof installs a
callback that hands out the chosen bytes, then switches back to the system RNG.
Process-wide, so calls are serialised by a lock.
"""

from __future__ import annotations

import ctypes as ct
import threading

from qprof.verify.availability import import_oqs
from qprof.verify.suites import SUITES

_RNG = ct.CFUNCTYPE(None, ct.POINTER(ct.c_uint8), ct.c_size_t)
_lock = threading.Lock()


class ChosenRandomnessError(RuntimeError):
    """liboqs asked for other randomness than the one opt_rand draw."""


def sign_with_opt_rand(suite: str, secret_key: bytes, message: bytes, context: bytes,
                       opt_rand: bytes) -> bytes:
    """liboqs's signature of ``message`` whose opt_rand is ``opt_rand``."""
    oqs = import_oqs()
    lib = oqs.native()
    draws: list[int] = []

    def fill(buf: ct._Pointer[ct.c_uint8], size: int) -> None:
        draws.append(size)
        ct.memmove(buf, opt_rand, min(size, len(opt_rand)))

    callback = _RNG(fill)  # kept alive until liboqs is switched back
    custom = lib.OQS_randombytes_custom_algorithm
    custom.argtypes = [_RNG]
    custom.restype = None
    switch = lib.OQS_randombytes_switch_algorithm
    switch.argtypes = [ct.c_char_p]
    with _lock:
        custom(callback)
        try:
            with oqs.Signature(SUITES[suite].liboqs_name, secret_key) as sig:
                signature = bytes(sig.sign_with_ctx_str(message, context))
        finally:
            switch(b"system")
    if draws != [len(opt_rand)]:
        raise ChosenRandomnessError(f"liboqs drew {draws} bytes, expected one draw of "
                                    f"{len(opt_rand)}")
    return signature
