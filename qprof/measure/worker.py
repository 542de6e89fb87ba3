"""Worker process: one per (CPU, block of rounds), timing several suites.

Started as a :class:`~qprof.measure.protocol.WorkerRun` child on a
:class:`~qprof.measure.protocol.Job` file. Each value is one operation timed on its own; the
values are written as pyperf runs built with pyperf's public classes (one file per run
and CPU), and a :class:`~qprof.measure.protocol.WorkerResult` keeps what pyperf cannot
(agreement checks, disagreements). Both are rewritten after every task, so a stopped
worker's finished tasks are kept. ``--preflight`` checks a backend's known answers and
its memory per operation. Exit codes: 0 ok, 3 cannot pin, 4 bad job, 6 parent gone.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from qprof.hw.load import StolenTicks, read_cpu_ticks, stolen_between
from qprof.measure.child.job import Entry
from qprof.measure.fixtures import Pool, load_fixtures
from qprof.measure.lifeline import die_with_parent, parent_gone
from qprof.measure.protocol import (
    Job,
    PreflightJob,
    PreflightResult,
    Task,
    TaskFailure,
    TaskResult,
    WorkerEvent,
    WorkerResult,
    WorkerRun,
    decode_more,
)
from qprof.measure.resources import measure_backend, verify_operations
from qprof.measure.timing import (
    CLOCKS,
    Clock,
    TaskState,
    TimeFunc,
    choose_values,
    interleave,
    make_time_func,
    warmups_for,
)
from qprof.verify.functional import check_suite

EXIT_AFFINITY = 3
EXIT_BAD_JOB = 4
EXIT_ORPHAN = 6


def _emit(event: WorkerEvent) -> None:
    sys.stderr.write(event.line())
    sys.stderr.flush()


def _pin(cpu: int) -> str | None:
    try:
        os.sched_setaffinity(0, {cpu})
    except (OSError, ValueError) as exc:
        return f"cannot pin to CPU {cpu}: {getattr(exc, 'strerror', None) or exc}"
    return None


def _moved(cpu: int, what: str) -> bool:
    if os.sched_getaffinity(0) != {cpu}:
        # A CPU going offline makes the kernel widen the affinity and move us: the
        # values since then were not measured on that CPU.
        print(f"qprof worker: CPU {cpu} went offline or the pinning was changed during "
              f"{what}; its values are not kept", file=sys.stderr)
        return True
    return False


def _resetter(states: list[TaskState]) -> Callable[[], None]:
    def reset() -> None:
        for s in states:
            s.reset()

    return reset


class PyperfFile:
    """The CPU's pyperf JSON: what earlier workers of the run wrote, plus this one's runs."""

    def __init__(self, path: Path, cpu: int, clock: Clock) -> None:
        import pyperf

        self.path, self.cpu, self.clock = path, cpu, clock
        self.suite: pyperf.BenchmarkSuite | None = None
        if path.exists():
            self.suite = pyperf.BenchmarkSuite.load(str(path))

    def add(self, task: Task, values: list[float], warmups: list[float],
            extra: dict[str, Any] | None = None) -> None:
        import pyperf

        run = pyperf.Run(values, warmups=[(1, w) for w in warmups], metadata={
            "name": task.name,
            "loops": 1,
            "timer": self.clock.describe(),
            "date": datetime.datetime.now().isoformat(" "),
            "description": f"{task.name} on CPU {self.cpu}: one operation per value",
            "qprof_suite": task.suite,
            "qprof_backend": task.backend,
            "qprof_operation": task.operation,
            "qprof_cpu": self.cpu,
            "qprof_round": task.round,
            "qprof_timer": self.clock.name,
            "qprof_clock_overhead_ns": round(self.clock.overhead_s * 1e9, 1),
            **(extra or {}),
        })
        bench = pyperf.Benchmark([run])
        if self.suite is None:
            self.suite = pyperf.BenchmarkSuite([bench])
        else:
            self.suite.add_runs(bench)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.unlink(missing_ok=True)
        self.suite.dump(str(tmp))
        os.replace(tmp, self.path)


class Session:
    """One worker's state: its job, clock, fixtures, files, and the values chosen so far."""

    def __init__(self, job: Job, clock: Clock, fixtures: dict[str, Pool]) -> None:
        self.job, self.clock, self.fixtures = job, clock, fixtures
        self.tasks: list[Task] = list(job.tasks)
        self.out = WorkerResult(job.cpu)
        self.pyperf = (PyperfFile(Path(job.pyperf), job.cpu, clock) if job.pyperf
                       else None)
        # Values per (suite, backend, op), fixed by its first round in this process.
        self.chosen: dict[tuple[str, str, str], int] = {}

    def save(self) -> None:
        self.out.write(Path(self.job.result))

    def _prepare(self, index: int) -> tuple[TimeFunc, TaskState] | None:
        task = self.tasks[index]
        _emit(WorkerEvent("start", index, task.name))
        state = TaskState()
        try:
            return make_time_func(task, self.fixtures, state, self.clock), state
        except Exception as exc:  # a backend that fails here fails this task only
            self.out.failures.append(TaskFailure(index, task.name, f"{type(exc).__name__}: {exc}"))
            _emit(WorkerEvent("failed", index, task.name, error=str(exc)))
            return None

    def _done(self, index: int, values: list[float], warmups: list[float], started: float,
              state: TaskState, turn_size: int | None = None,
              extra: dict[str, Any] | None = None, stolen: StolenTicks | None = None
              ) -> None:
        task = self.tasks[index]
        self.chosen[task.key] = len(values)
        self.out.results.append(TaskResult(
            index=index, name=task.name, n=len(values), warmups=len(warmups),
            started_at=started, finished_at=time.time(), values_s=tuple(values),
            checks=state.checks, disagreements=state.disagreements,
            wrong_verdicts=state.wrong_verdicts, examples=tuple(state.examples),
            turn_size=turn_size, pool_size=state.pool_size, pool_start=state.pool_start,
            steal_ticks=stolen.steal if stolen is not None else None,
            cpu_ticks=stolen.total if stolen is not None else None,
        ))
        # The result first: a worker killed between the two writes leaves no task in the
        # pyperf file that the engine cannot find in the result (it keeps the result's).
        self.save()
        if self.pyperf is not None:
            self.pyperf.add(task, values, warmups, extra)
        _emit(WorkerEvent("done", index, task.name, n=len(values)))

    def run_interleaved(self, start: int = 0) -> int:
        """Each round's tasks (from ``start``) timed together, in turns (see interleave)."""
        block_s = self.job.interleave_block_s
        rounds: dict[int, list[int]] = {}
        for index in range(start, len(self.tasks)):
            rounds.setdefault(self.tasks[index].round, []).append(index)
        for rnd in sorted(rounds):
            started = time.time()
            live = [(i, p) for i in rounds[rnd] if (p := self._prepare(i)) is not None]
            if not live:
                continue
            tasks = [self.tasks[i] for i, _p in live]
            states = [s for _i, (_f, s) in live]
            ticks = read_cpu_ticks(self.job.cpu)
            timed = interleave(
                [f for _i, (f, _s) in live], tasks,
                [t.n or self.chosen.get(t.key) for t in tasks], block_s,
                before_timing=_resetter(states),
            )
            # What the hypervisor took of this CPU during the round (docs/TREND.md,
            # "Steal per round").
            stolen = stolen_between(ticks, read_cpu_ticks(self.job.cpu))
            together = f"turns of {block_s * 1e3:.0f} ms with " + ", ".join(
                f"{t.suite} {t.operation}" for t in tasks)
            for (index, (_f, state)), vals, warm, k in zip(
                    live, timed.values, timed.warmups, timed.per_turn, strict=True):
                self._done(index, vals, [warm], started, state, turn_size=k,
                           extra={"qprof_turn_size": k, "qprof_interleaved": together},
                           stolen=stolen)
            if _moved(self.job.cpu, f"round {rnd + 1}"):
                return EXIT_AFFINITY
        return 0

    def run_sequential(self) -> int:
        """One task after the other (the seeds' rounds: A, then B, then A...)."""
        for index, task in enumerate(self.tasks):
            started = time.time()
            prepared = self._prepare(index)
            if prepared is None:
                continue
            time_func, state = prepared
            # The engine fixed n after this task's first round, or a later round in this
            # process: every round of a run has the same number of values.
            n = task.n or self.chosen.get(task.key)
            try:
                if n:
                    warmups = warmups_for(time_func(1), n)
                else:
                    n, warmups = choose_values(time_func, task.budget_s, task.min_n, task.max_n)
                warm = [time_func(1) for _ in range(warmups)]
                state.reset()
                ticks = read_cpu_ticks(self.job.cpu)
                values = [time_func(1) for _ in range(n)]
                stolen = stolen_between(ticks, read_cpu_ticks(self.job.cpu))
            except Exception as exc:  # a backend that fails while timing fails this task
                self.out.failures.append(TaskFailure(index, task.name,
                                                     f"{type(exc).__name__}: {exc}"))
                _emit(WorkerEvent("failed", index, task.name, error=str(exc)))
                continue
            self._done(index, values, warm, started, state, stolen=stolen)
            if _moved(self.job.cpu, task.name):
                return EXIT_AFFINITY
        return 0

    def serve(self) -> int:
        """Stay for the engine's adaptive rounds. A new process has its own quiet speed
        (memory placement), up to ~100 bp from another's, so extra rounds timed here agree
        with the base rounds where a new worker's would widen the spread."""
        while True:
            self.save()
            _emit(WorkerEvent("idle"))
            try:
                more = decode_more(sys.stdin.readline())  # EOF: the engine is gone
            except ValueError as exc:
                print(f"qprof worker: {exc}", file=sys.stderr)
                return EXIT_BAD_JOB
            if more is None:
                return 0
            start = len(self.tasks)
            self.tasks.extend(more)
            code = self.run_interleaved(start)
            if code:
                return code


