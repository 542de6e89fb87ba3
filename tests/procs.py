"""Live processes by their command line, from /proc as ps shows them (for the tests that
check what a run leaves running)."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path


def processes_with(*markers: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line holds every marker."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if all(m in cmdline for m in markers) and state != "Z":
            pids.append(int(entry.name))
    return pids


# A pool grower runs at SCHED_IDLE: a bound on the waits for it, not a time asserted.
STARVED_S = 120.0


def started(marker: str, within_s: float) -> list[int]:
    """Pids of the processes with ``marker``, once there are any (within ``within_s``)."""
    deadline = time.monotonic() + within_s
    while not (pids := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids


def unstarved(marker: str, within_s: float) -> list[int]:
    """Pids of the processes with ``marker`` once started (within ``within_s``), lifted
    to SCHED_OTHER at nice 0 where this process may (root). A pool grower runs at
    SCHED_IDLE, nice 19: it got no CPU for 120 s while CI's other worker kept both busy (a
    CI failure). What the tests check, that it ends or yields, does not hang on that."""
    pids = started(marker, within_s)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
            os.setpriority(os.PRIO_PROCESS, pid, 0)
    return pids
