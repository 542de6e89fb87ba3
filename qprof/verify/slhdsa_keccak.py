"""Exact Keccak-f[1600] permutations of one SLH-DSA-SHAKE verification's hash calls.

Calls are not all the same work: each FIPS 205 hash is SHAKE256 over PK.seed || ADRS ||
its message part, so F and H fill one 136-byte block while T_len, T_k and H_msg absorb
several. Counted per call from FIPS 205's input lengths (section 11.1) and the padding:

    permutations = input // 136 + 1 (+ one per further 136 bytes squeezed)

``pad10*1`` needs a byte, so an input of exactly 136 bytes takes a second block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SHAKE256_RATE = 136
ADRS_BYTES = 32
PURE_PREFIX_BYTES = 2  # M' = 0x00 || len(ctx) || ctx || M (pure signing, FIPS 205 Alg. 24)


@dataclass(frozen=True)
class HashCalls:
    """Calls of each FIPS 205 hash one verification makes (PRF: none when verifying)."""

    f: int
    h: int
    t: int
    hmsg: int
    prf: int = 0

    @property
    def total(self) -> int:
        return self.f + self.h + self.t + self.hmsg + self.prf

    def to_dict(self) -> dict[str, int]:
        return {"F": self.f, "H": self.h, "T": self.t, "H_msg": self.hmsg, "PRF": self.prf,
                "total": self.total}


def shake256_permutations(input_bytes: int, output_bytes: int) -> int:
    """Permutations one SHAKE256 call makes: absorbing ``input_bytes`` (with padding)
    and squeezing ``output_bytes``."""
    if input_bytes < 0 or output_bytes < 1:
        raise ValueError("input must be >= 0 bytes and output >= 1 byte")
    return input_bytes // SHAKE256_RATE + 1 + (output_bytes - 1) // SHAKE256_RATE


@dataclass(frozen=True)
class HashInputs:
    """Bytes each kind of hash absorbs in one verification of a parameter set."""

    f: int  # PK.seed || ADRS || one node
    h: int  # PK.seed || ADRS || two nodes
    t_len: int  # PK.seed || ADRS || len WOTS+ chain ends
    t_k: int  # PK.seed || ADRS || k FORS roots
    hmsg: int  # R || PK.seed || PK.root || M'


def hash_inputs(p: Any, message_bytes: int, context_bytes: int) -> HashInputs:
    """``p``: an ``nb.slhdsa_params.SlhParams`` (FIPS 205 names)."""
    head = p.n + ADRS_BYTES
    return HashInputs(f=head + p.n, h=head + 2 * p.n, t_len=head + p.wots_len * p.n,
                      t_k=head + p.k * p.n,
                      hmsg=3 * p.n + PURE_PREFIX_BYTES + context_bytes + message_bytes)


@dataclass(frozen=True)
class KeccakPermutations:
    """Keccak-f[1600] permutations of one verification, per kind of hash call."""

    f: int  # FORS leaves and WOTS+ chain steps
    h: int  # FORS and XMSS tree nodes
    t_len: int  # the d WOTS+ public keys
    t_k: int  # the FORS public key
    hmsg: int

    @property
    def total(self) -> int:
        return self.f + self.h + self.t_len + self.t_k + self.hmsg

    def to_dict(self) -> dict[str, int]:
        return {"F": self.f, "H": self.h, "T_len": self.t_len, "T_k": self.t_k,
                "H_msg": self.hmsg, "total": self.total}


def permutations_for_calls(p: Any, calls: HashCalls, message_bytes: int,
                           context_bytes: int) -> KeccakPermutations:
    """``calls`` (``slhdsa_calls.calls_for_steps``), each priced in permutations; of its
    T calls, one T_len per layer (d) and the one T_k."""
    size = hash_inputs(p, message_bytes, context_bytes)
    n = p.n
    return KeccakPermutations(
        f=calls.f * shake256_permutations(size.f, n),
        h=calls.h * shake256_permutations(size.h, n),
        t_len=p.d * shake256_permutations(size.t_len, n),
        t_k=(calls.t - p.d) * shake256_permutations(size.t_k, n),
        hmsg=calls.hmsg * shake256_permutations(size.hmsg, p.m),
    )