def preflight(job: PreflightJob, fixtures: dict[str, Pool]) -> PreflightResult:
    """Before any timing: the backend's memory per operation (in this process, which
    has loaded nothing of the backend yet: the memory pass sees what loading it adds),
    then its known answers, the result file written after each step (a backend that
    crashes the process keeps what it finished). Nothing here is timed for a verdict."""
    out = PreflightResult(job.backend)
    if job.resources:
        try:
            out.resources = [m.to_dict() for m in measure_backend(
                job.backend, verify_operations(job.backend, fixtures, job.operations),
                [s for s in job.resources if s in fixtures])]
        except Exception as exc:  # memory figures are not worth a run
            out.errors.append(f"memory: {type(exc).__name__}: {exc}")
    out.write(Path(job.result))
    cache = Path(job.cache) if job.cache else None
    for suite in job.functional:
        try:
            out.functional.append(asdict(check_suite(job.backend, suite, cache)))
        except Exception as exc:  # a backend that cannot even check is not trusted
            out.functional.append({
                "backend": job.backend, "suite": suite, "status": "MISMATCH", "cases": 0,
                "failed": [f"the check failed: {type(exc).__name__}: {exc}"],
                "sources": [], "elapsed_s": 0.0})
        out.write(Path(job.result))
    return out


