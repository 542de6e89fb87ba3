"""A real worst-case block, verified the way a node does: signatures spread over cores.

The block is built (fresh keys, one suite or a mixture: :func:`build_mixed_block`) and
verified by one thread per CPU, each pinned and with its own verifiers (they are not
thread-safe); numba's kernels are ``nogil`` and liboqs's ctypes calls release the GIL,
so the threads run in parallel. Each thread records its span, every verdict is kept.
Modes as the engine's: ``single``, ``enforce`` (the second verifier on what the first
accepted) and ``shadow`` (both always; the second only reports disagreements).
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from qprof.measure.fixtures import CONTEXT, candidate_signers, flip_one_byte
from qprof.verify import SUITES, get_signer, get_verifier

MODES = ("single", "enforce", "shadow")
# SLH-DSA "s" signing takes about a second a signature: such blocks repeat a pool of
# fresh signatures (verification costs the same for a repeat; nothing is cached).
SLOW_SIGNING_POOL = 8


class BlockError(RuntimeError):
    """The block cannot be built or verified here (message says why)."""


@dataclass(frozen=True)
class BlockItem:
    public_key: bytes
    message: bytes
    signature: bytes
    context: bytes
    valid: bool  # what the signer made: a real signature, or one with a byte flipped
    suite: str = ""  # the item's suite (a mixed block holds several)


@dataclass(frozen=True)
class Block:
    suite: str  # the suite, or for a mixture its composition ("608 x A + 87 x B")
    items: tuple[BlockItem, ...]
    signed_by: str
    distinct: int  # different (key, signature) pairs in the block
    composition: tuple[tuple[str, int], ...] = ()  # (suite, spends); () = one suite

    @property
    def suites(self) -> list[str]:
        return [s for s, _ in self.composition] if self.composition else [self.suite]


@dataclass(frozen=True)
class ThreadSpan:
    """One verifying thread: its CPU, its share and when it ran (perf_counter s)."""

    cpu: int
    signatures: int
    start_s: float
    end_s: float


@dataclass
class BlockResult:
    suite: str
    backend: str
    mode: str
    second: str | None  # the second verifier in enforce/shadow modes
    signatures: int
    distinct_signatures: int
    scope: str  # "all", "cluster N" or "cpu N"
    cpus: list[int]
    wall_s: float
    single_core_estimate_s: float  # signatures x median per-signature time on one core
    speedup: float  # single_core_estimate_s / wall_s
    block_interval_s: float | None
    interval_fraction: float | None  # wall_s / block_interval_s
    all_verified: bool  # every valid signature accepted, every invalid one rejected
    accepted: int
    rejected: int
    wrong_verdicts: list[int]  # indexes into the block whose verdict was wrong
    disagreements: int  # dual modes: both verifiers ran and differed
    threads: list[ThreadSpan] = field(default_factory=list)
    verdicts: list[bool] = field(default_factory=list, repr=False)
    wall_runs_s: list[float] = field(default_factory=list)  # every run (median_run)
    # median_run: the median wall time of the runs and its distribution-free 95 %
    # interval (order statistics; None with fewer than 6 runs, which cannot give one).
    wall_median_s: float | None = None
    wall_ci_s: list[float] | None = None
    # Against the single-CPU runs of the same repeats (interleaved, so a host phase hits
    # both): the median of the paired wall-time ratios and its 95 % interval.
    vs_single: float | None = None
    vs_single_ci: list[float] | None = None
    composition: list[tuple[str, int]] = field(default_factory=list)  # a mixed block

    @property
    def overlap_s(self) -> float:
        """How long every thread was running at once (0 with one thread)."""
        if len(self.threads) < 2:
            return 0.0
        return max(
            0.0,
            min(t.end_s for t in self.threads) - max(t.start_s for t in self.threads),
        )

    def to_dict(self, with_verdicts: bool = False) -> dict[str, Any]:
        d = asdict(self)
        d["overlap_s"] = self.overlap_s
        if not with_verdicts:
            d.pop("verdicts")
        return d


def _binomial_cdf(k: int, n: int) -> float:
    return float(sum(math.comb(n, i) for i in range(k + 1))) / 2.0**n


def median_interval(values: Sequence[float], confidence: float = 0.95
                    ) -> tuple[float, float] | None:
    """Distribution-free interval of the median: the order statistics (k, n+1-k) with
    the largest k whose coverage 1 - 2 P(Bin(n, 1/2) < k) is at least ``confidence``.
    None when even (min, max) covers less (fewer than 6 values at 95 %)."""
    x = sorted(values)
    n = len(x)
    best = None
    for k in range(1, n // 2 + 1):
        if 1 - 2 * _binomial_cdf(k - 1, n) >= confidence:
            best = k
    if best is None:
        return None
    return x[best - 1], x[n - best]


def median_run(runs: Sequence[BlockResult],
               single: Sequence[BlockResult] | None = None) -> BlockResult:
    """The run with the median wall time (the lower middle for an even count), with
    every run's wall time in ``wall_runs_s``, the median and its 95 % interval, and
    (given the single-CPU runs of the same repeats, in the same order) the median
    paired ratio to them; all_verified only when every run was right. On a shared host
    one short block is easily slowed by a neighbour."""
    if not runs:
        raise BlockError("no runs")
    ordered = sorted(runs, key=lambda r: r.wall_s)
    chosen = replace(ordered[(len(ordered) - 1) // 2])
    walls = [r.wall_s for r in runs]
    chosen.wall_runs_s = walls
    chosen.wall_median_s = statistics.median(walls)
    ci = median_interval(walls)
    chosen.wall_ci_s = list(ci) if ci else None
    if single is not None and len(single) == len(runs):
        ratios = [r.wall_s / s.wall_s for r, s in zip(runs, single, strict=True)
                  if s.wall_s > 0]
        if ratios:
            chosen.vs_single = statistics.median(ratios)
            ratio_ci = median_interval(ratios)
            chosen.vs_single_ci = list(ratio_ci) if ratio_ci else None
    chosen.all_verified = all(r.all_verified for r in runs)
    chosen.wrong_verdicts = sorted({i for r in runs for i in r.wrong_verdicts})
    return chosen


def build_block(
    suite: str, signatures: int, distinct: int | None = None, invalid: Sequence[int] = ()
) -> Block:
    """``signatures`` items of ``suite``: ``distinct`` fresh key pairs, each signing its
    own message (default: all distinct for ML-DSA, a pool of SLOW_SIGNING_POOL for
    SLH-DSA), repeated in turn to fill the block; items at ``invalid`` indexes get one
    byte of the signature flipped. Signing is spread over threads like verification."""
    if signatures < 1:
        raise BlockError("a block needs at least one signature")
    if distinct is None:
        distinct = signatures if SUITES[suite].family == "ML-DSA" else SLOW_SIGNING_POOL
    distinct = max(1, min(distinct, signatures))
    found, reasons = candidate_signers(suite, ("liboqs",))
    if not found:
        raise BlockError(f"no backend can sign {suite} here ({'; '.join(reasons)})")
    backend = found[0][0]
    errors: list[Exception] = []

    Signed = tuple[bytes, bytes, bytes]  # public key, message, signature

    def sign_some(indexes: range, out: list[Signed | None]) -> None:
        try:
            signer = get_signer(backend, suite)  # one per thread: not thread-safe
            for i in indexes:
                pk, sk = signer.keypair()
                msg = os.urandom(32)  # a transaction sighash
                out[i] = (pk, msg, signer.sign(sk, msg, CONTEXT))
        except Exception as exc:  # reported below, with the backend's name
            errors.append(exc)

    pool: list[Signed | None] = [None] * distinct
    workers = max(1, min(len(os.sched_getaffinity(0)), distinct))
    threads = [
        threading.Thread(target=sign_some, args=(range(w, distinct, workers), pool))
        for w in range(workers)
    ]
    started, failed = _start_all(threads)
    if failed is not None:
        errors.append(failed)
    for t in started:
        t.join()
    if errors or any(p is None for p in pool):
        raise BlockError(f"{backend} failed to sign {suite}: {errors[0] if errors else '?'}")
    bad = set(invalid)
    items = []
    signed = [p for p in pool if p is not None]
    for i in range(signatures):
        pk, msg, sig = signed[i % distinct]
        items.append(BlockItem(pk, msg, flip_one_byte(sig) if i in bad else sig, CONTEXT,
                               i not in bad, suite))  # fmt: skip
    return Block(suite, tuple(items), backend, distinct)


def build_mixed_block(composition: Sequence[tuple[str, int]],
                      distinct: int | None = None) -> Block:
    """A block of several suites, ``composition`` = (suite, spends) each, built with
    :func:`build_block` per suite and interleaved evenly (item k of a suite with n
    spends sits at k/n of the block), so every thread's contiguous share holds the same
    mixture."""
    parts = [(s, n) for s, n in composition if n > 0]
    if not parts:
        raise BlockError("an empty composition")
    if len(parts) == 1:
        return build_block(parts[0][0], parts[0][1], distinct)
    blocks = [build_block(s, n, distinct) for s, n in parts]
    keyed = [((k + 0.5) / len(b.items), i, it) for i, b in enumerate(blocks)
             for k, it in enumerate(b.items)]
    items = tuple(it for _, _, it in sorted(keyed, key=lambda x: (x[0], x[1])))
    label = " + ".join(f"{n} x {s}" for s, n in parts)
    return Block(label, items, "+".join(sorted({b.signed_by for b in blocks})),
                 sum(b.distinct for b in blocks), tuple(parts))


def node_verifier(
    suite: str, backend: str, mode: str, second: str | None
) -> Callable[[BlockItem], tuple[bool, bool]]:
    """item -> (node accepts, the two verifiers disagreed); fresh verifier objects."""
    first = get_verifier(backend, suite)
    first.warm_up()
    if mode == "single":
        return lambda it: (
            first.verify(it.public_key, it.message, it.signature, it.context),
            False,
        )
    if second is None:
        raise BlockError(f"mode {mode} needs a second verifier")
    other = get_verifier(second, suite)
    other.warm_up()

    def dual(it: BlockItem) -> tuple[bool, bool]:
        a = first.verify(it.public_key, it.message, it.signature, it.context)
        if mode == "enforce":
            if not a:
                return False, False
            b = other.verify(it.public_key, it.message, it.signature, it.context)
            return b, not b
        b = other.verify(it.public_key, it.message, it.signature, it.context)
        return a, a != b

    return dual


def block_verifier(block: Block, backend: str, mode: str, second: str | None
                   ) -> Callable[[BlockItem], tuple[bool, bool]]:
    """:func:`node_verifier` for every suite of ``block``; a mixture dispatches on each
    item's suite (fresh verifier objects: one set per thread)."""
    suites = block.suites
    if len(suites) == 1:
        return node_verifier(suites[0], backend, mode, second)
    by_suite = {s: node_verifier(s, backend, mode, second) for s in suites}
    return lambda it: by_suite[it.suite](it)


