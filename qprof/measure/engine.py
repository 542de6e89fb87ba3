"""The one measurement engine (``qprof bench``, ``qprof check``, the daemon, the monitor).

``run_bench(config, sink, progress, stop)``: for each selected CPU, one after the other
(one heavy job at a time), run A/B/A/B/A rounds - A the unit suite, B the other suites -
in pyperf worker processes pinned to that CPU under nice 10 (:mod:`qprof.measure.worker`;
by default the base rounds share one process, each round being one pyperf *run* of each
benchmark, so the interleaving is fine-grained and the process start-up, ~0.5-1 s with
numba and liboqs, is paid once). pyperf's JSON is read back and one ``Measurement`` per
(suite, backend, operation, round) goes to ``sink`` as soon as its worker finishes. After
the base rounds, B/A pairs (one process each) are added while a Verify-Unit ratio is not
yet sure (bootstrap CI straddling the constant or wider than ``target_ci_bp``) or an
ML-DSA round spread exceeds ``max_spread_bp``, up to ``max_rounds`` or the time limit.
Extra rounds time only what the verdict needs (``verify`` of the unit and the suites,
:data:`VERDICT_OPS`); the dual pairs and invalid signatures are timed in the base rounds.
The progress ETA counts the extra rounds still likely (:meth:`_Run._expected_extra`).

Interleaved rounds (``interleave_block_s`` > 0; ``check`` mode's default, 4 ms): every
round times the unit and all suites together, in turns (A B1 B2 B3 A B1 B2 B3 ...), the
A/B/A/B/A method at the scale of milliseconds, so a host that slows the core for 0.1-2 s
(a neighbour on a VM, invisible from the guest) slows the unit and the suites of a round
alike. The values still go through pyperf (replayed into ``bench_time_func``), and each
record carries ``turn_size`` so the quiet-turn statistic (:mod:`qprof.measure.reduce`,
``paired_ratios``) can pair each suite turn with the unit turns on both sides. With quiet-
turn pairs, rounds measured mostly under contention are left out and more rounds are
added while fewer than the base rounds remain. Interleaved extra rounds are timed in the
base rounds' worker, kept alive for them (job ``serve``: after its rounds it reports
"idle" and reads the tasks of the next round, or "done", on stdin): each new process has
its own quiet speed (memory placement, up to ~100 bp apart), which would widen the spread.
Keygen/sign/KEM timings run in one more worker after the rounds.

``stop`` set: the running worker is stopped at once (SIGTERM, SIGKILL after
``STOP_GRACE_S``), the tasks it had finished are kept (the worker rewrites its result file
after each task), nothing new starts, ``End(status="aborted")``.
A CPU that does not exist, is offline or refuses affinity is skipped with an error
``Note`` (kind ``cpu_aborted``); the other CPUs are still measured.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import platform
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qprof import __version__
from qprof.hw import Topology, read_topology
from qprof.measure import hwinfo, stats
from qprof.measure.clock import clock_changes
from qprof.measure.config import (
    AUTO_CPU_TIMER_LOAD,
    DUAL_OPS,
    KEM_OPS,
    QANUM_SUITES,
    TIMERS,
    WALLET_OPS,
    BenchConfig,
    ProgressEvent,
    RunSummary,
)
from qprof.measure.fixtures import Fixture, FixtureError, cached_fixture, save_fixtures
from qprof.measure.records import (
    Disagreement,
    End,
    Env,
    FreqSample,
    Measurement,
    Meta,
    Note,
    Record,
)
from qprof.measure.reduce import reduce_measurements, unit_drift_bp

Sink = Callable[[Record], None]
Progress = Callable[[ProgressEvent], None]

SPAWN_COST_S = 1.0  # python + pyperf + backend imports per worker, for the ETA
FREQ_INTERVAL_S = 0.5
STOP_GRACE_S = 1.0  # SIGTERM, then SIGKILL after this long
POLL_S = 0.1  # how often a running worker is checked against ``stop``
SECOND_VERIFIERS = ("numba", "rustcrypto", "openssl", "reference")
SLOW_SIGN_FAMILY_SUFFIX = "s"  # SLH-DSA "s" variants sign in ~1 s
# What the adaptive rounds pin down (the Verify-Unit verdict), and all extra rounds time.
VERDICT_OPS = ("verify",)


@dataclasses.dataclass
class _Worker:
    """A worker process, kept between calls while it serves adaptive rounds."""

    proc: subprocess.Popen
    lines: queue.Queue  # its stderr lines; None at EOF
    tasks: list[dict[str, Any]]  # every task it was given (the events' indices)
    result_path: Path
    pyperf_path: Path
    stderr_lines: list[str]


class EngineError(RuntimeError):
    """The run cannot start (no usable backend, bad suite...)."""


# ---------------------------------------------------------------- plan


class Plan:
    """Resolved names: what to measure with which backends on which CPUs."""

    def __init__(self, config: BenchConfig) -> None:
        from qprof.verify import KEMS, SUITES, available_backends

        self.config = config
        self.mode = config.settings()
        self.statuses = available_backends()
        self.notes: list[tuple[str, str, str]] = []  # (level, kind, text)
        self.profile = None
        if config.profile:
            from qprof.consensus import load_profile

            self.profile = load_profile(config.profile)
        self.unit = config.unit_suite or (self.profile.unit_suite if self.profile else "ML-DSA-44")
        suites = list(config.suites or (self.profile.suites if self.profile else QANUM_SUITES))
        for s in suites + [self.unit]:
            if s not in SUITES:
                raise EngineError(f"unknown suite {s!r}; known suites: {', '.join(SUITES)}")
        self.suites = [self.unit] + [s for s in suites if s != self.unit]
        self.others = self.suites[1:]
        self.backends = self._backends()
        self.operations = list(config.operations or self.mode.operations)
        self.dual = self._dual() if any(op in DUAL_OPS for op in self.operations) else None
        liboqs = self.statuses.get("liboqs")
        self.kem = (
            liboqs is not None and liboqs.available and any(op in KEM_OPS for op in self.operations)
        )
        if any(op in KEM_OPS for op in self.operations) and not self.kem:
            self.notes.append(("warning", "kem_skipped", "ML-KEM-1024 skipped: liboqs unavailable"))
        self.kem_name = next(iter(KEMS), "ML-KEM-1024")
        s = self.mode
        self.budget = config.budget_s or s.budget_s
        self.wallet_budget = s.wallet_budget_s if config.budget_s is None else config.budget_s
        self.min_n = config.min_n or s.min_n
        self.max_n = config.max_n or s.max_n
        self.rounds = config.rounds or s.rounds
        self.interleave_block_s = (
            s.interleave_block_s if config.interleave_block_s is None
            else max(0.0, config.interleave_block_s)
        )
        self.max_rounds = max(self.rounds, config.max_rounds or s.max_rounds)

    def _backends(self) -> list[str]:
        cfg = self.config.backends
        if cfg:
            for b in cfg:
                st = self.statuses.get(b)
                if st is None:
                    raise EngineError(
                        f"unknown backend {b!r}; known backends: {', '.join(self.statuses)}"
                    )
                if not st.available:
                    raise EngineError(f"backend {b} unavailable: {st.reason}")
            return list(cfg)
        if self.statuses.get("liboqs") and self.statuses["liboqs"].available:
            return ["liboqs"]
        for b in ("numba", "rustcrypto", "openssl", "reference"):
            st = self.statuses.get(b)
            if st and st.available and all(s in st.suites for s in self.suites):
                self.notes.append(
                    (
                        "warning",
                        "backend_default",
                        f"liboqs unavailable ({self.statuses['liboqs'].reason}); "
                        f"measuring with {b} instead",
                    )
                )
                return [b]
        raise EngineError(
            "no verifier backend implements all of " + ", ".join(self.suites) + " here: "
            + "; ".join(f"{n}: {st.reason}" for n, st in self.statuses.items())
        )

    def _dual(self) -> tuple[str, str] | None:
        if self.config.dual:
            return self.config.dual
        liboqs = self.statuses.get("liboqs")
        if not liboqs or not liboqs.available:
            self.notes.append(("info", "dual_skipped", "dual modes skipped: liboqs unavailable"))
            return None
        for b in SECOND_VERIFIERS:
            st = self.statuses.get(b)
            if st and st.available and all(s in st.suites for s in self.suites):
                if b != "numba":
                    self.notes.append(
                        (
                            "info",
                            "dual_pair",
                            f"second verifier is {b}: numba does not implement all of "
                            + ", ".join(self.suites),
                        )
                    )
                return ("liboqs", b)
        self.notes.append(("info", "dual_skipped", "dual modes skipped: no second verifier"))
        return None

    def supports(self, backend: str, suite: str) -> bool:
        st = self.statuses.get(backend)
        return bool(st and st.available and suite in st.suites)

    def verify_tasks(self, suites: list[str]) -> list[dict[str, Any]]:
        tasks = []
        for suite in suites:
            for op in self.operations:
                if op in ("verify", "verify_invalid"):
                    for b in self.backends:
                        if self.supports(b, suite):
                            tasks.append(self._task(suite, b, op, self.budget))
                elif (
                    op in DUAL_OPS
                    and self.dual
                    and all(self.supports(b, suite) for b in self.dual)
                ):
                    t = self._task(suite, "+".join(self.dual), op, self.budget)
                    t["dual"] = list(self.dual)
                    tasks.append(t)
        return tasks

    def wallet_tasks(self) -> list[dict[str, Any]]:
        tasks = []
        for op in self.operations:
            if op in WALLET_OPS:
                for suite in self.suites:
                    for b in self.backends:
                        st = self.statuses.get(b)
                        if not (st and st.can_sign and suite in st.suites):
                            continue
                        slow = suite.startswith("SLH-DSA") and suite.endswith(
                            SLOW_SIGN_FAMILY_SUFFIX
                        )
                        if op == "sign" and slow and not self.mode.sign_slow:
                            continue
                        min_n = 3 if slow else self.min_n
                        tasks.append(self._task(suite, b, op, self.wallet_budget, min_n))
            elif op in KEM_OPS and self.kem:
                tasks.append(self._task(self.kem_name, "liboqs", op, self.wallet_budget))
        return tasks

    def _task(self, suite: str, backend: str, op: str, budget: float, min_n: int | None = None):
        return {
            "suite": suite,
            "backend": backend,
            "operation": op,
            "budget_s": budget,
            "min_n": min_n or self.min_n,
            "max_n": self.max_n,
        }


# ---------------------------------------------------------------- frequency watch


class FreqWatch:
    """Samples one CPU's frequency/cap while a worker runs; records go to the sink.

    A worker measures several rounds; the engine calls :meth:`set_round` as the worker
    reports each task, so a cap that comes or goes mid-run marks only its rounds.
    """

    def __init__(self, root: str, cpu: int, run_id: str, emit: Sink) -> None:
        self.root, self.cpu, self.run_id, self.emit = root, cpu, run_id, emit
        self.round: int | None = None
        self.samples: list[tuple[int | None, hwinfo.CpuFreq]] = []
        self._topology: Topology | None = None
        self._topology_tried = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        if not self._topology_tried:
            # Read once per run: the frequency files are what changes between samples.
            self._topology_tried = True
            try:
                self._topology = read_topology(self.root)
            except Exception:
                self._topology = None  # the frequency reader says why, sample by sample
        f = hwinfo.frequencies(self.root, [self.cpu], self._topology).get(self.cpu)
        if f is None:
            return
        with self._lock:
            rnd = self.round
            self.samples.append((rnd, f))
        if f.cur_khz is None and f.max_khz is None and f.hw_max_khz is None:
            return  # nothing to record (e.g. a VM without cpufreq)
        self.emit(
            FreqSample(
                run_id=self.run_id,
                taken_at=time.time(),
                cpu=self.cpu,
                cur_khz=f.cur_khz,
                max_khz=f.max_khz,
                hw_max_khz=f.hw_max_khz,
                capped=f.capped,
                cause=f.cause,
                round=rnd,
            )
        )

    def start(self, round_index: int) -> None:
        self.round = round_index
        self.samples = []
        self._stop.clear()
        self.sample()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def set_round(self, round_index: int) -> None:
        if round_index != self.round:
            with self._lock:
                self.round = round_index
            self.sample()

    def _loop(self) -> None:
        while not self._stop.wait(FREQ_INTERVAL_S):
            self.sample()

    @staticmethod
    def _summarize(
        samples: list[hwinfo.CpuFreq],
    ) -> tuple[bool | None, float | None, hwinfo.CpuFreq | None]:
        known = [s for s in samples if s.capped is not None]
        if not known:
            return None, None, None
        capped = [s for s in known if s.capped]
        if not capped:
            return False, None, None
        worst = max(capped, key=lambda s: s.cap_factor or 0.0)
        return True, worst.cap_factor, worst

    def finish(self) -> tuple[bool | None, float | None, hwinfo.CpuFreq | None]:
        """Stop sampling; the cap state over the whole worker."""
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.sample()
        return self._summarize([f for _r, f in self.samples])

    def by_round(self) -> dict[int, tuple[bool | None, float | None, hwinfo.CpuFreq | None]]:
        rounds: dict[int, list[hwinfo.CpuFreq]] = {}
        for rnd, f in self.samples:
            if rnd is not None:
                rounds.setdefault(rnd, []).append(f)
        return {rnd: self._summarize(fs) for rnd, fs in rounds.items()}


# ---------------------------------------------------------------- meta


def _git_commit() -> str | None:
    repo = Path(__file__).resolve().parents[2]
    if not (repo / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def liboqs_linked_version(status: Any) -> str | None:
    """The liboqs library version in a liboqs BackendStatus, None when it did not load."""
    if status is None or not status.version:
        return None
    # BackendStatus.version: "liboqs 0.16.0; liboqs-python 0.16.0.1"
    for part in status.version.split(";"):
        part = part.strip()
        if part.startswith("liboqs "):
            return part.split(" ", 1)[1]
    return None


def collect_versions(statuses: dict[str, Any]) -> dict[str, str | None]:
    import ssl

    linked = liboqs_linked_version(statuses.get("liboqs"))
    openssl = statuses.get("openssl")
    return {
        "qprof": __version__,
        "qprof_commit": _git_commit(),
        "python": platform.python_version(),
        "numba": _dist_version("numba"),
        "numpy": _dist_version("numpy"),
        "pyperf": _dist_version("pyperf"),
        "liboqs_linked": linked,
        "liboqs_python": _dist_version("liboqs-python"),
        "openssl": ssl.OPENSSL_VERSION,
        "cryptography": openssl.version if openssl is not None else None,
        "pqcrypto": _dist_version("pqcrypto"),
    }


def _cpu_model(root: str) -> str | None:
    try:
        for line in (Path(root) / "proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cpu_rows(topo: dict[str, Any], cpus: list[int], root: str) -> list[dict[str, Any]]:
    freqs = hwinfo.frequencies(root, cpus)
    rows = []
    by_cpu = {r.get("cpu"): r for r in topo.get("cpus", [])}
    for cpu in cpus:
        row = dict(by_cpu.get(cpu, {"cpu": cpu}))
        f = freqs.get(cpu)
        if f is not None:
            row.update(
                {
                    "governor": f.governor,
                    "cur_khz": f.cur_khz,
                    "min_khz": f.min_khz,
                    "scaling_max_khz": f.max_khz,
                    "hw_max_khz": f.hw_max_khz,
                    "capped": f.capped,
                    "cap_factor": f.cap_factor,
                    "cap_cause": f.cause,
                }
            )
        rows.append(row)
    return rows


def choose_timer(timer: str, root: str = "/") -> tuple[str, str | None]:
    """(clock, note): resolve "auto" from the 1-minute load average."""
    if timer not in TIMERS:
        raise EngineError(f"unknown timer {timer!r}; timers: {', '.join(TIMERS)}")
    if timer != "auto":
        return timer, None
    try:
        load = float((Path(root) / "proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return "wall", None
    if load >= AUTO_CPU_TIMER_LOAD:
        return "cpu", (
            f"machine busy (1-minute load {load:.2f}): timing the CPU time of the worker "
            "thread, so time spent waiting behind other processes is not counted; run on a "
            "quiet machine (or --timer wall) for the seeds' wall-clock method"
        )
    return "wall", None


def rounds_verify(tasks: list[dict[str, Any]]) -> bool:
    """Verify rounds are interleaved; keygen/sign/KEM (after the rounds) run one by one."""
    return all(t["operation"] not in WALLET_OPS + KEM_OPS for t in tasks)


def interleaving_text(block_s: float) -> str:
    if block_s > 0:
        return (f"A/B/A/B/A in turns of {block_s * 1e3:.0f} ms inside every round: "
                "A = unit suite, B = the other suites, so each round gives the unit and "
                "every suite timed over the same stretch of time")
    return "A/B/A/B/A: A = unit suite, B = the other suites"


# ---------------------------------------------------------------- engine


class _Run:
    def __init__(
        self, config: BenchConfig, sink: Sink, progress: Progress | None, stop: threading.Event
    ) -> None:
        self.config = config
        self.sink = sink
        self.progress = progress
        self.stop = stop
        self.run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
        self.t0 = time.monotonic()
        self.summary = RunSummary(self.run_id, "finished", None, 0.0, [])
        self.work_total = 0.0
        self.work_done = 0.0
        self.python = config.python or sys.executable
        self.round_seconds: list[float] = []  # wall time of each worker, for the time limit
        self.round_budgets: list[float] = []  # what each worker was planned to take
        # Values per round, fixed by the first round of each (cpu, suite, backend, op).
        self.fixed_n: dict[tuple[int, str, str, str], int] = {}
        # For the ETA of adaptive rounds (see _expected_extra).
        self.pair_work = 0.0  # planned seconds of one extra B/A pair, worker included
        self.max_pairs = 0  # extra pairs a CPU may add
        self.cpus_pending = 0  # CPUs not started yet
        self.cur_pairs = 0  # pairs added on the CPU being measured
        self.cur_open = False  # that CPU may still add pairs
        self.pairs_done: list[int] = []  # pairs each finished CPU added
        self._last_fraction = 0.0
        self._last_done = 0.0
        self._live: _Worker | None = None  # the worker serving this CPU's adaptive rounds

    # -- output
    def emit(self, record: Record) -> None:
        if isinstance(record, Measurement):
            self.summary.measurements.append(record)
        self.sink(record)

    def note(self, level: str, kind: str, text: str, cpu: int | None = None) -> None:
        self.summary.notes.append(text)
        if level in ("error", "warning"):
            print(f"qprof: {level}: {text}", file=sys.stderr)
        self.emit(Note(run_id=self.run_id, level=level, text=text, cpu=cpu, kind=kind))

    def report(self, *, final: bool = False, **kw: Any) -> None:
        if self.progress is None:
            return
        elapsed = time.monotonic() - self.t0
        frac, eta = self._last_fraction, None
        if final:
            frac, eta = 1.0, 0.0
        elif self.work_total:
            # Scale the plan by how fast the work actually went so far.
            speed = max(elapsed / self.work_done if self.work_done > 0 else 1.0, 0.5)
            remaining = max(0.0, self.work_total - self.work_done)
            remaining += self._expected_extra(elapsed, speed, remaining)
            eta = remaining * speed
            # The part of the bar still to go is shared between the work done since the
            # last event and what remains now: with a fixed plan this is done / total;
            # when rounds are added (or expected) the bar slows down, never goes back.
            step = max(0.0, self.work_done - self._last_done)
            if step + remaining > 0:
                frac += (1.0 - frac) * step / (step + remaining)
            self._last_fraction, self._last_done = min(frac, 1.0), self.work_done
        # A broken progress bar must not break a measurement.
        with contextlib.suppress(Exception):
            self.progress(ProgressEvent(fraction=frac, eta_s=eta, elapsed_s=elapsed, **kw))

    def _expected_extra(self, elapsed: float, speed: float, planned_left: float) -> float:
        """Planned seconds of the adaptive pairs likely still to come (not yet in the plan).

        A CPU that needed k extra pairs is expected to need k more (the CI narrows as the
        square root of the rounds), up to ``max_rounds``; CPUs not started yet as many as
        the finished ones did on average; all of it within the time limit, past which no
        round starts.
        """
        if self.max_pairs <= 0:
            return 0.0
        prior = sum(self.pairs_done) / len(self.pairs_done) if self.pairs_done else None
        pairs = 0.0
        if self.cur_open:
            k = self.cur_pairs
            pairs += min(max(2 * k, prior or 0.0) - k, self.max_pairs - k)
        if prior is None:
            prior = min(2 * self.cur_pairs, self.max_pairs) if self.cur_open else 0.0
        pairs += self.cpus_pending * prior
        extra = max(0.0, pairs) * self.pair_work
        limit = self.config.time_limit_s
        if limit is not None:
            extra = min(extra, max(0.0, (limit - elapsed) / speed - planned_left))
        return extra

    # -- main
    def run(self) -> RunSummary:
        cfg = self.config
        plan = Plan(cfg)
        self.plan = plan
        topo = hwinfo.topology(cfg.root)
        self.timer, self.timer_note = choose_timer(cfg.timer, cfg.root)
        cpus = cfg.cpus if cfg.cpus is not None else hwinfo.default_cpus(topo)
        self.summary.cpus = list(cpus)
        meta = Meta(
            run_id=self.run_id,
            started_at=time.time(),
            qprof_version=__version__,
            command=list(cfg.command or sys.argv),
            versions=collect_versions(plan.statuses),
            machine={
                "hostname": platform.node(),
                "kernel": platform.release(),
                "arch": platform.machine(),
                "cpu_model": _cpu_model(cfg.root),
                "online_cpus": [r.get("cpu") for r in topo.get("cpus", []) if r.get("online")],
                "clusters": topo.get("clusters", []),
                "topology_problems": topo.get("problems", []),
            },
            cpus=_cpu_rows(topo, [c for c in cpus if hwinfo.cpu_problem(c, cfg.root) is None],
                           cfg.root),
            profile=plan.profile.name if plan.profile else cfg.profile,
            settings={
                "mode": cfg.mode,
                "suites": plan.suites,
                "unit_suite": plan.unit,
                "backends": plan.backends,
                "operations": plan.operations,
                "dual": list(plan.dual) if plan.dual else None,
                "rounds": plan.rounds,
                "max_rounds": plan.max_rounds,
                "adaptive": cfg.adaptive,
                "budget_s": plan.budget,
                "min_n": plan.min_n,
                "max_n": plan.max_n,
                "nice": cfg.nice,
                "interleaving": interleaving_text(plan.interleave_block_s),
                "interleave_block_s": plan.interleave_block_s,
                "timer": self.timer,
                "timer_clock": "time.thread_time (CLOCK_THREAD_CPUTIME_ID)"
                if self.timer == "cpu" else "time.perf_counter",
                "values": "one operation per pyperf value (loops=1), clock overhead subtracted",
                "backend_versions": {
                    n: st.version for n, st in plan.statuses.items() if st.available
                },
            },
        )
        self.emit(meta)
        if self.timer_note:
            self.note("info", "timer", self.timer_note)
        for level, kind, text in plan.notes:
            self.note(level, kind, text)
        self.emit(Env(self.run_id, "before", time.time(), hwinfo.env_snapshot(cfg.root)))

        good_cpus = []
        for cpu in cpus:
            problem = hwinfo.cpu_problem(cpu, cfg.root)
            if problem:
                self.summary.aborted_cpus[cpu] = problem
                self.note("error", "cpu_aborted", f"CPU {cpu} skipped: {problem}", cpu)
            else:
                good_cpus.append(cpu)

        workdir = Path(tempfile.mkdtemp(prefix="qprof-run-"))
        failure = None
        try:
            if good_cpus and not self.stop.is_set():
                fixtures = self._fixtures(plan, workdir)
                if fixtures is not None:
                    self._plan_work(plan, len(good_cpus))
                    for cpu in good_cpus:
                        if self.stop.is_set():
                            break
                        self._measure_cpu(plan, cpu, workdir)
        except Exception as exc:  # end the run with a reason rather than a missing End
            failure = f"internal error: {type(exc).__name__}: {exc}"
            self.note("error", "engine_error", failure)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

        self.emit(Env(self.run_id, "after", time.time(), hwinfo.env_snapshot(cfg.root)))
        s = self.summary
        if failure:
            s.status, s.reason = "aborted", failure
        elif self.stop.is_set():
            s.status, s.reason = "aborted", "stopped on request"
        elif not good_cpus or len(s.aborted_cpus) == len(cpus):
            s.status = "aborted"
            s.reason = "; ".join(s.aborted_cpus.values()) or "nothing measured"
        elif s.aborted_cpus:
            s.status = "partial"
            s.reason = "; ".join(f"CPU {c}: {r}" for c, r in s.aborted_cpus.items())
        if s.disagreements:
            self.note(
                "error", "disagreement",
                f"{s.disagreements} of {s.checks} checks: the verifiers DISAGREED",
            )
        elif s.checks:
            self.note("info", "agreement", f"{s.checks} checks, the verifiers never disagreed")
        s.elapsed_s = time.monotonic() - self.t0
        self.emit(
            End(
                run_id=self.run_id,
                finished_at=time.time(),
                status=s.status,
                reason=s.reason,
                checks=s.checks,
                disagreements=s.disagreements,
            )
        )
        self.report(final=not self.stop.is_set(), message=f"{s.status} in {s.elapsed_s:.0f}s")
        return s

    def _fixtures(self, plan: Plan, workdir: Path) -> Path | None:
        needs = [op for op in plan.operations if op in ("verify", "verify_invalid") + DUAL_OPS]
        path = workdir / "fixtures.json"
        if not needs:
            save_fixtures({}, path)
            return path
        self.report(message="preparing keys and signatures")
        fixtures: dict[str, Fixture] = {}
        for suite in plan.suites:
            try:
                fixtures[suite] = cached_fixture(
                    suite, tuple(plan.backends), self.config.fixture_cache,
                    checker=next((b for b in plan.backends if plan.supports(b, suite)), None),
                )
            except FixtureError as exc:
                self.note("error", "fixture", str(exc))
        if plan.unit not in fixtures:
            self.summary.aborted_cpus.update(
                {c: "no signature of the unit suite" for c in self.summary.cpus}
            )
            return None
        save_fixtures(fixtures, path)
        self.fixtures_path = path
        return path

    def _plan_work(self, plan: Plan, ncpus: int) -> None:
        a = sum(t["budget_s"] for t in plan.verify_tasks([plan.unit]))
        b = sum(t["budget_s"] for t in plan.verify_tasks(plan.others))
        rounds = plan.rounds
        per_worker = max(1, self.config.rounds_per_worker or rounds)
        workers = -(-rounds // per_worker)
        if plan.interleave_block_s > 0:
            per_cpu = rounds * (a + b) + workers * SPAWN_COST_S
        else:
            per_cpu = (rounds + 1) // 2 * a + rounds // 2 * b + workers * SPAWN_COST_S
        w = plan.wallet_tasks()
        if w:
            per_cpu += sum(t["budget_s"] for t in w) + SPAWN_COST_S
        self.work_total = per_cpu * ncpus
        # One extra B/A pair (verdict tasks only, one worker), and how many a CPU may add.
        a_x = self._extra_tasks(plan.verify_tasks([plan.unit]))
        b_x = self._extra_tasks(plan.verify_tasks(plan.others))
        self.pair_work = self._pair_budget(plan, a_x, b_x) + (
            0.0 if self._serves(plan) else SPAWN_COST_S)
        self.max_pairs = (plan.max_rounds - plan.rounds) // 2 if self.config.adaptive else 0
        self.cpus_pending = ncpus

    # -- one CPU
    def _measure_cpu(self, plan: Plan, cpu: int, workdir: Path) -> None:
        """A/B/A/B/A rounds, several per worker process; extra B/A pairs while unsure."""
        cfg = self.config
        watch = FreqWatch(cfg.root, cpu, self.run_id, self.emit)
        a_tasks = plan.verify_tasks([plan.unit])
        b_tasks = plan.verify_tasks(plan.others)
        a_extra, b_extra = self._extra_tasks(a_tasks), self._extra_tasks(b_tasks)
        round_caps: dict[int, tuple[bool | None, float | None]] = {}
        mine: list[Measurement] = []
        per_worker = max(1, cfg.rounds_per_worker or plan.rounds)
        r = 0
        target = plan.rounds
        self.cpus_pending -= 1
        self.cur_pairs, self.cur_open = 0, bool(cfg.adaptive)
        try:
            while r < target:
                if self.stop.is_set():
                    return
                block = list(range(r, min(target, r + per_worker)))
                tasks = [
                    dict(t, round=k, n=self.fixed_n.get((cpu, t["suite"], t["backend"],
                                                          t["operation"])))
                    for k in block for t in (
                        self._round_tasks(plan, k, a_tasks, b_tasks) if k < plan.rounds
                        else self._round_tasks(plan, k, a_extra, b_extra))
                ]
                if tasks:
                    # The last base worker stays for the extra rounds (see _serves).
                    serve = self._serves(plan) and block[-1] + 1 == target
                    ok = self._run_worker(plan, cpu, block, target, tasks, workdir, watch,
                                          round_caps, mine, serve=serve)
                    if not ok:
                        return
                r = block[-1] + 1
                if (
                    r == target
                    and cfg.adaptive
                    and target + 2 <= plan.max_rounds
                    and self._needs_more(plan, cpu, mine)
                    and self._time_left(plan, a_extra, b_extra)
                ):
                    self.work_total += self.pair_work
                    self.cur_pairs += 1
                    target += 2
        finally:
            self._close_live()
        self.cur_open = False
        self.pairs_done.append(self.cur_pairs)
        self.summary.rounds[cpu] = r
        self._drift_and_cap_notes(plan, cpu, mine, round_caps)
        wallet = [dict(t, round=r) for t in plan.wallet_tasks()]
        if wallet and not self.stop.is_set():
            self._run_worker(plan, cpu, [r], r + 1, wallet, workdir, watch, round_caps, mine)

    def _serves(self, plan: Plan) -> bool:
        """Interleaved adaptive runs time their extra rounds in the base rounds' worker:
        each process has its own quiet speed (memory placement; up to ~100 bp apart), so
        rounds from a new process would widen the ML-DSA round spread."""
        return (plan.interleave_block_s > 0 and bool(self.config.adaptive)
                and plan.max_rounds >= plan.rounds + 2)

    def _close_live(self) -> None:
        """End the serving worker: "done" (it exits), or SIGTERM when stopping."""
        w, self._live = self._live, None
        if w is None:
            return
        if not self.stop.is_set():
            with contextlib.suppress(OSError, ValueError):
                assert w.proc.stdin is not None
                w.proc.stdin.write("done\n")
                w.proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                w.proc.wait(timeout=STOP_GRACE_S * 5)
        if w.proc.poll() is None:
            self._terminate(w.proc)

    @staticmethod
    def _extra_tasks(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """An extra round's tasks: the verdict's (all of them if the run has none)."""
        return [t for t in tasks if t["operation"] in VERDICT_OPS] or tasks

    @staticmethod
    def _round_tasks(plan: Plan, k: int, a_tasks: list, b_tasks: list) -> list:
        """Round k: A (even) or B (odd); interleaved, every round has both (in turns)."""
        if plan.interleave_block_s > 0:
            return a_tasks + b_tasks
        return a_tasks if k % 2 == 0 else b_tasks

    @staticmethod
    def _pair_budget(plan: Plan, a_tasks: list, b_tasks: list) -> float:
        """Planned seconds of two more rounds."""
        one = sum(t["budget_s"] for t in a_tasks + b_tasks)
        return 2 * one if plan.interleave_block_s > 0 else one

    def _time_left(self, plan: Plan, a_tasks: list, b_tasks: list) -> bool:
        """Would one more B/A pair end within the time limit? (from the rounds so far)"""
        limit = self.config.time_limit_s
        if limit is None:
            return True
        budget = self._pair_budget(plan, a_tasks, b_tasks)
        need = budget * 1.5 + SPAWN_COST_S
        if self.round_seconds and self.round_budgets:
            # How much longer than planned the workers took so far (a busy machine).
            stretch = sum(self.round_seconds) / max(sum(self.round_budgets), 1e-9)
            need = budget * max(stretch, 1.0)
        return time.monotonic() - self.t0 + need <= limit

    def _needs_more(self, plan: Plan, cpu: int, mine: list[Measurement]) -> bool:
        """True while a Verify-Unit ratio is unsure or an ML-DSA round spread is large
        (or, with quiet-turn pairs, while fewer quiet rounds than planned were kept)."""
        from qprof.measure.reduce import paired_ci, ratio_ci
        from qprof.measure.verdict import choose_statistic, paired_for, paired_spread

        reduced = reduce_measurements(mine)
        # What extra rounds time (see _extra_tasks): the dual pairs' CIs could not narrow
        # (a run of dual_enforce alone has them in every round, and is decided on them).
        ops = VERDICT_OPS if any(m.operation in VERDICT_OPS for m in mine) else ("dual_enforce",)
        for backend in {m.backend for m in mine}:
            for op in ops:
                unit = reduced.get((cpu, plan.unit, backend, op))
                if unit is None:
                    continue
                statistic = self.config.statistic
                if statistic == "auto":
                    statistic, _why = choose_statistic(
                        reduced, cpu, backend, op, self.config.max_spread_bp, plan.unit)
                paired = paired_for(reduced, cpu, backend, op, plan.unit) \
                    if statistic == "paired" else {}
                if statistic == "paired" and paired:
                    kept = min(len(p.by_round) for p in paired.values())
                    if kept < plan.rounds:
                        return True  # redo the rounds measured under contention
                p10 = statistic == "p10"
                for suite in plan.suites:
                    red = reduced.get((cpu, suite, backend, op))
                    if red is None:
                        continue
                    # The spread of what the verdict will use: round medians, round 10th
                    # percentiles when "auto" chose them (an explicit --statistic p10 lets
                    # the CI alone decide), or the quiet-turn ratios per round.
                    if paired:
                        spread = paired_spread(paired, suite, plan.unit)
                    else:
                        spread = red.p10_spread_bp if p10 else red.spread_bp
                    # (Not with quiet-turn pairs: their rounds agree (one process, see
                    # _serves), and more rounds can only widen max - min; the CI decides.)
                    if (suite.startswith("ML-DSA") and spread is not None and not paired
                            and (not p10 or self.config.statistic == "auto")
                            and spread > self.config.max_spread_bp):
                        return True
                    if suite == plan.unit:
                        continue
                    pair = paired.get(suite)
                    if pair is not None and pair.by_round:
                        ci = paired_ci(pair, replicates=400)
                        ratio = pair.ratio
                    else:
                        ci = ratio_ci(red, unit, replicates=400, quantile=0.1 if p10 else 0.5)
                        if p10 and red.p10_ns and unit.p10_ns:
                            ratio = red.p10_ns / unit.p10_ns
                        else:
                            ratio = red.median_ns / unit.median_ns
                    if ci is None:
                        continue
                    half_bp = stats.bp((ci[1] - ci[0]) / 2 / ratio)
                    if plan.profile and suite in plan.profile.verify_units:
                        unit_vu = plan.profile.unit_vu
                        constant = plan.profile.verify_units[suite]
                        lo, hi = math.ceil(unit_vu * ci[0]), math.ceil(unit_vu * ci[1])
                        if lo <= constant < hi:
                            return True  # the verdict itself is unsure
                    if half_bp > self.config.target_ci_bp:
                        return True
        return False

    def _drift_and_cap_notes(
        self, plan: Plan, cpu: int, mine: list[Measurement],
        round_caps: dict[int, tuple[bool | None, float | None]],
    ) -> None:
        reduced = reduce_measurements(mine)
        for backend in plan.backends:
            unit = reduced.get((cpu, plan.unit, backend, "verify"))
            if unit is not None:
                d = unit_drift_bp(unit)
                if d is not None:
                    self.note(
                        "info", "drift",
                        f"CPU {cpu} {backend}: {plan.unit} at the end vs the start: {d:+.0f} bp; "
                        "largest spread of round medians "
                        f"{max(r.spread_bp for r in reduced.values()):.0f} bp",
                        cpu,
                    )
        states = {k: v[0] for k, v in round_caps.items() if v[0] is not None}
        if round_caps and not states:
            self.note(
                "info", "freq_unknown",
                f"CPU {cpu}: no frequency data (no cpufreq files, e.g. a VM): a frequency "
                "cap could not be seen; ratios on the same core are still valid",
                cpu,
            )
        # A cap that came or went (cpufreq), or a step of the unit's quiet speed (VMs):
        # said here, left out by the verdict (qprof.measure.clock, from these records).
        for change in clock_changes(mine, plan.unit):
            self.note("warning", change.kind, change.text(), cpu)

    def _run_worker(
        self, plan: Plan, cpu: int, block: list[int], rounds: int, tasks: list[dict[str, Any]],
        workdir: Path, watch: FreqWatch,
        round_caps: dict[int, tuple[bool | None, float | None]], mine: list[Measurement],
        serve: bool = False,
    ) -> bool:
        """Run ``tasks`` in a new worker, or in the serving one (``self._live``) if any.

        ``serve``: the new worker stays after its tasks, for the adaptive rounds.
        """
        rnd = block[0]
        first = tasks[0]
        self.report(cpu=cpu, round=rnd, rounds=rounds, suite=first["suite"],
                    backend=first["backend"], operation=first["operation"], message="starting")
        watch.start(rnd)
        started = time.monotonic()
        done_before = self.work_done
        w, start = self._live, 0
        spawn = 0.0 if w is not None else SPAWN_COST_S
        if w is None:
            w = self._spawn(plan, cpu, block, tasks, workdir, serve)
            if w is None:
                watch.finish()
                return False
        else:
            start = len(w.tasks)
            w.tasks.extend(tasks)
            # A worker that died meanwhile: its EOF ends _follow, its exit code tells why.
            with contextlib.suppress(OSError, ValueError):
                assert w.proc.stdin is not None
                w.proc.stdin.write(json.dumps({"tasks": tasks}) + "\n")
                w.proc.stdin.flush()
        stopped, idle = self._follow(w, cpu, rounds, watch)
        self._live = w if idle and not stopped else None
        rc = 0 if self._live else w.proc.wait()
        self.round_seconds.append(time.monotonic() - started)
        self.round_budgets.append(sum(t["budget_s"] for t in tasks) + spawn)
        overall = watch.finish()
        caps = {k: watch.by_round().get(k, overall) for k in block}
        for k, (capped, factor, _w) in caps.items():
            round_caps[k] = (capped, factor)
        if stopped:
            # Keep what the worker finished before it was stopped; no error: asked for.
            self._collect(plan, cpu, rnd, w.tasks, w.result_path, w.pyperf_path, caps, mine,
                          partial=True, start=start)
            return False
        self.work_done = done_before + sum(t["budget_s"] for t in tasks) + spawn
        if rc != 0:
            tail = " | ".join(line for line in w.stderr_lines[-5:] if line) or f"exit code {rc}"
            if rc == 3:
                self._abort_cpu(cpu, tail.replace("qprof worker: ", ""))
            else:
                self._abort_cpu(cpu, f"worker failed in round {rnd + 1} ({tail})")
            return False
        self._collect(plan, cpu, rnd, w.tasks, w.result_path, w.pyperf_path, caps, mine,
                      start=start)
        return True

    def _spawn(
        self, plan: Plan, cpu: int, block: list[int], tasks: list[dict[str, Any]],
        workdir: Path, serve: bool,
    ) -> _Worker | None:
        cfg = self.config
        rnd = block[0]
        tag = f"cpu{cpu}-r{rnd}" + (f"-{block[-1]}" if len(block) > 1 else "")
        if cfg.pyperf_dir is not None:
            cfg.pyperf_dir.mkdir(parents=True, exist_ok=True)
            pyperf_path = cfg.pyperf_dir / f"{self.run_id}-{tag}.json"
        else:
            pyperf_path = workdir / f"{tag}.pyperf.json"
        pyperf_path.unlink(missing_ok=True)
        interleaved = rounds_verify(tasks)
        job = {
            "cpu": cpu,
            "round": rnd,
            "nice": cfg.nice,
            "timer": self.timer,
            "fixtures": str(getattr(self, "fixtures_path", "")) or None,
            "result": str(workdir / f"{tag}.result.json"),
            "parent": os.getpid(),  # the worker exits if it is already orphaned
            "tasks": tasks,
            "interleave_block_s": plan.interleave_block_s if interleaved else 0.0,
            "serve": serve and interleaved,
        }
        job_path = workdir / f"{tag}.job.json"
        job_path.write_text(json.dumps(job))
        cmd = [
            self.python, "-m", "qprof.measure.worker", "--job", str(job_path),
            "--worker", "--loops", "1", "--warmups", "1", "--values", "1",
            "--affinity", str(cpu), "--quiet", "-o", str(pyperf_path),
        ]
        try:
            proc = subprocess.Popen(
                cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                stdin=subprocess.PIPE if job["serve"] else subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        except OSError as exc:
            self._abort_cpu(cpu, f"cannot start the worker: {exc}")
            return None
        lines: queue.Queue[str | None] = queue.Queue()

        def read() -> None:
            # stderr is read by a thread (a blocking read would wait out the worker's
            # round); its lines are handled by _follow, on the engine's thread.
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        return _Worker(proc, lines, list(tasks), Path(job["result"]), pyperf_path, [])

    def _follow(self, w: _Worker, cpu: int, rounds: int, watch: FreqWatch) -> tuple[bool, bool]:
        """Relay the worker's progress until it exits or, serving, reports "idle" (its
        tasks done); stop it when ``stop`` is set. Returns (stopped, idle)."""
        proc = w.proc
        stopped = False
        while True:
            if self.stop.is_set() and not stopped:
                stopped = True
                self._terminate(proc)
            try:
                line = w.lines.get(timeout=POLL_S)
            except queue.Empty:
                if stopped and proc.poll() is not None:
                    break  # dead; do not wait on a pipe some other process may hold
                continue
            if line is None:
                break
            if line.startswith("@qprof "):
                try:
                    ev = json.loads(line[7:])
                except ValueError:
                    continue
                if ev.get("event") == "idle" and not stopped:
                    return False, True
                self._on_worker_event(ev, w.tasks, cpu, rounds, watch)
            else:
                w.stderr_lines.append(line.rstrip())
        return stopped, False

    @staticmethod
    def _terminate(proc: subprocess.Popen) -> None:
        """SIGTERM, then SIGKILL if the worker is still there after STOP_GRACE_S."""
        with contextlib.suppress(OSError):
            proc.terminate()
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait()

    def _on_worker_event(
        self, ev: dict[str, Any], tasks: list[dict[str, Any]], cpu: int, rounds: int,
        watch: FreqWatch,
    ) -> None:
        index = ev.get("index")
        if not isinstance(index, int) or not 0 <= index < len(tasks):
            return
        t = tasks[index]
        rnd = int(t.get("round", 0))
        if ev.get("event") == "start":
            watch.set_round(rnd)
        if ev.get("event") == "done":
            self.work_done += t["budget_s"]
        elif ev.get("event") == "failed":
            self.note("warning", "task_failed",
                      f"CPU {cpu} {t['suite']} {t['backend']} {t['operation']}: {ev.get('error')}",
                      cpu)
        self.report(cpu=cpu, round=rnd, rounds=rounds, suite=t["suite"], backend=t["backend"],
                    operation=t["operation"], message=str(ev.get("event", "")))

    def _abort_cpu(self, cpu: int, reason: str) -> None:
        self.summary.aborted_cpus[cpu] = reason
        self.note("error", "cpu_aborted", f"CPU {cpu} aborted: {reason}", cpu)

    def _collect(
        self, plan: Plan, cpu: int, rnd: int, tasks: list[dict[str, Any]], result_path: Path,
        pyperf_path: Path,
        caps: dict[int, tuple[bool | None, float | None, hwinfo.CpuFreq | None]],
        mine: list[Measurement], partial: bool = False, start: int = 0,
    ) -> None:
        """Measurements from the worker's files (``partial``: a stopped worker's, which may
        have finished nothing, or been stopped while pyperf rewrote its JSON), for its
        tasks from index ``start`` (a serving worker's files hold its earlier rounds too)."""
        import pyperf

        try:
            result = json.loads(result_path.read_text())
            suite_data = pyperf.BenchmarkSuite.load(str(pyperf_path))
        except (OSError, ValueError) as exc:
            if not partial:
                self._abort_cpu(cpu, f"round {rnd + 1}: worker output unreadable: {exc}")
            return
        # (benchmark name, round) -> values: each round is one pyperf run.
        runs: dict[tuple[str, int], list[float]] = {}
        for bench in suite_data.get_benchmarks():
            for run in bench.get_runs():
                meta = run.get_metadata()
                key = (bench.get_name(), int(meta.get("qprof_round", rnd)))
                runs.setdefault(key, []).extend(run.values)
        rel = None
        if self.config.pyperf_dir is not None:
            base = self.config.record_base
            rel = os.path.relpath(pyperf_path, base) if base else str(pyperf_path)
        for k, (capped, factor, worst) in sorted(caps.items()):
            if capped and worst is not None:
                self.note("warning", "cap", f"CPU {cpu} round {k + 1}: " + hwinfo.cap_text(
                    worst.hw_max_khz, worst.max_khz, factor), cpu)
        for res in result.get("results", []):
            if res["index"] < start:
                continue
            task = tasks[res["index"]]
            k = int(task.get("round", rnd))
            capped, factor, _worst = caps.get(k, (None, None, None))
            values = [round(v * 1e9, 1) for v in runs.get((res["name"], k), [])]
            if not values:
                continue
            s = stats.summarize(values)
            m = Measurement(
                run_id=self.run_id, cpu=cpu, suite=task["suite"], backend=task["backend"],
                operation=task["operation"], round=k, n=s.n, median_ns=s.median_ns,
                p95_ns=s.p95_ns, mean_ns=s.mean_ns, stdev_ns=s.stdev_ns, min_ns=s.min_ns,
                max_ns=s.max_ns,
                samples_ns=values if len(values) <= self.config.keep_samples else None,
                finished_at=res.get("finished_at"), capped=capped, cap_factor=factor,
                pyperf_json=rel, checks=int(res.get("checks", 0)),
                disagreements=int(res.get("disagreements", 0)),
                turn_size=res.get("turn_size") if values and len(values) == res.get("n") else None,
            )
            mine.append(m)
            self.fixed_n.setdefault((cpu, m.suite, m.backend, m.operation), m.n)
            self.emit(m)
            self.summary.checks += m.checks
            self.summary.disagreements += m.disagreements
            wrong = int(res.get("wrong_verdicts", 0))
            if wrong:
                self.summary.wrong_verdicts += wrong
                self.note("error", "wrong_verdict",
                          f"CPU {cpu} {task['suite']} {task['backend']} {task['operation']}: "
                          f"{wrong} of {m.n} verdicts were wrong", cpu)
            for ex in res.get("examples", []):
                print(f"qprof: DISAGREEMENT on CPU {cpu} {task['suite']}: {ex['backends']}",
                      file=sys.stderr)
                self.emit(Disagreement(run_id=self.run_id, cpu=cpu, suite=task["suite"], **ex))
            if m.disagreements:
                self.note("error", "disagreement",
                          f"CPU {cpu} {task['suite']} {task['operation']}: {m.disagreements} "
                          f"of {m.checks} checks disagreed", cpu)
        for fail in result.get("failures", []):
            if fail.get("index", start) < start:
                continue
            self.note("warning", "task_failed", f"CPU {cpu} round {rnd + 1}: {fail['name']}: "
                      f"{fail['error']}", cpu)


def run_bench(
    config: BenchConfig,
    sink: Callable[[Record], None],
    progress: Callable[[ProgressEvent], None] | None = None,
    stop: threading.Event | None = None,
) -> RunSummary:
    """Measure as ``config`` says; records go to ``sink`` as they are made.

    Raises :class:`EngineError` (or ``ProfileError``) before anything is measured when the
    configuration cannot work; everything that goes wrong later becomes a ``Note`` and the
    run's ``End`` status.
    """
    return _Run(config, sink, progress, stop or threading.Event()).run()
