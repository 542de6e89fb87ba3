"""Keys and signatures prepared once per run and shared by its workers.

Signing an SLH-DSA "s" signature takes about a second, so each suite's pool of keys and
signatures (:func:`pool_size`) is signed once and cached; FIPS encodings make one
backend's signature verify with every other, and the invalid one is the valid one with a
byte flipped. The timed loop takes the pool in turn from a start that moves each round
(:func:`pool_start`), since a signature's cost depends on it. A run with fewer than
:data:`FIRST_POOL_SIZE` cached signs that many in helpers and starts;
:mod:`qprof.measure.poolgrow` signs the rest. Figures: docs/FIRST_MINUTES.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from qprof.atomicfile import OutputError, write_private
from qprof.measure.child.job import ChildJob, Entry
from qprof.measure.child.launch import launch
from qprof.measure.lifeline import die_with_parent, parent_gone
from qprof.userfile import read_json
from qprof.verify import SIGNING_BACKENDS, Signer, available_backends, get_signer, get_verifier

# A transaction sighash is 32 bytes: verify what a node verifies.
MESSAGE = hashlib.sha256(b"qprof verify-unit measurement").digest()
CONTEXT = b""
# Per SLH-DSA suite: unheld, its share of the error ~25 bp (docs/FIRST_MINUTES.md); held to every
# signature's mix (poolmix), what the count leaves: under 5 bp.
SLH_DSA_POOL_SIZE = 256
ML_DSA_POOL_SIZE = 32  # ML-DSA: ~1 % between signatures, signing takes a millisecond
# An SLH-DSA pool a run signs before it measures when the cache holds fewer: 8 x 0.9 s
# (128s) + 8 x 1.45 s (256s) on two CPUs is ~9 s. Held to every signature's mix of costs
# (qprof.consensus.estimate.poolmix), 8 signatures leave ~28 bp (one sd) of the pool's
# error, held by the interval; unheld, 8 left ~150 bp. The rest of the pool is signed
# by qprof.measure.poolgrow.
FIRST_POOL_SIZE = 8
# Cache files are named with this: pools of another size or make are not reused (the pools
# of 8 that older versions cached would keep their +-150 bp).
CACHE_TAG = "pool256"
# An override of the pool size (tests, small boxes): at most this many per suite.
POOL_SIZE_ENV = "QPROF_POOL_SIZE"


def slow_to_sign(suite: str) -> bool:
    """SLH-DSA: signing takes up to seconds each (signed in helper processes, and only a
    first pool before a run); ML-DSA: milliseconds."""
    return suite.startswith("SLH-DSA")


def pool_size(suite: str) -> int:
    """Keys and signatures of ``suite``'s full pool (``$QPROF_POOL_SIZE`` caps it)."""
    size = SLH_DSA_POOL_SIZE if slow_to_sign(suite) else ML_DSA_POOL_SIZE
    cap = os.environ.get(POOL_SIZE_ENV, "")
    return max(1, min(size, int(cap))) if cap.isdigit() else size


def first_pool_size(suite: str) -> int:
    """What a run needs cached (else signs) before it measures ``suite``."""
    full = pool_size(suite)
    return min(FIRST_POOL_SIZE, full) if slow_to_sign(suite) else full


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
    try:
        v = get_verifier(checker, fx.suite)
    except Exception:
        return False
    return v.verify(fx.public_key, fx.message, fx.signature, fx.context) and not v.verify(
        fx.public_key, fx.message, fx.invalid_signature, fx.context
    )


@dataclass(frozen=True)
class Signing:
    """Signing in progress: what the progress line shows while a pool is signed."""

    suite: str
    signed: int
    total: int
    helpers: int
    elapsed_s: float
    pids: tuple[int, ...] = ()  # the signing helpers' (the run may lower their priority)

    @property
    def seconds_each(self) -> float | None:
        """Wall seconds per signature so far, all helpers together (None before one)."""
        return self.elapsed_s / self.signed if self.signed else None

    @property
    def left_s(self) -> float | None:
        each = self.seconds_each
        return None if each is None else each * (self.total - self.signed)

    def text(self) -> str:
        each = self.seconds_each
        rate = f", {each:.1f} s per signature" if each is not None else ""
        return (f"signing {self.total} {self.suite} signatures ({self.helpers} "
                f"{'helper' if self.helpers == 1 else 'helpers'}, once; cached): "
                f"{self.signed}/{self.total}{rate}")


class SigningStopped(FixtureError):
    """``stop`` was set while a pool was signed (what was signed is cached)."""


OnSigning = Callable[[Signing], None]
_POLL_S = 0.1  # how often signing helpers are checked against ``stop``


@dataclass(frozen=True)
class SignJob(ChildJob):
    """A signing helper's job: ``count`` fixtures of ``suite``; it dies with ``parent``."""

    KIND: ClassVar[str] = "qprof.measure.fixtures"
    parent: int
    suite: str
    count: int
    backends: tuple[str, ...]


