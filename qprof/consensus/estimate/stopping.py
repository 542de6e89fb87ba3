"""The adaptive stopping rule: add B/A pairs while the verdict is not sure yet.

The engine is handed it (:class:`qprof.measure.adaptive.StoppingRule`), built by
:func:`rule_for`: a CPU gets more rounds while an interval straddles a constant or is
wider than ``target_ci_bp``, an ML-DSA spread exceeds ``max_spread_bp`` or too few quiet
rounds were kept. It also says about how many pairs that takes, so the engine need not
ask (a bootstrap) after every pair.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from qprof.consensus.estimate import stats
from qprof.consensus.estimate.clock import clock_changes
from qprof.consensus.estimate.estimator import DEFAULT_UNIT_SUITE, SuiteEstimate, estimate
from qprof.consensus.estimate.reduce import reduce_measurements, unit_drift_bp
from qprof.consensus.profiles import Profile, load_profile
from qprof.measure.config import BenchConfig
from qprof.measure.plan import VERDICT_OPS, NoteText
from qprof.measure.records import Measurement

# Enough to tell "unsure"; the engine waits for the rule's answer: 400 took 0.9 s of a
# 29-round check run's last pair (AMD EPYC guest), time its rounds lose; 200 take
# 0.41-0.66 s at 10-41 rounds, which is why the engine does not ask after every pair.
CI_REPLICATES = 200


@dataclass(frozen=True)
class StoppingRule:
    unit_suite: str
    base_rounds: int
    statistic: str = "median"  # as asked: "median", "p10", "paired" or "auto"
    target_ci_bp: float = 50.0
    max_spread_bp: float = 100.0
    profile: Profile | None = None

    def needs_more(self, measurements: Sequence[Measurement], cpu: int) -> bool:
        return self.pairs_needed(measurements, cpu) > 0

    def pairs_needed(self, measurements: Sequence[Measurement], cpu: int) -> int:
        """0 when every estimate the verdict needs is sure, else the B/A pairs it would
        take, from the intervals shrinking as 1/sqrt(rounds) (at least 1)."""
        mine = [m for m in measurements if m.cpu == cpu]
        # What extra rounds time (plan.extra_tasks): the dual pairs' CIs could not narrow
        # (a run of dual_enforce alone has them in every round, and is decided on them).
        ops: Iterable[str] = (VERDICT_OPS if any(m.operation in VERDICT_OPS for m in mine)
                              else ("dual_enforce",))
        for op in ops:
            groups: dict[str, list[SuiteEstimate]] = {}
            for e in estimate(mine, unit_suite=self.unit_suite,
                              unit_vu=self.profile.unit_vu if self.profile else 100,
                              operation=op, statistic=self.statistic,
                              replicates=CI_REPLICATES, steady_spread_bp=self.max_spread_bp,
                              signatures=False):  # the pool: no more rounds help
                groups.setdefault(e.backend, []).append(e)
            need = max((self._pairs(g) for g in groups.values() if any(e.is_unit for e in g)),
                       default=0)
            if need:
                return need
        return 0

    def _pairs(self, group: list[SuiteEstimate]) -> int:
        """One CPU and backend: 0 when everything the verdict needs is sure, else the
        pairs it would take (at least 1)."""
        statistic = next(e.statistic for e in group if e.is_unit)
        paired = [e for e in group if e.statistic == "paired" and not e.is_unit]
        if paired and (used := min(e.rounds_used for e in paired)) < self.base_rounds:
            return math.ceil((self.base_rounds - used) / 2)  # redo the contended rounds
        # Spreads decide unless the rounds are quiet-turn pairs (their rounds agree: one
        # process, and more rounds only widen max - min; the interval decides), or an
        # explicit --statistic p10 (the interval alone decides).
        spread_counts = statistic != "paired" and (
            statistic != "p10" or self.statistic == "auto")
        if any(e.undecided for e in group):
            return 1  # too few quiet data yet: more rounds may bring them
        need = 0
        for e in group:
            if (spread_counts and e.suite.startswith("ML-DSA")
                    and e.round_spread_bp is not None
                    and e.round_spread_bp > self.max_spread_bp):
                need = max(need, 1)
            if e.is_unit or e.ratio_ci is None or not e.ratio:
                continue
            rounds = max(e.rounds_used, 1)
            half = stats.bp((e.ratio_ci[1] - e.ratio_ci[0]) / 2 / e.ratio)
            if half > self.target_ci_bp:
                need = max(need, _pairs_to_shrink(half, self.target_ci_bp, rounds))
            if (gap := self._constant_gap(e)) is not None:
                # The interval must leave the constant out: its half on the constant's
                # side has to shrink below the constant's distance (at least one pair).
                side, distance = gap
                need = max(need, _pairs_to_shrink(side, distance, rounds))
        return need

    def _constant_gap(self, e: SuiteEstimate) -> tuple[float, float] | None:
        """When the estimate's Verify-Unit interval straddles the profile's constant:
        (the interval's half on the constant's side, the constant's distance from the
        estimate), both in bp of the estimate; else None."""
        if (self.profile is None or e.suite not in self.profile.verify_units or not e.vu_ci
                or e.ratio_ci is None or not e.ratio):
            return None
        constant = self.profile.verify_units[e.suite]
        if not e.vu_ci[0] <= constant < e.vu_ci[1]:
            return None
        at = constant / self.profile.unit_vu  # the constant as a ratio
        side = e.ratio_ci[1] - e.ratio if at >= e.ratio else e.ratio - e.ratio_ci[0]
        return stats.bp(side / e.ratio), stats.bp(abs(at - e.ratio) / e.ratio)

    def cpu_notes(self, measurements: Sequence[Measurement], cpu: int) -> list[NoteText]:
        """The unit's drift over the run and the clock changes found (left out by the
        estimate, :mod:`qprof.consensus.estimate.clock`), for the engine's notes."""
        mine = [m for m in measurements if m.cpu == cpu]
        reduced = reduce_measurements(mine)
        notes: list[NoteText] = []
        for (c, suite, backend, op), unit in sorted(reduced.items()):
            if (c, suite, op) != (cpu, self.unit_suite, "verify"):
                continue
            d = unit_drift_bp(unit)
            if d is not None:
                notes.append(("info", "drift",
                              f"CPU {cpu} {backend}: {self.unit_suite} at the end vs the start: "
                              f"{d:+.0f} bp; largest spread of round medians "
                              f"{max(r.spread_bp for r in reduced.values()):.0f} bp"))
        notes.extend(("warning", change.kind, change.text())
                     for change in clock_changes(mine, self.unit_suite))
        return notes


def _pairs_to_shrink(half_bp: float, goal_bp: float, rounds: int) -> int:
    """B/A pairs until a half-width of ``half_bp`` over ``rounds`` rounds, shrinking as
    1/sqrt(rounds), is ``goal_bp`` (at least 1; a goal of 0 bp: as many as allowed)."""
    if goal_bp <= 0:
        return 1 << 20
    return max(1, math.ceil(rounds * ((half_bp / goal_bp) ** 2 - 1) / 2))


def rule_for(config: BenchConfig) -> tuple[BenchConfig, StoppingRule]:
    """The run's configuration with its profile resolved (suites and unit), and the rule
    the engine is handed: ``run_bench(config, sink, rule=rule)``.

    Raises ``ProfileError`` for a profile that cannot be read.
    """
    profile = load_profile(config.profile) if config.profile else None
    unit = config.unit_suite or (profile.unit_suite if profile else DEFAULT_UNIT_SUITE)
    suites = config.suites or (list(profile.suites) if profile else None)
    resolved = replace(config, unit_suite=unit, suites=suites)
    rounds = config.rounds or config.settings().rounds
    return resolved, StoppingRule(unit, rounds, config.statistic, config.target_ci_bp,
                                  config.max_spread_bp, profile)
