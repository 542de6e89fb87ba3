"""Reduction rules: median, p95, round spread, unit drift, bootstrap CI of a ratio."""

from __future__ import annotations

import pytest

from qprof.consensus.estimate import stats as est
from qprof.measure import stats


def test_median_and_p95():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5
    values = list(range(1, 101))  # 1..100
    # linear interpolation between closest ranks: position 0.95 * 99 = 94.05
    assert stats.p95(values) == pytest.approx(95.05)
    assert stats.percentile([10, 20], 50) == 15
    assert stats.p95([7]) == 7
    with pytest.raises(ValueError):
        stats.median([])
    with pytest.raises(ValueError):
        stats.percentile([1], 101)


def test_summary():
    s = stats.summarize([1.0, 2.0, 3.0, 4.0])
    assert (s.n, s.median_ns, s.min_ns, s.max_ns, s.mean_ns) == (4, 2.5, 1.0, 4.0, 2.5)
    assert s.p95_ns == pytest.approx(3.85)
    assert stats.summarize([5.0]).stdev_ns is None


def test_round_spread_and_drift_in_basis_points():
    # seed 001 Silver ML-DSA-44 rounds 190.6 and 191.2 us: (191.2 - 190.6) / 190.6
    assert est.round_spread_bp([190.6, 191.2, 190.9]) == pytest.approx(31.48, abs=0.01)
    assert est.round_spread_bp([100.0]) == 0.0
    assert est.drift_bp(100.0, 100.53) == pytest.approx(53.0)
    assert est.drift_bp(100.0, 99.0) == pytest.approx(-100.0)


def test_bootstrap_ratio_ci_is_deterministic_and_brackets_the_ratio():
    unit = [[100.0 + (i % 7) for i in range(200)] for _ in range(3)]
    suite = [[290.0 + (i % 11) for i in range(200)] for _ in range(2)]
    lo, hi = est.bootstrap_ratio_ci(suite, unit, replicates=300)
    ratio = stats.median([x for r in suite for x in r]) / stats.median([x for r in unit for x in r])
    assert lo <= ratio <= hi
    assert (lo, hi) == est.bootstrap_ratio_ci(suite, unit, replicates=300)
    assert hi - lo < 0.1


def test_bootstrap_widens_with_drift_between_rounds():
    flat = [[100.0] * 100, [100.0] * 100, [100.0] * 100]
    drifting = [[100.0] * 100, [104.0] * 100, [100.0] * 100]
    suite = [[300.0] * 100, [300.0] * 100]
    lo1, hi1 = est.bootstrap_ratio_ci(suite, flat, replicates=300)
    lo2, hi2 = est.bootstrap_ratio_ci(suite, drifting, replicates=300)
    assert hi1 - lo1 == pytest.approx(0.0)
    assert hi2 - lo2 > 0.05
    with pytest.raises(ValueError):
        est.bootstrap_ratio_ci([], flat)


def test_vu_by_round_uses_the_neighbouring_unit_rounds():
    from qprof.consensus.estimate.reduce import Reduced, vu_by_round

    def red(medians):
        return Reduced(0, "S", "b", "verify", 1, 1.0, 1.0, medians, 0.0)

    unit = red({0: 100.0, 2: 110.0, 4: 120.0})
    suite = red({1: 210.0, 3: 230.0})
    assert vu_by_round(suite, unit) == {1: 200.0, 3: 200.0}  # drift cancels out


def test_paired_ratios_keep_only_turns_between_quiet_unit_turns():
    """A/B/A at the scale of turns: an operation of a B turn is over the unit's speed in
    the A turns on both sides; pairs at the quiet speed give the quiet level, a round
    slowed throughout is held to the run's quiet speed (its pairs are contended)."""
    from qprof.consensus.estimate.quiet import paired_ratios
    from qprof.consensus.estimate.reduce import Reduced

    def red(suite: str, rounds: dict[int, list[float]], size: int) -> Reduced:
        return Reduced(1, suite, "liboqs", "verify", sum(map(len, rounds.values())), 0.0, 0.0,
                       {r: sorted(v)[len(v) // 2] for r, v in rounds.items()}, 0.0,
                       samples_by_round=rounds, turn_sizes=dict.fromkeys(rounds, size))

    quiet, slow = [10.0, 10.0], [15.0, 15.0]
    unit = red("ML-DSA-44", {
        0: (quiet * 5 + slow * 5) * 3,  # turn medians 10 x5, 15 x5, three times
        1: quiet * 30,
        2: slow * 30,  # the whole round slowed by a neighbour
        3: quiet * 30,
    }, 2)
    suite = red("ML-DSA-87", {
        0: ([25.0] * 5 + [40.0] * 5) * 3,
        # Turn 1: a spell shorter than a turn slowed one operation between two quiet A
        # turns: it counts, and the median does not follow it.
        1: [25.0, 40.0] + [25.0] * 28,
        2: [40.0] * 30,
        3: [25.0] * 30,
    }, 1)
    p = paired_ratios(suite, unit)
    assert p is not None and p.usable
    # Round 0: of each 10 turns, turns 0-3 have quiet units on both sides.
    assert p.quiet_fraction == {0: 12 / 29, 1: 1.0, 2: 0.0, 3: 1.0}
    assert p.contended == [2]
    assert p.by_round == {0: 2.5, 1: 2.5, 3: 2.5}
    assert p.ratio == 2.5 and p.spread_bp == 0.0
    assert p.unit_quiet_ns == 10.0 and p.quiet_turns == 12 + 29 + 29
    assert p.ratios_by_round[1][1] == 4.0
    assert p.unit_by_round == {0: 10.0, 1: 10.0, 3: 10.0} and p.unit_spread_bp == 0.0
    assert p.contended_share > 0.2


def test_paired_ratio_is_the_ratio_of_medians_for_a_skewed_suite():
    """Turns of two operations of a right-skewed suite: the median of turn medians (the
    pair's mean) would lie above the operations' median; each operation over the unit's
    speed around it gives the ratio of the medians, as the seeds' rule on a quiet core."""
    from qprof.consensus.estimate.quiet import paired_ratios
    from qprof.consensus.estimate.reduce import Reduced

    def red(suite: str, rounds: dict[int, list[float]], size: int) -> Reduced:
        return Reduced(1, suite, "liboqs", "verify", sum(map(len, rounds.values())), 0.0, 0.0,
                       {r: sorted(v)[len(v) // 2] for r, v in rounds.items()}, 0.0,
                       samples_by_round=rounds, turn_sizes=dict.fromkeys(rounds, size))

    ops = [100.0, 100.0, 100.0, 130.0, 100.0, 100.0, 100.0, 130.0, 100.0, 130.0]
    unit = red("ML-DSA-44", dict.fromkeys(range(3), [1.0] * 6), 1)
    suite = red("SLH-DSA-SHAKE-256s", dict.fromkeys(range(3), ops), 2)
    p = paired_ratios(suite, unit)
    assert p is not None and p.ratio == 100.0  # turn medians would give 115
