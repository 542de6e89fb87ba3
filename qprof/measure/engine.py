"""The one measurement engine (``qprof bench``, ``qprof check``, the daemon, the monitor).

:func:`run_bench` measures each selected CPU in turn: A/B/A/B/A rounds (A the unit
suite) in niced worker processes pinned to the CPU (:mod:`qprof.measure.worker`), each
``Measurement`` to the sink as its worker finishes, then B/A pairs while the stopping
rule it is handed says the verdict is not sure. Interleaved rounds time the unit and
the suites in millisecond turns so host slowdowns fall on both. The preflight
(:mod:`qprof.measure.preflight`) runs first; ``stop`` ends the running worker and keeps
what it finished; a CPU that cannot be measured is skipped with a note.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from qprof.atomicfile import make_dirs
from qprof.hw.cgroup import CAUSE, CpuLimit, own_limit
from qprof.measure import hwinfo
from qprof.measure.adaptive import PairCredit, StoppingRule, floor_s, pair_fits
from qprof.measure.collect import Collected, Where, collect, verify_medians
from qprof.measure.config import DUAL_OPS, BenchConfig, ProgressEvent, RunSummary
from qprof.measure.first_look import MESSAGE as FIRST_LOOK
from qprof.measure.first_look import FirstLook, LookSetup
from qprof.measure.fixtures import (
    FixtureError,
    Pool,
    Signing,
    SigningStopped,
    cache_dir,
    cached_pool,
    save_fixtures,
    slow_to_sign,
)
from qprof.measure.freqwatch import FreqWatch
from qprof.measure.machine_lock import Holder
from qprof.measure.plan import SPAWN_COST_S, EngineError, Plan, rounds_verify
from qprof.measure.poolcost import PoolCost, pool_cost
from qprof.measure.poolgrow import measuring, start_growth
from qprof.measure.preflight import Preflight, PreflightPlan, run_preflight
from qprof.measure.processes import SpawnError, WorkerProcess, parent_off_cpu
from qprof.measure.progress import Progress
from qprof.measure.protocol import Job, Task, WorkerEvent, WorkerResult
from qprof.measure.records import (
    End,
    Env,
    FunctionalCheck,
    Measurement,
    Note,
    Record,
    ResourceUse,
    Throttled,
)
from qprof.measure.run_dir import RunDir, sweep
from qprof.measure.runmeta import build_meta, choose_timer
from qprof.measure.warmup import WALK, Warmup, describe

__all__ = ["EngineError", "choose_timer", "run_bench"]

Sink = Callable[[Record], None]
# Base rounds a CPU gets whatever the time limit (the estimate needs three).
MIN_BASE_ROUNDS = 3


@dataclass
class _Cpu:
    """One CPU's measurement in progress."""

    cpu: int
    watch: FreqWatch
    pyperf_path: Path
    mine: list[Measurement] = field(default_factory=list)
    round_caps: dict[int, bool | None] = field(default_factory=dict)
    live: WorkerProcess | None = None  # the worker serving this CPU's adaptive rounds
    credit: PairCredit = field(default_factory=PairCredit)  # pairs before asking the rule
    started_s: float = 0.0  # the run's elapsed seconds when this CPU's rounds began


