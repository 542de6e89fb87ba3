"""What a run in a new HOME makes once, made beside the signing of its first pools.

The second implementation's SLH-DSA signatures for the known answers, numba's verify
kernels and the pools' walk kernel all land in caches, so helper processes make them
while the first pools are signed, and the preflight and the counting find them done
(:meth:`Warmup.wait`). Nothing here is timed; a failed step is redone by whoever needs it.
Helpers (:class:`WarmupJob` children) print each step done, die with their parent and
are killed at the end of the run. Figures: docs/FIRST_MINUTES.md.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from qprof.measure.child.job import ChildJob, Entry
from qprof.measure.child.launch import launch
from qprof.measure.fixtures import MESSAGE, slow_to_sign
from qprof.measure.lifeline import die_with_parent, parent_gone
from qprof.verify import available_backends, backend_status, get_verifier
from qprof.verify.functional import fresh_cases
from qprof.verify.slhdsa_calls import params_of, walk

ANSWERS = "answers"  # the second implementation's SLH-DSA signatures, kept
WALK = "walk"  # the SLH-DSA walk kernel (pool counts)
KERNELS = "kernels "  # + suite: numba's verify kernels of that suite
_POLL_S = 0.1
_TELL_S = 1.0  # how often a wait says what it waits for
# While the kernels of the first figure compile (numba's ML-DSA kernels: the first look
# waits for them), everything else made beside them yields: 14 s of compile shared
# evenly with the signing and the other helper took 28-30 s on two CPUs.
YIELD_NICE = 10


def kernel_step(suite: str) -> str:
    return KERNELS + suite


def plan_steps(backends: Iterable[str], suites: Iterable[str]) -> list[list[str]]:
    """The steps a new HOME needs, in helper processes of their own (each list is one
    process, done in order): the known answers' signatures and the walk with the
    SLH-DSA kernels (they share their Keccak code), the ML-DSA kernels beside them."""
    backends, suites = list(backends), list(suites)
    slh = [s for s in suites if slow_to_sign(s)]
    numba = "numba" in backends
    first = [ANSWERS] if slh else []
    first += [kernel_step(s) for s in slh] if numba else []
    first += [WALK] if slh else []
    second = first_figure_steps(backends, suites)
    return [p for p in (first, second) if p]


def first_figure_steps(backends: Iterable[str], suites: Iterable[str]) -> list[str]:
    """What the first look (:mod:`qprof.measure.first_look`) waits for: numba's kernels
    of the suites signed at once (ML-DSA)."""
    return ([kernel_step(s) for s in suites if not slow_to_sign(s)]
            if "numba" in backends else [])


@dataclass(frozen=True)
class WarmupJob(ChildJob):
    """A helper's job: ``steps`` in order, for ``backends`` and ``suites``; it dies with
    ``parent``."""

    KIND: ClassVar[str] = "qprof.measure.warmup"
    parent: int
    cache: str
    backends: tuple[str, ...]
    suites: tuple[str, ...]
    steps: tuple[str, ...]


class Warmup:
    """The helper processes of one run; nothing starts before :meth:`start`."""

    def __init__(self, backends: Iterable[str], suites: Iterable[str], cache: Path,
                 python: str | None = None) -> None:
        self.backends, self.suites = tuple(backends), tuple(suites)
        self.cache, self.python = cache, python or sys.executable
        self.procs: list[subprocess.Popen[bytes]] = []
        self.done: set[str] = set()
        self.steps: list[str] = []
        self._lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        """Start the helpers (once; the caller's thread must outlive them: they die with
        it)."""
        if self._started:
            return
        self._started = True
        first = set(first_figure_steps(self.backends, self.suites))
        for steps in plan_steps(self.backends, self.suites):
            job = WarmupJob(os.getpid(), str(self.cache), self.backends, self.suites,
                            tuple(steps))
            try:
                proc = launch(job, python=self.python, stdout=subprocess.PIPE)
            except OSError:
                continue  # whoever needs the step does it
            if first and not first & set(steps):
                _lower_priority(proc.pid)
            self.procs.append(proc)
            self.steps += steps
            threading.Thread(target=self._follow, args=(proc, steps), daemon=True,
                             name="qprof-warmup").start()

    def _follow(self, proc: subprocess.Popen[bytes], steps: list[str]) -> None:
        assert proc.stdout is not None
        with contextlib.suppress(OSError, ValueError), proc.stdout:
            for line in proc.stdout:
                with self._lock:
                    self.done.add(line.decode(errors="replace").strip())
        proc.wait()
        with self._lock:  # ended: what it did not do is done by whoever needs it
            self.done.update(steps)

    def pending(self, steps: Iterable[str]) -> list[str]:
        with self._lock:
            return [s for s in steps if s in self.steps and s not in self.done]

    def wait(self, steps: Iterable[str], stop: threading.Event,
             on_wait: Callable[[list[str], float], None] | None = None) -> None:
        """Until ``steps`` are done (those never started: at once) or ``stop`` is set;
        ``on_wait`` is told what is left and the seconds waited, about once a second."""
        wanted = list(steps)
        started = time.monotonic()
        told = -_TELL_S
        while (left := self.pending(wanted)) and not stop.is_set():
            waited = time.monotonic() - started
            if on_wait is not None and waited - told >= _TELL_S:
                on_wait(left, waited)
                told = waited
            time.sleep(_POLL_S)

    def make_way(self, pids: Iterable[int]) -> None:
        """``pids`` (the signing helpers) yield while the first figure's kernels compile."""
        if self.pending(first_figure_steps(self.backends, self.suites)):
            for pid in pids:
                _lower_priority(pid)

    def before_timing(self) -> list[str]:
        """What the preflight and the timing workers would otherwise make themselves: all
        but the walk (the pools' counts, which only the records wait for)."""
        return [s for s in self.steps if s != WALK]

    def keep_off(self, cpu: int) -> None:
        """The helpers still running off ``cpu`` (it is about to be measured)."""
        for proc in self.procs:
            if proc.poll() is not None:
                continue
            with contextlib.suppress(OSError):  # every thread: Linux sets it per thread
                for task in os.listdir(f"/proc/{proc.pid}/task"):
                    cpus = os.sched_getaffinity(int(task))
                    if cpus - {cpu}:
                        os.sched_setaffinity(int(task), cpus - {cpu})

    def close(self) -> None:
        """Kill what still runs (what it made is cached; the rest is made when needed)."""
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.kill()
        for proc in self.procs:  # their pipes end with them: the followers close them
            with contextlib.suppress(OSError):
                proc.wait()


