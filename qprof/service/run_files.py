"""Recorded runs (JSONL files) read side by side, for `qprof trend` and `qprof history`.

Each file costs a few seconds of the estimator's bootstrap, so files are read by worker
processes, one per usable CPU. The workers leave with the reader: they ignore Ctrl-C (the
reader ends them at once) and die with it when it is killed (PR_SET_PDEATHSIG), so no
worker goes on computing after its command ended.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Sequence
from pathlib import Path

from qprof.consensus.trend.from_jsonl import RunFile, RunFileError, read_run_file
from qprof.measure.lifeline import die_with_parent, parent_gone

# Called after each file read: (files read, files in all).
OnRead = Callable[[int, int], None]


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1


def read_run_files(paths: Sequence[str | Path], unit_suite: str | None = None, *,
                   with_run: bool = False, jobs: int | None = None,
                   on_read: OnRead | None = None) -> list[RunFile]:
    """Each file's run points (``with_run``: its records too), in the order given, read
    by ``jobs`` processes at once (default: the usable CPUs); ``on_read`` is told at the
    start and after each file. RunFileError: the first file found to give none, named;
    the others are not read further."""
    names = [str(p) for p in paths]
    jobs = max(1, min(jobs or usable_cpus(), len(names)))
    if on_read is not None:
        on_read(0, len(names))
    if jobs == 1:
        files = []
        for name in names:
            files.append(read_run_file(name, unit_suite, with_run))
            if on_read is not None:
                on_read(len(files), len(names))
        return files
    import multiprocessing

    got: dict[int, RunFile] = {}
    # fork: the workers are this process's children (what their lifeline watches), and
    # start without importing qprof again.
    pool = multiprocessing.get_context("fork").Pool(
        jobs, initializer=_worker_start, initargs=(os.getpid(),))
    try:
        tasks = [(i, name, unit_suite, with_run) for i, name in enumerate(names)]
        for i, result in pool.imap_unordered(_read_one, tasks):
            if isinstance(result, str):
                raise RunFileError(result)
            got[i] = result
            if on_read is not None:
                on_read(len(got), len(names))
        pool.close()
    finally:
        pool.terminate()  # at once, a file half read included (Ctrl-C, a bad file)
        pool.join()
    return [got[i] for i in range(len(names))]


def _worker_start(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the reader ends its workers itself
    die_with_parent()
    if parent_gone(parent):
        os._exit(0)


def _read_one(task: tuple[int, str, str | None, bool]) -> tuple[int, RunFile | str]:
    i, name, unit_suite, with_run = task
    try:
        return i, read_run_file(name, unit_suite, with_run)
    except RunFileError as exc:
        return i, str(exc)
