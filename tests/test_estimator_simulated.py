"""The estimator's known error, pinned on simulated runs (tests/simulate.py).

On every documented noise shape the estimate ``qprof check`` uses (``auto``) must be
within 50 bp of the truth on average, its 95 % interval must hold the true Verify-Unit
count in at least 90 % of runs, and it must never do worse than the plain median rule;
and no run may show an estimate outside its own interval. The full table (more runs, every
statistic) is bench/simulate_verdict.py's, in docs/ESTIMATOR.md.

``TODAY_FAILS`` lists what the estimator does not meet (strict xfails, so a fix shows as
a failure to move it out); empty since the quiet-turn pairs divide each operation by the
unit's speed around it and ``auto`` no longer takes the 10th percentile (docs/ESTIMATOR.md).
"""

from __future__ import annotations

import pytest
import simulate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qprof.consensus import load_profile

PROFILE = load_profile("qanum")
# Per shape: enough to see a bias of 50 bp and a coverage far below 90 %. Every random
# draw is seeded (simulator, bootstrap, hypothesis), so the outcome is the same each run.
# 16, not 8: "never worse than the median" compares RMS errors, and over 8 runs of the
# drift shape SLH-DSA-SHAKE-256s read 36 vs 32 bp or 42 vs 31 by which signatures the
# rounds took (over 30 runs 35 vs 31 and 34 vs 30: no difference).
RUNS = 16
PINNED = [s for s in simulate.SHAPES
          if s.name != "offline" and s.name not in simulate.RATIO_SHAPES]
MAX_BIAS_BP = 50.0
MIN_COVERAGE = 0.9
# "Worse": a larger RMS error (beyond the noise of RUNS runs) or a lower coverage.
RMS_SLACK_BP = 10.0

TODAY_FAILS: set[tuple[str, str]] = set()

# The shapes of contention that moves the ratio itself (issue 18): phases of seconds to
# minutes, a drifting quiet ratio. Runs of 15 rounds (~20 simulated s, no stopping rule:
# CI seconds); an undecided run (too few quiet data: the verdict says unsure) is scored
# apart, and at most two thirds of the runs may be undecided (RATIO_MAX_UNDECIDED).
RATIO_SHAPES = [simulate.SHAPES_BY_NAME[n] for n in simulate.RATIO_SHAPES]
# 24 runs: a decided run's SLH-DSA error spreads by ~40 bp here, so the mean of the 4
# decided runs of 6 had a standard error of ~20 bp, as large as the pin (smt-up
# SLH-DSA-SHAKE-256s read -33 bp over 4 runs, -12 over 15, +13 over 19 of another seed).
RATIO_RUNS = 24
RATIO_MAX_BIAS_BP = 25.0
# What the estimator does not meet on them (docs/ESTIMATOR.md): nothing today.
RATIO_FAILS: set[tuple[str, str]] = set()
# smt-here is contended 85 % of the time in phases of 1-60 s: about 38 % of 20 s runs
# (15 rounds) lie inside one phase, and the quiet gaps between phases last 5 s on
# average, so about half of its runs rightly have too few quiet turns (14 of 24).
RATIO_MAX_UNDECIDED = 2 / 3


@pytest.fixture(scope="module")
def cells() -> dict[tuple[str, str, str], simulate.Cell]:
    return simulate.simulate_table(PROFILE, PINNED, runs=RUNS, seed=11,
                                   statistics=("median", "auto"))


def _params(check: str) -> list:
    return [pytest.param(s.name, marks=pytest.mark.xfail(
        strict=True, reason="today's estimator; see docs/ESTIMATOR.md"))
            if (check, s.name) in TODAY_FAILS else s.name for s in PINNED]


def _suites(cells: dict, shape: str, statistic: str) -> list[simulate.Cell]:
    return [c for c in cells.values() if (c.shape, c.statistic) == (shape, statistic)]


@pytest.mark.parametrize("shape", _params("bias"))
def test_auto_bias_within_50_bp(cells: dict, shape: str) -> None:
    got = {c.suite: round(c.bias_bp) for c in _suites(cells, shape, "auto")}
    assert all(abs(b) <= MAX_BIAS_BP for b in got.values()), got


@pytest.mark.parametrize("shape", _params("coverage"))
def test_auto_interval_covers_the_truth(cells: dict, shape: str) -> None:
    got = {c.suite: c.coverage for c in _suites(cells, shape, "auto")}
    assert all(c >= MIN_COVERAGE for c in got.values()), got


@pytest.mark.parametrize("shape", _params("not_worse"))
def test_auto_never_worse_than_the_median(cells: dict, shape: str) -> None:
    for c in _suites(cells, shape, "auto"):
        median = cells[(shape, "median", c.suite)]
        assert c.rms_bp <= median.rms_bp + RMS_SLACK_BP, (c.suite, c.rms_bp, median.rms_bp)
        assert c.coverage >= median.coverage, (c.suite, c.coverage, median.coverage)


