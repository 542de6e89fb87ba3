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

from qprof.consensus.estimate import stats
from qprof.consensus.estimate.poolmix import population_factors
from qprof.measure import stats as sample_stats
from qprof.measure.records import Measurement
from qprof.measure.units import NO_PROFILE_UNIT

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
    # Rounds whose sample j verified pool signature (start + j) % size (records with
    # pool_size; start from pool_start, 0 when not recorded).
    pool_sizes: dict[int, int] = field(default_factory=dict)
    pool_starts: dict[int, int] = field(default_factory=dict)
    # Signatures of an SLH-DSA pool whose mix of costs the samples were held to (every
    # round's samples scaled by poolmix.population_factors). None: not held.
    pool_matched: int | None = None

    @property
    def key(self) -> Key:
        return (self.cpu, self.suite, self.backend, self.operation)

    @property
    def round_range(self) -> tuple[float, float]:
        values = list(self.round_medians.values())
        return min(values), max(values)


def is_invalid_op(operation: str) -> bool:
    return operation.endswith("_invalid")


def _held_to_population(m: Measurement) -> list[float] | None:
    """The record's samples with each brought to the population's signature at its
    signature's rank (qprof.consensus.estimate.poolmix); None: no counts to do it with."""
    if (not m.samples_ns or not m.pool_size or m.pool_permutations is None
            or m.pool_fixed_permutations is None):
        return None
    factors = population_factors(m.suite, m.pool_permutations, m.pool_fixed_permutations)
    if factors is None or len(factors) != m.pool_size:
        return None
    start = m.pool_start or 0
    return [float(x) * factors[(start + j) % m.pool_size] for j, x in enumerate(m.samples_ns)]


def reduce_measurements(measurements: Iterable[Measurement]) -> dict[Key, Reduced]:
    groups: dict[Key, list[Measurement]] = {}
    for m in measurements:
        groups.setdefault((m.cpu, m.suite, m.backend, m.operation), []).append(m)
    out: dict[Key, Reduced] = {}
    for key, ms in groups.items():
        ms.sort(key=lambda m: m.round)
        round_medians: dict[int, float] = {}
        samples: dict[int, list[float]] = {}
        held: dict[int, int] = {}
        for m in ms:
            # Two records for one round (should not happen): keep the later one.
            round_medians[m.round] = float(m.median_ns)
            if m.samples_ns:
                matched = _held_to_population(m)
                samples[m.round] = matched or [float(x) for x in m.samples_ns]
                if matched is not None:
                    held[m.round] = m.pool_size or 0
                    round_medians[m.round] = sample_stats.median(matched)
                else:
                    held.pop(m.round, None)
        have_all_samples = len(samples) == len(round_medians)
        # Held only when every round was (else one statistic would mix two pools' mixes).
        pool_matched = (min(held.values()) if have_all_samples and samples
                        and set(held) == set(samples) else None)
        if pool_matched is None and held:
            samples = {m.round: [float(x) for x in m.samples_ns] for m in ms if m.samples_ns}
            round_medians = {m.round: float(m.median_ns) for m in ms}
        pooled = [x for r in sorted(samples) for x in samples[r]] if have_all_samples else []
        if is_invalid_op(key[3]) or not pooled:
            median = sample_stats.median(list(round_medians.values()))
            p95 = sample_stats.median([float(m.p95_ns) for m in ms])
        else:
            median = sample_stats.median(pooled)
            p95 = sample_stats.p95(pooled)
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
            p10_ns=sample_stats.percentile(pooled, 10) if pooled else None,
            p10_spread_bp=stats.round_spread_bp(
                [sample_stats.percentile(v, 10) for v in samples.values()]
            ) if have_all_samples and samples else None,
            turn_sizes={m.round: m.turn_size for m in ms if m.turn_size and m.round in samples},
            pool_sizes={m.round: m.pool_size for m in ms if m.pool_size and m.round in samples},
            pool_starts={m.round: m.pool_start for m in ms
                         if m.pool_size and m.pool_start and m.round in samples},
            pool_matched=pool_matched,
            round_p10s=(
                {r: sample_stats.percentile(v, 10) for r, v in samples.items()}
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
    suite: Reduced, unit: Reduced, unit_vu: int = NO_PROFILE_UNIT.vu, statistic: str = "median",
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
