"""Quiet turns: a suite's operations timed between two unit turns that ran at the quiet
speed, each divided by the unit's speed around it (the ``paired`` statistic)."""

from __future__ import annotations

from dataclasses import dataclass, field

from qprof.consensus.estimate import stats
from qprof.consensus.estimate.reduce import Reduced
from qprof.measure import stats as sample_stats

# A unit turn "ran at the quiet speed" when its median is within this of the quickest
# unit turn of its round. Measured here: quiet turns lie within ~100 bp of the quickest (a
# worker process's quiet speed differs from another's by up to ~80 bp), a contended spell
# slows the core by 40-70 % (4000-7000 bp), a partly contended turn by 300+ bp. Per round,
# not per run: a clock that drifts over a run moves the whole round, and a pair's ratio
# only needs the clock steady around its B turn.
QUIET_TOLERANCE_BP = 150.0
# A round whose quickest unit turn is this far above the run's quickest ran under a
# neighbour throughout (spells slow the core by 30-70 % for up to 2 s): contended,
# whatever its turns say among themselves. Below it, a round is just slower as a whole:
# slow drift moves a round by tens of bp, and each worker process has its own speed
# (liboqs ~1-3 %, numba's compiled kernels up to ~13 % apart here).
ROUND_FLOOR_TOLERANCE_BP = 2500.0
# A round with fewer quiet B turns than this share (or fewer than MIN_QUIET_TURNS) was
# measured under contention: marked, kept in the records, left out of the paired figures.
MIN_QUIET_FRACTION = 0.1
MIN_QUIET_TURNS = 3


def _turns(samples: list[float], size: int) -> list[list[float]]:
    return [samples[i:i + size] for i in range(0, len(samples), size)]


def unit_turn_medians(unit: Reduced) -> dict[int, list[float]]:
    """Round -> median of each turn of the unit (interleaved rounds only)."""
    return {
        r: [sample_stats.median(t) for t in _turns(unit.samples_by_round[r], k)]
        for r, k in unit.turn_sizes.items() if r in unit.samples_by_round
    }


def quiet_limits(um: dict[int, list[float]], tolerance_bp: float = QUIET_TOLERANCE_BP
                 ) -> dict[int, float]:
    """Round -> the slowest unit turn median still at the quiet speed (see
    QUIET_TOLERANCE_BP); 0 for a round under a neighbour throughout (nothing quiet)."""
    floors = {r: min(u) for r, u in um.items() if u}
    if not floors:
        return {}
    run_floor = min(floors.values())
    return {r: f * (1 + tolerance_bp / 1e4)
            if f <= run_floor * (1 + ROUND_FLOOR_TOLERANCE_BP / 1e4) else 0.0
            for r, f in floors.items()}


@dataclass
class Paired:
    """A/B/A at the scale of turns: suite turn c against the unit turns c and c+1.

    Only B turns between two A turns that ran at the quiet speed count, so a neighbour
    that slowed the core for a while (invisible from inside a VM) is left out for the unit
    and the suite alike, and each round still gives a ratio. Each operation of such a B
    turn is divided by the unit's speed around it; a spell shorter than a turn slows a few
    of them, which the median does not follow.
    """

    ratio: float  # median of the kept rounds' operation ratios
    by_round: dict[int, float]  # median operation ratio per kept round
    quiet_fraction: dict[int, float]  # every round: share of its B turns that were quiet
    contended: list[int]  # rounds left out (too few quiet turns)
    quiet_turns: int  # B turns between quiet A turns, in the kept rounds
    turns: int  # B turns in all rounds
    unit_quiet_ns: float  # median of the quiet unit turns of the kept rounds
    unit_by_round: dict[int, float]  # median quiet unit turn per kept round
    # Kept round -> each operation of its quiet B turns over the unit's speed around it.
    ratios_by_round: dict[int, list[float]] = field(default_factory=dict)

    @property
    def spread_bp(self) -> float:
        return stats.round_spread_bp(list(self.by_round.values()))

    @property
    def unit_spread_bp(self) -> float:
        return stats.round_spread_bp(list(self.unit_by_round.values()))