def _run_threads(
    block: Block, cpus: Sequence[int], make: Callable[[], Callable[[BlockItem], tuple[bool, bool]]]
) -> tuple[float, list[ThreadSpan], list[bool], int]:
    """Verify the block with one pinned thread per CPU, contiguous shares."""
    n = len(block.items)
    verdicts: list[bool] = [False] * n
    disagreements = [0] * len(cpus)
    spans: list[ThreadSpan | None] = [None] * len(cpus)
    errors: list[BaseException] = []
    bounds = [n * k // len(cpus) for k in range(len(cpus) + 1)]
    ready = threading.Barrier(len(cpus) + 1)

    def work(slot: int) -> None:
        try:
            os.sched_setaffinity(0, {cpus[slot]})  # this thread only (Linux)
            verify = make()
            for it in block.items[: max(1, len(cpus))]:
                verify(it)  # warm the caches and this thread's verifiers
        except BaseException as exc:  # reported by the caller
            errors.append(exc)
            ready.abort()
            return
        try:
            ready.wait()
        except threading.BrokenBarrierError:
            return
        start = time.perf_counter()
        for i in range(bounds[slot], bounds[slot + 1]):
            ok, differ = verify(block.items[i])
            verdicts[i] = ok
            disagreements[slot] += differ
        end = time.perf_counter()
        spans[slot] = ThreadSpan(cpus[slot], bounds[slot + 1] - bounds[slot], start, end)

    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(len(cpus))]
    started, failed = _start_all(threads)
    if failed is not None:
        errors.append(failed)
        ready.abort()  # the started ones would wait for the missing one for ever
    with contextlib.suppress(threading.BrokenBarrierError):  # a worker failed: see errors
        ready.wait()
    for t in started:
        t.join()
    if errors:
        raise BlockError(f"a verifying thread failed: {errors[0]}") from errors[0]
    done = [s for s in spans if s is not None]
    wall = max(s.end_s for s in done) - min(s.start_s for s in done)
    return wall, done, verdicts, sum(disagreements)