def _run_preflight(path: str) -> int:
    try:
        job = PreflightJob.read(Path(path))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"qprof worker: bad preflight job {path}: {exc}", file=sys.stderr)
        return EXIT_BAD_JOB
    refused = _enter(job.parent, job.cpu, job.nice)
    if refused is not None:
        return refused
    fixtures = load_fixtures(Path(job.fixtures)) if job.fixtures else {}
    preflight(job, fixtures).write(Path(job.result))
    return 0


def _enter(parent: int, cpu: int, nice: int) -> int | None:
    """Take the job's place: its parent still there, pinned to its CPU, at its niceness;
    the exit code when it cannot."""
    if parent_gone(parent):
        print("qprof worker: the engine that started this worker is gone", file=sys.stderr)
        return EXIT_ORPHAN
    error = _pin(cpu)
    if error:
        print(f"qprof worker: {error}", file=sys.stderr)
        return EXIT_AFFINITY
    _set_nice(nice)
    return None


def _set_nice(target: int) -> None:
    # Absolute niceness (os.nice adds to the parent's): a daemon already at nice 10 stays 10.
    with contextlib.suppress(OSError):
        if os.getpriority(os.PRIO_PROCESS, 0) < target:
            os.setpriority(os.PRIO_PROCESS, 0, target)


def run_worker(run: WorkerRun) -> int:
    """The worker process: its job file's tasks (or preflight); the exit code."""
    die_with_parent()  # first: the imports below take up to a second
    if run.preflight:
        return _run_preflight(run.job)
    try:
        job = Job.read(Path(run.job))
        if job.timer not in CLOCKS:
            raise ValueError(f"unknown timer {job.timer!r}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"qprof worker: bad job file {run.job}: {exc}", file=sys.stderr)
        return EXIT_BAD_JOB
    refused = _enter(job.parent, job.cpu, job.nice)
    if refused is not None:
        return refused
    clock = Clock.of(job.timer)  # its overhead measured pinned, at the job's niceness
    fixtures = load_fixtures(Path(job.fixtures)) if job.fixtures else {}
    session = Session(job, clock, fixtures)
    if job.interleave_block_s > 0:
        code = session.run_interleaved()
        if not code and job.serve:
            code = session.serve()
    else:
        code = session.run_sequential()
    if code:
        return code
    session.save()
    return 0


CHILD = Entry(WorkerRun, run_worker)
