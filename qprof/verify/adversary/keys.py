"""An SLH-DSA-SHAKE secret key's parts and the ADRS lane values the kernels take."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qprof.verify.slhdsa_calls import params_of


@dataclass(frozen=True)
class SlhSecret:
    """FIPS 205 secret key SK.seed || SK.prf || PK.seed || PK.root, split."""

    suite: str
    sk_seed: bytes
    sk_prf: bytes
    pk_seed: bytes
    pk_root: bytes

    @classmethod
    def parse(cls, suite: str, secret_key: bytes) -> SlhSecret:
        n = params_of(suite).n
        if len(secret_key) != 4 * n:
            raise ValueError(f"{suite} secret key must be {4 * n} bytes, got {len(secret_key)}")
        return cls(suite, *(secret_key[i * n:(i + 1) * n] for i in range(4)))

    @property
    def public_key(self) -> bytes:
        return self.pk_seed + self.pk_root

    @property
    def secret_key(self) -> bytes:
        return self.sk_seed + self.sk_prf + self.pk_seed + self.pk_root


def words(data: bytes) -> np.ndarray:
    """Little-endian uint64 words of ``data`` (a multiple of 8 bytes), writable."""
    return np.frombuffer(bytes(data), dtype="<u8").astype(np.uint64)


def adrs_pair(hi: int, lo: int) -> int:
    """The lane holding two consecutive big-endian 4-byte ADRS fields."""
    return int.from_bytes(hi.to_bytes(4, "big") + lo.to_bytes(4, "big"), "little")


def layer_lane(layer: int) -> int:
    return int.from_bytes(layer.to_bytes(4, "big") + bytes(4), "little")


def tree_lane(tree: int) -> int:
    return int.from_bytes(tree.to_bytes(8, "big"), "little")


def message_prime(message: bytes, context: bytes) -> bytes:
    """M' of the pure interface (FIPS 205 Algorithm 22): 0 || len(ctx) || ctx || M."""
    return b"\x00" + bytes([len(context)]) + context + message


def one_block_template(data: bytes) -> np.ndarray:
    """25 Keccak lanes: ``data`` then SHAKE256 padding, for a single-block input."""
    if len(data) > 135:
        raise ValueError("input longer than one SHAKE256 block (135 bytes)")
    block = bytearray(136)
    block[: len(data)] = data
    block[len(data)] ^= 0x1F
    block[135] ^= 0x80
    return np.concatenate([words(bytes(block)), np.zeros(8, dtype=np.uint64)])
