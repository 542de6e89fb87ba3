"""The trend across runs, in one place: series from run points, known change points,
every change found looking back over each stretch between them, the detector's pending
alarm since the last change, the segment estimates and what changed. `qprof trend`, the
daemon, its metrics, history, the report and the monitor all take their over-time figures
from :func:`analyze`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from qprof.consensus.trend.changepoints import RetroConfig, candidates, prune, tamed
from qprof.consensus.trend.covariate import MIN_RUNS, adjusted, attributed, sibling
from qprof.consensus.trend.detector import Cusum, DetectorConfig, score
from qprof.consensus.trend.explain import (
    MOVED_P,
    WHOSE_P,
    OwnTime,
    conditions,
    known_differences,
    own_time,
    relative_times,
    suites_pattern,
    whose_time,
)
from qprof.consensus.trend.model import (
    Alarm,
    Change,
    KnownChange,
    ReadStep,
    RunPoint,
    SegmentEstimate,
    Series,
    SeriesKey,
    SeriesTrend,
    SuiteRun,
    SuiteTrend,
)
from qprof.consensus.trend.segment import combine, measurement_var, pooled_wander
from qprof.consensus.trend.segmentation import differ, locate, step_pvalue, step_size
from qprof.consensus.trend.wander import level_var


@dataclass(frozen=True)
class TrendConfig:
    detector: DetectorConfig = field(default_factory=DetectorConfig)
    retro: RetroConfig = field(default_factory=RetroConfig)
    # Runs each side of a change that say which suites moved and what else changed.
    explain_window: int = 12


def group(points: Iterable[tuple[SeriesKey, RunPoint]]) -> list[Series]:
    """Series from run points: one per key, runs ordered by start (a run seen twice, by
    its id, counts once)."""
    by_key: dict[SeriesKey, dict[str, RunPoint]] = {}
    for key, point in points:
        by_key.setdefault(key, {}).setdefault(point.run_id, point)
    return [Series(key, tuple(sorted(runs.values(), key=lambda r: (r.started_at, r.run_id))))
            for key, runs in sorted(by_key.items(), key=lambda kv: _key_order(kv[0]))]


def _key_order(k: SeriesKey) -> tuple[str, int, str, str, str]:
    return (k.node, k.cpu, k.backend, k.operation, k.mode)


def known_changes(series: Series) -> list[KnownChange]:
    out = []
    for i in range(1, len(series.runs)):
        what = known_differences(series.runs[i - 1].context, series.runs[i].context,
                                 series.key.backend)
        if what:
            out.append(KnownChange(i, what))
    return out


def log_points(series: Series, suite: str, lo: int, hi: int
               ) -> list[tuple[int, float, float]]:
    """(series index, log ratio, the run's own error variance less its pool's share) of
    the decided runs in [lo, hi): what moves from run to run."""
    out = []
    for i in range(lo, hi):
        s = series.runs[i].suite(suite)
        if s is not None and s.decided and s.ratio is not None:
            out.append((i, math.log(s.ratio), measurement_var(s)))
    return out


@dataclass(frozen=True)
class Found:
    """A step the detector confirmed: the series index of the first run after it, and of
    the run whose arrival confirmed it (the detection delay is their distance)."""

    at: int
    confirmed_at: int


def detect(ys: Sequence[tuple[int, float, float]], suite: str, cfg: DetectorConfig
           ) -> tuple[list[Found], Alarm | None]:
    """The detector over one stretch between known change points (``ys``: series index,
    log ratio and own error variance of the decided runs): the steps it confirmed, and an
    alarm the runs have not confirmed or dismissed yet. An alarm is a step once the single
    best split of the runs since the segment's start (:func:`locate`) separates two sets that differ
    (:func:`differ`); until then it stays pending, and it is dismissed when the chart falls
    back under its threshold."""
    start = 0  # position in ys where the current segment starts
    chart = Cusum(cfg)
    found: list[Found] = []
    alarm: Alarm | None = None
    for pos in range(len(ys)):
        # The reference (detector.py): the segment's runs before this one, then, once
        # that leaves ``lagged_from``, only those ``reference_lag`` runs old or more, so a
        # shift's first runs do not pull it towards them.
        end = pos - cfg.reference_lag
        if end - start < cfg.lagged_from:
            end = pos
        before = [(y, v) for _i, y, v in ys[start:end]]
        if len(before) >= cfg.warmup:
            z = score(ys[pos][1], ys[pos][2], before)
            if z is not None:
                chart.add(z)
        direction = chart.alarm
        if direction is None:
            alarm = None
            continue
        window = [(y, v) for _i, y, v in ys[start:pos + 1]]
        at = locate(window)
        if at is not None and differ([y for y, _v in window[:at]],
                                     [y for y, _v in window[at:]]):
            found.append(Found(ys[start + at][0], ys[pos][0]))
            start += at
            chart.reset()
            alarm = None
        else:
            alarm = Alarm(suite, ys[pos][0], chart.value, cfg.h,
                          "up" if direction == "up" else "down")
    return found, alarm


def segment_estimate(series: Series, suite: str, lo: int, hi: int,
                     earlier: Sequence[SegmentEstimate] = ()) -> SegmentEstimate | None:
    """The estimate of ``suite`` over runs [lo, hi), its interval holding at least the
    wander of the ``earlier`` segments of the series (segment.py)."""
    runs: list[tuple[int, SuiteRun]] = []
    gaps = 0
    for i in range(lo, hi):
        s = series.runs[i].suite(suite)
        if s is None:
            continue
        if s.decided:
            runs.append((i, s))
        else:
            gaps += 1
    return combine(suite, runs, gaps=gaps, first=lo, last=hi - 1,
                   history=pooled_wander(earlier))


def _own_log_times(series: Series, lo: int, hi: int) -> list[dict[str, float]]:
    """Each run's own (log) times in [lo, hi): the unit's and each decided suite's."""
    rows = []
    for r in series.runs[lo:hi]:
        row: dict[str, float] = {}
        # An undecided run's unit time is its contended rounds': not the core's speed.
        if any(s.decided for s in r.suites) and r.unit_time_ns and r.unit_time_ns > 0:
            row[r.unit_suite] = math.log(r.unit_time_ns)
        for s in r.suites:
            if s.decided and s.time_ns and s.time_ns > 0:
                row[s.suite] = math.log(s.time_ns)
        rows.append(row)
    return rows


