"""SLH-DSA SHAKE parameter sets (FIPS 205, Table 2) and the sizes derived from them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SlhParams:
    """One SLH-DSA parameter set; field names follow FIPS 205."""

    name: str
    n: int  # security parameter: bytes per hash node
    h: int  # total hypertree height
    d: int  # hypertree layers
    hp: int  # h' = h / d, height of one XMSS tree
    a: int  # FORS tree height
    k: int  # number of FORS trees
    lg_w: int  # log2 of the Winternitz parameter
    m: int  # H_msg output bytes

    @property
    def wots_len1(self) -> int:
        return (8 * self.n + self.lg_w - 1) // self.lg_w

    @property
    def wots_len2(self) -> int:
        # floor(log2(len1 * (w - 1)) / lg_w) + 1
        return ((self.wots_len1 * ((1 << self.lg_w) - 1)).bit_length() - 1) // self.lg_w + 1

    @property
    def wots_len(self) -> int:
        return self.wots_len1 + self.wots_len2

    @property
    def public_key_bytes(self) -> int:
        return 2 * self.n

    @property
    def signature_bytes(self) -> int:
        return (1 + self.k * (self.a + 1) + self.h + self.d * self.wots_len) * self.n



PARAMS: dict[str, SlhParams] = {
    p.name: p
    for p in (
        SlhParams("SLH-DSA-SHAKE-128s", 16, 63, 7, 9, 12, 14, 4, 30),
        SlhParams("SLH-DSA-SHAKE-128f", 16, 66, 22, 3, 6, 33, 4, 34),
        SlhParams("SLH-DSA-SHAKE-192s", 24, 63, 7, 9, 14, 17, 4, 39),
        SlhParams("SLH-DSA-SHAKE-192f", 24, 66, 22, 3, 8, 33, 4, 42),
        SlhParams("SLH-DSA-SHAKE-256s", 32, 64, 8, 8, 14, 22, 4, 47),
        SlhParams("SLH-DSA-SHAKE-256f", 32, 68, 17, 4, 9, 35, 4, 49),
    )
}
