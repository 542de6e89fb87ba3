"""From measurement records to the numbers in the tables.

Rules (the seeds', pinned by tests/test_measure_reduce.py):
- valid signatures and every other operation: median and p95 of all samples of all rounds
  (when a record has no samples, the median of its round medians);
- invalid signatures (``*_invalid``): median of the round medians;
- round spread: (max - min) / min of the round medians, in basis points;
- unit drift: last vs first round median of the unit suite, in basis points.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from qprof.measure import stats
from qprof.measure.records import Measurement

Key = tuple[int, str, str, str]  # cpu, suite, backend, operation


@dataclass
class Reduced:
    cpu: int
    suite: str
    backend: str
    operation: str
    n: int
    median_ns: float
    p95_ns: float
    round_medians: dict[int, float]
    spread_bp: float
    capped: bool | None = None
    cap_factor: float | None = None
    capped_rounds: list[int] = field(default_factory=list)
    samples_by_round: dict[int, list[float]] = field(default_factory=dict)
    checks: int = 0
    disagreements: int = 0
    # 10th percentile of all samples: close to the speed of the core when nothing else
    # ran (on a shared machine samples are a mixture of quiet and contended times).
    p10_ns: float | None = None
    p10_spread_bp: float | None = None  # round spread of the per-round 10th percentiles
    round_p10s: dict[int, float] = field(default_factory=dict)  # 10th percentile per round
    turn_sizes: dict[int, int] = field(default_factory=dict)  # interleaved rounds: values/turn

    @property
    def key(self) -> Key:
        return (self.cpu, self.suite, self.backend, self.operation)

    @property
    def round_range(self) -> tuple[float, float]:
        values = list(self.round_medians.values())
        return min(values), max(values)


def is_invalid_op(operation: str) -> bool:
    return operation.endswith("_invalid")


def reduce_measurements(measurements: Iterable[Measurement]) -> dict[Key, Reduced]:
    groups: dict[Key, list[Measurement]] = {}
    for m in measurements:
        groups.setdefault((m.cpu, m.suite, m.backend, m.operation), []).append(m)
    out: dict[Key, Reduced] = {}
    for key, ms in groups.items():
        ms.sort(key=lambda m: m.round)
        round_medians: dict[int, float] = {}
        samples: dict[int, list[float]] = {}
        for m in ms:
            # Two records for one round (should not happen): keep the later one.
            round_medians[m.round] = float(m.median_ns)
            if m.samples_ns:
                samples[m.round] = [float(x) for x in m.samples_ns]
        have_all_samples = len(samples) == len(round_medians)
        pooled = [x for r in sorted(samples) for x in samples[r]] if have_all_samples else []
        if is_invalid_op(key[3]) or not pooled:
            median = stats.median(list(round_medians.values()))
            p95 = stats.median([float(m.p95_ns) for m in ms])
        else:
            median = stats.median(pooled)
            p95 = stats.p95(pooled)
        capped_rounds = sorted({m.round for m in ms if m.capped})
        factors = [m.cap_factor for m in ms if m.capped and m.cap_factor]
        caps = [m.capped for m in ms if m.capped is not None]
        out[key] = Reduced(
            cpu=key[0],
            suite=key[1],
            backend=key[2],
            operation=key[3],
            n=sum(m.n for m in ms),
            median_ns=median,
            p95_ns=p95,
            round_medians=round_medians,
            spread_bp=stats.round_spread_bp(list(round_medians.values())),
            capped=any(caps) if caps else None,
            cap_factor=max(factors) if factors else None,
            capped_rounds=capped_rounds,
            samples_by_round=samples if have_all_samples else {},
            checks=sum(m.checks for m in ms),
            disagreements=sum(m.disagreements for m in ms),
            p10_ns=stats.percentile(pooled, 10) if pooled else None,
            p10_spread_bp=stats.round_spread_bp(
                [stats.percentile(v, 10) for v in samples.values()]
            ) if have_all_samples and samples else None,
            turn_sizes={m.round: m.turn_size for m in ms if m.turn_size and m.round in samples},
            round_p10s=(
                {r: stats.percentile(v, 10) for r, v in samples.items()}
                if have_all_samples else {}
            ),
        )
    return out


def unit_drift_bp(unit: Reduced) -> float | None:
    """Unit suite at the end of the run vs the start (signed bp); None with one round."""
    if len(unit.round_medians) < 2:
        return None
    rounds = sorted(unit.round_medians)
    return stats.drift_bp(unit.round_medians[rounds[0]], unit.round_medians[rounds[-1]])


def ratio_ci(
    suite: Reduced, unit: Reduced, replicates: int = 1000, quantile: float = 0.5
) -> tuple[float, float] | None:
    """95 % CI of median(suite)/median(unit) (or of p10 with quantile=0.1); None without
    samples."""
    if not suite.samples_by_round or not unit.samples_by_round:
        return None
    return stats.bootstrap_ratio_ci(
        list(suite.samples_by_round.values()),
        list(unit.samples_by_round.values()),
        replicates=replicates,
        quantile=quantile,
    )


def vu_by_round(
    suite: Reduced, unit: Reduced, unit_vu: int = 100, statistic: str = "median",
    rounds: set[int] | None = None,
) -> dict[int, float]:
    """100 x median(suite in round r) / median(unit in round r, else the rounds around r).

    With A/B/A/B/A rounds each B round sits between two A rounds; their mean is the unit
    at that moment, so the spread of these ratios shows how steady the estimate is even
    when the machine's speed drifts. Interleaved rounds time the unit in the same round:
    that round's unit is used. ``statistic="p10"`` uses per-round 10th percentiles;
    ``rounds`` keeps only those rounds (e.g. the ones not under contention).
    """
    if statistic == "p10" and suite.round_p10s and unit.round_p10s:
        s_vals, u_vals = suite.round_p10s, unit.round_p10s
    else:
        s_vals, u_vals = suite.round_medians, unit.round_medians
    out: dict[int, float] = {}
    unit_rounds = sorted(u for u in u_vals if rounds is None or u in rounds)
    for r, med in sorted(s_vals.items()):
        if rounds is not None and r not in rounds:
            continue
        if r in u_vals and (rounds is None or r in rounds):
            around = [u_vals[r]]
        else:
            before = [u for u in unit_rounds if u < r]
            after = [u for u in unit_rounds if u > r]
            around = [u_vals[x] for x in (before[-1:] + after[:1])]
        if around:
            out[r] = unit_vu * med / (sum(around) / len(around))
    return out


# ---------------------------------------------------------------- quiet turns (paired)

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
        r: [stats.median(t) for t in _turns(unit.samples_by_round[r], k)]
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
        ratio=stats.median([x for r in kept for x in ratios[r]]),
        by_round={r: stats.median(ratios[r]) for r in sorted(kept)},
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
        stats.median(pooled) if pooled else float("nan"),
        {r: stats.median(quiet[r]) for r in kept},
        sorted(set(um) - set(kept)),
    )


def paired_ci(p: Paired, replicates: int = 1000) -> tuple[float, float] | None:
    """95 % CI of the paired ratio: rounds, then quiet turns within rounds, resampled."""
    groups = [v for v in p.ratios_by_round.values() if v]
    if not groups:
        return None
    ones = [[1.0] for _ in groups]  # median(ratios) / 1: the same two-level bootstrap
    return stats.bootstrap_ratio_ci(groups, ones, replicates=replicates)
