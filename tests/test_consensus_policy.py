"""The chain's rule (qprof.consensus.policy) on real hardware snapshots: where the ratio
binds (the reference cores, matched by design or part), the block-time bound everywhere,
and the decision that counts."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from qprof.commands.check import EXIT_CODES
from qprof.consensus import load_profile
from qprof.consensus.judgement import overall_decision as run_decision
from qprof.consensus.policy import (
    NOT_BINDING,
    CoreDesign,
    cores_from_records,
    cores_from_topology,
    matching_reference,
    ratio_binding,
)
from qprof.consensus.profiles import profile_from_dict
from qprof.consensus.verdict import evaluate
from qprof.consensus.verdict_types import CoverageResult
from qprof.hw.topology import read_topology
from qprof.measure.records import Measurement, Meta

HW = Path(__file__).resolve().parent / "fixtures" / "hw"
# The seeds' Silver core (2026-10-14_arm, silver-core2.jsonl): liboqs verify medians.
SILVER = {"ML-DSA-44": 190_750.0, "ML-DSA-87": 545_300.0, "SLH-DSA-SHAKE-128s": 3_005_000.0,
          "SLH-DSA-SHAKE-256s": 6_660_000.0}
# This guest's shape (Intel Xeon, AVX-512, liboqs 0.16): SLH-DSA far over its ratio.
X86 = {"ML-DSA-44": 20_300.0, "ML-DSA-87": 44_300.0, "SLH-DSA-SHAKE-128s": 842_000.0,
       "SLH-DSA-SHAKE-256s": 1_775_000.0}


def run_records(root: Path, cpu: int, medians: dict[str, float], rounds: int = 5,
                spread: float = 0.002, seed: int = 1) -> list[Meta | Measurement]:
    """A recorded check-like run on ``root``'s CPU: its Meta (the topology rows, as the
    engine writes them) and rounds of samples around ``medians``."""
    rng = random.Random(seed)
    topo = read_topology(str(root))
    meta = Meta(run_id="r", started_at=0.0, qprof_version="t", command=["qprof", "check"],
                cpus=[c.to_dict() for c in topo.cpus if c.cpu == cpu])
    out: list[Meta | Measurement] = [meta]
    for rnd in range(rounds):
        for suite, ns in medians.items():
            # Symmetric about the median, which is then exactly the seeds' figure.
            half = sorted(abs(rng.gauss(0, spread)) for _ in range(20))
            samples = sorted([ns * (1 - d) for d in half] + [ns] + [ns * (1 + d) for d in half])
            out.append(Measurement(run_id="r", cpu=cpu, suite=suite, backend="liboqs",
                                   operation="verify", round=rnd, n=len(samples),
                                   median_ns=samples[20], p95_ns=samples[38],
                                   samples_ns=samples, finished_at=float(rnd)))
    return out


def judge(profile: str, root: Path, cpu: int, medians: dict[str, float]
          ) -> dict[str, CoverageResult]:
    records = run_records(root, cpu, medians)
    ms = [r for r in records if isinstance(r, Measurement)]
    return {r.suite: r for r in evaluate(load_profile(profile), ms, replicates=200,
                                         cores=cores_from_records(records))}


def test_seeds_silver_gives_the_seeds_ratio_verdicts():
    """On a Kryo 4XX Silver (fixture seeds-arm, CPU 2) with the seeds' medians: the ratio
    binds (a reference core), SLH-DSA-128s is not covered at 1200 and covered at 1600."""
    then = judge("qanum-2026-10-14", HW / "seeds-arm", 2, SILVER)
    now = judge("qanum", HW / "seeds-arm", 2, SILVER)
    for results in (then, now):
        assert all(r.ratio_binds and r.binding_reference == "Silver" for r in results.values())
        assert all(r.block_time_covered for r in results.values())  # it IS the reference
    slh = then["SLH-DSA-SHAKE-128s"]
    assert (slh.vu_estimate, slh.vu_constant, slh.decision) == (1576, 1200, "not_covered")
    assert slh.policy_decision == "not_covered"
    assert run_decision(list(then.values())) == "not_covered"
    assert (then["SLH-DSA-SHAKE-256s"].vu_estimate, then["SLH-DSA-SHAKE-256s"].covered) == (
        3492, True)
    assert (now["SLH-DSA-SHAKE-128s"].decision, now["SLH-DSA-SHAKE-128s"].vu_estimate) == (
        "covered", 1576)
    assert run_decision(list(now.values())) == "covered"
    bt = now["ML-DSA-44"].block_time
    assert bt is not None and bt.vs_reference == pytest.approx(1.0, abs=0.01)


def test_gold_binds_by_part_and_a_plain_a55_by_design():
    profile = load_profile("qanum")
    gold = cores_from_topology(read_topology(str(HW / "seeds-arm")))[6]
    match = matching_reference(profile, gold)
    assert match is not None and match[0].name == "Gold" and "part" in match[1]
    a55 = CoreDesign(cpu=0, uarch="Cortex-A55", implementer="0x41", part="0xd05")
    match = matching_reference(profile, a55)
    assert match is not None and match[0].name == "Silver" and "design" in match[1]
    assert not ratio_binding(profile, CoreDesign(cpu=0, uarch="Cortex-A76",
                                                 implementer="0x41", part="0xd0b")).binds
    unknown = ratio_binding(profile, CoreDesign(cpu=3))
    assert unknown.binds and "unknown" in unknown.why


def test_x86_ratio_does_not_bind_and_the_time_bound_holds():
    """The issue's x86 guest: SLH-DSA over its constants, not binding; the worst-case
    block (125 x SLH-DSA-128s) well under the same block on Silver: exit 0."""
    results = judge("qanum", HW / "vm-this-machine", 1, X86)
    slh = results["SLH-DSA-SHAKE-128s"]
    assert (slh.covered, slh.ratio_binds, slh.block_time_covered) == (False, False, True)
    assert NOT_BINDING in slh.verdict
    assert slh.policy_decision == "covered"
    bt = slh.block_time
    assert bt is not None and bt.worst.composition == (("SLH-DSA-SHAKE-128s", 125),)
    assert bt.reference_core == "Silver"
    assert bt.reference_ns == pytest.approx(125 * SILVER["SLH-DSA-SHAKE-128s"])
    assert bt.vs_reference is not None and bt.vs_reference < 0.35
    assert EXIT_CODES[run_decision(list(results.values()))] == 0


def test_ratio_binds_all_makes_x86_fail_as_before(tmp_path: Path):
    qanum = load_profile("qanum")
    text = qanum.path.read_text().replace('ratio_binds = "reference"', 'ratio_binds = "all"')
    path = tmp_path / "all.toml"
    path.write_text(text)
    import tomllib

    profile = profile_from_dict(tomllib.loads(text), path)
    assert profile.ratio_binds == "all"
    records = run_records(HW / "vm-this-machine", 1, X86)
    ms = [r for r in records if isinstance(r, Measurement)]
    results = evaluate(profile, ms, replicates=200, cores=cores_from_records(records))
    slh = {r.suite: r for r in results}["SLH-DSA-SHAKE-128s"]
    assert (slh.ratio_binds, slh.policy_decision) == (True, "not_covered")
    assert EXIT_CODES[run_decision(results)] == 1


def test_capped_silver_exceeds_the_time_bound_though_its_ratios_hold():
    capped = {s: 2.35 * t for s, t in SILVER.items()}
    results = judge("qanum", HW / "seeds-arm-silver-capped", 2, capped)
    assert all(r.covered for r in results.values())
    assert {r.block_time_covered for r in results.values()} == {False}
    assert run_decision(list(results.values())) == "not_covered"
    bt = results["ML-DSA-87"].block_time
    assert bt is not None and bt.vs_reference == pytest.approx(2.35, rel=0.01)
    assert "EXCEEDS the time bound" in bt.why


def test_interval_fraction_bound(tmp_path: Path):
    import tomllib

    qanum = load_profile("qanum")
    text = qanum.path.read_text().replace("max_vs_reference = 1.0",
                                          "max_vs_reference = 1.0\nmax_interval_fraction = 0.001")
    profile = profile_from_dict(tomllib.loads(text), tmp_path / "frac.toml")
    records = run_records(HW / "vm-this-machine", 1, X86)
    ms = [r for r in records if isinstance(r, Measurement)]
    results = evaluate(profile, ms, replicates=100, cores=cores_from_records(records))
    bt = results[0].block_time
    # 105 ms of a 75 s interval is 0.14 %: over 0.1 %, though well under the reference.
    assert bt is not None and bt.interval_fraction == pytest.approx(bt.time_ns / 75e9)
    assert bt.vs_reference is not None and bt.vs_reference < 1
    assert bt.covered is False and "interval" in bt.why


def test_check_json_rows_carry_both_verdicts():
    from qprof.commands.check import result_json

    results = judge("qanum", HW / "vm-this-machine", 1, X86)
    row = result_json(results["SLH-DSA-SHAKE-256s"], "auto")
    assert (row["covered"], row["ratio_binds"], row["block_time_covered"]) == (False, False,
                                                                               True)
    assert row["policy_decision"] == "covered"
    assert row["block_time_ns"] == pytest.approx(125 * X86["SLH-DSA-SHAKE-128s"])
    assert row["block_time_reference_ns"] == pytest.approx(125 * SILVER["SLH-DSA-SHAKE-128s"])
    worst = row["worst_block"]
    assert isinstance(worst, dict) and worst["composition"] == {"SLH-DSA-SHAKE-128s": 125}
    assert worst["binding"] == ["verify_units"] and worst["reference_core"] == "Silver"
    import json

    json.dumps(row)  # every value is JSON


def test_a_block_time_near_the_bound_is_unsure_over_the_rounds():
    """Rounds whose block times straddle the reference core's: no ✓/✗, unsure."""
    from qprof.consensus.policy import block_time_verdict

    profile = load_profile("qanum")
    near = {s: 0.99 * t for s, t in SILVER.items()}
    rounds = {s: (0.95 * t, 0.99 * t, 1.04 * t) for s, t in SILVER.items()}
    bt = block_time_verdict(profile, near, rounds)
    assert (bt.decision, bt.covered) == ("unsure", None)
    assert bt.time_range_ns is not None and bt.time_range_ns[0] < bt.reference_ns  # type: ignore[operator]
    assert "unsure" in bt.why
    clear = block_time_verdict(profile, near, {s: (0.98 * t,) for s, t in SILVER.items()})
    assert clear.decision == "covered" and clear.covered is True
    from qprof.consensus.policy import policy_decision

    assert policy_decision("covered", True, None, block_time_unsure=True) == "unsure"
    assert policy_decision("not_covered", True, None, block_time_unsure=True) == "not_covered"
