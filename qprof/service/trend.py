"""The daemon's verdict over time: the store's run points through
:mod:`qprof.consensus.trend` (the one analysis every view uses), the current segment of
each (cpu, backend, suite) for the verdict and the metrics, the changes not yet announced,
and the detector's pending alarms that call for a short burst of runs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from qprof.consensus.trend.model import (
    Alarm,
    Change,
    SegmentEstimate,
    SeriesTrend,
)
from qprof.consensus.trend.verdict import SegmentKey

# Newest runs per series analysed at each refresh: 30 days of hourly runs (about 1 s of
# analysis on a 2-vCPU guest; a longer segment's estimate is that of its newest 720 runs).
TREND_RUNS = 720
# Runs measured at once after the detector raises an alarm, before the interval applies
# again: with the run that raised it, 4 runs after the suspected step (the Welch test that
# confirms it needs 2 each side), about 4 minutes of check runs per CPU.
BURST_RUNS = 3
# A change found again a few runs away (the step located anew as runs arrive) is the same
# change: not announced twice.
SAME_CHANGE_RUNS = 3

ChangeKey = tuple[int, str, str]  # cpu, backend, suite


@dataclass(frozen=True)
class TrendSummary:
    """What the verdict and the metrics take from the trend."""

    trends: tuple[SeriesTrend, ...] = ()
    # The current segment of each suite, only where it holds the series' newest run (a
    # series whose runs since its last change are all undecided has no estimate yet).
    segments: dict[SegmentKey, SegmentEstimate] = field(default_factory=dict)
    alarms: dict[SegmentKey, Alarm] = field(default_factory=dict)
    # Suites whose newest runs are all undecided (no segment holds them yet): how many,
    # the gaps of a segment without an estimate.
    undecided: dict[SegmentKey, int] = field(default_factory=dict)
    # Confirmed changes per (cpu, suite) seen by this process (a counter: never drops).
    changes: dict[tuple[int, str], int] = field(default_factory=dict)


def trailing_gaps(trends: Iterable[SeriesTrend],
                  segments: dict[SegmentKey, SegmentEstimate]) -> dict[SegmentKey, int]:
    """Undecided runs at the end of each suite's series, since its last known change,
    where no segment holds its newest run (too contended since the last decided run or
    the change): gaps, no estimate."""
    out: dict[SegmentKey, int] = {}
    for t in trends:
        for name in t.suites:
            key = (t.key.cpu, t.key.backend, t.key.operation, name.suite)
            if key in segments:
                continue
            start = max((k.run_index for k in t.known), default=0)  # the last change
            n = 0
            for run in reversed(t.runs[start:]):
                s = run.suite(name.suite)
                if s is None or s.decided:
                    break
                n += 1
            if n:
                out[key] = n
    return out


def pending_alarms(trends: Iterable[SeriesTrend]) -> dict[SegmentKey, Alarm]:
    return {(t.key.cpu, t.key.backend, t.key.operation, s.suite): s.alarm
            for t in trends for s in t.suites if s.alarm is not None}


class ChangeTracker:
    """Which changes were announced, and the burst budget of each pending alarm."""

    def __init__(self) -> None:
        self._seen: dict[ChangeKey, set[str]] = {}  # run ids at which a change was seen
        self._counts: dict[tuple[int, str], int] = {}
        self._burst: dict[SegmentKey, int] = {}  # runs left in an alarm's burst

    def new_changes(self, trends: Iterable[SeriesTrend]
                    ) -> list[tuple[SeriesTrend, Change]]:
        """Confirmed changes not seen before, each counted once per process: every one the
        detector found (the runs confirmed it), a known change point once its interval
        excludes no change (asked again as runs arrive)."""
        out = []
        for t in trends:
            for s in t.suites:
                seen = self._seen.setdefault((t.key.cpu, t.key.backend, s.suite), set())
                for c in s.changes:
                    if c.cause == "known" and not c.moved:
                        continue  # a known change point that has not moved the ratio (yet)
                    near = {r.run_id for r in t.runs[max(0, c.run_index - SAME_CHANGE_RUNS):
                                                     c.run_index + SAME_CHANGE_RUNS + 1]}
                    if seen & near:
                        continue
                    seen.add(c.run_id)
                    ck = (t.key.cpu, s.suite)
                    self._counts[ck] = self._counts.get(ck, 0) + 1
                    out.append((t, c))
        return out

    @property
    def counts(self) -> dict[tuple[int, str], int]:
        return dict(self._counts)

    def update_alarms(self, alarms: dict[SegmentKey, Alarm]) -> None:
        """A new alarm gets BURST_RUNS runs; one that cleared (confirmed or dismissed)
        gives its budget up."""
        self._burst = {k: self._burst.get(k, BURST_RUNS) for k in alarms}

    def measured(self, cpu: int) -> None:
        """A run of ``cpu`` finished: one run of its alarms' bursts spent."""
        for k in self._burst:
            if k[0] == cpu and self._burst[k] > 0:
                self._burst[k] -= 1

    def burst_cpus(self) -> set[int]:
        """CPUs with a pending alarm and runs left in its burst."""
        return {k[0] for k, left in self._burst.items() if left > 0}