def _which_moved(series: Series, suite: str, at: int, lo: int, hi: int, window: int,
                 step: float) -> tuple[str, ...]:
    """Which suites' own times moved across ``at`` (the unit's included: the core's speed
    moves them all, the hash code only SLH-DSA), and whose time moved for the change of
    ``suite``'s ratio by ``step`` (log): its own, the unit's or both, judged on the times
    with the core's speed taken out (explain.relative_times)."""
    a, b = max(lo, at - window), min(hi, at + window)
    unit = series.runs[at].unit_suite
    rows = _own_log_times(series, a, b)
    raw = {n: ([r[n] for r in rows[:at - a] if n in r], [r[n] for r in rows[at - a:] if n in r])
           for n in dict.fromkeys([unit, *series.suite_names()])}
    said = {n: own_time(x, y, 0.0, MOVED_P) for n, (x, y) in raw.items()}
    moved = [n for n, t in said.items() if t is not None and t.moved]
    steady = [n for n, t in said.items() if t is not None and not t.moved]
    pattern = suites_pattern(moved, steady)
    rel = relative_times(rows, at - a)

    def judged(name: str, carry: float) -> OwnTime | None:
        x, y = rel.get(name, ([], []))
        return own_time(x, y, carry)

    clause = whose_time(suite, unit, judged(suite, step), judged(unit, -step), step)
    return (pattern, clause) if pattern else (clause,)


