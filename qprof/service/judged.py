"""A store's judgement: its newest runs' measurements with every kept run's points
behind them, through :func:`qprof.consensus.judgement.judge`: what history, the monitor,
report and export show, as the daemon computes it for its metrics and alerts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from qprof.consensus.estimate.estimator import DEFAULT_UNIT_SUITE
from qprof.consensus.judgement import Judgement, judge
from qprof.consensus.policy import CoreDesign, with_quota
from qprof.consensus.profiles import Profile
from qprof.service.cores import recorded_cores, recorded_quota
from qprof.service.store import Store
from qprof.service.trend import TREND_RUNS
from qprof.service.trend_source import store_points

# Runs kept without points whose points a reader computes from their records (seconds
# each): every kept run has its points (qprof.service.keep, the daemon), older stores not.
READER_COMPUTES = 20


@dataclass(frozen=True)
class StoreJudgement:
    judgement: Judgement
    left_out: int  # kept runs without points, beyond what was computed


def store_judgement(store: Store, profile: Profile | None,
                    cores: Mapping[int, CoreDesign] | None = None,
                    operations: Sequence[str] = ("verify",),
                    max_computed: int = READER_COMPUTES) -> StoreJudgement:
    """The judgement of ``store``'s newest runs (``cores``: what each CPU is, beside what
    the runs recorded)."""
    unit = profile.unit_suite if profile is not None else DEFAULT_UNIT_SUITE
    found = store_points(store, unit, operation="verify", newest=TREND_RUNS,
                         max_computed=max_computed)
    points = found.points
    if any(op != "verify" for op in operations):
        points = points + store.points.run_points(operation="dual_enforce", newest=TREND_RUNS)
    measurements = [m for op in operations for m in store.newest_run_measurements(op)]
    all_cores = {**(cores or {}), **recorded_cores(store, measurements)}
    quota = recorded_quota(store, measurements)
    if quota is not None:  # its block priced at the quota it ran under, as check does
        all_cores = with_quota({**{m.cpu: CoreDesign(cpu=m.cpu) for m in measurements},
                                **all_cores}, quota)
    return StoreJudgement(judge(measurements, profile, points, cores=all_cores,
                                operations=operations), found.left_out)