class _Run:
    def __init__(self, config: BenchConfig, sink: Sink,
                 progress: Callable[[ProgressEvent], None] | None,
                 stop: threading.Event, rule: StoppingRule | None) -> None:
        self.config, self.sink, self.stop, self.rule = config, sink, stop, rule
        self.run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
        self.summary = RunSummary(self.run_id, "finished", None, 0.0, [])
        self.progress = Progress(progress, config.time_limit_s)
        self.python = config.python or sys.executable
        self.worker_seconds: list[float] = []  # wall time of each worker, for the time limit
        self.worker_budgets: list[float] = []  # what each worker was planned to take
        # Values per round, fixed by the first round of each (cpu, suite, backend, op).
        self.fixed_n: dict[tuple[int, str, str, str], int] = {}
        self.plan = Plan(config)
        self.timer, self.timer_note = choose_timer(config.timer, config.root)
        self.workdir = Path(".")
        self.fixtures_path: Path | None = None
        self.pool_costs: dict[str, PoolCost] = {}  # SLH-DSA pools' counts, for the records
        self.counting: threading.Thread | None = None  # counts them (_count_pools)
        self.count_failures: list[str] = []
        self.good = 0  # CPUs to measure (the time limit is shared between them)
        self.checked = Preflight()  # known answers and memory, before any timing
        self.waiting_said = False  # the machine lock's wait line went to stderr
        self.quota_before: CpuLimit | None = None  # qprof's cgroup when the run began
        # What a new HOME compiles and signs once, beside the first pools' signing.
        self.warmup = Warmup(self.plan.backends + list(self.plan.dual or ()),
                             self.plan.suites, config.fixture_cache or cache_dir(), self.python)

    # -- output
    def emit(self, record: Record) -> None:
        if isinstance(record, Measurement):
            self.summary.measurements.append(record)
        elif isinstance(record, FunctionalCheck):
            self.summary.functional.append(record)
        elif isinstance(record, ResourceUse):
            self.summary.resources.append(record)
        self.sink(record)

    def note(self, level: str, kind: str, text: str, cpu: int | None = None) -> None:
        self.summary.notes.append(text)
        if level in ("error", "warning") and self.config.echo_notes:
            print(f"qprof: {level}: {text}", file=sys.stderr)
        self.emit(Note(run_id=self.run_id, level=level, text=text, cpu=cpu, kind=kind))

    # -- main
    def run(self) -> RunSummary:
        cpus = self._start()
        good = [c for c in cpus if not self._skipped(c)]
        self.good = len(good)
        sweep()  # what runs killed outright left behind
        run_dir = RunDir()
        self.workdir = run_dir.path
        failure = None
        pools = self.config.fixture_cache or cache_dir()
        try:
            # One measurement per machine; no pool grower signs meanwhile
            # (qprof.measure.machine_lock, qprof.measure.poolgrow).
            with measuring(pools, self.config.time_limit_s, self._wait_line) as waited:
                if waited is not None:
                    self.progress.t0 = self.progress.now()  # the time limit starts now
                    self.note("info", "machine_lock", f"waited for pid {waited.pid} "
                              f"({waited.user}: {waited.command}) to finish measuring")
                self.progress.plan(self.plan.cpu_work(), len(good), self.plan.pair_work(),
                                   floor_s(self.plan.min_cpu_s, self.config.time_limit_s,
                                           len(good)) if self.rule is not None else 0.0,
                                   self.plan.max_pairs)
                if good and not self.stop.is_set() and self._fixtures(good[0]):
                    self._preflight(good[0])
                    for cpu in good:
                        if self.stop.is_set():
                            break
                        with parent_off_cpu(cpu):
                            self._measure_cpu(cpu)
        except Exception as exc:  # end the run with a reason rather than a missing End
            failure = f"internal error: {type(exc).__name__}: {exc}"
            self.note("error", "engine_error", failure)
        finally:
            self.warmup.close()
            run_dir.remove()
        summary = self._finish(cpus, good, failure)
        if self.config.grow_pools and self.summary.measurements and not self.stop.is_set():
            # The first pools were small: the rest is signed while this process runs.
            start_growth(self.plan.suites, self.plan.backends, pools, self.python)
        return summary

    def _wait_line(self, holder: Holder) -> None:
        if not self.waiting_said:  # once on stderr, then on the progress line
            self.waiting_said = True
            print(f"qprof: {holder.text()}", file=sys.stderr, flush=True)
        self.progress.report(message=holder.text())

    def _start(self) -> list[int]:
        cfg, plan = self.config, self.plan
        topo = hwinfo.topology(cfg.root)
        cpus = cfg.cpus if cfg.cpus is not None else hwinfo.default_cpus(topo, cfg.root == "/")
        self.summary.cpus = list(cpus)
        self.emit(build_meta(self.run_id, cfg, plan, topo, cpus, self.timer))
        if self.timer_note:
            self.note("info", "timer", self.timer_note)
        for level, kind, text in plan.notes:
            self.note(level, kind, text)
        self.emit(Env(self.run_id, "before", time.time(), hwinfo.env_snapshot(cfg.root)))
        self.quota_before = own_limit() if cfg.root == "/" else None
        return list(cpus)

    def _throttled(self) -> None:
        """The run's throttling by qprof's cgroup quota: a record, and a warning when it
        stopped the run (its rounds are capped: qprof.measure.freqwatch)."""
        before, after = self.quota_before, own_limit()
        if (before is None or after is None or after.cpus is None or after.factor is None
                or before.throttling is None or after.throttling is None
                or before.limited_by != after.limited_by):
            return
        t = after.throttling.since(before.throttling)
        self.emit(Throttled(self.run_id, after.limited_by or after.path, after.version,
                            round(after.cpus, 4), round(after.factor, 4), t.periods,
                            t.throttled, t.throttled_us))
        if t.throttled:
            self.note("warning", "cpu_throttled",
                      f"{CAUSE}: {after.cpus:.2f} CPU on {after.limited_by}; throttled in "
                      f"{t.throttled} of {t.periods} periods ({t.throttled_us / 1e6:.1f} s) "
                      f"while measuring: judged as a capped run (×{after.factor:.2f})")

    def _skipped(self, cpu: int) -> bool:
        problem = hwinfo.cpu_problem(cpu, self.config.root)
        if problem:
            self.summary.aborted_cpus[cpu] = problem
            self.note("error", "cpu_aborted", f"CPU {cpu} skipped: {problem}", cpu)
        return problem is not None

    def _finish(self, cpus: list[int], good: list[int], failure: str | None) -> RunSummary:
        self.emit(Env(self.run_id, "after", time.time(), hwinfo.env_snapshot(self.config.root)))
        if self.config.root == "/":
            self._throttled()
        s = self.summary
        if failure:
            s.status, s.reason = "aborted", failure
        elif self.stop.is_set():
            s.status, s.reason = "aborted", "stopped on request"
        elif not good or len(s.aborted_cpus) == len(cpus):
            s.status = "aborted"
            s.reason = "; ".join(s.aborted_cpus.values()) or "nothing measured"
        elif s.aborted_cpus:
            s.status = "partial"
            s.reason = "; ".join(f"CPU {c}: {r}" for c, r in s.aborted_cpus.items())
        if s.disagreements:
            self.note("error", "disagreement",
                      f"{s.disagreements} of {s.checks} checks: the verifiers DISAGREED")
        elif s.checks:
            self.note("info", "agreement", f"{s.checks} checks, the verifiers never disagreed")
        s.elapsed_s = self.progress.elapsed()
        self.emit(End(run_id=self.run_id, finished_at=time.time(), status=s.status,
                      reason=s.reason, checks=s.checks, disagreements=s.disagreements))
        self.progress.report(final=not self.stop.is_set(),
                             message=f"{s.status} in {s.elapsed_s:.0f}s")
        return s

    def _fixtures(self, first_cpu: int) -> bool:
        plan = self.plan
        path = self.workdir / "fixtures.json"
        self.fixtures_path = path
        if not any(op in ("verify", "verify_invalid") + DUAL_OPS for op in plan.operations):
            save_fixtures({}, path)
            return True
        self.progress.report(message="preparing keys and signatures")
        fixtures: dict[str, Pool] = {}
        look = FirstLook(LookSetup(plan, first_cpu, self.python, self.timer, self.workdir,
                                   self.warmup),
                         lambda cpu, medians: self.progress.report(
                             cpu=cpu, message=FIRST_LOOK, medians=medians))

        def signing(s: Signing) -> None:
            # Once, when a first pool must be signed: the warm-up, and the ML-DSA pools
            # (signed first, in milliseconds) timed meanwhile for a first figure.
            self.warmup.start()
            self.warmup.make_way(s.pids)
            look.start({k: v for k, v in fixtures.items() if not slow_to_sign(k)})
            self.progress.signing(s.left_s)
            self.progress.report(message=s.text())

        try:
            for suite in sorted(plan.suites, key=slow_to_sign):  # the quick ones first
                try:
                    fixtures[suite] = cached_pool(
                        suite, tuple(plan.backends), self.config.fixture_cache,
                        checker=next((b for b in plan.backends if plan.supports(b, suite)),
                                     None),
                        on_signing=signing, stop=self.stop,
                    )
                except SigningStopped:
                    return False  # stopped on request: the run ends "aborted", no error
                except FixtureError as exc:
                    self.note("error", "fixture", str(exc))
        finally:
            look.close()  # before any round: the core is the rounds' alone
        if plan.unit not in fixtures:
            self.summary.aborted_cpus.update(
                {c: "no signature of the unit suite" for c in self.summary.cpus})
            return False
        save_fixtures(fixtures, path)
        # Counted beside the preflight and the first rounds (off the measured CPU, as
        # every thread of this process): in a new HOME the walk's kernel compiles first.
        self.counting = threading.Thread(target=self._count_pools, args=(fixtures,),
                                         name="qprof-pool-counts", daemon=True)
        self.counting.start()
        return True

    def _count_pools(self, fixtures: dict[str, Pool]) -> None:
        self.warmup.wait([WALK], self.stop)  # its kernel compiled beside the signing
        for suite, pool in fixtures.items():
            try:
                cost = pool_cost(suite, pool, self.config.fixture_cache)
            except Exception as exc:  # the run goes on, its pools' mixes not held
                self.count_failures.append(
                    f"{suite}: counting its pool's hash calls failed ({type(exc).__name__}: "
                    f"{exc}); its estimate keeps the pool's mix of costs")
                continue
            if cost is not None:
                self.pool_costs[suite] = cost

    # -- one CPU
    def _measure_cpu(self, cpu: int) -> None:
        """A/B/A/B/A rounds, several per worker process; extra B/A pairs while unsure."""
        plan, cfg = self.plan, self.config
        c = _Cpu(cpu, FreqWatch(cfg.root, cpu, self.run_id, self.emit), self._pyperf_path(cpu),
                 credit=PairCredit(floor_s(plan.min_cpu_s, cfg.time_limit_s, self.good)),
                 started_s=self.progress.elapsed())
        self.progress.start_cpu(cfg.adaptive and self.rule is not None)
        r, target = 0, plan.rounds
        try:
            while r < target:
                if self.stop.is_set():
                    return
                if r >= MIN_BASE_ROUNDS and r < plan.rounds and self._past_limit(plan):
                    # A starved worker (nice 10 under others' load: base rounds of 1.2 s
                    # took 5-27 s here) must not take the run past its time limit.
                    self.note("warning", "time_limit",
                              f"CPU {cpu}: {r} of {plan.rounds} base rounds within the "
                              f"time limit ({self.config.time_limit_s:.0f} s): the host "
                              "gave the measurement little CPU time", cpu)
                    break
                block = list(range(r, min(target, r + plan.per_worker)))
                tasks = [replace(t, n=self.fixed_n.get((cpu, *t.key)))
                         for k in block for t in plan.round_tasks(k) if self._timed(t)]
                # The last base worker stays for the extra rounds (Plan.serves).
                serve = plan.serves and block[-1] + 1 == target
                if tasks and not self._run_worker(c, block, target, tasks, serve):
                    return
                r = block[-1] + 1
                if r == target and self._more_rounds(c, target):
                    self.progress.add_pair()
                    target += 2
                expected = c.credit.expected()
                if expected is not None:
                    self.progress.rule_says(expected, preview=c.credit.needed is None)
        finally:
            if c.live is not None:
                c.live.close(self.stop.is_set())
                c.live = None
        self.progress.end_cpu()
        self.summary.rounds[cpu] = r
        self._drift_and_cap_notes(c)
        wallet = [replace(t, round=r) for t in plan.wallet_tasks()]
        if wallet and not self.stop.is_set():
            self._run_worker(c, [r], r + 1, wallet)

    def _more_rounds(self, c: _Cpu, target: int) -> bool:
        """Another B/A pair? The rule is asked again only once the pairs it last said it
        needs (at most MAX_PAIRS_UNASKED) are measured."""
        plan = self.plan
        return (bool(self.config.adaptive) and self.rule is not None
                and target + 2 <= plan.max_rounds
                and pair_fits(self.progress.elapsed(), self.config.time_limit_s,
                              plan.pair_budget(), self.worker_seconds, self.worker_budgets,
                              plan.pair_spawn_s())
                and c.credit.take(self.rule, c.mine, c.cpu,
                                  self.progress.elapsed() - c.started_s))

    def _past_limit(self, plan: Plan) -> bool:
        """Would one more base round (one worker) end past the time limit?"""
        one = sum(t.budget_s for t in plan.round_tasks(0)) * plan.per_worker
        return not pair_fits(self.progress.elapsed(), self.config.time_limit_s, one,
                             self.worker_seconds, self.worker_budgets, SPAWN_COST_S)

    def _pyperf_path(self, cpu: int) -> Path:
        """One pyperf file per run and CPU (``compare_to`` works between two runs)."""
        if self.config.pyperf_dir is None:
            return self.workdir / f"cpu{cpu}.pyperf.json"
        make_dirs(self.config.pyperf_dir)
        return self.config.pyperf_dir / f"{self.run_id}-cpu{cpu}.json"

    def _worker(self, c: _Cpu, block: list[int], tasks: list[Task],
                serve: bool) -> tuple[WorkerProcess, int] | None:
        """The serving worker given ``tasks``, else a new one: (worker, first task index)."""
        if c.live is not None:
            return c.live, c.live.give(tasks)
        tag = f"cpu{c.cpu}-r{block[0]}" + (f"-{block[-1]}" if len(block) > 1 else "")
        interleaved = rounds_verify(tasks)
        job = Job(
            cpu=c.cpu, nice=self.config.nice, timer=self.timer,
            fixtures=str(self.fixtures_path) if self.fixtures_path else None,
            result=str(self.workdir / f"{tag}.result.json"),
            pyperf=str(c.pyperf_path) if self.config.pyperf_dir is not None else None,
            parent=os.getpid(),  # the worker exits if it is already orphaned
            tasks=tuple(tasks),
            interleave_block_s=self.plan.interleave_block_s if interleaved else 0.0,
            serve=serve and interleaved,
        )
        try:
            return WorkerProcess(self.python, job, self.workdir / f"{tag}.job.json"), 0
        except SpawnError as exc:
            self._abort_cpu(c.cpu, str(exc))
            return None

    def _run_worker(self, c: _Cpu, block: list[int], rounds: int, tasks: list[Task],
                    serve: bool = False) -> bool:
        """Run ``tasks`` in the serving worker or a new one (``serve``: it stays after its
        tasks, for the adaptive rounds); collect what it measured. False: stop this CPU."""
        first = tasks[0]
        self.progress.report(cpu=c.cpu, round=block[0], rounds=rounds, suite=first.suite,
                             backend=first.backend, operation=first.operation,
                             message="starting")
        c.watch.start(block[0])
        started, done_before = time.monotonic(), self.progress.work_done
        spawn = 0.0 if c.live is not None else SPAWN_COST_S
        got = self._worker(c, block, tasks, serve)
        if got is None:
            c.watch.finish()
            return False
        w, start = got
        followed = w.follow(self.stop, lambda ev, t: self._on_event(c, rounds, ev, t))
        c.live = w if followed.idle else None
        rc = 0 if c.live else w.wait()
        planned = sum(t.budget_s for t in tasks) + spawn
        self.worker_seconds.append(time.monotonic() - started)
        self.worker_budgets.append(planned)
        overall = c.watch.finish()
        caps = {k: c.watch.by_round().get(k, overall) for k in block}
        c.round_caps.update({k: v[0] for k, v in caps.items()})
        failed = None
        if not followed.stopped:
            self.progress.work_done = done_before + planned
            if rc != 0:
                tail = w.failure(rc)
                failed = (tail.replace("qprof worker: ", "") if rc == 3
                          else f"worker failed in round {block[0] + 1} ({tail})")
        try:
            result = WorkerResult.read(w.result_path)
        except (OSError, ValueError) as exc:
            # A stopped worker may have finished nothing: no error, the stop was asked for.
            if failed is not None:
                self._abort_cpu(c.cpu, failed)
            elif not followed.stopped:
                self._abort_cpu(c.cpu, f"round {block[0] + 1}: worker output unreadable: {exc}")
            return False
        medians = verify_medians(w.tasks, result, start) or None
        # Its figures on screen now (the records may wait for the pools' counts: _where),
        # but not after the rounds planned so far: the rule may add pairs, and the ETA of
        # that event would say nothing is left.
        if self.counting is not None or (medians and block[-1] < rounds - 1):
            self.progress.report(cpu=c.cpu, round=block[-1], rounds=rounds,
                                 message="counting the pools' hash calls"
                                 if self.counting is not None else "measured",
                                 medians=medians)
        # The worker saves its result after each task (before the task's pyperf run), so
        # one that died (kill -9, the OOM killer) leaves every task it finished, kept here
        # as on a stop: only the CPU's remaining rounds are lost.
        self._keep(c, collect(self._where(c), w.tasks, result, caps, start))
        if failed is not None:
            self._abort_cpu(c.cpu, failed)
            return False
        return not followed.stopped

    def _where(self, c: _Cpu) -> Where:
        if self.counting is not None:
            self.counting.join()
            self.counting = None
            for text in self.count_failures:  # noted here: records are written by this thread
                self.note("warning", "pool_counts", text)
        rel = None
        if self.config.pyperf_dir is not None:
            base = self.config.record_base
            rel = os.path.relpath(c.pyperf_path, base) if base else str(c.pyperf_path)
        return Where(self.run_id, c.cpu, rel, self.config.keep_samples, self.pool_costs)

    def _preflight(self, cpu: int) -> None:
        """Known answers and memory per operation of every backend, before any timing
        (qprof.measure.preflight); a MISMATCH leaves that backend's suite untimed unless
        the config allows it."""
        plan = self.plan
        self.warmup.keep_off(cpu)
        self.warmup.wait(self.warmup.before_timing(), self.stop, lambda left, waited:
                         self.progress.report(message=describe(left, waited)))
        if not self.config.preflight:
            return
        names = list(dict.fromkeys(plan.backends + list(plan.dual or ())))
        suites = {b: tuple(s for s in plan.suites if plan.supports(b, s)) for b in names}
        self.progress.report(message="checking known answers, measuring memory")
        with parent_off_cpu(cpu):
            self.checked = run_preflight(PreflightPlan(
                self.run_id, cpu, self.config.nice, self.python, self.workdir,
                self.fixtures_path, self.config.fixture_cache or cache_dir(),
                tuple(b for b in names if suites[b]), suites, plan.statuses), self.stop)
        for record in [*self.checked.checks, *self.checked.resources, *self.checked.factors]:
            self.emit(record)
        for level, kind, text in self.checked.notes:
            self.note(level, kind, text)
        if any(c.status == "MISMATCH" for c in self.checked.checks):
            self.note("info", "functional_mismatch", (
                "timed anyway (--allow-mismatch): its figures are shown, never decided"
                if self.config.allow_mismatch else "not timed: a backend that gives wrong "
                "answers is timed only under --allow-mismatch"))

    def _timed(self, task: Task) -> bool:
        """Is the task's backend trusted for its suite (or are mismatches allowed)?"""
        return task.operation not in ("verify", "verify_invalid", *DUAL_OPS) or \
            self.checked.task_allowed(task.backend, task.suite, self.plan.unit,
                                      self.config.allow_mismatch)

    def _keep(self, c: _Cpu, got: Collected) -> None:
        for m in got.measurements:
            m.functional_mismatch = self.checked.mismatch(m.backend, m.suite) or \
                self.checked.mismatch(m.backend, self.plan.unit)
            c.mine.append(m)
            self.fixed_n.setdefault((c.cpu, m.suite, m.backend, m.operation), m.n)
            self.emit(m)
            self.summary.checks += m.checks
            self.summary.disagreements += m.disagreements
        for d in got.disagreements:
            print(f"qprof: DISAGREEMENT on CPU {c.cpu} {d.suite}: {d.backends}", file=sys.stderr)
            self.emit(d)
        self.summary.wrong_verdicts += got.wrong_verdicts
        for level, kind, text in got.notes:
            self.note(level, kind, text, c.cpu)

    def _on_event(self, c: _Cpu, rounds: int, ev: WorkerEvent, task: Task) -> None:
        cpu = c.cpu
        if ev.event == "start":
            c.watch.set_round(task.round)
        elif ev.event == "done":
            self.progress.work_done += task.budget_s
        elif ev.event == "failed":
            self.note("warning", "task_failed",
                      f"CPU {cpu} {task.suite} {task.backend} {task.operation}: {ev.error}", cpu)
        self.progress.report(cpu=cpu, round=task.round, rounds=rounds, suite=task.suite,
                             backend=task.backend, operation=task.operation, message=ev.event)

    def _abort_cpu(self, cpu: int, reason: str) -> None:
        self.summary.aborted_cpus[cpu] = reason
        self.note("error", "cpu_aborted", f"CPU {cpu} aborted: {reason}", cpu)

    def _drift_and_cap_notes(self, c: _Cpu) -> None:
        cpu = c.cpu
        states = {k: v for k, v in c.round_caps.items() if v is not None}
        if c.round_caps and not states:
            self.note("info", "freq_unknown",
                      f"CPU {cpu}: no frequency data (no cpufreq files, e.g. a VM): a frequency "
                      "cap could not be seen; ratios on the same core are still valid", cpu)
        # The unit's drift, a cap that came or went (cpufreq), a step of the unit's quiet
        # speed (VMs): the estimator's reading of these records, said here.
        for level, kind, text in (self.rule.cpu_notes(c.mine, cpu) if self.rule else []):
            self.note(level, kind, text, cpu)


def run_bench(
    config: BenchConfig,
    sink: Callable[[Record], None],
    progress: Callable[[ProgressEvent], None] | None = None,
    stop: threading.Event | None = None,
    rule: StoppingRule | None = None,
) -> RunSummary:
    """Measure as ``config`` says; records go to ``sink`` as they are made.

    ``rule``: asked after the base rounds of each CPU whether to add B/A pairs, and for
    the CPU's notes (drift, clock changes); build it with
    :func:`qprof.consensus.estimate.stopping.rule_for`. None: the base rounds only.

    Raises :class:`EngineError` (or ``ProfileError``) before anything is measured when the
    configuration cannot work; everything that goes wrong later becomes a ``Note`` and the
    run's ``End`` status.
    """
    return _Run(config, sink, progress, stop or threading.Event(), rule).run()