def _retro(series: Series, suite: str, lo: int, hi: int, cfg: RetroConfig) -> list[int]:
    """The changes over the stretch [lo, hi) found looking back (changepoints.py): Pelt's,
    each kept while the segments either side differ, a short one's interval holding the
    wander of the stretch's Pelt segments."""
    at = candidates(log_points(series, suite, lo, hi), cfg)
    if not at:
        return []
    bounds = [lo, *at, hi]
    base = [g for a, b in zip(bounds, bounds[1:], strict=False)
            if (g := segment_estimate(series, suite, a, b)) is not None]
    return prune(bounds, lambda a, b: segment_estimate(series, suite, a, b, base), step_pvalue, cfg)


@dataclass
class PlainLooks:
    """Each suite's plain look (:func:`_retro`) over a stretch of one series, computed
    once: every suite's analysis reads the others' (its sibling's, another's step)."""

    series: Series
    cfg: RetroConfig
    done: dict[tuple[str, int, int], list[int]] = field(default_factory=dict)

    def __call__(self, suite: str, lo: int, hi: int) -> list[int]:
        key = (suite, lo, hi)
        if key not in self.done:
            self.done[key] = _retro(self.series, suite, lo, hi, self.cfg)
        return self.done[key]


def _log_step(series: Series, suite: str, lo: int, at: int, hi: int) -> float | None:
    a, b = segment_estimate(series, suite, lo, at), segment_estimate(series, suite, at, hi)
    return None if a is None or b is None else math.log(b.ratio / a.ratio)


def _against_sibling(series: Series, suite: str, lo: int, hi: int, plain: Sequence[int],
                     looks: PlainLooks) -> tuple[list[int], Series | None]:
    """The changes over [lo, hi) found on ``suite``'s ratio read against its sibling's
    (covariate.py), more than 2 runs from every change its own ratio or the sibling's
    shows, each where its own ratio moved more than the sibling's; and the series so
    read (None where the sibling cannot stand in)."""
    other = sibling(suite, series.suite_names())
    adj = adjusted(series, suite, other, lo, hi) if other else None
    if adj is None or other is None:
        return [], None
    aseries, b = adj
    cfg = looks.cfg
    short = len(log_points(aseries, suite, lo, hi)) < MIN_RUNS
    found = _retro(aseries, suite, lo, hi, replace(
        cfg, keep_p=cfg.sibling_short_keep_p if short else cfg.sibling_keep_p))
    if found:
        sib = looks(other, lo, hi)
        found = [k for k in found if all(abs(k - j) > 2 for j in (*plain, *sib))]
    out = []
    for k in found:
        a = max([lo, *[j for j in (*plain, *found) if j < k]])
        z = min([hi, *[j for j in (*plain, *found) if j > k]])
        d = _log_step(aseries, suite, a, k, z)
        mine, theirs = _log_step(series, suite, a, k, z), _log_step(series, other, a, k, z)
        if d is not None and mine is not None and theirs is not None and attributed(
                mine, theirs, d, b):
            out.append(k)
    return out, aseries


def _read_step(aseries: Series, suite: str, lo: int, at: int, hi: int, cfg: RetroConfig
               ) -> ReadStep | None:
    """The step at ``at`` of ``suite``'s ratio read against its sibling (``aseries``,
    covariate.adjusted), sized as a ratio's step is: the two segments' errors and the
    level move at a run of the runs so read (wander.py)."""
    before = segment_estimate(aseries, suite, lo, at)
    after = segment_estimate(aseries, suite, at, hi)
    other = sibling(suite, aseries.suite_names())
    if before is None or after is None or other is None:
        return None
    change_bp, ci = step_size(before, after, _level_wander(aseries, suite, [lo, at, hi], cfg))
    return ReadStep(f"against {other}'s ratio", change_bp, ci)


def _level_wander(series: Series, suite: str, bounds: Sequence[int], cfg: RetroConfig
                  ) -> float:
    """The host's level move at a run (wander.py), from the wild-tamed runs of each
    segment between ``bounds``: what a step's interval holds beside its segments' errors."""
    return level_var([tamed([y for _i, y, _v in ys], [v for _i, _y, v in ys], cfg)
                      for lo, hi in zip(bounds, bounds[1:], strict=False)
                      if (ys := log_points(series, suite, lo, hi))])


