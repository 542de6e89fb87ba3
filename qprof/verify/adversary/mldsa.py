"""The ML-DSA rejections that cost the most (liboqs 0.16 = mldsa-native's order of checks).

mld_sign_verify_internal: unpack c~ and z; reject if ||z||inf >= gamma1 - beta (before any
hashing or NTT); then mu, ExpandA, the challenge, and per row of w1 the hint check
(a malformed hint rejects at that row); last, c~' = H(mu || w1) compared with c~.  So
the rejection that fails last is a signature with a good z and good hints and a wrong
c~: the whole verification, then the compare.  Each function returns the signature
changed so that it fails at that check.
"""

from __future__ import annotations

from dataclasses import dataclass

# (c~ bytes, gamma1 bits + 1 per z coefficient, omega, k) per FIPS 204 Table 1/2
_SIZES = {"ML-DSA-44": (32, 18, 80, 4), "ML-DSA-65": (48, 20, 55, 6),
          "ML-DSA-87": (64, 20, 75, 8)}


@dataclass(frozen=True)
class Rejection:
    label: str  # where the verifier rejects it
    signature: bytes


def _sizes(suite: str) -> tuple[int, int, int, int]:
    sizes = _SIZES.get(suite)
    if sizes is None:
        raise ValueError(f"{suite} is not ML-DSA; known: {', '.join(_SIZES)}")
    return sizes


def final_compare(suite: str, signature: bytes) -> Rejection:
    """c~ with one bit flipped: z and hints stay good, the last compare fails."""
    _sizes(suite)
    return Rejection("final c~ compare", bytes([signature[0] ^ 0x01]) + signature[1:])


def last_row_hint(suite: str, signature: bytes) -> Rejection:
    """The hint count of the last row above omega: rejected at w1's last row, before H."""
    _, _, omega, _ = _sizes(suite)
    return Rejection("hint of the last row", signature[:-1] + bytes([omega + 1]))


def z_norm(suite: str, signature: bytes) -> Rejection:
    """z's first coefficient = gamma1 (its packed bits zero): the early norm check."""
    ctilde, bits, _, _ = _sizes(suite)
    body = bytearray(signature)
    first = (bits + 7) // 8
    body[ctilde:ctilde + first] = bytes(first)
    body[ctilde + first - 1] = signature[ctilde + first - 1] & ~((1 << (bits % 8 or 8)) - 1) & 0xFF
    return Rejection("z norm", bytes(body))


def rejections(suite: str, signature: bytes) -> list[Rejection]:
    """Costliest first."""
    return [final_compare(suite, signature), last_row_hint(suite, signature),
            z_norm(suite, signature)]
