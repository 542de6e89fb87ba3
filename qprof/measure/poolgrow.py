"""The signature pools grow to full size while qprof runs, for later runs.

A run signs a first pool (8 per SLH-DSA suite); the rest (up to 256) is signed by one
grower process (nice 19, SCHED_IDLE, a signature at a time, each
kept as made), started by the monitor or the daemon after their runs
(``BenchConfig.grow_pools``) or by ``qprof pool grow``. It exits within ``WATCH_S`` when
its parent is gone (polled: the parent may be a thread), when any qprof on the machine
measures (:mod:`qprof.measure.machine_lock`) or a run of its HOME holds
``measuring.lock``, and as soon as a write of its pool fails. One per cache (``grow.lock``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from qprof.measure.child.job import ChildJob, Entry
from qprof.measure.child.launch import launch
from qprof.measure.fixtures import (
    cache_dir,
    make_fixture,
    pool_size,
    read_cached,
    slow_to_sign,
    write_cached,
)
from qprof.measure.machine_lock import Holder, machine_lock, someone_measures
from qprof.userfile import read_bounded

MEASURING_LOCK = "measuring.lock"
GROW_LOCK = "grow.lock"
MODULE = "qprof.measure.poolgrow"
END_WAIT_S = 1.0  # a grower sent SIGTERM is waited for this long (it signs in C)
WATCH_S = 0.1  # how often a grower checks its parent and the machine lock


def _lock_file(directory: Path, name: str) -> int | None:
    """A regular file in the cache, never a link or a FIFO (None: not here)."""
    with contextlib.suppress(OSError):
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
                     | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
        os.close(fd)
    return None


def short_suites(suites: Sequence[str], directory: Path) -> list[str]:
    """The SLH-DSA suites whose cached pool is short of its full size."""
    return [s for s in suites if slow_to_sign(s)
            and len(read_cached(s, directory)) < pool_size(s)]


def grower_pid(directory: Path) -> int | None:
    """The running grower's pid, from ``grow.lock`` (None: none runs)."""
    try:  # bounded and non-blocking: a FIFO or a huge file there is no grower
        pid = int(read_bounded(directory / GROW_LOCK, 32, "grow lock").strip() or 0)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):  # UserFileError is a ValueError
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
def measuring(directory: Path | None = None, expected_s: float | None = None,
              on_wait: Callable[[Holder], None] | None = None) -> Iterator[Holder | None]:
    """Held by a run while it runs: the machine lock (waits for another qprof's
    measurement, ``on_wait`` told who), and its HOME's lock; its HOME's grower is ended
    (others exit by themselves). Yields whom it waited for."""
    d = directory or cache_dir()
    with machine_lock(expected_s, on_wait) as waited:
        fd = _lock_file(d, MEASURING_LOCK)
        try:
            if fd is not None:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_SH)
            end_growth(d)
            yield waited
        finally:
            if fd is not None:
                os.close(fd)


# One probe of ``measuring.lock`` at a time in a process: the grower's two threads each
# probing it with LOCK_EX saw each other as a run, and the grower quit at random (CI).
_PROBE = threading.Lock()


def _measurement_running(directory: Path) -> bool:
    """Any qprof on the machine measures, or a run of this HOME holds its lock."""
    if someone_measures():
        return True
    with _PROBE:
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


@dataclass(frozen=True)
class GrowJob(ChildJob):
    """The grower's job: the cache, its parent (it ends with it), backends, suites."""

    KIND: ClassVar[str] = MODULE
    dir: str
    parent: int
    backends: tuple[str, ...]
    suites: tuple[str, ...]


def grower_job(suites: Sequence[str], preferred: Sequence[str], directory: Path) -> GrowJob:
    """The grower of ``suites`` in ``directory``, ending with this process."""
    return GrowJob(str(directory), os.getpid(), tuple(preferred), tuple(suites))


def start_growth(suites: Sequence[str], preferred: Sequence[str],
                 directory: Path | None = None, python: str | None = None) -> bool:
    """Start the grower when a pool of ``suites`` is short; it ends with this process.
    True: started."""
    d = directory or cache_dir()
    short = short_suites(suites, d)
    if not short or grower_pid(d) is not None:
        return False
    try:
        proc = launch(grower_job(short, preferred, d), python=python, nice=19, idle=True)
    except OSError:
        return False  # later runs sign their first pool again; nothing is lost
    # Reaped when it ends while this process lives on (the monitor, the daemon).
    threading.Thread(target=proc.wait, daemon=True).start()
    return True


def _watch(parent: int, directory: Path) -> None:
    """In the grower: exit at once when the parent is gone or a measurement started."""
    while True:
        if os.getppid() != parent or _measurement_running(directory):
            os._exit(0)  # a signature in the making is lost, nothing else
        time.sleep(WATCH_S)


OnSigned = Callable[[str, int, int], None]  # suite, its pool now, its full size


def grow(suites: Sequence[str], preferred: tuple[str, ...], directory: Path,
         on_signed: OnSigned | None = None) -> int:
    """Sign the pools of ``suites`` up to full, one signature at a time, while no run
    measures and every write succeeds; the signatures added."""
    fd = _lock_file(directory, GROW_LOCK)
    if fd is None:
        return 0
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return 0  # another grower
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    added = 0
    try:
        for suite in suites:
            pool = read_cached(suite, directory)
            if not write_cached(suite, pool, directory):
                break  # its file cannot be written: signing would be for nothing
            while not _measurement_running(directory) and len(pool) < pool_size(suite):
                pool.append(make_fixture(suite, preferred))
                if not write_cached(suite, pool, directory):
                    return added
                added += 1
                if on_signed is not None:
                    on_signed(suite, len(pool), pool_size(suite))
                again = read_cached(suite, directory)  # a run may have added some
                pool = again if len(again) > len(pool) else pool
            if len(pool) < pool_size(suite):
                break
    finally:
        os.ftruncate(fd, 0)
        os.close(fd)
    return added


def run_grower(job: GrowJob) -> int:
    """The grower process: :func:`grow` while its parent lives and nothing measures."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: end quietly, the parent says
    directory = Path(job.dir)
    threading.Thread(target=_watch, args=(job.parent, directory), daemon=True).start()
    try:
        grow(job.suites, job.backends, directory)
    except Exception:  # noqa: BLE001 - a background helper: the next run signs what it needs
        return 1
    return 0


CHILD = Entry(GrowJob, run_grower)
