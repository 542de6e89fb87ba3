"""Signature suites (FIPS 204 ML-DSA, FIPS 205 SLH-DSA-SHAKE) and the ML-KEM-1024 KEM.

One registry, so every backend, benchmark and report spells suites the same way and
agrees on key/signature sizes. Each entry also records the name each library uses for
it, so a backend never has to guess (``None`` = that library does not implement it).
Sizes are the FIPS 204/205 encodings; liboqs 0.16, pqcrypto 1.0 and the reference
packages were checked to agree.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_CONTEXT_LEN = 255  # FIPS 204/205: the context string is at most 255 bytes


@dataclass(frozen=True)
class SuiteInfo:
    """One signature parameter set and what each backend library calls it."""

    name: str  # qprof name, e.g. "ML-DSA-44"
    family: str  # "ML-DSA" | "SLH-DSA"
    category: int  # NIST security category (1, 2, 3 or 5)
    pk_size: int
    sk_size: int  # FIPS expanded/encoded secret key (openssl signers use a 32-byte seed)
    sig_size: int
    liboqs_name: str  # liboqs 0.16 algorithm identifier
    pqcrypto_module: str  # module under pqcrypto.sign (Rust backend)
    openssl_name: str | None  # cryptography class prefix, e.g. "MLDSA44"; None = absent
    reference_name: str  # dilithium-py parameter object or slh-dsa parameter name
    numba_params: int | str  # first argument of the numba kernel (level or params name)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "family": self.family,
            "category": self.category,
            "pk_size": self.pk_size,
            "sk_size": self.sk_size,
            "sig_size": self.sig_size,
            "liboqs_name": self.liboqs_name,
            "pqcrypto_module": self.pqcrypto_module,
            "openssl_name": self.openssl_name,
            "reference_name": self.reference_name,
        }


@dataclass(frozen=True)
class KemInfo:
    """One KEM parameter set (qprof times ML-KEM-1024 keygen/encaps/decaps)."""

    name: str
    category: int
    pk_size: int
    sk_size: int
    ct_size: int
    ss_size: int
    liboqs_name: str


def _mldsa(level: int, category: int, pk: int, sk: int, sig: int) -> SuiteInfo:
    return SuiteInfo(
        name=f"ML-DSA-{level}",
        family="ML-DSA",
        category=category,
        pk_size=pk,
        sk_size=sk,
        sig_size=sig,
        liboqs_name=f"ML-DSA-{level}",
        pqcrypto_module=f"ml_dsa_{level}",
        openssl_name=f"MLDSA{level}",
        reference_name=f"ML_DSA_{level}",
        numba_params=level,
    )


def _slhdsa(variant: str, category: int, n: int, sig: int) -> SuiteInfo:
    # variant is e.g. "128s"; public key = PK.seed || PK.root (2n), secret key 4n.
    return SuiteInfo(
        name=f"SLH-DSA-SHAKE-{variant}",
        family="SLH-DSA",
        category=category,
        pk_size=2 * n,
        sk_size=4 * n,
        sig_size=sig,
        liboqs_name=f"SLH_DSA_PURE_SHAKE_{variant.upper()}",
        pqcrypto_module=f"slh_dsa_shake_{variant}",
        openssl_name=None,  # cryptography 50 exposes ML-DSA only
        reference_name=f"shake_{variant}",
        numba_params=f"SLH-DSA-SHAKE-{variant}",
    )


SUITES: dict[str, SuiteInfo] = {
    s.name: s
    for s in (
        _mldsa(44, 2, 1312, 2560, 2420),
        _mldsa(65, 3, 1952, 4032, 3309),
        _mldsa(87, 5, 2592, 4896, 4627),
        _slhdsa("128s", 1, 16, 7856),
        _slhdsa("128f", 1, 16, 17088),
        _slhdsa("192s", 3, 24, 16224),
        _slhdsa("192f", 3, 24, 35664),
        _slhdsa("256s", 5, 32, 29792),
        _slhdsa("256f", 5, 32, 49856),
    )
}

KEMS: dict[str, KemInfo] = {
    "ML-KEM-1024": KemInfo(
        name="ML-KEM-1024",
        category=5,
        pk_size=1568,
        sk_size=3168,
        ct_size=1568,
        ss_size=32,
        liboqs_name="ML-KEM-1024",
    )
}

ML_DSA_SUITES: tuple[str, ...] = tuple(n for n, s in SUITES.items() if s.family == "ML-DSA")
SLH_DSA_SUITES: tuple[str, ...] = tuple(n for n, s in SUITES.items() if s.family == "SLH-DSA")
