"""What a worker times: one operation per value, on the job's clock.

A time function ``f(loops) -> seconds`` runs the operation ``loops`` times and returns the
time taken minus the clock's own overhead. :func:`interleave` times the tasks of one round
in turns; :func:`choose_values` picks a task's number of values from its time budget.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from qprof.measure.fixtures import Fixture, Pool, pool_start
from qprof.measure.protocol import Task
from qprof.verify import get_kem, get_signer, get_verifier

TimeFunc = Callable[[int], float]
MAX_EXAMPLES = 5  # disagreement inputs kept per task
MIN_VALUE_S = 1e-9  # pyperf wants values > 0


def clock_overhead(now: Callable[[], float], pairs: int = 2001) -> float:
    gaps = []
    for _ in range(pairs):
        t0 = now()
        gaps.append(now() - t0)
    gaps.sort()
    return gaps[len(gaps) // 2]


@dataclass(frozen=True)
class Clock:
    """The job's clock and the median cost of reading it twice (subtracted from values).

    "wall": time.perf_counter (the seeds' clock). "cpu": CPU time of this thread
    (CLOCK_THREAD_CPUTIME_ID): on a busy machine a niced worker waits behind other
    processes, and a long operation (SLH-DSA, milliseconds) is cut into many time slices;
    its wall time then measures the queue, not the operation.
    """

    name: str
    now: Callable[[], float]
    overhead_s: float

    @classmethod
    def of(cls, timer: str) -> Clock:
        """ValueError for an unknown timer."""
        now = CLOCKS.get(timer)
        if now is None:
            raise ValueError(f"unknown timer {timer!r}")
        return cls(timer, now, clock_overhead(now))

    def describe(self) -> str:
        """pyperf's ``timer`` metadata, for the clock actually used."""
        name = CLOCK_NAMES[self.name]
        res = time.get_clock_info(name).resolution
        return f"time.{name}(), resolution: {res * 1e9:.0f} ns"


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}
CLOCK_NAMES: dict[str, Literal["perf_counter", "thread_time"]] = {
    "wall": "perf_counter", "cpu": "thread_time"}


@dataclass
class TaskState:
    """Counters the timed loop updates (kept out of the values)."""

    checks: int = 0
    disagreements: int = 0
    wrong_verdicts: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    # Timed calls so far: call j takes the pool's signature (pool_start + j) % pool_size,
    # so a record can say which signature each of its values verified (the interval
    # resamples them).
    calls: int = 0
    pool_size: int | None = None
    pool_start: int = 0

    def reset(self) -> None:
        """Count only timed calls (not the pilot and warm-up ones)."""
        self.checks = self.disagreements = self.wrong_verdicts = self.calls = 0
        self.examples.clear()


# Pool cases verified once before the timing (what numba compiles lazily is per kernel,
# not per input: two are enough, and a pool of 256 SLH-DSA signatures would take 0.4 s).
WARM_CASES = 2


def _verify_func(task: Task, pool: Pool, state: TaskState, clock: Clock) -> TimeFunc:
    """Verify (or a dual pair) timed over ``pool``: each timed call takes the next key and
    signature, so a task's values mix the pool's signatures (what one costs depends on
    it: qprof.measure.fixtures) without a lookup inside the timed loop."""
    perf, overhead = clock.now, clock.overhead_s
    invalid = task.operation.endswith("invalid")
    cases = [(fx.public_key, fx.message, fx.invalid_signature if invalid else fx.signature,
              fx.context) for fx in pool]
    expected = not invalid
    state.pool_size = len(cases)
    state.pool_start = pool_start(task.round, len(cases))

    def next_case() -> tuple[bytes, bytes, bytes, bytes]:
        case = cases[(state.pool_start + state.calls) % len(cases)]
        state.calls += 1
        return case

    if task.operation in ("verify", "verify_invalid"):
        verify = get_verifier(task.backend, task.suite).verify
        for case in cases[:WARM_CASES]:
            verify(*case)  # load lazily compiled parts outside the timing

        def time_verify(loops: int) -> float:
            pk, msg, sig, ctx = next_case()
            bad = 0
            t0 = perf()
            for _ in range(loops):
                if verify(pk, msg, sig, ctx) is not expected:
                    bad += 1
            dt = perf() - t0 - overhead * loops
            state.wrong_verdicts += bad
            return max(dt, MIN_VALUE_S)

        return time_verify

    if task.dual is None:
        raise ValueError(f"{task.operation} needs two verifiers")
    primary_name, secondary_name = task.dual
    primary = get_verifier(primary_name, task.suite).verify
    secondary = get_verifier(secondary_name, task.suite).verify
    for case in cases[:WARM_CASES]:
        primary(*case)
        secondary(*case)
    shadow = task.operation.startswith("dual_shadow")

    def record(a: bool, b: bool, case: tuple[bytes, bytes, bytes, bytes]) -> None:
        state.disagreements += 1
        if len(state.examples) < MAX_EXAMPLES:
            pk, msg, sig, ctx = case
            state.examples.append({
                "backends": {primary_name: a, secondary_name: b},
                "public_key_hex": pk.hex(), "message_hex": msg.hex(),
                "signature_hex": sig.hex(), "context_hex": ctx.hex(), "found_at": time.time(),
            })

    def time_dual(loops: int) -> float:
        case = next_case()
        pk, msg, sig, ctx = case
        # Both verdicts are kept and compared after the clock stops.
        verdicts = []
        t0 = perf()
        for _ in range(loops):
            a = primary(pk, msg, sig, ctx)
            # enforce: the second verifier runs only when the first accepts.
            b = secondary(pk, msg, sig, ctx) if (shadow or a) else None
            verdicts.append((a, b))
        dt = max(perf() - t0 - overhead * loops, MIN_VALUE_S)
        for a, b in verdicts:
            if b is not None:
                state.checks += 1
                if a != b:
                    record(a, b, case)
            if a is not expected and (b is None or b is not expected):
                state.wrong_verdicts += 1
        return dt

    return time_dual