def paired_ratios(
    suite: Reduced, unit: Reduced, tolerance_bp: float = QUIET_TOLERANCE_BP,
) -> Paired | None:
    """The suite/unit ratio from quiet turns (see :class:`Paired`); None unless both were
    timed in interleaved rounds with their samples kept."""
    um = unit_turn_medians(unit)
    if not um or not suite.turn_sizes:
        return None
    limits = quiet_limits(um, tolerance_bp)
    ratios: dict[int, list[float]] = {}
    fraction: dict[int, float] = {}
    quiet_turns: dict[int, int] = {}
    turns_total = 0
    for r, k in suite.turn_sizes.items():
        u = um.get(r)
        if not u or r not in suite.samples_by_round:
            continue
        s_turns = _turns(suite.samples_by_round[r], k)
        pairable = max(min(len(s_turns), len(u) - 1), 0)
        turns_total += pairable
        got: list[float] = []
        quiet = 0
        limit = limits[r]
        for c in range(pairable):
            if u[c] <= limit and u[c + 1] <= limit:
                # Every operation of the turn against the unit's speed around it (the
                # median of a whole unit turn): the median of these is the ratio of the
                # medians, the seeds' statistic, for suites of any skew.
                clock = (u[c] + u[c + 1]) / 2
                got.extend(x / clock for x in s_turns[c])
                quiet += 1
        ratios[r] = got
        quiet_turns[r] = quiet
        fraction[r] = quiet / pairable if pairable > 0 else 0.0
    if not ratios:
        return None
    kept = [r for r in ratios if quiet_turns[r] >= MIN_QUIET_TURNS
            and fraction[r] >= MIN_QUIET_FRACTION]
    contended = sorted(r for r in ratios if r not in kept)
    unit_ns, unit_by_round, _unit_contended = unit_quiet(unit, tolerance_bp)
    if not kept:
        return Paired(float("nan"), {}, fraction, contended, 0, turns_total, unit_ns,
                      unit_by_round, {})
    return Paired(
        ratio=sample_stats.median([x for r in kept for x in ratios[r]]),
        by_round={r: sample_stats.median(ratios[r]) for r in sorted(kept)},
        quiet_fraction=fraction,
        contended=contended,
        quiet_turns=sum(quiet_turns[r] for r in kept),
        turns=turns_total,
        unit_quiet_ns=unit_ns,
        unit_by_round=unit_by_round,
        ratios_by_round={r: ratios[r] for r in sorted(kept)},
    )


def unit_quiet(
    unit: Reduced, tolerance_bp: float = QUIET_TOLERANCE_BP,
) -> tuple[float, dict[int, float], list[int]]:
    """The unit's quiet speed: (median of its quiet turns in the rounds that had enough of
    them, median quiet turn per such round, rounds without enough quiet turns)."""
    um = unit_turn_medians(unit)
    if not um:
        return float("nan"), {}, []
    limits = quiet_limits(um, tolerance_bp)
    quiet = {r: [x for x in u if x <= limits.get(r, 0.0)] for r, u in um.items()}
    kept = sorted(r for r, q in quiet.items() if len(q) >= MIN_QUIET_TURNS
                  and len(q) / len(um[r]) >= MIN_QUIET_FRACTION)
    pooled = [x for r in kept for x in quiet[r]]
    return (
        sample_stats.median(pooled) if pooled else float("nan"),
        {r: sample_stats.median(quiet[r]) for r in kept},
        sorted(set(um) - set(kept)),
    )


def paired_ci(p: Paired, replicates: int = 1000) -> tuple[float, float] | None:
    """95 % CI of the paired ratio: rounds, then quiet turns within rounds, resampled."""
    groups = [v for v in p.ratios_by_round.values() if v]
    if not groups:
        return None
    ones = [[1.0] for _ in groups]  # sample_stats.median(ratios) / 1: the same two-level bootstrap
    return stats.bootstrap_ratio_ci(groups, ones, replicates=replicates)