def _neighbours(k: int, at: Sequence[int], lo: int, hi: int) -> tuple[int, int]:
    return max([lo, *[j for j in at if j < k]]), min([hi, *[j for j in at if j > k]])


def _unit_carries(series: Series, at: int, lo: int, hi: int, step: float,
                  level: float = WHOSE_P, window: int = 12) -> bool:
    """Whether the unit's own time, the core's speed out (explain.relative_times), moved
    across ``at`` by about ``step`` (log) at ``level``: what a step of every ratio alike
    needs to be the unit's, not the host's. Every suite's raw time moving (MOVED_P) is
    the host's too: the core's speed out, the unit's time then seems to move alone."""
    a, b = max(lo, at - window), min(hi, at + window)
    if conditions(series.runs[a:at], series.runs[at:b]):
        return False  # the host changed there (contention, load, steal, caps): its step
    rows, unit = _own_log_times(series, a, b), series.runs[at].unit_suite
    raw = [own_time([r[n] for r in rows[:at - a] if n in r],
                    [r[n] for r in rows[at - a:] if n in r], 0.0, MOVED_P)
           for n in series.suite_names()]
    if all(t is not None and t.moved for t in raw):
        return False
    x, y = relative_times(rows, at - a).get(unit, ([], []))
    t = own_time(x, y, step, level)
    # Moved, not unlike the step: evidence of a step. The words ask more before naming a
    # time (OwnTime.carries); asked here, that lost unit steps (docs/TREND.md).
    return t is not None and t.moved and not t.off_carry


@dataclass(frozen=True)
class JointStep:
    """A step found where another suite's ratio stepped (:func:`_joint`): the series index
    of its first run, and whether the unit's own time alone named it (this ratio moved as
    much, but too little to show by itself)."""

    at: int
    by_unit_alone: bool


def _joint(series: Series, suite: str, lo: int, hi: int, mine: Sequence[int],
           looks: PlainLooks) -> list[JointStep]:
    """The changes over [lo, hi) at runs where another suite's ratio changed (looking back)
    and ``suite``'s stepped there the same way: the unit's time moves every ratio alike,
    so one ratio's clear step tells where to look in a noisier one (one run tested, no
    search). Kept where ``suite``'s step shows at ``joint_p``, nearer the other's size
    than none, and the unit's own time carries it at WHOSE_P; or, where it does not show
    but is not told from the other's size at ``alike_p``, where the unit's own time carries
    it at ``unit_alone_p``: a step of the unit's time is a step of every ratio."""
    cfg = looks.cfg
    out: list[JointStep] = []
    for other in series.suite_names():
        if other == suite:
            continue
        theirs = looks(other, lo, hi)
        for k in theirs:
            if any(abs(k - j) <= 2 for j in (*mine, *(s.at for s in out))):
                continue
            a, z = _neighbours(k, theirs, lo, hi)
            d0 = _log_step(series, other, a, k, z)
            a, z = _neighbours(k, mine, lo, hi)
            before = segment_estimate(series, suite, a, k)
            after = segment_estimate(series, suite, k, z)
            if d0 is None or before is None or after is None:
                continue
            if min(before.runs, after.runs) < cfg.min_side:
                continue
            d = math.log(after.ratio / before.ratio)
            if d * d0 <= 0:
                continue
            p = step_pvalue(before, after)
            if (abs(d - d0) < abs(d) and p < cfg.joint_p
                    and _unit_carries(series, k, lo, hi, -d0)):
                out.append(JointStep(k, by_unit_alone=False))
            elif (p < cfg.alike_p and step_pvalue(before, after, d0) >= cfg.alike_p
                  and _unit_carries(series, k, lo, hi, -d0, cfg.unit_alone_p)):
                out.append(JointStep(k, by_unit_alone=True))
    return out


def _read_words(step: ReadStep) -> str:
    lo, hi = step.ci_95_bp
    return (f"found {step.reading} (the wander they share taken out): {step.change_bp:+.0f} "
            f"bp there (95 % {lo:+.0f} to {hi:+.0f})")


