"""The signature pools grow to their full size after a run, for later runs.

A run signs only a first pool (:data:`qprof.measure.fixtures.FIRST_POOL_SIZE` per
SLH-DSA suite) before it measures. The rest (up to 256) is signed by one detached process,
``python -m qprof.measure.poolgrow``, started when a run has ended (its figures are out):
nice 19 and SCHED_IDLE, one signature at a time, each appended to the cache as it is made.

It never runs beside a measurement. Every run holds a shared lock on
``measuring.lock`` in the cache directory while it runs and, on taking it, ends a grower
that is running (SIGTERM: it loses at most the signature it was making); the grower
checks the lock (non-blocking, exclusive) before each signature and exits when a run
holds it. Why not sign on the CPUs a run does not measure: on a 2-vCPU guest the other
vCPU may be the measured one's hyperthread sibling, and the monitor's screen and its
evaluation already use it; a signature made while the measurement runs would take from
the measured core what the seeds' method keeps for it alone.

One grower at a time (``grow.lock``, which holds its pid). It ends by itself when the
pools are full; it is detached (its own session) so that it outlives a ``qprof check``
that ended, but a ``kill`` of the process that started it does not matter to it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from qprof.measure.fixtures import (
    cache_dir,
    make_fixture,
    pool_size,
    read_cached,
    slow_to_sign,
    write_cached,
)

MEASURING_LOCK = "measuring.lock"
GROW_LOCK = "grow.lock"
MODULE = "qprof.measure.poolgrow"
END_WAIT_S = 1.0  # a grower sent SIGTERM is waited for this long (it signs in C)


def _lock_file(directory: Path, name: str) -> int | None:
    with contextlib.suppress(OSError):
        directory.mkdir(parents=True, exist_ok=True)
        return os.open(directory / name, os.O_RDWR | os.O_CREAT, 0o644)
    return None


def short_suites(suites: Sequence[str], directory: Path) -> list[str]:
    """The SLH-DSA suites whose cached pool is short of its full size."""
    return [s for s in suites if slow_to_sign(s)
            and len(read_cached(s, directory)) < pool_size(s)]


def grower_pid(directory: Path) -> int | None:
    """The running grower's pid, from ``grow.lock`` (None: none runs)."""
    try:
        pid = int((directory / GROW_LOCK).read_text().strip() or 0)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if pid > 0 and MODULE.encode() in cmdline else None


def end_growth(directory: Path) -> None:
    """End a running grower and wait (``END_WAIT_S`` at most) until it is gone."""
    pid = grower_pid(directory)
    if pid is None:
        return
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + END_WAIT_S
    while time.monotonic() < deadline and grower_pid(directory) == pid:
        time.sleep(0.02)


@contextlib.contextmanager
def measuring(directory: Path | None = None) -> Iterator[None]:
    """Held by a run while it runs: no grower signs meanwhile (one that runs is ended)."""
    d = directory or cache_dir()
    fd = _lock_file(d, MEASURING_LOCK)
    try:
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_SH)
        end_growth(d)
        yield
    finally:
        if fd is not None:
            os.close(fd)


def _measurement_running(directory: Path) -> bool:
    fd = _lock_file(directory, MEASURING_LOCK)
    if fd is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases the lock
    return False


def _idle_priority() -> None:  # in the child, before exec
    with contextlib.suppress(OSError):
        os.nice(19)
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def start_growth(suites: Sequence[str], preferred: Sequence[str],
                 directory: Path | None = None, python: str | None = None) -> bool:
    """Start the grower when a pool of ``suites`` is short (after a run). True: started."""
    d = directory or cache_dir()
    short = short_suites(suites, d)
    if not short or grower_pid(d) is not None:
        return False
    argv = [python or sys.executable, "-m", MODULE, "--dir", str(d),
            "--backends", ",".join(preferred), *short]
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_idle_priority)
    except OSError:
        return False  # later runs sign their first pool again; nothing is lost
    # Reaped when it ends while this process lives on (the monitor, the daemon).
    threading.Thread(target=proc.wait, daemon=True).start()
    return True


def grow(suites: Sequence[str], preferred: tuple[str, ...], directory: Path) -> int:
    """Sign the pools of ``suites`` up to full, one signature at a time, while no run
    measures; the signatures added."""
    fd = _lock_file(directory, GROW_LOCK)
    if fd is None:
        return 0
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return 0  # another grower
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    added = 0
    try:
        for suite in suites:
            while not _measurement_running(directory):
                pool = read_cached(suite, directory)
                if len(pool) >= pool_size(suite):
                    break
                pool.append(make_fixture(suite, preferred))
                write_cached(suite, pool, directory)
                added += 1
            else:
                break
    finally:
        os.ftruncate(fd, 0)
        os.close(fd)
    return added


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}")
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--backends", default="")
    parser.add_argument("suites", nargs="+")
    args = parser.parse_args(argv)
    preferred = tuple(b for b in args.backends.split(",") if b)
    try:
        grow(args.suites, preferred, args.dir)
    except Exception:  # noqa: BLE001 - a background helper: the next run signs what it needs
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
