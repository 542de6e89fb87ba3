"""Start a job's process, or run it to its end with a stop event and a time limit.

:func:`launch` is the one ``Popen`` of every helper (niceness, SCHED_IDLE, streams);
:func:`run` waits for one, reading its output all along, and kills its process group
when ``stop`` is set, on timeout, or when the caller is interrupted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from qprof.measure.child.job import ChildJob

Stream = int | IO[Any] | None


class ChildStopped(Exception):
    """``stop`` was set: the child was killed, its output thrown away."""


class ChildTimeout(subprocess.TimeoutExpired):
    """The child ran over its time limit and was killed."""


@dataclass(frozen=True)
class Finished:
    """A child that ran to its end: its exit code and what it printed."""

    returncode: int
    stdout: str
    stderr: str

    def tail(self, lines: int = 1) -> str:
        """Its last non-blank stderr lines, ``|``-joined ("" when it printed none)."""
        return " | ".join([ln for ln in self.stderr.splitlines() if ln.strip()][-lines:])

    def failure(self, lines: int = 1) -> str:
        """Why it failed: :meth:`tail`, else its exit code."""
        return self.tail(lines) or f"exit code {self.returncode}"


def _preexec(nice: int, idle: bool) -> Callable[[], None] | None:
    if not nice and not idle:
        return None

    def lower() -> None:  # in the child, before exec
        with contextlib.suppress(OSError):
            os.nice(nice)
        if idle:
            with contextlib.suppress(OSError, AttributeError):
                os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))

    return lower


def launch(job: ChildJob, *, python: str | None = None, stdin: Stream = subprocess.DEVNULL,
           stdout: Stream = subprocess.DEVNULL, stderr: Stream = subprocess.DEVNULL,
           text: bool = False, nice: int = 0, idle: bool = False,
           env: Mapping[str, str] | None = None,
           session: bool = False) -> subprocess.Popen[Any]:
    """Start ``job`` (``python -m qprof.measure.child KIND ...``): ``nice`` added to this
    process's niceness, ``idle`` also SCHED_IDLE, ``session`` in a process group of its
    own (so it can be killed whole). OSError when it cannot start."""
    return subprocess.Popen(job.to_argv(python), stdin=stdin, stdout=stdout, stderr=stderr,
                            text=text, env=env, preexec_fn=_preexec(nice, idle),
                            start_new_session=session)


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL the child's process group (it leads one: ``session``) and reap it."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()
    proc.communicate()


def run(job: ChildJob, stop: threading.Event | None = None, timeout_s: float | None = None,
        *, python: str | None = None, nice: int = 0, poll_s: float = 0.2) -> Finished:
    """Run ``job`` to its end, its output read as it comes (a full pipe must not stall
    it). Raises :class:`ChildStopped` when ``stop`` is set, :class:`ChildTimeout` after
    ``timeout_s``, OSError when it cannot start; the child's group is killed first."""
    proc = launch(job, python=python, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  text=True, nice=nice, session=True)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        while True:
            try:
                out, err = proc.communicate(timeout=poll_s)
                return Finished(proc.returncode, out, err)
            except subprocess.TimeoutExpired:
                pass
            if stop is not None and stop.is_set():
                raise ChildStopped(job.KIND)
            if deadline is not None and time.monotonic() > deadline:
                raise ChildTimeout(job.KIND, timeout_s or 0.0)
    finally:
        if proc.poll() is None:
            _kill_group(proc)