def _joint_words(step: JointStep) -> str:
    if step.by_unit_alone:
        return ("found where another suite's ratio stepped alike: the unit's own time moved "
                "there, and this ratio about as much, too little to show alone")
    return "found where another suite's ratio stepped alike (the unit's own time moved there)"


def suite_trend(series: Series, suite: str, known: list[KnownChange], cfg: TrendConfig,
                looks: PlainLooks | None = None) -> SuiteTrend:
    """One suite's segments and changes: the known change points, every change found
    looking back over each stretch between them (changepoints.py), and the detector's
    alarm over the runs since the last of them (a change the runs do not yet show).
    ``looks``: the series' plain looks, shared by its suites."""
    looks = looks or PlainLooks(series, cfg.retro)
    n = len(series.runs)
    stretches = [0, *[k.run_index for k in known], n]
    detected: list[int] = []
    against: dict[int, Series] = {}  # a step found against the sibling: the series so read
    joint: dict[int, JointStep] = {}
    for lo, hi in zip(stretches, stretches[1:], strict=False):
        plain = looks(suite, lo, hi)
        extra, aseries = _against_sibling(series, suite, lo, hi, plain, looks)
        alike = _joint(series, suite, lo, hi, [*plain, *extra], looks)
        detected += sorted([*plain, *extra, *(j.at for j in alike)])
        against.update((k, aseries) for k in extra if aseries is not None)
        joint.update((j.at, j) for j in alike)
    last = max([stretches[-2], *detected])
    _found, alarm = detect(log_points(series, suite, last, n), suite, cfg.detector)
    needed = max(0, cfg.retro.needs - len(log_points(series, suite, stretches[-2], n)))
    known_at = {k.run_index: k for k in known}
    bounds = sorted({0, *known_at, *detected, n})
    segments: list[SegmentEstimate] = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        seg = segment_estimate(series, suite, lo, hi, segments)
        if seg is not None:
            segments.append(seg)
    # Only a change's interval holds the host's level move at a run.
    wander = _level_wander(series, suite, bounds, cfg.retro) if len(segments) > 1 else 0.0
    changes = []
    for before, after in zip(segments, segments[1:], strict=False):
        at = after.first_run
        change_bp, ci = step_size(before, after, wander)
        k = known_at.get(at)
        lo = max((b for b in bounds if b < at), default=0)
        hi = min((b for b in bounds if b > at), default=n)
        w = cfg.explain_window
        read = _read_step(against[at], suite, lo, at, hi, cfg.retro) if at in against else None
        what = (*(k.what if k else ()),
                *conditions(series.runs[max(lo, at - w):at], series.runs[at:min(hi, at + w)]),
                *((_read_words(read),) if read else ()),
                *((_joint_words(joint[at]),) if at in joint else ()),
                *_which_moved(series, suite, at, lo, hi, w, math.log(after.ratio / before.ratio)))
        r = series.runs[at]
        changes.append(Change(suite=suite, run_index=at, run_id=r.run_id,
                              started_at=r.started_at, before=before.ratio, after=after.ratio,
                              change_bp=change_bp, ci_95_bp=ci,
                              cause="known" if k else "detected", what_changed=what,
                              found_on=read))
    gaps = sum(1 for r in series.runs
               if (s := r.suite(suite)) is not None and not s.decided)
    return SuiteTrend(suite=suite, segments=tuple(segments), changes=tuple(changes),
                      gaps=gaps, alarm=alarm, runs_needed=needed)


def analyze_series(series: Series, cfg: TrendConfig | None = None) -> SeriesTrend:
    cfg = cfg or TrendConfig()
    known = known_changes(series)
    looks = PlainLooks(series, cfg.retro)
    suites = tuple(suite_trend(series, s, known, cfg, looks) for s in series.suite_names())
    return SeriesTrend(key=series.key, runs=series.runs, suites=suites, known=tuple(known))


def analyze(series: Iterable[Series], cfg: TrendConfig | None = None) -> list[SeriesTrend]:
    return [analyze_series(s, cfg) for s in series]
