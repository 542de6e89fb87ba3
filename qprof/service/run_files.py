"""Recorded runs read side by side: JSONL files for `qprof trend` and `qprof history`, runs'
points for `qprof report` and `qprof calibrate`.

Each run costs a few seconds of the estimator's bootstrap, so runs are read by worker
processes, one per usable CPU. The workers leave with the reader: they ignore Ctrl-C (the
reader ends them at once) and die with it when it is killed (PR_SET_PDEATHSIG), so no
worker goes on computing after its command ended.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

from qprof.consensus.trend.from_jsonl import RunFile, read_run_file
from qprof.consensus.trend.from_records import run_points
from qprof.consensus.trend.model import RunPoint, SeriesKey
from qprof.measure.lifeline import die_with_parent, parent_gone
from qprof.measure.records import Record

# Told at the start and after each item: (items done, items in all).
OnDone = Callable[[int, int], None]
T = TypeVar("T")
R = TypeVar("R")


def side_by_side(work: Callable[[T], R], items: Sequence[T], jobs: int | None = None,
                 on_done: OnDone | None = None) -> list[R]:
    """``work(item)`` for each item, by ``jobs`` worker processes at once (default: the
    usable CPUs), the results in the order given; ``on_done`` is told at the start and
    after each. The first exception a worker raises is raised here, and the work still
    running is ended (``work`` is a module's function, or a partial of one)."""
    total = len(items)
    if not total:
        return []
    jobs = max(1, min(jobs or len(os.sched_getaffinity(0)), total))
    if on_done is not None:
        on_done(0, total)
    if jobs == 1:
        out = []
        for item in items:
            out.append(work(item))
            if on_done is not None:
                on_done(len(out), total)
        return out
    import multiprocessing

    got: dict[int, R] = {}
    # fork: the workers are this process's children (what their lifeline watches), and
    # start without importing qprof again.
    pool = multiprocessing.get_context("fork").Pool(
        jobs, initializer=_worker_start, initargs=(os.getpid(),))
    try:
        for i, result in pool.imap_unordered(_indexed, [(i, work, item) for i, item
                                                        in enumerate(items)]):
            got[i] = result
            if on_done is not None:
                on_done(len(got), total)
    finally:
        pool.terminate()  # at once, an item half done included (Ctrl-C, an error)
        pool.join()
    return [got[i] for i in range(total)]


def read_run_files(paths: Sequence[str | Path], unit_suite: str | None = None, *,
                   with_run: bool = False, jobs: int | None = None,
                   on_read: OnDone | None = None) -> list[RunFile]:
    """Each file's run points (``with_run``: its records too), in the order given, read
    side by side. RunFileError: the first file found to give none, named; the others are
    not read further."""
    return side_by_side(partial(read_run_file, unit_suite=unit_suite, with_run=with_run),
                        [str(p) for p in paths], jobs, on_read)


def points_of_runs(runs: Sequence[Sequence[Record]], unit_suite: str, *,
                   jobs: int | None = None, on_done: OnDone | None = None
                   ) -> list[list[tuple[SeriesKey, RunPoint]]]:
    """Each run's points (from its records, against ``unit_suite``), side by side."""
    return side_by_side(partial(run_points, unit_suite=unit_suite), runs, jobs, on_done)


def _worker_start(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the reader ends its workers itself
    die_with_parent()
    if parent_gone(parent):
        os._exit(0)


def _indexed(task: tuple[int, Callable[[T], R], T]) -> tuple[int, R]:
    i, work, item = task
    return i, work(item)
