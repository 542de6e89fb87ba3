"""A first figure while a run's first SLH-DSA pools are signed.

In a new HOME a run signs its first SLH-DSA pools before any round (10-20 s on two CPUs
with liboqs, ~30 s with pqcrypto), and the user saw no figure until the first round
after them. The ML-DSA pools are signed in milliseconds, first: one worker times their
verify on the first measured CPU meanwhile, once, and its medians go to the progress
line (``ProgressEvent.medians``), labelled as a first look. The core is shared with the
signing then, so the figures are never records: the estimator sees only the rounds,
which start when the signing is done (and this worker with it).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from qprof.measure.collect import verify_medians
from qprof.measure.fixtures import Pool, save_fixtures
from qprof.measure.plan import Plan
from qprof.measure.processes import SpawnError, WorkerProcess
from qprof.measure.protocol import Job, WorkerResult
from qprof.measure.warmup import Warmup, kernel_step

MESSAGE = "first look, while the SLH-DSA pools are signed (the core is shared)"
# Its worker runs at the user's priority: at nice 10 beside the signing it would get a
# tenth of the core, and the figure would come after the signing.
NICE = 0


@dataclass(frozen=True)
class LookSetup:
    """What the worker needs from the run."""

    plan: Plan
    cpu: int
    python: str
    timer: str
    workdir: Path
    warmup: Warmup


class FirstLook:
    """At most one worker per run, started by :meth:`start` and ended by :meth:`close`."""

    def __init__(self, setup: LookSetup, report: Callable[[int, dict[str, float]], None]
                 ) -> None:
        self.setup, self.report = setup, report
        self._thread: threading.Thread | None = None
        # Set by close(), which the run calls when its rounds start or it stops.
        self._ended = threading.Event()

    def start(self, pools: dict[str, Pool]) -> None:
        """Time the verify of ``pools`` (those signed so far) once, in a thread."""
        if self._thread is not None or self._ended.is_set() or not pools:
            return
        self._thread = threading.Thread(target=self._run, args=(dict(pools),),
                                        name="qprof-first-look", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """End the worker (the rounds are about to start) and wait for it."""
        self._ended.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self, pools: dict[str, Pool]) -> None:
        s = self.setup
        tasks = [replace(t, round=0) for t in s.plan.round_tasks(0)
                 if t.suite in pools and t.operation == "verify"]
        if not tasks:
            return
        # numba's kernels compile once per HOME in the warm-up's helper: not twice.
        s.warmup.wait([kernel_step(t.suite) for t in tasks if t.backend == "numba"],
                      self._ended)
        if self._ended.is_set():
            return
        fixtures = s.workdir / "first-look.fixtures.json"
        save_fixtures(pools, fixtures)
        job = Job(cpu=s.cpu, nice=NICE, timer=s.timer, fixtures=str(fixtures),
                  result=str(s.workdir / "first-look.result.json"), pyperf=None,
                  parent=os.getpid(), tasks=tuple(tasks),
                  interleave_block_s=s.plan.interleave_block_s, serve=False)
        try:
            worker = WorkerProcess(s.python, job, s.workdir / "first-look.job.json")
        except SpawnError:
            return  # the rounds give the first figure, as before
        worker.follow(self._ended, lambda _event, _task: None)
        if worker.wait() != 0 or self._ended.is_set():
            return
        try:
            result = WorkerResult.read(worker.result_path)
        except (OSError, ValueError):
            return
        medians = verify_medians(worker.tasks, result)
        if medians:
            self.report(s.cpu, medians)
