"""Live processes by their command line, from /proc as ps shows them (for the tests that
check what a run leaves running)."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from qprof.measure import machine_lock, poolgrow


def stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat's fields after "(comm)": state, ppid, ... (OSError: gone)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def processes_with(*markers: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line holds every marker."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = stat_fields(int(entry.name))[0]
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


def gone_within(marker: str, within_s: float) -> tuple[list[int], float]:
    """Poll until no process holds ``marker`` (within ``within_s``): (what is left, the
    seconds it took)."""
    began = time.monotonic()
    left = processes_with(marker)
    while left and time.monotonic() - began < within_s:
        time.sleep(0.05)
        left = processes_with(marker)
    return left, time.monotonic() - began


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


def grower_report(marker: str, directory: Path) -> str:
    """Why a grower has no lock: each one alive (state, wchan, policy, nice), who holds
    the machine lock (a grower exits when anyone does), its lock file, and qprof's other
    processes."""
    alive = {}
    for pid in processes_with(marker):
        with contextlib.suppress(OSError):
            stat_ = stat_fields(pid)
            alive[pid] = (stat_[0], Path(f"/proc/{pid}/wchan").read_text(),
                          os.sched_getscheduler(pid), stat_[16])
    lock = directory / poolgrow.GROW_LOCK
    held = lock.read_bytes() if lock.is_file() else None
    others = {}
    for pid in processes_with("qprof"):
        with contextlib.suppress(OSError):
            if pid not in alive:
                others[pid] = Path(f"/proc/{pid}/cmdline").read_bytes()[:160].replace(
                    b"\0", b" ").decode(errors="replace")
    return (f"no grower lock within {STARVED_S:.0f} s: growers alive (state, wchan, policy, "
            f"nice) {alive}; machine lock {machine_lock.lock_path()} held by "
            f"{machine_lock.holder()}; {poolgrow.GROW_LOCK} {held!r}; other qprof "
            f"processes {others}")
