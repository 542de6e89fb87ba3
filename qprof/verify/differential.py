"""Differential checking: one signed input, many mutations, every verifier must agree.

A *case* is (public key, message, signature, context) and what the signer's library says
of it; every mutation of a valid signature (bytes flipped, wrong or long contexts,
truncated or extended fields) must be rejected and the unmutated one accepted. An answer
that differs is a *disagreement*, a bug to report with its input; a documented backend
limit (``max_context_len``) is a *known deviation*, reported apart. Used by
tests/test_verify_differential.py and bench/differential.py.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from qprof.verify.base import Verifier
from qprof.verify.suites import MAX_CONTEXT_LEN


@dataclass(frozen=True)
class Case:
    label: str
    public_key: bytes
    message: bytes
    signature: bytes
    context: bytes
    expected: bool


@dataclass(frozen=True)
class Disagreement:
    suite: str
    backend: str
    signer: str
    label: str
    expected: bool
    got: bool
    public_key: bytes
    message: bytes
    signature: bytes
    context: bytes

    def describe(self) -> str:
        return (
            f"DISAGREEMENT {self.suite} verifier={self.backend} signer={self.signer} "
            f"case={self.label}: expected {self.expected}, got {self.got}\n"
            f"  pk={self.public_key.hex()}\n  msg={self.message.hex()}\n"
            f"  ctx={self.context.hex()}\n  sig={self.signature.hex()}"
        )


@dataclass
class Tally:
    checks: int = 0
    known_deviations: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)
    by_backend: dict[str, int] = field(default_factory=dict)  # checks per verifier

    def merge(self, other: Tally) -> None:
        self.checks += other.checks
        self.known_deviations += other.known_deviations
        self.disagreements.extend(other.disagreements)
        for name, n in other.by_backend.items():
            self.by_backend[name] = self.by_backend.get(name, 0) + n


def _flip(data: bytes, position: int, mask: int = 0x01) -> bytes:
    out = bytearray(data)
    out[position] ^= mask
    return bytes(out)


def mutations(
    public_key: bytes,
    message: bytes,
    signature: bytes,
    context: bytes,
    rng: random.Random,
    sig_flips: int = 8,
    pk_flips: int = 2,
) -> list[Case]:
    """The valid case followed by broken variants (all expected False)."""
    cases = [Case("valid", public_key, message, signature, context, True)]

    def bad(label: str, pk: bytes = public_key, msg: bytes = message,
            sig: bytes = signature, ctx: bytes = context) -> None:
        cases.append(Case(label, pk, msg, sig, ctx, False))

    # Signature bytes: both ends plus random positions, random bit masks.
    positions = {0, len(signature) - 1}
    positions.update(rng.randrange(len(signature)) for _ in range(max(0, sig_flips - 2)))
    for pos in sorted(positions):
        mask = 1 << rng.randrange(8)
        bad(f"sig[{pos}]^={mask:#04x}", sig=_flip(signature, pos, mask))
    for _ in range(pk_flips):
        pos = rng.randrange(len(public_key))
        mask = 1 << rng.randrange(8)
        bad(f"pk[{pos}]^={mask:#04x}", pk=_flip(public_key, pos, mask))
    if message:
        pos = rng.randrange(len(message))
        bad(f"msg[{pos}]^=0x01", msg=_flip(message, pos))
    else:
        bad("msg=00", msg=b"\x00")
    bad("msg+00", msg=message + b"\x00")
    if context:
        bad("ctx=empty", ctx=b"")
        bad(f"ctx[{len(context) - 1}]^=0x01", ctx=_flip(context, len(context) - 1))
    else:
        bad("ctx=00", ctx=b"\x00")
    if len(context) < MAX_CONTEXT_LEN:
        bad("ctx+00", ctx=context + b"\x00")
    bad("ctx 256 bytes", ctx=(context + bytes(256))[:256])
    bad("sig truncated", sig=signature[:-1])
    bad("sig extended", sig=signature + b"\x00")
    bad("sig empty", sig=b"")
    bad("pk truncated", pk=public_key[:-1])
    bad("pk extended", pk=public_key + b"\x00")
    return cases


def check_cases(
    suite: str,
    signer: str,
    verifiers: Mapping[str, Verifier],
    cases: Iterable[Case],
    sample_every: Mapping[str, int] | None = None,
) -> Tally:
    """Run every case through every verifier (or every n-th case for slow ones)."""
    tally = Tally()
    every = sample_every or {}
    for index, case in enumerate(cases):
        for name, verifier in verifiers.items():
            n = every.get(name, 1)
            if n > 1 and index % n:
                continue
            got = verifier.verify(case.public_key, case.message, case.signature, case.context)
            tally.checks += 1
            tally.by_backend[name] = tally.by_backend.get(name, 0) + 1
            if got is case.expected:
                continue
            if case.expected and len(case.context) > verifier.max_context_len:
                tally.known_deviations += 1
                continue
            tally.disagreements.append(Disagreement(
                suite, name, signer, case.label, case.expected, bool(got),
                case.public_key, case.message, case.signature, case.context,
            ))  # fmt: skip
    return tally


def random_context(rng: random.Random, limit: int = MAX_CONTEXT_LEN) -> bytes:
    """Empty a third of the time, else 1..limit random bytes (often the maximum)."""
    choice = rng.random()
    if choice < 1 / 3:
        return b""
    if choice < 0.45:
        return rng.randbytes(limit)
    return rng.randbytes(rng.randint(1, limit))