def _loop(op: Callable[[], object], clock: Clock) -> TimeFunc:
    perf, overhead = clock.now, clock.overhead_s

    def timed(loops: int) -> float:
        t0 = perf()
        for _ in range(loops):
            op()
        return max(perf() - t0 - overhead * loops, MIN_VALUE_S)

    return timed


def _wallet_func(task: Task, fx: Fixture | None, clock: Clock) -> TimeFunc:
    signer = get_signer(task.backend, task.suite)
    if task.operation == "keygen":
        return _loop(signer.keypair, clock)
    _pk, sk = signer.keypair()
    msg, ctx = (fx.message, fx.context) if fx else (b"\x00" * 32, b"")
    return _loop(lambda: signer.sign(sk, msg, ctx), clock)


def _kem_func(task: Task, clock: Clock) -> TimeFunc:
    kem = get_kem(task.backend, task.suite or "ML-KEM-1024")
    pk, sk = kem.keypair()
    ct, _ss = kem.encaps(pk)
    ops: dict[str, Callable[[], object]] = {
        "kem_keygen": kem.keypair,
        "kem_encaps": lambda: kem.encaps(pk),
        "kem_decaps": lambda: kem.decaps(sk, ct),
    }
    return _loop(ops[task.operation], clock)


def make_time_func(task: Task, fixtures: dict[str, Pool], state: TaskState,
                   clock: Clock) -> TimeFunc:
    op = task.operation
    if op.startswith("kem_"):
        return _kem_func(task, clock)
    pool = fixtures.get(task.suite)
    if op in ("keygen", "sign"):
        return _wallet_func(task, pool[0] if pool else None, clock)
    if not pool:
        raise KeyError(f"no fixture (key and signature) for {task.suite}")
    return _verify_func(task, pool, state, clock)


def grid_values(n: int, min_n: int, max_n: int) -> int:
    """n rounded down to 1, 1.5, 2, 3, 5 or 7 x a power of ten, within [min_n, max_n].

    Coarse steps make two runs on one machine pick the same count, so pyperf's
    ``compare_to`` can test their difference (its t-test wants equal sample sizes).
    """
    n = max(min_n, min(max_n, n))
    steps = [m * 10**e for e in range(0, 7) for m in (1, 1.5, 2, 3, 5, 7)]
    below = [int(x) for x in steps if min_n <= x <= n]
    return max(below) if below else n


def warmups_for(first_s: float, n: int) -> int:
    """No warm-up for slow operations (one takes > 50 ms); else about 2 % of the values."""
    return 0 if first_s > 0.05 else min(10, max(1, n // 50))


def choose_values(time_func: TimeFunc, budget_s: float, min_n: int, max_n: int) -> tuple[int, int]:
    """(values, warmups) filling about ``budget_s`` of wall time with one-operation values.

    The budget is wall time whatever the clock: on a busy machine a niced worker gets a
    fraction of the CPU, and a budget in CPU time would stretch the run several-fold.
    """
    # Pilot: run operations for a tenth of the budget and count them; the wall time
    # per operation then includes the time the scheduler gives to other processes.
    w0 = time.perf_counter()
    first = time_func(1)
    count = 1
    while count < 3 or time.perf_counter() - w0 < budget_s / 10:
        first = min(first, time_func(1))
        count += 1
        if count >= 3 and first > budget_s / 10:
            break
    wall = (time.perf_counter() - w0) / count
    n = grid_values(int(budget_s / max(first, wall, 1e-9)), min_n, max_n)
    return n, warmups_for(first, n)


@dataclass(frozen=True)
class Interleaved:
    """One round timed in turns: per task its values, one warm-up value, values per turn
    (value j of task i was timed in turn ``j // per_turn[i]``, the same turn for all)."""

    values: list[list[float]]
    warmups: list[float]
    per_turn: list[int]


def interleave(
    funcs: list[TimeFunc], tasks: list[Task], counts: list[int | None], block_s: float,
    before_timing: Callable[[], None] | None = None,
) -> Interleaved:
    """Time the tasks of one round in turns of about ``block_s`` each.

    Every turn of the cycle runs each unfinished task for about ``block_s`` (at least one
    operation), so all tasks of the round see the same state of the host: a neighbour that
    slows the core for a second slows the unit and the suites alike, and their ratio keeps.
    A task's number of values is ``counts[i]`` when the engine fixed it, else its budget
    divided by the time of one operation (from a short pilot), on pyperf-friendly steps.
    """
    warm = [f(1) for f in funcs]  # first calls load lazily compiled parts
    per_op = [max(min(f(1) for _ in range(3)), 1e-7) for f in funcs]
    targets = [
        int(c) if c else grid_values(int(t.budget_s / op), t.min_n, t.max_n)
        for c, t, op in zip(counts, tasks, per_op, strict=True)
    ]
    # The same number of turns for every task (so each B turn has A turns on both sides):
    # as many as the longest task fills with turns of block_s.
    turns = max(1, round(max(n * t for n, t in zip(targets, per_op, strict=True)) / block_s))
    per_turn = [max(1, -(-n // turns)) for n in targets]
    if before_timing is not None:
        before_timing()
    values: list[list[float]] = [[] for _ in funcs]
    while any(len(v) < n for v, n in zip(values, targets, strict=True)):
        for i, f in enumerate(funcs):
            out = values[i]
            for _ in range(min(per_turn[i], targets[i] - len(out))):
                out.append(f(1))
    return Interleaved(values, warm, per_turn)