def _start_all(threads: list[threading.Thread]
               ) -> tuple[list[threading.Thread], RuntimeError | None]:
    """Start each thread: the ones started, and why the next could not start (a task
    limit, as systemd's TasksMax=), if one could not."""
    started: list[threading.Thread] = []
    for t in threads:
        try:
            t.start()
        except RuntimeError as exc:
            return started, RuntimeError(f"cannot start a thread: {exc}")
        started.append(t)
    return started, None


def single_core_median_s(
    block: Block, cpu: int, verify: Callable[[BlockItem], tuple[bool, bool]], sample: int = 200
) -> float:
    """Median time of one verification on ``cpu`` (calling thread pinned), over up to
    ``sample`` items of the block: the per-signature figure the estimate multiplies."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        times = []
        items = block.items[:sample]
        for it in items[:2]:
            verify(it)
        for it in items:
            t0 = time.perf_counter()
            verify(it)
            times.append(time.perf_counter() - t0)
    finally:
        os.sched_setaffinity(0, before)
    return statistics.median(times)


def verify_block(
    block: Block,
    cpus: Sequence[int],
    backend: str,
    mode: str = "single",
    second: str | None = None,
    scope: str = "all",
    block_interval_s: float | None = None,
    per_signature_s: float | None = None,
) -> BlockResult:
    """Verify ``block`` on ``cpus`` (one pinned thread each); see the module doc.

    ``per_signature_s``: the single-core median to estimate with; measured on
    ``cpus[0]`` when not given (pass it to compare several scopes with one estimate).
    """
    if mode not in MODES:
        raise BlockError(f"unknown mode {mode!r}; modes: {', '.join(MODES)}")
    if not cpus:
        raise BlockError("no CPUs to verify on")
    if mode != "single" and second is None:
        second = "numba"

    def make() -> Callable[[BlockItem], tuple[bool, bool]]:
        return block_verifier(block, backend, mode, second)

    if per_signature_s is None:
        per_signature_s = single_core_median_s(block, cpus[0], make())
    wall, spans, verdicts, disagreements = _run_threads(block, cpus, make)
    n = len(block.items)
    estimate = per_signature_s * n
    wrong = [i for i, it in enumerate(block.items) if verdicts[i] is not it.valid]
    return BlockResult(
        suite=block.suite,
        backend=backend,
        mode=mode,
        second=second if mode != "single" else None,
        signatures=n,
        distinct_signatures=block.distinct,
        scope=scope,
        cpus=list(cpus),
        wall_s=wall,
        single_core_estimate_s=estimate,
        speedup=estimate / wall if wall > 0 else float("inf"),
        block_interval_s=block_interval_s,
        interval_fraction=(wall / block_interval_s) if block_interval_s else None,
        all_verified=not wrong,
        accepted=sum(verdicts),
        rejected=n - sum(verdicts),
        wrong_verdicts=wrong,
        disagreements=disagreements,
        threads=spans,
        verdicts=verdicts,
        composition=list(block.composition),
    )