def _end_helpers(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGKILL what still runs (signing keeps nothing worth a grace period) and reap."""
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.kill()
    for proc in procs:
        with contextlib.suppress(OSError):
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def _sign_many(suite: str, preferred: tuple[str, ...], count: int,
               stop: threading.Event | None = None, on_signing: OnSigning | None = None,
               out: list[Fixture] | None = None) -> list[Fixture]:
    """``count`` fixtures signed by helper processes on every CPU this process may use:
    new interpreters (:class:`SignJob`), so nothing of the caller (its threads, its main
    module) is copied or re-run. Each helper prints a signature per line as it is made
    (the progress line's rate) and dies with this process (PR_SET_PDEATHSIG); ``stop``
    ends them within ``_POLL_S`` (:class:`SigningStopped`; ``out`` keeps what was signed)."""
    out = [] if out is None else out
    workers = max(1, min(len(os.sched_getaffinity(0)), count))
    shares = [count // workers + (1 if i < count % workers else 0) for i in range(workers)]
    started = time.monotonic()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for n in shares:
            procs.append(launch(SignJob(os.getpid(), suite, n, preferred),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        sel = selectors.DefaultSelector()
        pending: dict[int, bytes] = {}
        for proc in procs:
            assert proc.stdout is not None
            sel.register(proc.stdout, selectors.EVENT_READ, proc)
            pending[proc.pid] = b""
        open_streams = len(procs)

        def report() -> None:
            if on_signing is not None:
                on_signing(Signing(suite, len(out), count, len(procs),
                                   time.monotonic() - started, tuple(p.pid for p in procs)))

        report()
        while open_streams:
            if stop is not None and stop.is_set():
                raise SigningStopped(f"signing {suite} stopped")
            for key, _ in sel.select(timeout=_POLL_S):
                proc = key.data
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                *lines, pending[proc.pid] = (pending[proc.pid] + chunk).split(b"\n")
                for line in lines:
                    if line.strip():
                        out.append(Fixture.from_dict(json.loads(line)))
                        report()
        sel.close()
        errors = []
        for proc in procs:
            if proc.wait() != 0:
                assert proc.stderr is not None
                tail = proc.stderr.read().decode(errors="replace").strip().splitlines()
                errors.append(tail[-1] if tail else f"exit code {proc.returncode}")
        if errors:
            raise FixtureError(f"signing {suite} in helper processes failed: "
                               f"{'; '.join(errors)}")
        return out
    finally:
        _end_helpers(procs)


# Cached fixtures are checked with the verifier before use: these many of them (the first
# ones, then a spread), since verifying every SLH-DSA signature of a pool twice on every
# run would cost a second; a cache file is written whole (tmp + rename) by qprof only.
CHECKED_PER_LOAD = 4


def cache_path(suite: str, directory: Path | None = None) -> Path:
    return (directory or cache_dir()) / f"{suite}.{CACHE_TAG}.json"


# A cache of 1024 SLH-DSA-SHAKE-256s fixtures in hex is ~120 MB.
CACHE_MAX_BYTES = 256 << 20


def read_cached(suite: str, directory: Path | None = None) -> list[Fixture]:
    """The cached fixtures of ``suite`` as written (unchecked; [] when none or unreadable)."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
        items = [Fixture.from_dict(item) for item in read_json(  # bounded, not /proc
            cache_path(suite, directory), CACHE_MAX_BYTES, "fixture cache")]
        if all(fx.suite == suite and fx.message == MESSAGE for fx in items):
            return items
    return []


def write_cached(suite: str, pool: list[Fixture], directory: Path | None = None) -> bool:
    """The cache file of ``suite`` whole or not at all (a unique tmp file + rename: the
    pool grower and a run may write it one after the other). False: not written (full
    disk, unwritable file): the pool grower stops then."""
    path = cache_path(suite, directory)
    try:
        write_private(path.parent, path.name, json.dumps([fx.to_dict() for fx in pool]))
    except (OutputError, OSError):
        return False
    return True


def cached_pool(suite: str, preferred: tuple[str, ...] = (), directory: Path | None = None,
                checker: str | None = None, size: int | None = None,
                first: int | None = None, on_signing: OnSigning | None = None,
                stop: threading.Event | None = None) -> Pool:
    """The cached fixtures of ``suite`` (a few checked with ``checker``), up to ``size``
    (default :func:`pool_size`); when fewer than ``first`` (default
    :func:`first_pool_size`) are cached, topped up to ``first`` first. ``on_signing`` is
    told how the signing goes; ``stop`` ends it (:class:`SigningStopped`, what was signed
    is cached).

    Test keys only: caching them saves signing SLH-DSA "s" signatures (about a second
    each) on every run.
    """
    size = size or pool_size(suite)
    want = min(first or first_pool_size(suite), size)
    pool: list[Fixture] = []
    if checker:
        items = read_cached(suite, directory)
        step = max(1, len(items) // CHECKED_PER_LOAD)
        if items and all(_still_good(fx, checker) for fx in items[::step][:CHECKED_PER_LOAD]):
            pool = items
    if len(pool) >= want:
        return tuple(pool[:size])
    missing = want - len(pool)
    try:
        if slow_to_sign(suite):
            _sign_many(suite, preferred, missing, stop, on_signing, out=pool)
        else:
            pool.extend(make_fixture(suite, preferred) for _ in range(missing))
    finally:
        write_cached(suite, pool, directory)  # what was signed is kept, stopped or not
    return tuple(pool)


def run_signer(job: SignJob) -> int:
    """The helper of :func:`_sign_many`: ``job.count`` fixtures as JSON, one per line as
    each is signed; it dies with its parent."""
    die_with_parent()
    # Ctrl-C reaches the whole process group: end quietly (the parent says what happened).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if parent_gone(job.parent):
        return 6
    for _ in range(job.count):
        print(json.dumps(make_fixture(job.suite, job.backends).to_dict()), flush=True)
    return 0


CHILD = Entry(SignJob, run_signer)
