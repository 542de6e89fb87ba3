"""Keys and signatures prepared once per run and shared by its workers.

Signing an SLH-DSA "s" signature takes about a second; doing it in every worker process
would cost more than the measurement. Public keys and signatures are FIPS encodings, so a
signature made by one backend verifies with every other; the invalid signature is the
valid one with one byte flipped (the seeds' rule).

Each suite has a pool of ``POOL_SIZE`` keys and signatures, and the timed loop takes them
in turn: what one signature costs to verify depends on the signature. SLH-DSA verify walks
WOTS+ chains whose lengths follow the message digest; 8 fresh signatures here took
1109-1222 us (SLH-DSA-SHAKE-256s) and 509-573 us (128s) with liboqs, ML-DSA-44 within
0.9 %. One signature made every estimate a property of that signature (up to +-5 %); a
pool of 8 cuts that to about +-1.5 %.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qprof.verify import Signer

# A transaction sighash is 32 bytes: verify what a node verifies.
MESSAGE = hashlib.sha256(b"qprof verify-unit measurement").digest()
CONTEXT = b""
POOL_SIZE = 8  # keys and signatures per suite


@dataclass(frozen=True)
class Fixture:
    suite: str
    public_key: bytes
    message: bytes
    signature: bytes
    invalid_signature: bytes
    context: bytes
    signed_by: str

    def to_dict(self) -> dict[str, str]:
        return {
            "suite": self.suite,
            "public_key": self.public_key.hex(),
            "message": self.message.hex(),
            "signature": self.signature.hex(),
            "invalid_signature": self.invalid_signature.hex(),
            "context": self.context.hex(),
            "signed_by": self.signed_by,
        }

    @classmethod
    def from_dict(cls, d: dict[str, str]) -> Fixture:
        return cls(
            suite=d["suite"],
            public_key=bytes.fromhex(d["public_key"]),
            message=bytes.fromhex(d["message"]),
            signature=bytes.fromhex(d["signature"]),
            invalid_signature=bytes.fromhex(d["invalid_signature"]),
            context=bytes.fromhex(d["context"]),
            signed_by=d["signed_by"],
        )


def flip_one_byte(signature: bytes) -> bytes:
    """The signature with its middle byte XOR 0x01 (inside the body, not the padding)."""
    if not signature:
        return signature
    mid = len(signature) // 2
    return signature[:mid] + bytes([signature[mid] ^ 0x01]) + signature[mid + 1 :]


class FixtureError(RuntimeError):
    pass


def candidate_signers(
    suite: str, preferred: tuple[str, ...] = ()
) -> tuple[list[tuple[str, Signer]], list[str]]:
    """(backend, signer) for every backend that can sign ``suite`` here, preferred
    first, and why each of the others cannot."""
    from qprof.verify import SIGNING_BACKENDS, available_backends, get_signer

    statuses = available_backends()
    order = [b for b in preferred if b in SIGNING_BACKENDS] + [
        b for b in SIGNING_BACKENDS if b not in preferred
    ]
    found: list[tuple[str, Signer]] = []
    reasons = []
    for backend in order:
        status = statuses.get(backend)
        if status is None or not status.available or suite not in status.suites:
            reasons.append(f"{backend}: {status.reason if status else 'unknown'}")
            continue
        try:
            found.append((backend, get_signer(backend, suite)))
        except Exception as exc:  # the next one may do; say why at the end
            reasons.append(f"{backend}: {exc}")
    return found, reasons


def make_fixture(suite: str, preferred: tuple[str, ...] = ()) -> Fixture:
    """Sign one message with the first backend (preferred first) that can sign ``suite``."""
    found, reasons = candidate_signers(suite, preferred)
    for backend, signer in found:
        try:
            pk, sk = signer.keypair()
            sig = signer.sign(sk, MESSAGE, CONTEXT)
        except Exception as exc:  # try the next signer; say why at the end
            reasons.append(f"{backend}: {exc}")
            continue
        return Fixture(suite, pk, MESSAGE, sig, flip_one_byte(sig), CONTEXT, backend)
    raise FixtureError(f"no backend can sign {suite} here ({'; '.join(reasons)})")


Pool = tuple[Fixture, ...]  # one suite's keys and signatures, taken in turn


def save_fixtures(fixtures: dict[str, Pool], path: Path) -> None:
    path.write_text(json.dumps({s: [f.to_dict() for f in pool]
                                for s, pool in fixtures.items()}))


def load_fixtures(path: Path) -> dict[str, Pool]:
    data = json.loads(path.read_text())
    return {s: tuple(Fixture.from_dict(d) for d in pool) for s, pool in data.items()}


def cache_dir() -> Path:
    """$QPROF_CACHE_DIR, else $XDG_CACHE_HOME/qprof, else ~/.cache/qprof; + /fixtures."""
    base = os.environ.get("QPROF_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "qprof"
    )
    return Path(base) / "fixtures"


def _still_good(fx: Fixture, checker: str) -> bool:
    from qprof.verify import get_verifier

    try:
        v = get_verifier(checker, fx.suite)
    except Exception:
        return False
    return v.verify(fx.public_key, fx.message, fx.signature, fx.context) and not v.verify(
        fx.public_key, fx.message, fx.invalid_signature, fx.context
    )


def cached_pool(suite: str, preferred: tuple[str, ...] = (), directory: Path | None = None,
                checker: str | None = None, size: int = POOL_SIZE) -> Pool:
    """``size`` fixtures of ``suite``: the cached ones that still verify (with
    ``checker``), topped up with new ones.

    Test keys only: caching them saves signing SLH-DSA "s" signatures (about a second
    each) on every run.
    """
    d = directory or cache_dir()
    path = d / f"{suite}.pool.json"
    pool: list[Fixture] = []
    if path.is_file() and checker:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            for item in json.loads(path.read_text()):
                fx = Fixture.from_dict(item)
                if fx.suite == suite and fx.message == MESSAGE and _still_good(fx, checker):
                    pool.append(fx)
    if len(pool) >= size:
        return tuple(pool[:size])
    while len(pool) < size:
        pool.append(make_fixture(suite, preferred))
    with contextlib.suppress(OSError):
        d.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps([fx.to_dict() for fx in pool]))
        tmp.replace(path)
    return tuple(pool)
