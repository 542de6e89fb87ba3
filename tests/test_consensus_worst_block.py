"""The worst-case block under every limit: the seeds' block table, and the costliest
mixture checked against a brute-force search over compositions."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from qprof.consensus import load_profile
from qprof.consensus.worst_block import (
    LIMIT_BYTES,
    LIMIT_VU,
    BlockLimits,
    suite_block,
    worst_block,
)

SILVER = load_profile("qanum").reference_cores[0].verify_median_ns


def test_seed_block_table_at_the_constants_then():
    """Seed 2026-10-14_arm, "Blocks filled up to the first consensus limit" (3500 then)."""
    limits = BlockLimits.of(load_profile("qanum-2026-10-14"))
    mldsa = suite_block(limits, "ML-DSA-87")
    assert (mldsa.spends, mldsa.verify_units, mldsa.auth_bytes) == (415, 120_350, 2_998_806)
    assert mldsa.binding == (LIMIT_BYTES,)
    assert mldsa.verify_units / mldsa.max_verify_units == pytest.approx(0.60, abs=0.005)
    slh = suite_block(limits, "SLH-DSA-SHAKE-256s")
    assert (slh.spends, slh.verify_units, slh.auth_bytes) == (57, 199_500, 1_702_264)
    assert slh.binding == (LIMIT_VU,)


def test_qanum_blocks_of_one_suite():
    limits = BlockLimits.of(load_profile("qanum"))
    got = {s: (b.spends, b.binding) for s in limits.verify_units
           if (b := suite_block(limits, s))}
    assert got == {"ML-DSA-44": (802, (LIMIT_BYTES,)), "ML-DSA-87": (415, (LIMIT_BYTES,)),
                   "SLH-DSA-SHAKE-128s": (125, (LIMIT_VU,)),
                   "SLH-DSA-SHAKE-256s": (55, (LIMIT_VU,))}
    # By VU alone 2,000 ML-DSA-44 spends would need 7.5 MB of keys and signatures.
    assert 2000 * limits.bytes_of("ML-DSA-44") > 7_400_000  # type: ignore[operator]


def _brute_force_qanum(limits: BlockLimits, times: dict[str, float]) -> float:
    """Every composition of ML-DSA-87, both SLH-DSA (numpy), ML-DSA-44 filling the rest."""
    vu, by = limits.verify_units, limits.auth_bytes
    assert by is not None
    budget = limits.spend_bytes_budget
    assert budget is not None
    n87 = np.arange(0, limits.max_verify_units // vu["ML-DSA-87"] + 1)
    best = 0.0
    for a in range(limits.max_verify_units // vu["SLH-DSA-SHAKE-128s"] + 1):
        for b in range(limits.max_verify_units // vu["SLH-DSA-SHAKE-256s"] + 1):
            rest_vu = (limits.max_verify_units - a * vu["SLH-DSA-SHAKE-128s"]
                       - b * vu["SLH-DSA-SHAKE-256s"] - n87 * vu["ML-DSA-87"])
            rest_by = (budget - a * by["SLH-DSA-SHAKE-128s"] - b * by["SLH-DSA-SHAKE-256s"]
                       - n87 * by["ML-DSA-87"])
            ok = (rest_vu >= 0) & (rest_by >= 0)
            if not ok.any():
                continue
            n44 = np.minimum(rest_vu // vu["ML-DSA-44"], rest_by // by["ML-DSA-44"])
            t = (a * times["SLH-DSA-SHAKE-128s"] + b * times["SLH-DSA-SHAKE-256s"]
                 + n87 * times["ML-DSA-87"] + n44 * times["ML-DSA-44"])
            best = max(best, float(t[ok].max()))
    return best


def test_worst_block_on_silver_is_a_mixture_and_the_brute_force_optimum():
    limits = BlockLimits.of(load_profile("qanum"))
    w = worst_block(limits, SILVER)
    assert w.time_ns == pytest.approx(_brute_force_qanum(limits, SILVER), rel=1e-12)
    # Costlier than any block of one suite (125 x SLH-DSA-128s: 375.6 ms): a mixture of
    # the most time per VU (ML-DSA-44) and the fewest bytes per VU (SLH-DSA-128s).
    single = max(suite_block(limits, s, SILVER[s]).time_ns for s in SILVER)
    assert single == pytest.approx(125 * SILVER["SLH-DSA-SHAKE-128s"])
    assert w.time_ns > single
    assert {s for s, _ in w.composition} == {"ML-DSA-44", "SLH-DSA-SHAKE-128s"}
    assert set(w.binding) == {LIMIT_VU, LIMIT_BYTES}
    assert w.verify_units <= 200_000 and w.auth_bytes is not None
    assert w.auth_bytes <= 3_000_000
    assert w.time_on(SILVER) == pytest.approx(w.time_ns)


def test_worst_block_on_x86_like_times_is_slh_dsa_128s():
    """ML-DSA-44 gains from AVX2, SLH-DSA does not: the SLH-DSA-128s block dominates."""
    limits = BlockLimits.of(load_profile("qanum"))
    x86 = {"ML-DSA-44": 21_000.0, "ML-DSA-87": 47_000.0, "SLH-DSA-SHAKE-128s": 905_000.0,
           "SLH-DSA-SHAKE-256s": 1_990_000.0}
    w = worst_block(limits, x86)
    assert w.time_ns == pytest.approx(_brute_force_qanum(limits, x86), rel=1e-12)
    assert w.composition == (("SLH-DSA-SHAKE-128s", 125),)
    assert w.binding == (LIMIT_VU,)
    assert w.time_on(SILVER) == pytest.approx(125 * SILVER["SLH-DSA-SHAKE-128s"])


def _brute_force(limits: BlockLimits, times: dict[str, float]) -> float:
    suites = list(times)
    vu = limits.verify_units
    budget = limits.spend_bytes_budget
    ranges = [range(limits.max_verify_units // vu[s] + 1) for s in suites]
    best = 0.0
    for combo in itertools.product(*ranges):
        if sum(n * vu[s] for s, n in zip(suites, combo, strict=True)) > limits.max_verify_units:
            continue
        if budget is not None and sum(n * (limits.bytes_of(s) or 0) for s, n in
                                      zip(suites, combo, strict=True)) > budget:
            continue
        best = max(best, sum(n * times[s] for s, n in zip(suites, combo, strict=True)))
    return best


@pytest.mark.parametrize("seed", range(60))
def test_random_small_programs_against_brute_force(seed: int):
    rng = random.Random(seed)
    suites = [f"S{i}" for i in range(rng.randint(1, 4))]
    limits = BlockLimits(
        max_verify_units=rng.randint(5, 60),
        verify_units={s: rng.randint(1, 12) for s in suites},
        max_auth_bytes=rng.choice([None, rng.randint(20, 400)]),
        auth_bytes={s: rng.randint(1, 90) for s in suites if rng.random() < 0.9},
        per_block_bytes=rng.randint(0, 10))
    times = {s: float(rng.randint(1, 50)) for s in suites}
    if limits.max_auth_bytes is not None and any(limits.bytes_of(s) is None for s in suites):
        # A suite without a byte size is held to the VU budget alone.
        assert worst_block(limits, times).unsized
    w = worst_block(limits, times)
    assert w.time_ns == pytest.approx(_brute_force(limits, times), rel=1e-12), (limits, times)
    assert w.verify_units <= limits.max_verify_units
    assert w.time_ns == pytest.approx(w.time_on(times) or 0.0)
    for limit in w.binding:  # a binding limit: without it the block would be costlier
        relaxed = BlockLimits(
            max_verify_units=10**6 if limit == LIMIT_VU else limits.max_verify_units,
            verify_units=limits.verify_units,
            max_auth_bytes=None if limit == LIMIT_BYTES else limits.max_auth_bytes,
            auth_bytes=limits.auth_bytes, per_block_bytes=limits.per_block_bytes)
        if all(relaxed.bytes_of(s) for s in suites) or limit == LIMIT_BYTES:
            assert worst_block(relaxed, times).time_ns > w.time_ns


def test_left_out_and_the_same_block_elsewhere():
    limits = BlockLimits.of(load_profile("qanum"))
    w = worst_block(limits, {"ML-DSA-44": 100.0, "ML-DSA-87": 290.0})
    assert w.left_out == ("SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s")
    assert w.time_on({"ML-DSA-44": 1.0}) in (None, w.count("ML-DSA-44") * 1.0)
    assert w.text().count(" x ") == len(w.composition)
