"""The adaptive stopping rule: add B/A pairs while the verdict is not sure yet.

A CPU gets more rounds while, for what the verdict will use (:func:`estimate`), a
Verify-Unit ratio's CI straddles the profile's constant or is wider than
``target_ci_bp``, an ML-DSA round spread exceeds ``max_spread_bp``, or (quiet-turn pairs)
fewer quiet rounds than the base rounds were kept; and only while one more pair fits in
the time limit (:func:`pair_fits`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from qprof.consensus import Profile
from qprof.measure import stats
from qprof.measure.clock import steady_measurements
from qprof.measure.plan import VERDICT_OPS
from qprof.measure.records import Measurement
from qprof.measure.reduce import Reduced, reduce_measurements

CI_REPLICATES = 400  # enough to decide "unsure", cheap enough to run after every pair


@dataclass(frozen=True)
class SuiteEstimate:
    """One suite on one CPU, backend and operation, as the verdict will estimate it."""

    suite: str
    spread_bp: float | None  # round spread of what the estimate uses
    ratio: float | None  # suite / unit (None for the unit itself)
    ci: tuple[float, float] | None  # bootstrap CI of the ratio


@dataclass(frozen=True)
class Estimates:
    statistic: str  # the one used: "median", "p10" or "paired"
    kept_rounds: int | None  # quiet-turn pairs: fewest rounds kept over the suites
    suites: list[SuiteEstimate]


def estimate(reduced: dict[tuple[int, str, str, str], Reduced], cpu: int, backend: str,
             operation: str, unit_suite: str, statistic: str,
             max_spread_bp: float) -> Estimates | None:
    """What the verdict estimates for one CPU, backend and operation (None: no unit).

    The one place where the stopping rule reaches the verdict's statistics.
    """
    from qprof.measure.reduce import paired_ci, ratio_ci
    from qprof.measure.verdict import choose_statistic, paired_for, paired_spread

    unit = reduced.get((cpu, unit_suite, backend, operation))
    if unit is None:
        return None
    if statistic == "auto":
        statistic, _why = choose_statistic(reduced, cpu, backend, operation, max_spread_bp,
                                           unit_suite)
    paired = paired_for(reduced, cpu, backend, operation, unit_suite) \
        if statistic == "paired" else {}
    used = "paired" if paired else ("p10" if statistic == "p10" else "median")
    kept = min(len(p.by_round) for p in paired.values()) if paired else None
    out = []
    for (c, suite, b, op), red in sorted(reduced.items()):
        if (c, b, op) != (cpu, backend, operation):
            continue
        if paired:
            spread = paired_spread(paired, suite, unit_suite)
        else:
            spread = red.p10_spread_bp if used == "p10" else red.spread_bp
        ratio: float | None = None
        ci = None
        pair = paired.get(suite)
        if suite == unit_suite:
            pass
        elif pair is not None and pair.by_round:
            ci, ratio = paired_ci(pair, replicates=CI_REPLICATES), pair.ratio
        else:
            p10 = used == "p10"
            ci = ratio_ci(red, unit, replicates=CI_REPLICATES, quantile=0.1 if p10 else 0.5)
            if p10 and red.p10_ns and unit.p10_ns:
                ratio = red.p10_ns / unit.p10_ns
            else:
                ratio = red.median_ns / unit.median_ns
        out.append(SuiteEstimate(suite, spread, ratio, ci))
    return Estimates(used, kept, out)


@dataclass(frozen=True)
class StoppingRule:
    unit_suite: str
    base_rounds: int
    statistic: str = "median"  # as asked: "median", "p10", "paired" or "auto"
    target_ci_bp: float = 50.0
    max_spread_bp: float = 100.0
    profile: Profile | None = None

    def needs_more(self, measurements: Sequence[Measurement], cpu: int) -> bool:
        # What the verdict will use: the rounds of one clock (qprof.measure.clock).
        reduced = reduce_measurements(steady_measurements(measurements, self.unit_suite)[0])
        # What extra rounds time (plan.extra_tasks): the dual pairs' CIs could not narrow
        # (a run of dual_enforce alone has them in every round, and is decided on them).
        ops: Iterable[str] = (VERDICT_OPS if any(m.operation in VERDICT_OPS
                                                 for m in measurements) else ("dual_enforce",))
        for backend in sorted({m.backend for m in measurements}):
            for op in ops:
                est = estimate(reduced, cpu, backend, op, self.unit_suite, self.statistic,
                               self.max_spread_bp)
                if est is not None and self._unsure(est):
                    return True
        return False

    def _unsure(self, est: Estimates) -> bool:
        if est.kept_rounds is not None and est.kept_rounds < self.base_rounds:
            return True  # redo the rounds measured under contention
        # Spreads decide unless the rounds are quiet-turn pairs (their rounds agree: one
        # process, and more rounds only widen max - min; the CI decides), or an explicit
        # --statistic p10 (the CI alone decides).
        spread_counts = est.statistic != "paired" and (
            est.statistic != "p10" or self.statistic == "auto")
        for s in est.suites:
            if (spread_counts and s.suite.startswith("ML-DSA") and s.spread_bp is not None
                    and s.spread_bp > self.max_spread_bp):
                return True
            if s.ci is None or s.ratio is None:
                continue
            if self._verdict_unsure(s.suite, s.ci):
                return True
            if stats.bp((s.ci[1] - s.ci[0]) / 2 / s.ratio) > self.target_ci_bp:
                return True
        return False

    def _verdict_unsure(self, suite: str, ci: tuple[float, float]) -> bool:
        """The CI's Verify Units straddle the profile's constant."""
        if self.profile is None or suite not in self.profile.verify_units:
            return False
        unit_vu = self.profile.unit_vu
        constant = self.profile.verify_units[suite]
        lo, hi = math.ceil(unit_vu * ci[0]), math.ceil(unit_vu * ci[1])
        return lo <= constant < hi


def pair_fits(elapsed_s: float, limit_s: float | None, pair_budget_s: float,
              worker_seconds: Sequence[float], worker_budgets: Sequence[float],
              spawn_cost_s: float) -> bool:
    """Would one more B/A pair end within the time limit? (from the workers so far)"""
    if limit_s is None:
        return True
    need = pair_budget_s * 1.5 + spawn_cost_s
    if worker_seconds and worker_budgets:
        # How much longer than planned the workers took so far (a busy machine).
        stretch = sum(worker_seconds) / max(sum(worker_budgets), 1e-9)
        need = pair_budget_s * max(stretch, 1.0)
    return elapsed_s + need <= limit_s
