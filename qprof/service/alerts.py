"""Alerts: what they are and where they go (the log, the store, an optional command).
(The hysteresis that keeps a flickering cap from flooding is qprof.hw.caps.)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

log = logging.getLogger("qprof.daemon")

# Alert kinds (keep names stable: they are stored and are Prometheus label values; the
# metrics export every kind, at 0 until raised, so rate() works from the first alert).
KINDS = (
    "cap_started",
    "cap_ended",
    "governor_changed",
    "coverage_lost",
    "coverage_regained",
    "disagreement",
    "cycle_skipped",
    "cycle_aborted",
    "result_skewed",
    "cpu_offline",
    "cpu_online",
    "degraded",
    # The chain's time bound (qprof.consensus.policy): a CPU's worst-case block took
    # longer than the same block on the slowest reference core / is back within it.
    "block_time_exceeded",
    "block_time_restored",
    # A backend gave a wrong known answer before timing (qprof.verify.functional): that
    # suite is not timed, or timed under --allow-mismatch and never decided.
    "functional_mismatch",
    # The verdict over time (qprof.consensus.trend): the software or firmware under the
    # measurement changed (a known change point: the daemon measures at once), and a
    # confirmed change of a suite's ratio (before, after, its size and what changed).
    "library_changed",
    "ratio_changed",
    # The daemon's cgroup CPU quota (qprof.hw.cgroup) stopped a run while it measured:
    # its rounds are judged as capped ones.
    "cpu_throttled",
)


@dataclass
class Alert:
    ts: float
    kind: str
    severity: str  # "info" | "warning" | "critical"
    message: str
    cpu: int | None = None
    cluster: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=str, sort_keys=False)


class AlertCommand:
    """Runs a user command per alert, the alert JSON on stdin, off the watch thread.

    A queue and one worker thread: a slow or hanging command delays only later alert
    commands (each has a timeout), never the watch loop. Failures are logged.
    """

    def __init__(self, command: str, timeout_s: float = 10.0, max_queue: int = 100) -> None:
        self.argv = shlex.split(command)
        self.timeout_s = timeout_s
        self._queue: queue.Queue[Alert | None] = queue.Queue(maxsize=max_queue)
        self._thread = threading.Thread(target=self._work, name="alert-command", daemon=True)
        self._thread.start()

    def __call__(self, alert: Alert) -> None:
        try:
            self._queue.put_nowait(alert)
        except queue.Full:
            log.warning("alert command queue full: dropped %s alert for the command", alert.kind)

    def close(self, wait_s: float = 2.0) -> None:
        try:
            self._queue.put_nowait(None)
        except queue.Full:
            return
        self._thread.join(wait_s)

    def _work(self) -> None:
        while True:
            alert = self._queue.get()
            if alert is None:
                return
            self.run_one(alert)

    def run_one(self, alert: Alert) -> bool:
        try:
            # Its own session and process group: a timeout kills the command and
            # everything it started, not only the direct child.
            proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    start_new_session=True)
        except OSError as exc:
            log.warning("alert command %s failed to start: %s", self.argv[0], exc)
            return False
        try:
            _out, stderr = proc.communicate(alert.to_json().encode(), timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.communicate(timeout=5)  # reap it; a child that left the group
            log.warning("alert command %s timed out after %.0f s (alert %s); its process "
                        "group was killed", self.argv[0], self.timeout_s, alert.kind)
            return False
        if proc.returncode != 0:
            err = stderr.decode(errors="replace").strip().splitlines()
            log.warning("alert command %s exited %d%s", self.argv[0], proc.returncode,
                        f": {err[-1]}" if err else "")
            return False
        return True


class AlertDispatcher:
    """Sends each alert to every sink; a failing sink is logged, never raised."""

    def __init__(self, sinks: list[Callable[[Alert], None]] | None = None) -> None:
        self.sinks: list[Callable[[Alert], None]] = list(sinks or [])
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def emit(self, kind: str, severity: str, message: str, *, cpu: int | None = None,
             cluster: int | None = None, ts: float | None = None, **details: Any) -> Alert:
        alert = Alert(ts=time.time() if ts is None else ts, kind=kind, severity=severity,
                      message=message, cpu=cpu, cluster=cluster, details=details)
        self.send(alert)
        return alert

    def send(self, alert: Alert) -> None:
        with self._lock:
            self.counts[alert.kind] = self.counts.get(alert.kind, 0) + 1
        level = {"critical": logging.CRITICAL, "warning": logging.WARNING}.get(
            alert.severity, logging.INFO)
        log.log(level, "alert %s: %s", alert.kind, alert.message)
        for sink in self.sinks:
            try:
                sink(alert)
            except Exception as exc:  # a sink must never take the daemon down
                log.error("alert sink %s failed: %s", getattr(sink, "__name__", sink), exc)
