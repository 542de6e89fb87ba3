"""The trend's models: one run of a series (its per-suite estimates and what ran under it),
a segment of comparable runs, a change between two segments.

A *series* is one node's CPU (its core design and model), backend, operation and mode;
runs of a series are ordered by ``started_at``. The seam: every source (a run's records
through :mod:`qprof.consensus.trend.from_records`, the daemon's store, a Prometheus server)
hands :class:`RunPoint` values to :func:`qprof.consensus.trend.analysis.analyze`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from qprof.measure.units import NO_PROFILE_UNIT


@dataclass(frozen=True)
class SeriesKey:
    """What makes runs comparable: the same node, CPU, core design, backend and method."""

    node: str  # hostname (runs, store) or the Prometheus instance
    cpu: int
    cpu_model: str | None  # the core's model name (a VM's hypervisor model)
    backend: str
    operation: str = "verify"
    mode: str = "check"  # the run's settings.mode: check's interleaved rounds, bench's ...

    def label(self) -> str:
        return f"{self.node} cpu {self.cpu} {self.backend}"


@dataclass(frozen=True)
class RunContext:
    """The software, firmware and conditions under one run: what a change is explained by.

    The first six are *known change points* (a different value starts a new segment);
    the rest only explain."""

    liboqs: str | None = None  # the linked liboqs version
    liboqs_build: str | None = None  # digest of the loaded shared object
    numba: str | None = None
    kernels: str | None = None  # digest of qprof's numba kernels
    kernel: str | None = None  # the OS kernel release
    microcode: str | None = None
    capped: bool | None = None
    cap_factor: float | None = None
    governor: str | None = None
    load: float | None = None  # 1-minute load average before the run
    steal_pct: float | None = None  # steal time during the run, % of CPU time
    contended_share: float | None = None  # the unit's turns measured under contention
    qprof: str | None = None


# The fields whose change is a known change point, per backend: a numba upgrade does not
# touch liboqs's figures; the kernel and microcode touch every backend.
KNOWN_FIELDS: dict[str, tuple[str, ...]] = {
    "liboqs": ("liboqs", "liboqs_build", "kernel", "microcode"),
    "numba": ("numba", "kernels", "kernel", "microcode"),
}
ALL_KNOWN = ("liboqs", "liboqs_build", "numba", "kernels", "kernel", "microcode")


def known_fields(backend: str) -> tuple[str, ...]:
    """The context fields that start a new segment for ``backend`` (dual and comparison
    backends: all of them)."""
    return KNOWN_FIELDS.get(backend, ALL_KNOWN)


@dataclass(frozen=True)
class SuiteRun:
    """One suite's estimate in one run: the quiet ratio to the unit suite and its 95 %
    interval (the run's own error), or ``undecided`` (a gap: too contended to estimate)."""

    suite: str
    ratio: float | None
    ratio_ci: tuple[float, float] | None
    undecided: str | None = None
    time_ns: float | None = None  # the suite's own time by the run's statistic
    # The signature pool's share of the run's error (standard error of ln ratio): the
    # runs of one pool share it, so it does not average out over them.
    pool_se: float | None = None
    pool_signatures: int | None = None  # the pool's size (runs of one size share a pool)

    @property
    def decided(self) -> bool:
        return (self.undecided is None and self.ratio is not None and self.ratio > 0
                and math.isfinite(self.ratio) and self.ratio_ci is not None
                and 0 < self.ratio_ci[0] <= self.ratio <= self.ratio_ci[1]
                and math.isfinite(self.ratio_ci[1]))


@dataclass(frozen=True)
class RunPoint:
    """One run of a series."""

    run_id: str
    started_at: float
    suites: tuple[SuiteRun, ...]
    context: RunContext = field(default_factory=RunContext)
    unit_suite: str = NO_PROFILE_UNIT.suite
    unit_time_ns: float | None = None  # the unit's own time: moves with the core's speed

    def suite(self, name: str) -> SuiteRun | None:
        return next((s for s in self.suites if s.suite == name), None)


@dataclass(frozen=True)
class Series:
    key: SeriesKey
    runs: tuple[RunPoint, ...]  # ordered by started_at

    def suite_names(self) -> list[str]:
        seen: dict[str, None] = {}
        for r in self.runs:
            for s in r.suites:
                seen.setdefault(s.suite)
        return list(seen)


@dataclass(frozen=True)
class SegmentEstimate:
    """One suite's ratio over a segment of comparable runs, with a 95 % interval holding
    each run's own error, the between-run wander and the runs' autocorrelation."""

    suite: str
    first_run: int  # index into the series' runs
    last_run: int
    runs: int  # decided runs combined
    gaps: int  # undecided runs inside the segment (counted, never combined)
    ratio: float
    ratio_ci: tuple[float, float]
    within_bp: float  # the runs' own standard error (rms), bp of the ratio
    between_bp: float  # the between-run wander (random-effects sd), bp
    autocorr: float  # lag-1 autocorrelation of the runs' residuals (0 with few runs)
    df: float  # degrees of freedom of the interval's t quantile
    # The signature pool's share, common to the segment's runs (bp; in the interval), and
    # the pool's size: two segments of one pool are compared without it.
    pool_bp: float = 0.0
    pool_signatures: int | None = None
    clipped: int = 0  # wild runs pulled in to the segment's spread before combining
    # The wander the interval holds, when the series' earlier segments' (pooled with this
    # one's) is larger than what this segment's own runs tell (``between_bp``): bp, and
    # the earlier decided runs it comes from (0: the segment's own).
    wander_bp: float | None = None
    wander_from: int = 0

    @property
    def half_width_bp(self) -> float:
        lo, hi = self.ratio_ci
        return 1e4 * (hi - lo) / 2 / self.ratio


Cause = Literal["known", "detected"]


@dataclass(frozen=True)
class ReadStep:
    """A change's step on the reading that found it, where that is not the ratio alone
    (the ratio read against its sibling's, their shared wander out): where only that
    reading showed the step, the ratio's own interval may hold 0."""

    reading: str  # e.g. "against SLH-DSA-SHAKE-256s's ratio"
    change_bp: float
    ci_95_bp: tuple[float, float]


@dataclass(frozen=True)
class Change:
    """A change of one suite's ratio at ``run_index`` (the first run after it)."""

    suite: str
    run_index: int
    run_id: str
    started_at: float
    before: float  # ratio of the segment before
    after: float  # ratio of the segment after
    change_bp: float  # 1e4 x (after / before - 1)
    ci_95_bp: tuple[float, float]
    cause: Cause  # a known change point (versions, kernel, microcode) or found by the detector
    what_changed: tuple[str, ...]  # e.g. "liboqs 0.16.0 -> 0.17.0", "caps: ...", "suites ..."
    found_on: ReadStep | None = None  # the step where another reading found it

    @property
    def moved(self) -> bool:
        """Whether the ratio moved: the step's 95 % interval, or that of the reading that
        found it, excludes no change (a known change point need not move it)."""
        intervals = [self.ci_95_bp, *([self.found_on.ci_95_bp] if self.found_on else [])]
        return any(not lo <= 0 <= hi for lo, hi in intervals)


@dataclass(frozen=True)
class Alarm:
    """The detector's alarm on a suite not yet confirmed or dismissed by the runs after it:
    the daemon measures again at once."""

    suite: str
    run_index: int
    statistic: float  # the CUSUM's value
    threshold: float
    direction: Literal["up", "down"]


@dataclass(frozen=True)
class SuiteTrend:
    suite: str
    segments: tuple[SegmentEstimate, ...]
    changes: tuple[Change, ...]
    gaps: int  # undecided runs in the whole series
    alarm: Alarm | None = None
    # Decided runs still needed since the last known change point before a change can be
    # found there (0: enough).
    runs_needed: int = 0

    @property
    def current(self) -> SegmentEstimate | None:
        return self.segments[-1] if self.segments else None


@dataclass(frozen=True)
class KnownChange:
    """A known change point: a field of the context that differs between two runs."""

    run_index: int
    what: tuple[str, ...]  # "liboqs 0.16.0 -> 0.17.0", "liboqs build 1a2b -> 3c4d", ...


@dataclass(frozen=True)
class SeriesTrend:
    key: SeriesKey
    runs: tuple[RunPoint, ...]
    suites: tuple[SuiteTrend, ...]
    known: tuple[KnownChange, ...]

    def suite(self, name: str) -> SuiteTrend | None:
        return next((s for s in self.suites if s.suite == name), None)


@dataclass(frozen=True)
class FleetChange:
    """Changes of one suite on several nodes close in time (a rollout), or on one alone
    (a neighbour, the hardware)."""

    suite: str
    started_at: float  # the earliest of the changes
    nodes: tuple[str, ...]
    changes: tuple[Change, ...]
    fleet_wide: bool
    series: tuple[SeriesKey, ...]  # each change's series (node, CPU, ...), in order
