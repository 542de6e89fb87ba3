"""`qprof verify-bench`: median verify time of every available backend on one pinned core.

A quick side-by-side of backends in one pinned process (not the engine: that is `qprof
bench`), in interleaved rounds so drift and load hit all backends alike; the per-call
median with its ratio to liboqs. `bench/verify_backends.py` calls the same code. How
the rounds run: docs/FIRST_MINUTES.md.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from qprof.commands.options import Number, add_backends, add_suites
from qprof.hw.format import table
from qprof.measure.units import fmt_ns
from qprof.verify import (
    BACKEND_NAMES,
    SIGNING_BACKENDS,
    SUITES,
    BackendUnavailable,
    Verifier,
    available_backends,
    get_signer,
    get_verifier,
)

MESSAGE = bytes(range(32))  # a 32-byte transaction hash
CONTEXT = b""  # chains sign with an empty context unless a profile says otherwise
REFERENCE_BASELINES = ("liboqs", "rustcrypto")


@dataclass
class BackendTiming:
    backend: str
    median_ns: float | None = None
    min_ns: float | None = None
    max_ns: float | None = None
    calls_per_round: int = 0
    rounds: int = 0
    ratio: float | None = None  # median / baseline median
    problem: str | None = None  # why there is no number (e.g. wrong answer, unavailable)


@dataclass
class SuiteTiming:
    suite: str
    baseline: str | None
    signer: str | None
    timings: list[BackendTiming] = field(default_factory=list)


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cpu", type=Number(int, at_least=0), default=None,
                        help="CPU to pin to (default: the highest-numbered allowed CPU)")
    add_suites(parser, default="all")
    add_backends(parser, default="all available")
    parser.add_argument("--rounds", type=Number(int, at_least=1), default=15,
                        help="interleaved rounds per suite")
    parser.add_argument("--round-ms", type=Number(float, above=0.0), default=20.0,
                        help="target duration of one backend's batch in a round (ms)")
    parser.add_argument("--reference-slh", action="store_true",
                        help="also time the pure-Python reference on SLH-DSA (slow)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def pin_to_cpu(cpu: int | None) -> int:
    """Pin this process to ``cpu`` (default: highest allowed); returns the CPU used."""
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[-1] if cpu is None else cpu
    if chosen not in allowed:
        raise ValueError(f"CPU {chosen} is not available to this process (allowed: {allowed})")
    os.sched_setaffinity(0, {chosen})
    return chosen


def _signed_sample(suite: str, signers: Sequence[str]) -> tuple[str, bytes, bytes] | None:
    for backend in signers:
        try:
            signer = get_signer(backend, suite)
        except BackendUnavailable:
            continue
        pk, sk = signer.keypair()
        return backend, pk, signer.sign(sk, MESSAGE, CONTEXT)
    return None


def _calibrate(call: Callable[[], object], round_ns: float) -> int:
    """Calls per batch so one batch takes about ``round_ns``.

    Uses the fastest of three single calls, so one preempted call (the machine may be
    shared) does not shrink the batch to a single call.
    """
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter_ns()
        call()
        best = min(best, time.perf_counter_ns() - start)
    return max(1, int(round_ns / max(best, 1)))


def time_suite(
    suite: str,
    backends: Sequence[str],
    rounds: int,
    round_ms: float,
) -> SuiteTiming:
    """Interleaved timing of ``backends`` on one suite (process should be pinned)."""
    sample = _signed_sample(suite, SIGNING_BACKENDS)  # liboqs first when present
    result = SuiteTiming(suite, None, sample[0] if sample else None)
    if sample is None:
        result.timings = [BackendTiming(b, problem="no signing backend") for b in backends]
        return result
    _, pk, sig = sample
    verifiers: dict[str, Verifier] = {}
    for backend in backends:
        timing = BackendTiming(backend)
        result.timings.append(timing)
        try:
            verifier = get_verifier(backend, suite)
            verifier.warm_up()
        except BackendUnavailable as exc:
            timing.problem = str(exc)
            continue
        if not verifier.verify(pk, MESSAGE, sig, CONTEXT):
            timing.problem = "WRONG: rejects a valid signature"
            continue
        verifiers[backend] = verifier
    round_ns = round_ms * 1e6
    batches = {
        name: _calibrate(functools.partial(v.verify, pk, MESSAGE, sig, CONTEXT), round_ns)
        for name, v in verifiers.items()
    }
    samples: dict[str, list[float]] = {name: [] for name in verifiers}
    order = list(verifiers)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(rounds):
            rotated = order[r % len(order):] + order[: r % len(order)] if order else []
            for name in rotated:
                verify = verifiers[name].verify
                n = batches[name]
                start = time.perf_counter_ns()
                for _ in range(n):
                    verify(pk, MESSAGE, sig, CONTEXT)
                samples[name].append((time.perf_counter_ns() - start) / n)
    finally:
        if gc_was_enabled:
            gc.enable()
    for timing in result.timings:
        values = samples.get(timing.backend)
        if values:
            timing.median_ns = statistics.median(values)
            timing.min_ns = min(values)
            timing.max_ns = max(values)
            timing.calls_per_round = batches[timing.backend]
            timing.rounds = len(values)
    medians = {t.backend: t.median_ns for t in result.timings if t.median_ns}
    result.baseline = next((b for b in REFERENCE_BASELINES if b in medians), None)
    if result.baseline is not None:
        base = medians[result.baseline]
        for timing in result.timings:
            if timing.median_ns:
                timing.ratio = timing.median_ns / base
    return result


def run_verify_bench(
    suites: Sequence[str] | None = None,
    backends: Sequence[str] | None = None,
    rounds: int = 15,
    round_ms: float = 20.0,
    cpu: int | None = None,
    reference_slh: bool = False,
    progress: Callable[[str], None] | None = None,
) -> tuple[int, list[SuiteTiming]]:
    """Pin, then time every suite; returns (cpu, results). Restores affinity after."""
    for name in suites or ():
        if name not in SUITES:
            raise ValueError(f"unknown suite {name!r}; known suites: {', '.join(SUITES)}")
    for name in backends or ():
        if name not in BACKEND_NAMES:
            raise ValueError(
                f"unknown backend {name!r}; known backends: {', '.join(BACKEND_NAMES)}"
            )
    statuses = available_backends()
    chosen_backends = list(backends) if backends else [
        name for name, status in statuses.items() if status.available
    ]
    previous = os.sched_getaffinity(0)
    used_cpu = pin_to_cpu(cpu)
    results: list[SuiteTiming] = []
    try:
        for suite in suites or list(SUITES):
            family = SUITES[suite].family
            suite_backends = [
                b for b in chosen_backends
                if suite in statuses[b].suites or backends  # explicit: report why not
            ]
            if family == "SLH-DSA" and not reference_slh and not (
                backends and "reference" in backends
            ):
                suite_backends = [b for b in suite_backends if b != "reference"]
            if progress:
                progress(f"{suite}: {', '.join(suite_backends)}")
            results.append(time_suite(suite, suite_backends, rounds, round_ms))
    finally:
        os.sched_setaffinity(0, previous)
    return used_cpu, results


def format_table(cpu: int, results: Sequence[SuiteTiming]) -> str:
    lines = [f"verify time per call on CPU {cpu} (median of interleaved rounds)", ""]
    header = ("SUITE", "BACKEND", "MEDIAN µs", "MIN µs", "MAX µs", "x BASE", "CALLS/RND")
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    for result in results:
        for t in result.timings:
            if t.problem:
                notes.append(f"{result.suite} {t.backend}: {t.problem}")
                continue
            ratio = "-" if t.ratio is None else f"{t.ratio:.2f}"
            if t.backend == result.baseline:
                ratio = "1.00 (base)"
            rows.append((result.suite, t.backend, fmt_ns(t.median_ns, "µs"), fmt_ns(t.min_ns, "µs"),
                         fmt_ns(t.max_ns, "µs"), ratio, str(t.calls_per_round)))
    lines.append(table(header, rows, right=range(2, len(header))))
    if notes:
        lines += ["", "not timed:"] + [f"  {n}" for n in notes]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        cpu, results = run_verify_bench(
            suites=args.suites,
            backends=args.backends,
            rounds=max(1, args.rounds),
            round_ms=max(0.1, args.round_ms),
            cpu=args.cpu,
            reference_slh=args.reference_slh,
            progress=None if args.json else (lambda m: print(f"timing {m}", flush=True)),
        )
    except ValueError as exc:
        print(f"qprof verify-bench: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"cpu": cpu, "results": [asdict(r) for r in results]}, indent=2))
    else:
        print(format_table(cpu, results))
    wrong = any(t.problem and t.problem.startswith("WRONG") for r in results for t in r.timings)
    return 1 if wrong else 0
