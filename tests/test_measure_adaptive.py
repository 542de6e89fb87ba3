"""The engine's parts as units: the adaptive stopping rule, progress/ETA, the protocol."""

from __future__ import annotations

import random
from pathlib import Path

from qprof.consensus.estimate.stopping import StoppingRule
from qprof.measure.adaptive import pair_fits
from qprof.measure.config import ProgressEvent
from qprof.measure.progress import Progress
from qprof.measure.protocol import (
    Job,
    Task,
    TaskResult,
    WorkerEvent,
    WorkerResult,
    decode_more,
    encode_more,
)
from qprof.measure.records import Measurement


def _rounds(suite: str, ns: float, rounds: int, jitter: float, seed: int) -> list[Measurement]:
    rng = random.Random(seed)
    out = []
    for r in range(rounds):
        samples = [ns * (1 + rng.uniform(-jitter, jitter)) for _ in range(40)]
        samples.sort()
        out.append(Measurement(run_id="t", cpu=0, suite=suite, backend="liboqs",
                               operation="verify", round=r, n=len(samples),
                               median_ns=samples[len(samples) // 2], p95_ns=samples[-2],
                               samples_ns=samples))
    return out


def _run(jitter: float, rounds: int = 5, seed: int = 1) -> list[Measurement]:
    return (_rounds("ML-DSA-44", 100_000.0, rounds, jitter, seed)
            + _rounds("ML-DSA-87", 290_000.0, rounds, jitter, seed + 1))


def test_rule_stops_when_the_ratio_is_sure_and_not_before():
    rule = StoppingRule("ML-DSA-44", base_rounds=5, target_ci_bp=50.0)
    assert not rule.needs_more(_run(jitter=0.001), cpu=0)  # CI a few bp wide: sure
    assert rule.needs_more(_run(jitter=0.2), cpu=0)  # CI hundreds of bp wide: more rounds


def test_rule_asks_for_more_while_the_ml_dsa_rounds_disagree():
    steady = _run(jitter=0.0005)
    jumpy = [m if m.round != 2 or m.suite != "ML-DSA-87" else Measurement(
        **{**m.__dict__, "median_ns": m.median_ns * 1.05,
           "samples_ns": [x * 1.05 for x in m.samples_ns or []]}) for m in steady]
    rule = StoppingRule("ML-DSA-44", base_rounds=5, target_ci_bp=10_000.0, max_spread_bp=100.0)
    assert not rule.needs_more(steady, cpu=0)
    assert rule.needs_more(jumpy, cpu=0)  # one round 500 bp off


def test_rule_asks_for_more_while_the_verdict_straddles_the_constant():
    from qprof.consensus import load_profile

    profile = load_profile("qanum")
    # ML-DSA-87 at 2.895x the unit: 289.5 VU, with a CI crossing 290 (the constant).
    ms = (_rounds("ML-DSA-44", 100_000.0, 5, 0.01, 3)
          + _rounds("ML-DSA-87", 289_500.0, 5, 0.01, 4))
    loose = StoppingRule("ML-DSA-44", 5, target_ci_bp=10_000.0, max_spread_bp=10_000.0)
    held = StoppingRule("ML-DSA-44", 5, target_ci_bp=10_000.0, max_spread_bp=10_000.0,
                        profile=profile)
    assert not loose.needs_more(ms, cpu=0)
    assert held.needs_more(ms, cpu=0)


def test_one_more_pair_only_within_the_time_limit():
    assert pair_fits(100.0, None, 10.0, [], [], 1.0)
    assert pair_fits(0.0, 20.0, 10.0, [], [], 1.0)  # 15 s + 1 s start-up fit in 20
    assert not pair_fits(5.0, 20.0, 10.0, [], [], 1.0)
    # Workers took twice their plan so far: a pair of 10 s is expected to take 20.
    assert not pair_fits(0.0, 19.0, 10.0, [40.0], [20.0], 1.0)
    assert pair_fits(0.0, 21.0, 10.0, [40.0], [20.0], 1.0)


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _progress(ncpus: int = 1, floor: float = 0.0,
              limit: float | None = None) -> tuple[Progress, _Clock, list[ProgressEvent]]:
    clock, events = _Clock(), []
    p = Progress(events.append, limit, now=clock)
    p.plan(cpu_work=10.0, ncpus=ncpus, pair_work=2.0, floor_s=floor)
    return p, clock, events


def _work(p: Progress, clock: _Clock, seconds: float) -> None:
    clock.t += seconds
    p.work_done += seconds
    p.report(message="done")


def test_eta_is_the_pairs_the_rule_said_it_needs():
    """Issue 30: the ETA moves by the rule's answer, not by the rounds allowed (it jumped
    97 s -> 2476 s -> 876 s); the bar never goes back and ends at 1."""
    p, clock, events = _progress()
    p.start_cpu(adaptive=True)
    for _ in range(5):
        _work(p, clock, 2.0)
    assert events[-1].eta_s == 0.0  # base rounds done, the rule not asked yet
    p.rule_says(6)  # "6 more pairs"
    p.add_pair()
    p.rule_says(5)
    _work(p, clock, 2.0)
    assert events[-1].eta_s == 10.0  # 5 pairs of 2 s at the speed so far
    etas = []
    for left in (4, 3, 2, 1, 0):
        p.add_pair()
        p.rule_says(left)
        _work(p, clock, 2.0)
        etas.append(events[-1].eta_s)
    assert etas == [8.0, 6.0, 4.0, 2.0, 0.0]
    p.end_cpu()
    p.report(final=True)
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


def test_the_round_counter_is_the_rules_own_total():
    """Issue 52: "round 1/7" ... "31/31" grew with every pair; the counter's total is the
    base rounds, the pairs added and the pairs the rule still says it needs."""
    p, clock, events = _progress()
    p.start_cpu(adaptive=True)
    p.report(round=4, rounds=5)
    assert "round 5/5" in events[-1].line()  # the rule not asked yet: the base rounds
    p.rule_says(6)
    p.report(round=4, rounds=5)
    assert events[-1].rounds == 17 and "round 5/17" in events[-1].line()
    p.add_pair()
    p.rule_says(5)
    p.report(round=5, rounds=7)
    assert events[-1].rounds == 17 and events[-1].eta_s is not None


def test_before_the_rule_is_asked_a_cpu_runs_to_its_floor():
    p, clock, events = _progress(ncpus=2, floor=50.0)
    p.start_cpu(adaptive=True)
    _work(p, clock, 4.0)
    # This CPU: 46 s to its floor; the next one: its floor too.
    assert events[-1].eta_s == 96.0
    p.signing(None)  # (signing is over once a CPU started: it does not count)
    assert p.eta_s() == 96.0


def test_the_rules_half_way_answer_keeps_the_eta_from_falling_to_zero_at_the_floor():
    """The monitor showed "99 % · ETA 621 s": the ETA fell to 0 at the floor, then the rule
    asked for many pairs. Its half-way answer counts before the floor; no answer counts
    more pairs than the CPU may add."""
    p, clock, events = _progress(floor=20.0)
    p.plan(cpu_work=10.0, ncpus=1, pair_work=2.0, floor_s=20.0, max_pairs=8)
    p.start_cpu(adaptive=True)
    _work(p, clock, 10.0)
    p.rule_says(12, preview=True)  # capped: 8 pairs at most
    _work(p, clock, 0.0)
    assert events[-1].eta_s == 16.0  # 8 pairs of 2 s, more than the 10 s to the floor
    _work(p, clock, 10.0)  # at the floor: the ETA is still the rule's pairs, not 0
    assert events[-1].eta_s == 16.0 and events[-1].fraction < 0.6


def test_signing_counts_before_the_first_round():
    p, clock, events = _progress(floor=0.0)
    p.signing(None)
    p.report(message="signing")
    assert events[-1].eta_s is None  # no signature yet: no rate, no ETA
    clock.t = 3.0
    p.signing(12.0)
    p.report(message="signing")
    assert events[-1].eta_s == 22.0  # 12 s of signing, then 10 s of base rounds
    assert 0.0 < events[-1].fraction < 0.2


def test_eta_counts_nothing_past_the_time_limit():
    p, clock, events = _progress(floor=50.0, limit=14.0)
    p.start_cpu(adaptive=True)
    _work(p, clock, 10.0)
    assert events[-1].eta_s == 4.0
    clock.t = 20.0
    assert p.eta_s() == 0.0


def test_protocol_round_trips(tmp_path: Path):
    task = Task("ML-DSA-44", "liboqs+numba", "dual_shadow", 0.3, 30, 4000, round=4, n=70,
                dual=("liboqs", "numba"))
    job = Job(cpu=1, nice=10, timer="wall", fixtures=None, result="r.json", pyperf="p.json",
              parent=42, tasks=(task,), interleave_block_s=0.004, serve=True)
    job.write(tmp_path / "job.json")
    assert Job.read(tmp_path / "job.json") == job
    assert decode_more(encode_more([task])) == [task]
    assert decode_more("done\n") is None and decode_more("") is None
    ev = WorkerEvent("done", 3, task.name, n=70)
    assert WorkerEvent.parse(ev.line()) == ev
    assert WorkerEvent.parse("Traceback (most recent call last):") is None
    assert WorkerEvent.parse('@qprof {"event": "explode"}') is None
    res = WorkerResult(1, [TaskResult(0, task.name, 2, 1, 1.0, 2.0, (1e-4, 2e-4), checks=2,
                                      turn_size=1)])
    res.write(tmp_path / "res.json")
    assert WorkerResult.read(tmp_path / "res.json") == res


def test_rule_stops_only_when_the_verdict_is_decided():
    """The rule asks the verdict's own estimator: once it stops (with the profile), no
    suite's verdict is "unsure"; while one is, it asks for more rounds."""
    from qprof.consensus import load_profile
    from qprof.consensus.verdict import evaluate

    profile = load_profile("qanum")
    rule = StoppingRule("ML-DSA-44", 5, statistic="auto", target_ci_bp=10_000.0,
                        max_spread_bp=10_000.0, profile=profile)
    for ratio, seed in ((2.895, 3), (2.80, 5), (2.99, 7)):
        ms = (_rounds("ML-DSA-44", 100_000.0, 5, 0.01, seed)
              + _rounds("ML-DSA-87", ratio * 100_000.0, 5, 0.01, seed + 1))
        unsure = any(r.decision == "unsure"
                     for r in evaluate(profile, ms, replicates=400))
        assert rule.needs_more(ms, cpu=0) is unsure, ratio


def test_rule_says_about_how_many_pairs_it_needs():
    """Intervals shrink as 1/sqrt(rounds): a wider one asks for more pairs, a sure one
    for none, and an unsure one for at least one."""
    rule = StoppingRule("ML-DSA-44", base_rounds=5, target_ci_bp=50.0)
    assert rule.pairs_needed(_run(jitter=0.001), cpu=0) == 0
    few, many = (rule.pairs_needed(_run(jitter=j), cpu=0) for j in (0.04, 0.2))
    assert 1 <= few < many
