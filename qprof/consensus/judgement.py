"""One judgement of a node's verify costs, the one every view shows: per CPU, backend
and suite, the newest run's estimate, the current segment's (what the verdict stands on),
the state in the verdict's words, the changes and the worst signature.

check, the monitor, history, report, trend, export and the daemon's metrics and alerts
all take their verdicts from :func:`judge`; nothing else decides one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from qprof.consensus.estimate.estimator import (
    DEFAULT_UNIT_SUITE,
    DEFAULT_UNIT_VU,
    REPLICATES,
    SuiteEstimate,
    estimate,
)
from qprof.consensus.estimate.statistic import Statistic
from qprof.consensus.functional import undecided_where_mismatched
from qprof.consensus.policy import CoreDesign
from qprof.consensus.profiles import Profile
from qprof.consensus.trend.analysis import analyze, group
from qprof.consensus.trend.model import (
    Alarm,
    Change,
    RunPoint,
    SegmentEstimate,
    SeriesKey,
    SeriesTrend,
)
from qprof.consensus.trend.verdict import (
    SegmentKey,
    current_segments,
    segment_vu,
    with_segments,
)
from qprof.consensus.verdict import coverage
from qprof.consensus.verdict_types import WORDS, CoverageResult, Decision
from qprof.measure.records import Measurement

VERIFY_OPERATIONS = ("verify", "dual_enforce")  # what a block's signature check costs


@dataclass(frozen=True)
class SuiteResult:
    """One suite's newest-run figures on one CPU and backend (the unit's too)."""

    cpu: int
    suite: str
    backend: str
    time_ns: float  # the suite's verify time by ``statistic``: what the verdict compares
    statistic: Statistic
    statistic_why: str
    run_id: str
    rounds: int
    capped: bool | None
    cap_factor: float | None
    finished_at: float | None
    median_ns: float  # the plain median of all samples, whichever statistic was used
    p10_ns: float | None


@dataclass(frozen=True)
class SuiteJudgement:
    """One suite on one CPU and backend: the verdict (on the current segment where one
    holds the newest run), the newest run's own, and the series' changes."""

    verdict: CoverageResult
    run: CoverageResult
    segment: SegmentEstimate | None = None
    changes: tuple[Change, ...] = ()
    alarm: Alarm | None = None
    series_runs: int = 0  # runs of the series (0: no stored run points)

    @property
    def key(self) -> tuple[int, str, str]:
        return (self.verdict.cpu, self.verdict.suite, self.verdict.backend)

    @property
    def state(self) -> str:
        return self.verdict.state

    @property
    def words(self) -> str:
        return WORDS[self.verdict.state]

    def segment_text(self, unit_vu: int) -> str | None:
        """"this machine, 22 runs: 4244 (4239-4248)": the segment the verdict stands on
        (None where it is the newest run alone)."""
        seg = self.segment
        if seg is None:
            return None
        vu, (lo, hi) = segment_vu(seg, unit_vu)
        gaps = f", {seg.gaps} undecided" if seg.gaps else ""
        span = (f"runs {seg.first_run + 1}-{seg.last_run + 1} of {self.series_runs}"
                if self.series_runs else f"{seg.runs} runs")
        return (f"this machine, {seg.runs} decided run{'s' * (seg.runs != 1)}{gaps} "
                f"({span}): {vu} ({lo}-{hi})")


@dataclass(frozen=True)
class Judgement:
    """Every suite's judgement, the newest run's figures and the trend behind them."""

    profile: str | None
    suites: tuple[SuiteJudgement, ...] = ()
    results: tuple[SuiteResult, ...] = ()
    run_estimates: tuple[SuiteEstimate, ...] = ()
    trends: tuple[SeriesTrend, ...] = ()
    segments: Mapping[SegmentKey, SegmentEstimate] = field(default_factory=dict)

    @property
    def coverage(self) -> list[CoverageResult]:
        """The verdicts (each on its segment where there is one)."""
        return [s.verdict for s in self.suites]

    @property
    def run_coverage(self) -> list[CoverageResult]:
        """The newest run's own verdicts."""
        return [s.run for s in self.suites]

    @property
    def decision(self) -> Decision:
        return overall_decision(self.coverage)

    def suite(self, cpu: int, suite: str, backend: str) -> SuiteJudgement | None:
        return next((s for s in self.suites if s.key == (cpu, suite, backend)), None)

    def series(self, backend: str | None, operation: str = "verify") -> list[SeriesTrend]:
        """Each CPU's series on ``backend`` (any: None) that its newest run belongs to,
        the one the verdict stands on, by CPU."""
        chosen: dict[int, SeriesTrend] = {}
        for t in self.trends:  # the newest run last: a later series wins
            if t.key.operation == operation and backend in (None, t.key.backend):
                chosen[t.key.cpu] = t
        return [t for _cpu, t in sorted(chosen.items())]


def overall_decision(results: Sequence[CoverageResult]) -> Decision:
    """One binding verdict surely broken decides (a suite over its constant where the
    ratio binds, a worst-case block over its time bound); else one with no reliable
    estimate; else any unsure one (each result's ``policy_decision``)."""
    decisions = {r.policy_decision for r in results}
    for decision in ("not_covered", "no_estimate", "unsure", "covered"):
        if decision in decisions:
            return decision
    return "comparison"


