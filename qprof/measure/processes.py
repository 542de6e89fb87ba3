"""Worker processes seen from the engine: start, follow, feed, stop.

A :class:`WorkerProcess` runs a worker on a job file (``WorkerRun``) and relays
its :class:`~qprof.measure.protocol.WorkerEvent` lines. Its stderr is read by a thread (a
blocking read would wait out the worker's round); the lines are handled on the engine's
thread by :meth:`WorkerProcess.follow`, which also stops the worker when ``stop`` is set
(SIGTERM, then SIGKILL after ``STOP_GRACE_S``).
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from qprof.measure.child.launch import launch
from qprof.measure.protocol import DONE, Job, Task, WorkerEvent, WorkerRun, encode_more

STOP_GRACE_S = 1.0  # SIGTERM, then SIGKILL after this long
POLL_S = 0.1  # how often a running worker is checked against ``stop``


def _threads() -> list[int]:
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:  # no /proc: this thread alone
        return [threading.get_native_id()]


def _affinity(tid: int) -> set[int] | None:
    """None: the thread ended since it was listed."""
    try:
        return os.sched_getaffinity(tid)
    except OSError:
        return None


def _set_affinity(tid: int, cpus: set[int]) -> None:
    # A thread that ended meanwhile, or a CPU set the kernel refuses: leave it be.
    with contextlib.suppress(OSError):
        os.sched_setaffinity(tid, cpus)


@contextlib.contextmanager
def parent_off_cpu(cpu: int) -> Iterator[None]:
    """Every thread of this process (the monitor's screen, the daemon's loop, the engine)
    off ``cpu`` while a worker measures on it, back where they were afterwards.

    The measured core should run the worker alone (the seeds' method): the monitor
    redraws and evaluates while a run goes on, the daemon serves metrics, and on a
    2-CPU machine the scheduler would often put them on the measured core. Nothing
    changes when ``cpu`` is the only CPU this process may use. Linux sets affinity per
    thread; threads started meanwhile inherit the narrower set and get the process's
    own back too.
    """
    before = {tid: cpus for tid in _threads() if (cpus := _affinity(tid)) is not None}
    mine = os.sched_getaffinity(0)
    if mine - {cpu}:
        for tid, cpus in before.items():
            if cpus - {cpu}:
                _set_affinity(tid, cpus - {cpu})
    try:
        yield
    finally:
        for tid in _threads():
            _set_affinity(tid, before.get(tid, mine))


class SpawnError(OSError):
    """The worker process could not be started."""


@dataclass(frozen=True)
class Followed:
    stopped: bool  # ``stop`` was set: the worker was terminated
    idle: bool  # a serving worker finished its tasks and waits for more


def terminate(proc: subprocess.Popen[str]) -> None:
    """SIGTERM, then SIGKILL if the worker is still there after STOP_GRACE_S."""
    with contextlib.suppress(OSError):
        proc.terminate()
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            proc.kill()
        proc.wait()


class WorkerProcess:
    """One worker; kept between calls while it serves adaptive rounds."""

    def __init__(self, python: str, job: Job, job_path: Path) -> None:
        job.write(job_path)
        self.job = job
        self.tasks: list[Task] = list(job.tasks)  # every task it was given (event indices)
        self.stderr_lines: list[str] = []
        try:
            self.proc: subprocess.Popen[str] = launch(
                WorkerRun(str(job_path)), python=python, stderr=subprocess.PIPE, text=True,
                stdin=subprocess.PIPE if job.serve else subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        except OSError as exc:
            raise SpawnError(f"cannot start the worker: {exc}") from exc
        self._lines: queue.Queue[str | None] = queue.Queue()
        try:
            threading.Thread(target=self._read, daemon=True).start()
        except RuntimeError as exc:  # a task limit: a worker nobody follows must not run on
            terminate(self.proc)
            raise SpawnError(f"cannot follow the worker: {exc}") from exc

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._lines.put(line)
        self._lines.put(None)

    @property
    def result_path(self) -> Path:
        return Path(self.job.result)

    def give(self, tasks: list[Task]) -> int:
        """More tasks for a serving worker; the index of the first of them."""
        start = len(self.tasks)
        self.tasks.extend(tasks)
        # A worker that died meanwhile: its EOF ends follow(), its exit code tells why.
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.write(encode_more(tasks))
            self.proc.stdin.flush()
        return start

    def follow(self, stop: threading.Event,
               on_event: Callable[[WorkerEvent, Task], None]) -> Followed:
        """Relay the worker's events until it exits or, serving, reports "idle"."""
        stopped = False
        while True:
            if stop.is_set() and not stopped:
                stopped = True
                terminate(self.proc)
            try:
                line = self._lines.get(timeout=POLL_S)
            except queue.Empty:
                if stopped and self.proc.poll() is not None:
                    break  # dead; do not wait on a pipe some other process may hold
                continue
            if line is None:
                break
            event = WorkerEvent.parse(line)
            if event is None:
                self.stderr_lines.append(line.rstrip())
            elif event.event == "idle":
                if not stopped:
                    return Followed(False, True)
            elif event.index is not None and 0 <= event.index < len(self.tasks):
                on_event(event, self.tasks[event.index])
        return Followed(stopped, False)

    def wait(self) -> int:
        return self.proc.wait()

    def close(self, stopping: bool) -> None:
        """End a serving worker: "done" (it exits), or SIGTERM when stopping."""
        if not stopping:
            with contextlib.suppress(OSError, ValueError):
                assert self.proc.stdin is not None
                self.proc.stdin.write(DONE + "\n")
                self.proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=STOP_GRACE_S * 5)
        if self.proc.poll() is None:
            terminate(self.proc)

    def failure(self, rc: int) -> str:
        """Why the worker exited with ``rc``: its last stderr lines."""
        return " | ".join(line for line in self.stderr_lines[-5:] if line) or f"exit code {rc}"
