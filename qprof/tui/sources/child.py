"""Run a helper child process from a worker thread, and stop it when the monitor quits.

Textual's thread workers are not daemon threads: a worker blocked in ``subprocess.run``
would keep the process alive after `q` until the child finished (seconds for a niced
evaluation). :func:`run_child` polls a stop event and kills the child instead.
"""

from __future__ import annotations

import subprocess
import threading
import time


class ChildStopped(Exception):
    """The stop event was set: the child was killed, its output thrown away."""


def run_child(cmd: list[str], stop: threading.Event | None = None,
              timeout_s: float = 300.0, poll_s: float = 0.2) -> tuple[int, str, str]:
    """(returncode, stdout, stderr) of ``cmd``; raises :class:`ChildStopped` when
    ``stop`` is set first and ``subprocess.TimeoutExpired`` after ``timeout_s``."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            out, err = proc.communicate(timeout=poll_s)
            return proc.returncode, out, err
        except subprocess.TimeoutExpired:
            pass
        if (stop is not None and stop.is_set()) or time.monotonic() > deadline:
            proc.kill()
            proc.communicate()
            if stop is not None and stop.is_set():
                raise ChildStopped(cmd[0]) from None
            raise subprocess.TimeoutExpired(cmd, timeout_s)
