"""Keys and signatures prepared once per run and shared by its workers.

Signing an SLH-DSA "s" signature takes about a second; doing it in every worker process
would cost more than the measurement. Public keys and signatures are FIPS encodings, so a
signature made by one backend verifies with every other; the invalid signature is the
valid one with one byte flipped (the seeds' rule).

Each suite has a pool of keys and signatures (:func:`pool_size`), and the timed loop takes
them in turn from a start that moves round by round (:func:`pool_start`; value j:
signature (start + j) % pool size; the records say so, and the estimator's interval
resamples the signatures): what one signature costs to verify depends on it.
SLH-DSA verify walks WOTS+ chains whose lengths follow the message digest: 48 fresh
SLH-DSA-SHAKE-128s signatures verified in 0.92-1.14x their median (liboqs 0.16, Intel
Xeon guest; standard deviation 420 bp per signature, SLH-DSA-SHAKE-256s 410 bp), ML-DSA
within ~1 %. A pool of N signatures leaves the estimate an error of about 420/sqrt(N) bp
(one standard deviation): 8 gave +-150 bp, 256 gives ~26 bp. Signing one SLH-DSA "s"
signature takes 0.7-1.1 s of CPU here, so the pool is signed once, on every CPU this
process may use, and cached.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qprof.verify import Signer

# A transaction sighash is 32 bytes: verify what a node verifies.
MESSAGE = hashlib.sha256(b"qprof verify-unit measurement").digest()
CONTEXT = b""
SLH_DSA_POOL_SIZE = 256  # per SLH-DSA suite: its share of the error ~25 bp (see above)
ML_DSA_POOL_SIZE = 32  # ML-DSA: ~1 % between signatures, signing takes a millisecond
# Cache files are named with this: pools of another size or make are not reused (the pools
# of 8 that older versions cached would keep their +-150 bp).
CACHE_TAG = "pool256"
# An override of the pool size (tests, small boxes): at most this many per suite.
POOL_SIZE_ENV = "QPROF_POOL_SIZE"


def pool_size(suite: str) -> int:
    """Keys and signatures of ``suite``'s pool (``$QPROF_POOL_SIZE`` caps it)."""
    size = SLH_DSA_POOL_SIZE if suite.startswith("SLH-DSA") else ML_DSA_POOL_SIZE
    cap = os.environ.get(POOL_SIZE_ENV, "")
    return max(1, min(size, int(cap))) if cap.isdigit() else size


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
        out = {
            "suite": self.suite,
            "public_key": self.public_key.hex(),
            "message": self.message.hex(),
            "signature": self.signature.hex(),
            "context": self.context.hex(),
            "signed_by": self.signed_by,
        }
        if self.invalid_signature != flip_one_byte(self.signature):
            out["invalid_signature"] = self.invalid_signature.hex()  # else derived on load
        return out

    @classmethod
    def from_dict(cls, d: dict[str, str]) -> Fixture:
        return cls(
            suite=d["suite"],
            public_key=bytes.fromhex(d["public_key"]),
            message=bytes.fromhex(d["message"]),
            signature=bytes.fromhex(d["signature"]),
            invalid_signature=(bytes.fromhex(d["invalid_signature"])
                               if "invalid_signature" in d
                               else flip_one_byte(bytes.fromhex(d["signature"]))),
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

# Where round r's timed calls start in the pool: r x the golden ratio's fraction of its
# size. A check round takes fewer values than the pool holds (100 of 256
# SLH-DSA-SHAKE-256s signatures, 200 of 256 for 128s), so rounds that all started at
# signature 0 verified the first 100 only, and every estimate was of those: the pool's
# share of the error that of 100 signatures (~41 bp), and on one cache the first 100 ran
# 22 bp below all 256. Golden-ratio steps spread the starts evenly for any number of
# rounds.
_GOLDEN_FRACTION = 0.6180339887498949


def pool_start(round_index: int, size: int) -> int:
    """The pool signature round ``round_index``'s first timed call takes."""
    return int((round_index * _GOLDEN_FRACTION) % 1.0 * size) if size > 0 else 0


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


def _sign_many(suite: str, preferred: tuple[str, ...], count: int) -> list[Fixture]:
    """``count`` fixtures signed by helper processes on every CPU this process may use
    (SLH-DSA "s" signing takes seconds each): ``python -m qprof.measure.fixtures``, so
    nothing of the caller (its threads, its main module) is copied or re-run."""
    workers = min(len(os.sched_getaffinity(0)), count)
    if workers <= 1:
        return [make_fixture(suite, preferred) for _ in range(count)]
    shares = [count // workers + (1 if i < count % workers else 0) for i in range(workers)]
    procs = [subprocess.Popen([sys.executable, "-m", "qprof.measure.fixtures", suite, str(n),
                               *preferred], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for n in shares]
    out: list[Fixture] = []
    errors = []
    for proc in procs:
        stdout, stderr = proc.communicate()
        if proc.returncode != 0:
            errors.append(stderr.decode(errors="replace").strip().splitlines()[-1:])
            continue
        out.extend(Fixture.from_dict(d) for d in json.loads(stdout))
    if errors:
        raise FixtureError(f"signing {suite} in helper processes failed: {errors}")
    return out


# Cached fixtures are checked with the verifier before use: these many of them (the first
# ones, then a spread), since verifying every SLH-DSA signature of a pool twice on every
# run would cost a second; a cache file is written whole (tmp + rename) by qprof only.
CHECKED_PER_LOAD = 4


def cached_pool(suite: str, preferred: tuple[str, ...] = (), directory: Path | None = None,
                checker: str | None = None, size: int | None = None,
                say: Callable[[str], None] | None = None) -> Pool:
    """``size`` fixtures of ``suite`` (default :func:`pool_size`): the cached ones (a few
    checked with ``checker``), topped up with new ones; ``say`` is told what the signing
    will take before it starts.

    Test keys only: caching them saves signing SLH-DSA "s" signatures (about a second
    each) on every run.
    """
    size = size or pool_size(suite)
    d = directory or cache_dir()
    path = d / f"{suite}.{CACHE_TAG}.json"
    pool: list[Fixture] = []
    if path.is_file() and checker:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            items = [Fixture.from_dict(item) for item in json.loads(path.read_text())]
            step = max(1, len(items) // CHECKED_PER_LOAD)
            probe = items[::step][:CHECKED_PER_LOAD]
            if all(fx.suite == suite and fx.message == MESSAGE for fx in items) and all(
                    _still_good(fx, checker) for fx in probe):
                pool = items
    if len(pool) >= size:
        return tuple(pool[:size])
    missing = size - len(pool)
    pool.append(make_fixture(suite, preferred))  # the first also loads the backend
    if missing > 1:
        started = time.monotonic()
        pool.append(make_fixture(suite, preferred))
        one, rest = time.monotonic() - started, missing - 2
        cpus = len(os.sched_getaffinity(0))
        workers = max(1, min(cpus, rest))
        # What the helpers will get of the CPUs: others' load shares them (the estimate
        # said 97 s where a shared 2-vCPU guest took 366 s).
        free = max(1.0, min(workers, cpus + 1 - os.getloadavg()[0]))
        if one * rest < 2.0:  # ML-DSA: milliseconds each, here
            pool.extend(make_fixture(suite, preferred) for _ in range(rest))
        elif rest > 0:
            if say is not None:
                say(f"signing {missing} {suite} signatures, ~{one * rest / free:.0f} s, "
                    "once; cached")
            pool.extend(_sign_many(suite, preferred, rest))
    with contextlib.suppress(OSError):
        d.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps([fx.to_dict() for fx in pool]))
        tmp.replace(path)
    return tuple(pool)


def _main(argv: list[str]) -> int:
    """``python -m qprof.measure.fixtures SUITE COUNT [BACKEND...]``: COUNT fixtures as a
    JSON list on stdout (the helper processes of :func:`_sign_many`)."""
    suite, count, preferred = argv[0], int(argv[1]), tuple(argv[2:])
    print(json.dumps([make_fixture(suite, preferred).to_dict() for _ in range(count)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
