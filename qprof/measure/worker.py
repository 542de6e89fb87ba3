"""pyperf worker: one process per (CPU, block of rounds), timing several suites.

The engine (the runner, in pyperf's terms) writes a job file and starts::

    python -m qprof.measure.worker --job JOB.json --worker --loops 1 --warmups 1 \
        --values 1 --affinity CPU --quiet -o ROUND.pyperf.json

Each task of the job names its round; a benchmark measured in several rounds gets one
pyperf run per round (the round is in the run's metadata).

This script is an ordinary ``pyperf.Runner`` script run in pyperf's ``--worker`` mode:
pyperf pins it to ``--affinity`` and writes its own JSON (``python -m pyperf stats`` and
``compare_to`` work on it). Every value is one operation timed on its own (loops = 1), so
medians and p95 are per operation as in the seeds. The number of values is chosen per
task from a time budget. Keys and signatures are loaded once from the run's fixtures.

Besides pyperf's JSON the worker writes a small result file with what pyperf cannot hold:
verifier agreement checks, disagreements (with the inputs), wrong verdicts; it is rewritten
after every task, so when the engine stops the worker (SIGTERM on ``stop``) the tasks
finished so far are still read back. Progress lines ``@qprof {json}`` go to stderr for the
engine. On Linux the worker asks the kernel for SIGTERM when its parent dies (a daemon
killed with -9 must not leave a worker timing on). Exit codes: 0 ok, 3 cannot pin to the
CPU, 4 bad job, 5 a backend failed to load, 6 the engine that started it is gone.

A job with ``serve`` (interleaved rounds, adaptive run) keeps the worker for the engine's
extra rounds: after its tasks it saves, reports ``{"event": "idle"}`` and reads one line
on stdin: ``{"tasks": [...]}`` (more rounds, same keys, verifiers and value counts; their
indices follow the job's tasks) or ``done`` / EOF (exit).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXIT_AFFINITY = 3
EXIT_BAD_JOB = 4
EXIT_BACKEND = 5
EXIT_ORPHAN = 6
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
MAX_EXAMPLES = 5  # disagreement inputs kept per task

TimeFunc = Callable[[int], float]

# "wall": time.perf_counter (the seeds' clock). "cpu": CPU time of this thread
# (CLOCK_THREAD_CPUTIME_ID): on a busy machine a niced worker waits behind other
# processes, and a long operation (SLH-DSA, milliseconds) is cut into many time slices;
# its wall time then measures the queue, not the operation.
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}
CLOCK: Callable[[], float] = time.perf_counter
OVERHEAD = [0.0]  # median cost of reading the clock twice, subtracted from every value


def clock_overhead(clock: Callable[[], float], pairs: int = 2001) -> float:
    gaps = []
    for _ in range(pairs):
        t0 = clock()
        gaps.append(clock() - t0)
    gaps.sort()
    return gaps[len(gaps) // 2]


def _emit(event: dict[str, Any]) -> None:
    sys.stderr.write("@qprof " + json.dumps(event) + "\n")
    sys.stderr.flush()


class TaskState:
    """Counters the timed loop updates (kept out of pyperf's values)."""

    def __init__(self) -> None:
        self.checks = 0
        self.disagreements = 0
        self.wrong_verdicts = 0
        self.examples: list[dict[str, Any]] = []


def _verify_func(task: dict, fx: Any, state: TaskState) -> TimeFunc:
    from qprof.verify import get_verifier

    perf = CLOCK
    invalid = task["operation"].endswith("invalid")
    pk, msg, ctx = fx.public_key, fx.message, fx.context
    sig = fx.invalid_signature if invalid else fx.signature
    expected = not invalid
    op = task["operation"]

    if op in ("verify", "verify_invalid"):
        verify = get_verifier(task["backend"], task["suite"]).verify
        verify(pk, msg, sig, ctx)  # load lazily compiled parts outside the timing

        def time_verify(loops: int) -> float:
            bad = 0
            t0 = perf()
            for _ in range(loops):
                if verify(pk, msg, sig, ctx) is not expected:
                    bad += 1
            dt = perf() - t0 - OVERHEAD[0] * loops
            state.wrong_verdicts += bad
            return max(dt, 1e-9)

        return time_verify

    primary_name, secondary_name = task["dual"]
    primary = get_verifier(primary_name, task["suite"]).verify
    secondary = get_verifier(secondary_name, task["suite"]).verify
    primary(pk, msg, sig, ctx)
    secondary(pk, msg, sig, ctx)
    shadow = op.startswith("dual_shadow")

    def record(a: bool, b: bool) -> None:
        state.disagreements += 1
        if len(state.examples) < MAX_EXAMPLES:
            state.examples.append(
                {
                    "backends": {primary_name: a, secondary_name: b},
                    "public_key_hex": pk.hex(),
                    "message_hex": msg.hex(),
                    "signature_hex": sig.hex(),
                    "context_hex": ctx.hex(),
                    "found_at": time.time(),
                }
            )

    def time_dual(loops: int) -> float:
        # Both verdicts are kept and compared after the clock stops.
        verdicts = []
        t0 = perf()
        for _ in range(loops):
            a = primary(pk, msg, sig, ctx)
            # enforce: the second verifier runs only when the first accepts.
            b = secondary(pk, msg, sig, ctx) if (shadow or a) else None
            verdicts.append((a, b))
        dt = max(perf() - t0 - OVERHEAD[0] * loops, 1e-9)
        for a, b in verdicts:
            if b is not None:
                state.checks += 1
                if a != b:
                    record(a, b)
            if a is not expected and (b is None or b is not expected):
                state.wrong_verdicts += 1
        return dt

    return time_dual


def _wallet_func(task: dict, fx: Any, state: TaskState) -> TimeFunc:
    from qprof.verify import get_signer

    perf = CLOCK
    signer = get_signer(task["backend"], task["suite"])
    if task["operation"] == "keygen":

        def time_keygen(loops: int) -> float:
            t0 = perf()
            for _ in range(loops):
                signer.keypair()
            return max(perf() - t0 - OVERHEAD[0] * loops, 1e-9)

        return time_keygen

    _pk, sk = signer.keypair()
    msg, ctx = fx.message if fx else b"\x00" * 32, fx.context if fx else b""

    def time_sign(loops: int) -> float:
        t0 = perf()
        for _ in range(loops):
            signer.sign(sk, msg, ctx)
        return max(perf() - t0 - OVERHEAD[0] * loops, 1e-9)

    return time_sign


def _kem_func(task: dict) -> TimeFunc:
    from qprof.verify import get_kem

    perf = CLOCK
    kem = get_kem(task["backend"], task.get("suite") or "ML-KEM-1024")
    pk, sk = kem.keypair()
    ct, _ss = kem.encaps(pk)
    op = task["operation"]

    def time_kem(loops: int) -> float:
        t0 = perf()
        if op == "kem_keygen":
            for _ in range(loops):
                kem.keypair()
        elif op == "kem_encaps":
            for _ in range(loops):
                kem.encaps(pk)
        else:
            for _ in range(loops):
                kem.decaps(sk, ct)
        return max(perf() - t0 - OVERHEAD[0] * loops, 1e-9)

    return time_kem


def make_time_func(task: dict, fixtures: dict, state: TaskState) -> TimeFunc:
    op = task["operation"]
    if op.startswith("kem_"):
        return _kem_func(task)
    fx = fixtures.get(task["suite"])
    if op in ("keygen", "sign"):
        return _wallet_func(task, fx, state)
    if fx is None:
        raise KeyError(f"no fixture (key and signature) for {task['suite']}")
    return _verify_func(task, fx, state)


def grid_values(n: int, min_n: int, max_n: int) -> int:
    """n rounded down to 1, 1.5, 2, 3, 5 or 7 x a power of ten, within [min_n, max_n].

    Coarse steps make two runs on one machine pick the same count, so pyperf's
    ``compare_to`` can test their difference (its t-test wants equal sample sizes).
    """
    n = max(min_n, min(max_n, n))
    steps = [m * 10**e for e in range(0, 7) for m in (1, 1.5, 2, 3, 5, 7)]
    below = [int(x) for x in steps if min_n <= x <= n]
    return max(below) if below else n


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
    warmups = 0 if first > 0.05 else min(10, max(1, n // 50))
    return n, warmups


class Replay:
    """A pyperf time function that hands back values already measured, in order.

    In the interleaved scheme the worker times every task of a round in turns of a few
    milliseconds (A B1 B2 ... A B1 B2 ...), then gives each task's values to pyperf one
    benchmark after the other, so pyperf's JSON holds exactly the measured values.
    """

    def __init__(self, values: list[float]) -> None:
        self.values = values
        self.index = 0

    def __call__(self, loops: int) -> float:
        value = self.values[self.index]
        self.index += 1
        return value


def interleave(
    funcs: list[TimeFunc], budgets: list[float], counts: list[int | None],
    min_n: list[int], max_n: list[int], block_s: float,
    before_timing: Callable[[], None] | None = None,
) -> tuple[list[list[float]], list[float], list[int]]:
    """Time the tasks of one round in turns of about ``block_s`` each: (values, warmups).

    Every turn of the cycle runs each unfinished task for about ``block_s`` (at least one
    operation), so all tasks of the round see the same state of the host: a neighbour that
    slows the core for a second slows the unit and the suites alike, and their ratio keeps.
    A task's number of values is ``counts[i]`` when the engine fixed it, else its budget
    divided by the time of one operation (from a short pilot), on pyperf-friendly steps.
    Returns (values, warm-up values, values per turn): value j of task i was timed in turn
    ``j // per_turn[i]``, the same turn for all tasks.
    """
    warm = [f(1) for f in funcs]  # first calls load lazily compiled parts
    per_op = []
    for f in funcs:
        best = min(f(1) for _ in range(3))
        per_op.append(max(best, 1e-7))
    targets = [
        int(c) if c else grid_values(int(b / t), lo, hi)
        for c, b, t, lo, hi in zip(counts, budgets, per_op, min_n, max_n, strict=True)
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
            todo = min(per_turn[i], targets[i] - len(values[i]))
            out = values[i]
            for _ in range(todo):
                out.append(f(1))
    return values, warm, per_turn


def die_with_parent() -> None:
    """Linux: SIGTERM to this process when the process that started it dies.

    (The kernel sends it when the parent *thread* exits; the engine waits for its worker
    in the thread that started it, so that thread outlives the worker.)
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def parent_gone(parent: Any) -> bool:
    """The engine died before prctl took effect: we were already re-parented."""
    return isinstance(parent, int) and parent > 0 and os.getppid() != parent


def write_result(path: Path, cpu: int, results: list[dict[str, Any]],
                 failures: list[dict[str, Any]]) -> None:
    """Rewritten after every task (atomically: a stopped worker leaves a whole file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"cpu": cpu, "results": results, "failures": failures}))
    os.replace(tmp, path)
    if _STOP_PENDING[0]:  # SIGTERM came while pyperf wrote: both files are whole now
        raise SystemExit(128 + signal.SIGTERM)


# Set when SIGTERM arrives while pyperf rewrites its JSON file in place: pyperf truncates
# and rewrites the whole file after each task, so dying then would lose every value of
# the block. The worker leaves right after the task's result is saved instead.
_STOP_PENDING = [False]


def _on_sigterm(signum: int, frame: Any) -> None:
    """The engine stopping: leave at once, unless pyperf is in the middle of a write."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "dump" and os.sep + "pyperf" + os.sep in code.co_filename:
            _STOP_PENDING[0] = True
            return
        frame = frame.f_back
    raise SystemExit(128 + signum)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m qprof.measure.worker")
    parser.add_argument("--job", required=True, help="job file written by the engine")
    return parser


def _pin(cpu: int) -> str | None:
    try:
        os.sched_setaffinity(0, {cpu})
    except (OSError, ValueError) as exc:
        return f"cannot pin to CPU {cpu}: {getattr(exc, 'strerror', None) or exc}"
    return None


def main(argv: list[str] | None = None) -> int:
    die_with_parent()  # first: the imports below take up to a second
    import pyperf

    runner = pyperf.Runner(_argparser=_parser(), values=1, warmups=1, processes=1)
    args = runner.parse_args(argv)
    try:
        job = json.loads(Path(args.job).read_text())
        cpu = int(job["cpu"])
        tasks = list(job["tasks"])
        result_path = Path(job["result"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"qprof worker: bad job file {args.job}: {exc}", file=sys.stderr)
        return EXIT_BAD_JOB
    if parent_gone(job.get("parent")):
        print("qprof worker: the engine that started this worker is gone", file=sys.stderr)
        return EXIT_ORPHAN

    signal.signal(signal.SIGTERM, _on_sigterm)
    error = _pin(cpu)
    if error:
        print(f"qprof worker: {error}", file=sys.stderr)
        return EXIT_AFFINITY
    # Absolute niceness (os.nice adds to the parent's): a daemon already at nice 10 stays 10.
    with contextlib.suppress(OSError):
        target = int(job.get("nice", 10))
        if os.getpriority(os.PRIO_PROCESS, 0) < target:
            os.setpriority(os.PRIO_PROCESS, 0, target)

    global CLOCK
    timer = str(job.get("timer", "wall"))
    if timer not in CLOCKS:
        print(f"qprof worker: bad job file {args.job}: unknown timer {timer!r}", file=sys.stderr)
        return EXIT_BAD_JOB
    CLOCK = CLOCKS[timer]
    OVERHEAD[0] = clock_overhead(CLOCK)

    from qprof.measure.fixtures import load_fixtures

    fixtures = load_fixtures(Path(job["fixtures"])) if job.get("fixtures") else {}
    results: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    chosen: dict[tuple[str, str, str], int] = {}  # values per task, fixed by its first round
    block_s = float(job.get("interleave_block_s") or 0.0)

    def save() -> None:
        write_result(result_path, cpu, results, failures)

    if block_s > 0:
        code = _run_interleaved(runner, job, tasks, fixtures, cpu, timer, block_s, results,
                                failures, chosen, save)
        # "serve": stay for the engine's adaptive rounds. A new process has its own quiet
        # speed (memory placement), up to ~100 bp from another's, so extra rounds timed
        # here agree with the base rounds where a new worker's would widen the spread.
        while not code and job.get("serve"):
            save()
            _emit({"event": "idle"})
            line = sys.stdin.readline()  # one JSON command a line; EOF: the engine is gone
            if not line.strip() or line.strip() == "done":
                break
            try:
                more = list(json.loads(line)["tasks"])
            except (ValueError, KeyError, TypeError) as exc:
                print(f"qprof worker: bad command: {exc}", file=sys.stderr)
                return EXIT_BAD_JOB
            start = len(tasks)
            tasks.extend(more)
            code = _run_interleaved(runner, job, tasks, fixtures, cpu, timer, block_s,
                                    results, failures, chosen, save, start)
    else:
        code = _run_sequential(runner, job, tasks, fixtures, cpu, timer, results, failures,
                               chosen, save)
    if code:
        return code
    save()
    return 0


def _metadata(task: dict[str, Any], job: dict[str, Any], cpu: int, timer: str, name: str,
              extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "qprof_suite": task["suite"],
        "qprof_backend": task["backend"],
        "qprof_operation": task["operation"],
        "qprof_cpu": cpu,
        "qprof_round": int(task.get("round", job.get("round", 0))),
        "qprof_timer": timer,
        "qprof_clock_overhead_ns": round(OVERHEAD[0] * 1e9, 1),
        "description": f"{name} on CPU {cpu}: one operation per value",
        **(extra or {}),
    }


def _to_pyperf(runner: Any, name: str, time_func: TimeFunc, n: int, warmups: int,
               metadata: dict[str, Any]) -> None:
    runner.args.values = n
    runner.args.warmups = warmups
    # Several rounds of one benchmark in one process: each round is one pyperf *run* of
    # the same benchmark (as pyperf's worker processes are), with its round in the run's
    # metadata. pyperf refuses a name twice per process, so forget the name.
    names = getattr(runner, "_bench_names", None)
    if isinstance(names, set):
        names.discard(name)
    runner.bench_time_func(name, time_func, metadata=metadata)


def _result(index: int, name: str, n: int, warmups: int, started: float,
            state: TaskState) -> dict[str, Any]:
    return {
        "index": index,
        "name": name,
        "n": n,
        "warmups": warmups,
        "started_at": started,
        "finished_at": time.time(),
        "checks": state.checks,
        "disagreements": state.disagreements,
        "wrong_verdicts": state.wrong_verdicts,
        "examples": state.examples,
    }


def _reset(state: TaskState) -> None:
    """Verdict counters count only timed calls (not the pilot and warm-up ones)."""
    state.checks = state.disagreements = state.wrong_verdicts = 0
    state.examples.clear()


def _moved(cpu: int, name: str) -> bool:
    if os.sched_getaffinity(0) != {cpu}:
        # A CPU going offline makes the kernel widen the affinity and move us: the
        # values since then were not measured on that CPU.
        print(f"qprof worker: CPU {cpu} went offline or the pinning was changed during "
              f"{name}; its values are not kept", file=sys.stderr)
        return True
    return False


def _run_interleaved(
    runner: Any, job: dict[str, Any], tasks: list[dict[str, Any]], fixtures: dict, cpu: int,
    timer: str, block_s: float, results: list[dict[str, Any]],
    failures: list[dict[str, Any]], chosen: dict[tuple[str, str, str], int],
    save: Callable[[], None], start: int = 0,
) -> int:
    """Each round's tasks (from ``start``) timed together, in turns of ``block_s``
    (see :func:`interleave`)."""
    rounds: dict[int, list[int]] = {}
    for index, task in enumerate(tasks[start:], start):
        rounds.setdefault(int(task.get("round", job.get("round", 0))), []).append(index)
    for rnd in sorted(rounds):
        live: list[tuple[int, str, TimeFunc, TaskState]] = []
        started = time.time()
        for index in rounds[rnd]:
            task = tasks[index]
            name = f"{task['suite']}/{task['backend']}/{task['operation']}"
            _emit({"event": "start", "index": index, "name": name})
            state = TaskState()
            try:
                live.append((index, name, make_time_func(task, fixtures, state), state))
            except Exception as exc:  # a backend that fails here fails this task only
                failures.append({"index": index, "name": name,
                                 "error": f"{type(exc).__name__}: {exc}"})
                _emit({"event": "failed", "index": index, "name": name, "error": str(exc)})
        if not live:
            continue
        keys = [(tasks[i]["suite"], tasks[i]["backend"], tasks[i]["operation"])
                for i, *_ in live]
        values, warm, per_turn = interleave(
            [f for _i, _n, f, _s in live],
            [float(tasks[i]["budget_s"]) for i, *_ in live],
            [tasks[i].get("n") or chosen.get(k) for (i, *_), k in zip(live, keys, strict=True)],
            [int(tasks[i]["min_n"]) for i, *_ in live],
            [int(tasks[i]["max_n"]) for i, *_ in live],
            block_s,
            before_timing=lambda states=[st for *_x, st in live]: [_reset(x) for x in states],
        )
        for (index, name, _f, state), vals, w, key, k in zip(
            live, values, warm, keys, per_turn, strict=True
        ):
            chosen[key] = len(vals)
            meta = _metadata(tasks[index], job, cpu, timer, name, {
                "qprof_turn_size": k,
                # pyperf's own "duration" of such a run is the replay's, not the timing's.
                "qprof_replayed": "values timed by qprof in turns, then handed to pyperf",
                "qprof_interleaved": f"turns of {block_s * 1e3:.0f} ms with "
                + ", ".join(f"{t['suite']} {t['operation']}" for t in
                            (tasks[i] for i, *_ in live)),
            })
            _to_pyperf(runner, name, Replay([w, *vals]), len(vals), 1, meta)
            results.append(dict(_result(index, name, len(vals), 1, started, state), turn_size=k))
            save()
            _emit({"event": "done", "index": index, "name": name, "n": len(vals)})
        if _moved(cpu, f"round {rnd + 1}"):
            return EXIT_AFFINITY
    return 0


def _run_sequential(
    runner: Any, job: dict[str, Any], tasks: list[dict[str, Any]], fixtures: dict, cpu: int,
    timer: str, results: list[dict[str, Any]], failures: list[dict[str, Any]],
    chosen: dict[tuple[str, str, str], int], save: Callable[[], None],
) -> int:
    """One task after the other (the seeds' rounds: A, then B, then A...)."""
    for index, task in enumerate(tasks):
        name = f"{task['suite']}/{task['backend']}/{task['operation']}"
        _emit({"event": "start", "index": index, "name": name})
        state = TaskState()
        started = time.time()
        try:
            time_func = make_time_func(task, fixtures, state)
            key = (task["suite"], task["backend"], task["operation"])
            if not task.get("n") and key in chosen:
                task = dict(task, n=chosen[key])  # a later round in this process
            if task.get("n"):
                # The engine fixed n (after this task's first round): every round of a run
                # has the same number of values, as pyperf's own runs do.
                first = time_func(1)
                n = int(task["n"])
                warmups = 0 if first > 0.05 else min(10, max(1, n // 50))
            else:
                n, warmups = choose_values(
                    time_func, float(task["budget_s"]), int(task["min_n"]), int(task["max_n"])
                )
            chosen[key] = n
        except Exception as exc:  # a backend that fails here fails this task only
            failures.append({"index": index, "name": name, "error": f"{type(exc).__name__}: {exc}"})
            _emit({"event": "failed", "index": index, "name": name, "error": str(exc)})
            continue
        state.checks = state.disagreements = state.wrong_verdicts = 0
        state.examples.clear()
        _to_pyperf(runner, name, time_func, n, warmups, _metadata(task, job, cpu, timer, name))
        results.append(_result(index, name, n, warmups, started, state))
        save()
        _emit({"event": "done", "index": index, "name": name, "n": n})
        if _moved(cpu, name):
            return EXIT_AFFINITY
    return 0


if __name__ == "__main__":
    sys.exit(main())
