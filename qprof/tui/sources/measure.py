"""Measurements started from the monitor, through ``qprof.measure.engine.run_bench``.

:meth:`MeasureSource.measure` blocks, so the app calls it from a Textual thread worker;
the engine runs the timing in pyperf worker processes pinned to the CPU (under nice 10),
so the UI process itself does no heavy work. Records go straight into the store the
monitor reads (the daemon's or its own), so a finished measurement shows up on the next
refresh. This module is imported only when something is measured: it pulls in the
engine (and through it pyperf).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from qprof.consensus.estimate.stopping import rule_for
from qprof.measure.config import CHECK_TIME_LIMIT_S, BenchConfig, ProgressEvent
from qprof.measure.engine import run_bench
from qprof.measure.first_look import MESSAGE as FIRST_LOOK
from qprof.measure.records import Measurement, Note, Record
from qprof.measure.units import medians_text
from qprof.service.keep import keep_points
from qprof.service.store import Store
from qprof.service.trend_source import run_unit
from qprof.tui.model import Progress

# The engine's "check" mode: valid-signature verify only, adaptive A/B/A rounds until the
# Verify-Unit estimate is sure (what `qprof check` uses for its verdict), so a core takes
# tens of seconds rather than the minutes of a full `qprof bench`.
MONITOR_MODE = "check"
MONITOR_OPERATIONS = ("verify",)


def progress_of(event: ProgressEvent, latest: Mapping[str, float] | None = None,
                first_look: bool = False) -> Progress:
    """The engine's progress event -> the progress bar's model (with the last round's
    figures, ``latest``: suite -> median ns; ``first_look``: they are the first look's,
    timed while the first pools are signed, and what the run does meanwhile is said)."""
    # The round without a total: the rule adds B/A pairs while it is unsure, so "9/9"
    # would read as the end; the ETA says what it still needs.
    rnd = event.round
    parts = [
        f"CPU {event.cpu}" if event.cpu is not None else "",
        f"round {rnd + 1}" if rnd is not None else "",
        event.suite or "",
        event.operation or "",
        event.message,
    ]
    if latest:  # the figures say more than the task's name, and must fit the line
        label = "· first look:" if first_look else "· last round:"
        parts = [*parts[:2], label, medians_text(latest)]
        if rnd is None and event.message and event.message != FIRST_LOOK:
            parts.append(f"· {event.message}")  # preparing: the signing's progress
    item = " ".join(p for p in parts if p) or "…"
    return Progress(max(0.0, min(1.0, event.fraction)), event.eta_s, item)


def bench_config(cpu: int, suites: Iterable[str], backend: str, profile: str, root: Path,
                 mode: str | None = None) -> BenchConfig:
    """The engine's configuration for one CPU from the monitor: `qprof check`'s, its
    time limit included (without it a run whose intervals never reached the rule's
    target ran to the round cap: the first verdict at 136 s, not ~95 s)."""
    return BenchConfig(cpus=[cpu], suites=list(suites), backends=[backend], profile=profile,
                       root=str(root), mode=mode or MONITOR_MODE,
                       operations=list(MONITOR_OPERATIONS), time_limit_s=CHECK_TIME_LIMIT_S,
                       grow_pools=True)  # while the monitor is open


class MeasurementAborted(RuntimeError):
    """The engine gave up on the CPU (e.g. no library here can sign the test messages);
    the message says why and, from the run's first error note, what to do."""


class MeasureSource:
    def __init__(self, store_path: Path, root: Path = Path("/"),
                 profile: str = "qanum", mode: str | None = None) -> None:
        self.store_path = Path(store_path)
        self.mode = mode
        self.root = Path(root)
        self.profile = profile

    def measure(self, cpu: int, suites: Iterable[str], backend: str,
                progress: Callable[[Progress], None] | None = None,
                stop: threading.Event | None = None) -> str:
        """Measure verify of ``suites`` on ``cpu``; returns a one-line summary."""

        store = Store(self.store_path)
        records: list[Record] = []
        errors: list[str] = []
        latest: dict[str, float] = {}  # suite -> its last round's median (ns), shown
        looked = False  # the figures shown are the first look's (no round yet)

        def add(record: Record) -> None:
            nonlocal looked
            if isinstance(record, Note) and record.level == "error":
                errors.append(record.text)
            elif isinstance(record, Measurement) and record.operation == "verify":
                latest[record.suite] = record.median_ns
                looked = False
            records.append(record)
            store.add(record)

        try:
            config, rule = rule_for(
                bench_config(cpu, suites, backend, self.profile, self.root, self.mode))

            def on_progress(event: ProgressEvent) -> None:
                # The first worker's figures, before its records (they wait for the counts)
                # and the first look's, before any round.
                nonlocal looked
                if event.medians:
                    latest.update(event.medians)
                    looked = event.round is None
                if progress is not None:
                    progress(progress_of(event, latest, looked))

            summary = run_bench(config, add, progress=on_progress, stop=stop, rule=rule)
            keep_points(store, records, run_unit(records))
        finally:
            store.close()
        if summary.status == "aborted" and not (stop and stop.is_set()):
            reason = summary.reason or "aborted"
            raise MeasurementAborted(f"{reason}: {errors[0]}" if errors else reason)
        return f"{summary.status}, {len(summary.measurements)} measurements"