def _lower_priority(pid: int) -> None:
    with contextlib.suppress(OSError):  # ended meanwhile: nothing to yield
        if os.getpriority(os.PRIO_PROCESS, pid) < YIELD_NICE:
            os.setpriority(os.PRIO_PROCESS, pid, YIELD_NICE)


def describe(left: list[str], waited_s: float) -> str:
    """What the run waits for, for the progress line."""
    parts = []
    if ANSWERS in left:
        parts.append("signing the known answers' SLH-DSA signatures")
    kernels = [s[len(KERNELS):] for s in left if s.startswith(KERNELS)]
    if kernels:
        parts.append(f"compiling numba's kernels ({', '.join(kernels)})")
    if WALK in left:
        parts.append("compiling the SLH-DSA walk that counts the pools' hash calls")
    return f"preparing (once per HOME): {'; '.join(parts)}, {waited_s:.0f} s"


def _do(step: str, backends: tuple[str, ...], suites: tuple[str, ...], cache: Path) -> None:
    if step == ANSWERS:
        statuses = available_backends()
        for backend in backends:
            st = statuses.get(backend)
            for suite in suites:
                if (suite.startswith("SLH-DSA") and st is not None and st.available
                        and suite in st.suites):
                    fresh_cases(backend, suite, cache)  # signs and keeps it once
    elif step == WALK:
        suite = "SLH-DSA-SHAKE-128s"  # one compile serves every parameter set
        p = params_of(suite)
        walk(suite, bytes(p.public_key_bytes), MESSAGE, bytes(p.signature_bytes))
    elif step.startswith(KERNELS):  # where numba runs and has the suite (else: nothing)
        numba = backend_status("numba")
        if numba.available and step[len(KERNELS):] in numba.suites:
            get_verifier("numba", step[len(KERNELS):]).warm_up()


def run_steps(job: WarmupJob) -> int:
    """The helper process: each step in turn, its name printed when it is done."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: end quietly, the parent says
    if parent_gone(job.parent):
        return 6
    failed = 0
    for step in job.steps:
        try:
            _do(step, job.backends, job.suites, Path(job.cache))
        except Exception as exc:  # noqa: BLE001 - whoever needs the step does it again
            print(f"qprof warmup: {step}: {type(exc).__name__}: {exc}", file=sys.stderr)
            failed = 1
        print(step, flush=True)
    return failed


CHILD = Entry(WarmupJob, run_steps)
