"""``python -m qprof.measure.child KIND --field value ...``: the one entry of every helper.

KIND is one of :data:`KINDS`, a module defining ``CHILD`` (an
:class:`~qprof.measure.child.job.Entry`); only that module is imported, so a light
helper stays light. A bad job exits 2 with one line on stderr.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from qprof.measure.child.job import Entry, JobError

EXIT_BAD_JOB = 2
KINDS = (  # the modules that run a helper process's job
    "qprof.measure.worker",  # a timing or preflight worker (its job file)
    "qprof.measure.sigtime",  # signature-by-signature timing
    "qprof.measure.fixtures",  # signing helpers of a first pool
    "qprof.measure.poolgrow",  # the idle grower of the pools
    "qprof.measure.warmup",  # what a new HOME makes once; the daemon's numba kernels
    "qprof.tui.sources.hardware",  # clock estimates where there is no cpufreq
    "qprof.tui.sources.trend",  # the monitor's trend
    "qprof.tui.sources.consensus",  # the monitor's coverage
)


def entry_of(kind: str) -> Entry[Any]:
    """The ``CHILD`` of ``kind`` (:class:`JobError` when it is not one of :data:`KINDS`)."""
    if kind not in KINDS:
        raise JobError(f"unknown kind {kind!r}")
    entry = importlib.import_module(kind).CHILD
    assert isinstance(entry, Entry)
    return entry


def main(argv: list[str]) -> int:
    try:
        entry = entry_of(argv[0] if argv else "")
        job = entry.job.from_argv(argv[1:])
    except JobError as exc:
        print(f"qprof child: bad job: {exc}", file=sys.stderr)
        return EXIT_BAD_JOB
    return entry.main(job)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