def test_a_cpu_that_goes_offline_gives_no_verdict() -> None:
    run = simulate.simulate_run(simulate.SHAPES_BY_NAME["offline"], 1)
    assert run.measurements == []
    assert simulate.estimate(PROFILE, run.records, "auto") == []
    assert any(getattr(r, "kind", None) == "cpu_aborted" for r in run.records)


@st.composite
def shapes(draw: st.DrawFn) -> simulate.Shape:
    cap = draw(st.none() | st.floats(0.1, 0.9))
    return simulate.Shape(
        "drawn", "hypothesis",
        bursts_per_s=draw(st.floats(0.0, 3.0)),
        burst_slowdown=(1.3, draw(st.floats(1.3, 2.0))),
        drift_per_s=draw(st.floats(-0.01, 0.01)),
        cap_at=cap, cap_factor=draw(st.floats(1.1, 2.5)), cpufreq=draw(st.booleans()))


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(shape=shapes(), seed=st.integers(0, 2**16), statistic=st.sampled_from(
    simulate.STATISTICS), rounds=st.integers(3, 9), budget=st.floats(0.03, 0.3))
def test_no_estimate_outside_its_own_interval(shape: simulate.Shape, seed: int,
                                              statistic: str, rounds: int,
                                              budget: float) -> None:
    run = simulate.simulate_run(shape, seed, simulate.Config(rounds=rounds, budget_s=budget))
    for o in simulate.estimate(PROFILE, run.records, statistic):
        if o.vu_low is not None and o.vu_high is not None:
            assert o.vu_low <= o.vu_estimate <= o.vu_high, o


def test_the_stopping_rule_adds_pairs_on_a_busy_host_within_its_limits() -> None:
    cfg = simulate.Config(adaptive=True, min_cpu_s=0.0)
    quiet = simulate.simulate_run(simulate.SHAPES_BY_NAME["quiet"], 1, cfg)
    # Seed 2: spells cover enough turns of some rounds that they give no pairs.
    busy = simulate.simulate_run(simulate.SHAPES_BY_NAME["heavy"], 2, cfg)
    assert {m.round for m in quiet.measurements} == set(range(cfg.rounds))
    rounds = {m.round for m in busy.measurements}
    assert cfg.rounds < len(rounds) <= cfg.max_rounds and (len(rounds) - cfg.rounds) % 2 == 0


def test_a_sure_rule_ends_the_rounds_only_past_the_floor() -> None:
    # The check mode's floor: a quiet host the rule finds sure at once is measured on
    # for min_cpu_s (the host's minute-to-minute wander), then stops before the limit.
    cfg = simulate.Config(adaptive=True, min_cpu_s=12.0, time_limit_s=60.0)
    run = simulate.simulate_run(simulate.SHAPES_BY_NAME["quiet"], 1, cfg)
    ms = run.measurements
    rounds = {m.round for m in ms}
    span = max(m.finished_at or 0.0 for m in ms) - simulate.EPOCH
    assert len(rounds) > cfg.rounds and (len(rounds) - cfg.rounds) % 2 == 0
    assert cfg.min_cpu_s <= span < cfg.min_cpu_s + 6.0, span


@pytest.fixture(scope="module")
def ratio_cells() -> dict[tuple[str, str, str], simulate.Cell]:
    return simulate.simulate_table(PROFILE, RATIO_SHAPES, runs=RATIO_RUNS, seed=5,
                                   cfg=simulate.Config(rounds=15), statistics=("auto",))


def _ratio_params(check: str) -> list:
    return [pytest.param(s.name, marks=pytest.mark.xfail(
        strict=True, reason="today's estimator; see docs/ESTIMATOR.md"))
            if (check, s.name) in RATIO_FAILS else s.name for s in RATIO_SHAPES]


@pytest.mark.parametrize("shape", _ratio_params("bias"))
def test_quiet_ratio_bias_within_25_bp_when_contention_moves_the_ratio(
        ratio_cells: dict, shape: str) -> None:
    got = {c.suite: round(c.bias_bp) for c in _suites(ratio_cells, shape, "auto")}
    assert all(abs(b) <= RATIO_MAX_BIAS_BP for b in got.values()), got


@pytest.mark.parametrize("shape", _ratio_params("coverage"))
def test_quiet_ratio_interval_covers_the_truth_when_contention_moves_the_ratio(
        ratio_cells: dict, shape: str) -> None:
    got = {c.suite: c.coverage for c in _suites(ratio_cells, shape, "auto")}
    assert all(c >= MIN_COVERAGE for c in got.values()), got


@pytest.mark.parametrize("shape", [s.name for s in RATIO_SHAPES])
def test_at_most_two_thirds_of_the_runs_undecided(ratio_cells: dict, shape: str) -> None:
    for c in _suites(ratio_cells, shape, "auto"):
        assert c.undecided <= c.runs * RATIO_MAX_UNDECIDED, (c.suite, c.undecided, c.runs)
        assert all(c.inside), c.suite  # every estimate inside its own interval
