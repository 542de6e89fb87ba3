"""A signature pool held to every signature's mix of costs (qprof.consensus.estimate.poolmix,
qprof.measure.poolcost): the population's distribution of chain steps, the factors that
bring a pool to it, what the records carry, and the estimator's interval."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hostile_exit import clean_exit

from qprof.consensus.estimate.estimator import estimate
from qprof.consensus.estimate.poolmix import (
    RESIDUAL_SD,
    Z95,
    population_factors,
    residual_se,
    with_residual,
)
from qprof.consensus.estimate.reduce import reduce_measurements
from qprof.measure.fixtures import Fixture, flip_one_byte
from qprof.measure.poolcost import counts_path, pool_cost
from qprof.measure.records import Measurement, RecordError, record_from_dict
from qprof.verify.slhdsa_calls import params_of, random_layer_steps, signature_steps_cdf, walk

DATA = Path(__file__).resolve().parent / "data" / "slhdsa"
SLH = ("SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s")


def _quantile(suite: str, p: float) -> float:
    cdf = np.asarray(signature_steps_cdf(suite))
    return float(np.interp(p, cdf, np.arange(cdf.size)))


@pytest.mark.parametrize("suite", SLH)
def test_population_is_d_independent_layers(suite: str) -> None:
    p = params_of(suite)
    cdf = np.asarray(signature_steps_cdf(suite))
    pmf = np.diff(cdf, prepend=0.0)
    assert cdf[-1] == pytest.approx(1.0) and (pmf >= -1e-12).all()
    k = np.arange(pmf.size)
    layer = random_layer_steps(p.n)
    assert float((pmf * k).sum()) == pytest.approx(p.d * layer.mean, rel=1e-9)
    sd = math.sqrt(float((pmf * (k - p.d * layer.mean) ** 2).sum()))
    assert sd == pytest.approx(math.sqrt(p.d) * layer.sd, rel=1e-6)


@pytest.mark.parametrize("suite", SLH)
def test_a_pool_is_brought_to_the_populations_quantiles(suite: str) -> None:
    fixed, n = 500, 64
    rng = np.random.default_rng(7)
    # A pool drawn 40 steps above the population, shuffled: each signature's value goes
    # to the population's quantile at its rank, the rank order is kept.
    steps = np.sort(rng.normal(_quantile(suite, 0.5) + 40, 90, n).round()).astype(int)
    order = rng.permutation(n)
    perms = [int(fixed + steps[i]) for i in order]
    factors = population_factors(suite, perms, fixed)
    assert factors is not None and len(factors) == n
    mapped = sorted(p * f for p, f in zip(perms, factors, strict=True))
    want = [fixed + _quantile(suite, (i + 0.5) / n) for i in range(n)]
    assert mapped == pytest.approx(want, rel=1e-12)
    assert np.mean(factors) < 1  # the pool was costlier than every signature's mix


def test_factors_refuse_what_cannot_be_a_verification() -> None:
    assert population_factors("ML-DSA-87", [100, 101], 50) is None
    assert population_factors("SLH-DSA-SHAKE-128s", [100, 40], 50) is None  # below fixed
    assert population_factors("SLH-DSA-SHAKE-128s", [], 0) is None
    assert population_factors("SLH-DSA-SHAKE-999s", [100], 50) is None


def test_residual_widens_each_side_in_quadrature() -> None:
    center, ci = 80.0, (79.2, 81.2)
    lo, hi = with_residual(ci, center, 256)
    extra = Z95 * RESIDUAL_SD / 16
    assert math.log(center / lo) == pytest.approx(math.hypot(math.log(center / 79.2), extra))
    assert math.log(hi / center) == pytest.approx(math.hypot(math.log(81.2 / center), extra))
    assert residual_se(8) == pytest.approx(RESIDUAL_SD / math.sqrt(8))


def _fixture(suite: str) -> Fixture:
    d = json.loads((DATA / f"{suite}.json").read_text())
    sig = bytes.fromhex(d["signature"])
    return Fixture(suite, bytes.fromhex(d["public_key"]), bytes.fromhex(d["message"]), sig,
                   flip_one_byte(sig), bytes.fromhex(d["context"]), "liboqs")


def test_pool_counts_are_the_walks_and_survive_a_broken_cache(tmp_path: Path) -> None:
    fx = _fixture("SLH-DSA-SHAKE-128s")
    w = walk(fx.suite, fx.public_key, fx.message, fx.signature, fx.context)
    cost = pool_cost(fx.suite, (fx, fx), tmp_path)
    assert cost is not None
    assert cost.permutations == (w.permutations.total,) * 2
    assert cost.fixed == w.permutations.total - sum(w.layer_steps)
    assert counts_path(fx.suite, tmp_path).is_file()
    for junk in ("{not json", '{"a": [1, 2]}', '[1, 2]', '{"x": "y"}', "\0" * 10):
        counts_path(fx.suite, tmp_path).write_text(junk)
        assert pool_cost(fx.suite, (fx,), tmp_path) == replace(
            cost, permutations=cost.permutations[:1])
    assert pool_cost("ML-DSA-44", (fx,), tmp_path) is None


def _record(suite: str, samples: list[float], perms: list[int] | None, fixed: int | None,
            start: int = 0, round_: int = 0) -> Measurement:
    return Measurement(
        run_id="r", cpu=1, suite=suite, backend="liboqs", operation="verify", round=round_,
        n=len(samples), median_ns=float(np.median(samples)), p95_ns=max(samples),
        samples_ns=samples, pool_size=len(perms) if perms else 4, pool_start=start,
        pool_permutations=perms, pool_fixed_permutations=fixed)


def test_reduction_holds_each_value_to_its_signatures_place() -> None:
    suite, fixed = "SLH-DSA-SHAKE-256s", 537
    perms = [fixed + 4000, fixed + 4100, fixed + 3950, fixed + 4200]
    factors = population_factors(suite, perms, fixed)
    assert factors is not None
    samples = [1000.0, 1010.0, 990.0, 1020.0, 1000.0, 1010.0]
    red = reduce_measurements([_record(suite, samples, perms, fixed, start=2)])
    (r,) = red.values()
    assert r.pool_matched == 4
    assert r.samples_by_round[0] == pytest.approx(
        [x * factors[(2 + j) % 4] for j, x in enumerate(samples)])
    # A round without counts: no round is held (one statistic, one mix).
    mixed = reduce_measurements([_record(suite, samples, perms, fixed),
                                 _record(suite, samples, None, None, round_=1)])
    (m,) = mixed.values()
    assert m.pool_matched is None and m.samples_by_round[0] == samples


def test_records_refuse_counts_that_do_not_fit_the_pool() -> None:
    good = {"type": "measurement", "run_id": "r", "cpu": 0, "suite": "SLH-DSA-SHAKE-128s",
            "backend": "liboqs", "operation": "verify", "round": 0, "n": 2,
            "median_ns": 5.0, "p95_ns": 6.0, "pool_size": 2, "pool_permutations": [300, 310],
            "pool_fixed_permutations": 284}
    assert isinstance(record_from_dict(good), Measurement)
    for bad in ({"pool_permutations": [300]}, {"pool_fixed_permutations": None},
                {"pool_fixed_permutations": 305}, {"pool_permutations": [300, True]},
                {"pool_permutations": "300"}, {"pool_fixed_permutations": -1}):
        with pytest.raises(RecordError):
            record_from_dict({**good, **bad})


def test_a_held_pool_interval_is_the_measurements_and_its_residual() -> None:
    """The estimator on a run whose SLH-DSA pool is held: its full interval is the
    measurement's alone widened by the residual (resampling the signatures would add their
    whole spread again); without counts the signatures are resampled."""
    suite, fixed = "SLH-DSA-SHAKE-128s", 284
    rng = np.random.default_rng(3)
    perms = [int(fixed + s) for s in rng.normal(1870, 80, 16).round()]
    recs = []
    for r in range(6):
        unit = list(rng.normal(16000, 80, 64))
        recs.append(_record("ML-DSA-44", unit, None, None, round_=r))
        cost = [p * 0.284 * (1 + rng.normal(0, 0.004)) for p in perms]
        recs.append(_record(suite, [cost[(r + j) % 16] for j in range(64)], perms, fixed,
                            start=r, round_=r))
    full = {e.suite: e for e in estimate(recs, statistic="median", replicates=200)}
    held = {e.suite: e for e in estimate(recs, statistic="median", replicates=200,
                                         signatures=False)}
    e, h = full[suite], held[suite]
    assert e.ratio == h.ratio and e.ratio_ci is not None and h.ratio_ci is not None
    assert e.ratio_ci == pytest.approx(with_residual(h.ratio_ci, e.ratio, 16))


def test_finding_1_counts_beyond_any_signature_are_counted_again(tmp_path: Path) -> None:
    """Issue 49 finding 1: a counts cache edited past what any signature can walk made
    poolmix scale every value down (12332 VU judged as 3001, "covered"). Such counts are
    counted again, and a record carrying them is refused."""
    fx = _fixture("SLH-DSA-SHAKE-128s")
    honest = pool_cost(fx.suite, (fx,), tmp_path)
    assert honest is not None
    path = counts_path(fx.suite, tmp_path)
    ((key, (perms, steps)),) = json.loads(path.read_text()).items()
    most = params_of(fx.suite).d * 510  # every digit 0: 32 x 15 + the checksum's 30
    for edited in ([perms + 4 * most, steps + 4 * most],  # beyond the maximum
                   [honest.fixed + most + 1, most + 1],
                   [perms + 100, steps]):  # a fixed part no verification has
        path.write_text(json.dumps({key: edited}))
        assert pool_cost(fx.suite, (fx,), tmp_path) == honest
    record = {"type": "measurement", "run_id": "r", "cpu": 0, "suite": fx.suite,
              "backend": "liboqs", "operation": "verify", "round": 0, "n": 2,
              "median_ns": 5.0, "p95_ns": 6.0, "pool_size": 2,
              "pool_fixed_permutations": honest.fixed}
    assert isinstance(record_from_dict(
        {**record, "pool_permutations": [honest.fixed + most] * 2}), Measurement)
    for bad in ([honest.fixed + most + 1, perms], [4 * perms, 4 * perms]):
        with pytest.raises(RecordError, match="at most 3570"):
            record_from_dict({**record, "pool_permutations": bad})
    with pytest.raises(RecordError, match="at least 284"):
        record_from_dict({**record, "pool_permutations": [300, 300],
                          "pool_fixed_permutations": 3})
    # The finding's input through the command: such a record in a run under check --from.
    import lzma
    import subprocess
    import sys

    runs = sorted((Path(__file__).parent / "data" / "runs").glob("*.jsonl.xz"))
    lines = lzma.decompress(runs[0].read_bytes()).decode().splitlines()
    at = next(i for i, line in enumerate(lines) if '"measurement"' in line
              and fx.suite in line)
    lines[at] = json.dumps({**json.loads(lines[at]), "pool_size": 2,
                            "pool_fixed_permutations": honest.fixed,
                            "pool_permutations": [4 * perms, 4 * perms]})
    (tmp_path / "edited.jsonl").write_text("\n".join(lines) + "\n")
    done = subprocess.run([sys.executable, "-m", "qprof", "check", "--from",
                           str(tmp_path / "edited.jsonl"), "--profile", "qanum"],
                          capture_output=True, text=True, timeout=300)
    clean_exit(done.returncode, done.stdout, done.stderr)
    assert "at most 3570 are possible" in done.stderr, done.stderr  # the line left out