def run_estimates(measurements: Sequence[Measurement], unit_suite: str, unit_vu: int,
                  operation: str, statistic: str = "auto") -> list[SuiteEstimate]:
    """One run's estimates as check makes them: a suite whose backend failed its known
    answers is never decided."""
    return undecided_where_mismatched(estimate(
        measurements, unit_suite=unit_suite, unit_vu=unit_vu, operation=operation,
        statistic=statistic), measurements, unit_suite)


def column_verdicts(profile: Profile, estimates: Iterable[SuiteEstimate],
                    cores: Mapping[int, CoreDesign] | None = None) -> list[CoverageResult]:
    """The verdicts of one run's own estimates (a report's column per run and CPU): the
    rule check's rows follow, without the kept runs' segment."""
    return coverage(profile, estimates, cores=cores)


def _newest_runs(measurements: Iterable[Measurement], operation: str
                 ) -> dict[tuple[int, str, str], list[Measurement]]:
    groups: dict[tuple[int, str, str], list[Measurement]] = {}
    for m in measurements:
        if m.operation == operation:
            groups.setdefault((m.cpu, m.suite, m.backend), []).append(m)
    newest: dict[tuple[int, str, str], list[Measurement]] = {}
    for key, ms in groups.items():
        newest_run = max(ms, key=lambda m: m.finished_at or 0.0).run_id
        newest[key] = [m for m in ms if m.run_id == newest_run]
    return newest


def judge(measurements: Iterable[Measurement], profile: Profile | None,
          points: Iterable[tuple[SeriesKey, RunPoint]] = (),
          cores: Mapping[int, CoreDesign] | None = None, statistic: str = "auto",
          operations: Sequence[str] = ("verify",), replicates: int = REPLICATES
          ) -> Judgement:
    """The judgement of the newest run per (cpu, suite, backend) of ``measurements``
    with every stored run's ``points`` behind it: the estimator, the trend's current
    segment in place of the run's figures where it holds that run, the profile's policy
    (``cores`` says what each CPU is). Without a profile: figures, no verdict."""
    measurements = list(measurements)
    # The series with the newest run last: a later series of the same CPU wins.
    trends = sorted(analyze(group(points)),
                    key=lambda t: t.runs[-1].started_at if t.runs else 0.0)
    segments = current_segments(trends)
    unit_suite = profile.unit_suite if profile else DEFAULT_UNIT_SUITE
    unit_vu = profile.unit_vu if profile else DEFAULT_UNIT_VU
    suites: list[SuiteJudgement] = []
    results: list[SuiteResult] = []
    newest_estimates: list[SuiteEstimate] = []
    seen: set[tuple[int, str, str]] = set()
    for operation in operations:  # the plain verify first
        newest = _newest_runs(measurements, operation)
        if not newest:
            continue
        chosen = [m for ms in newest.values() for m in ms]
        estimates = estimate(chosen, unit_suite=unit_suite, unit_vu=unit_vu,
                             operation=operation, statistic=statistic, replicates=replicates)
        own = [e for e in estimates if (e.cpu, e.suite, e.backend) not in seen]
        newest_estimates += own
        for e in sorted(own, key=lambda e: (e.cpu, e.suite, e.backend)):
            ms = newest[(e.cpu, e.suite, e.backend)]
            results.append(SuiteResult(
                cpu=e.cpu, suite=e.suite, backend=e.backend, time_ns=e.suite_time_ns,
                statistic=e.statistic, statistic_why=e.statistic_why, run_id=ms[0].run_id,
                rounds=e.rounds, capped=e.capped, cap_factor=e.cap_factor,
                finished_at=max((m.finished_at or 0.0) for m in ms) or None,
                median_ns=e.median_ns, p10_ns=e.p10_ns))
        if profile is None:
            seen |= {(e.cpu, e.suite, e.backend) for e in own}
            continue
        on_segments = with_segments(estimates, segments, unit_vu)
        run_cov = coverage(profile, undecided_where_mismatched(
            estimates, chosen, profile.unit_suite), cores=cores)
        seg_cov = {(r.cpu, r.suite, r.backend): r for r in coverage(
            profile, undecided_where_mismatched(on_segments, chosen, profile.unit_suite),
            cores=cores)}
        for r in run_cov:
            key = (r.cpu, r.suite, r.backend)
            if key in seen:
                continue
            seg_key = (r.cpu, r.backend, operation, r.suite)
            series = _series(trends, r.cpu, r.backend, operation)
            trend = series.suite(r.suite) if series is not None else None
            seg = segments.get(seg_key)
            suites.append(SuiteJudgement(
                verdict=seg_cov.get(key, r), run=r,
                segment=seg if seg is not None and not r.estimate.is_unit else None,
                changes=trend.changes if trend else (),
                alarm=trend.alarm if trend else None,
                series_runs=len(series.runs) if series is not None else 0))
        seen |= {(e.cpu, e.suite, e.backend) for e in own}
    return Judgement(profile=profile.name if profile else None, suites=tuple(suites),
                     results=tuple(results), run_estimates=tuple(newest_estimates),
                     trends=tuple(trends), segments=segments)


def _series(trends: Sequence[SeriesTrend], cpu: int, backend: str, operation: str
            ) -> SeriesTrend | None:
    """The newest series of (cpu, backend, operation): the one its newest run is of."""
    return next((t for t in reversed(trends)
                 if (t.key.cpu, t.key.backend, t.key.operation) == (cpu, backend, operation)),
                None)
