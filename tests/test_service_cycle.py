"""What a cycle makes of its records: coverage lost/regained (where the ratio binds), the
block-time bound, disagreements, skew, and which CPUs a cycle measures. Real store, real
profile (profiles/qanum.toml), real records, real hardware snapshots as the daemon's root.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qprof.consensus import load_profile
from qprof.measure.records import Disagreement, End, Measurement, Meta
from qprof.measure.records_parts import CpuRow
from qprof.service.alerts import Alert, AlertDispatcher
from qprof.service.config import ConfigError, DaemonConfig
from qprof.service.cycle import CycleRunner, bench_config, select_cpus
from qprof.service.metrics import MetricsState
from qprof.service.store import Store

HW = Path(__file__).resolve().parent / "fixtures" / "hw"
# CPU 0 of the seeds' machine is a Kryo 4XX Silver: qanum's reference core, where the
# ratio binds.
SEEDS_ARM = HW / "seeds-arm"


def runner(tmp_path: Path, capped: dict[int, float | None] | None = None,
           backend: str = "liboqs", root: Path = SEEDS_ARM
           ) -> tuple[CycleRunner, list[Alert], MetricsState]:
    got: list[Alert] = []
    state = MetricsState(profile=load_profile("qanum"))
    r = CycleRunner(DaemonConfig(root=root), Store(tmp_path / "qprof.db"),
                    AlertDispatcher([got.append]),
                    state, backend, capped_now=lambda: dict(capped or {}),
                    online_now=lambda cpu: True)
    return r, got, state


def record_run(r: CycleRunner, run_id: str, t: float, medians: dict[str, float],
               capped: bool = False, backend: str = "liboqs") -> None:
    r._sink(Meta(run_id=run_id, started_at=t, qprof_version="t", command=[],
                 cpus=[CpuRow(cpu=0)]))
    for rnd in range(3):
        for suite, ns in medians.items():
            r._sink(Measurement(run_id=run_id, cpu=0, suite=suite, backend=backend,
                                operation="verify", round=rnd, n=10, median_ns=ns,
                                p95_ns=ns, finished_at=t + rnd, capped=capped,
                                cap_factor=2.24 if capped else 1.0))
    r._sink(End(run_id=run_id, finished_at=t + 5, status="finished"))


def test_coverage_lost_then_regained(tmp_path: Path) -> None:
    r, alerts, state = runner(tmp_path)
    record_run(r, "a", 1000.0, {"ML-DSA-44": 100_000.0, "ML-DSA-87": 280_000.0})
    r.refresh_results()
    assert alerts == []  # first verdicts are not changes
    assert [(c.suite, c.vu_estimate, c.covered) for c in state.coverage] == [
        ("ML-DSA-44", 100, True), ("ML-DSA-87", 280, True)]
    record_run(r, "b", 2000.0, {"ML-DSA-44": 100_000.0, "ML-DSA-87": 300_000.0})
    r.refresh_results()
    [lost] = alerts
    assert (lost.kind, lost.severity, lost.cpu) == ("coverage_lost", "critical", 0)
    assert lost.details["estimate"] == 300 and lost.details["constant"] == 290
    record_run(r, "c", 3000.0, {"ML-DSA-44": 100_000.0, "ML-DSA-87": 289_000.0})
    r.refresh_results()
    assert [a.kind for a in alerts] == ["coverage_lost", "coverage_regained"]
    assert state.last_cycle_ts == 3005.0


def test_restart_seeds_verdicts_without_alerts(tmp_path: Path) -> None:
    r, alerts, _ = runner(tmp_path)
    record_run(r, "a", 1000.0, {"ML-DSA-44": 100_000.0, "ML-DSA-87": 300_000.0})
    r2, alerts2, state2 = runner(tmp_path)
    r2.refresh_results(announce=False)
    assert alerts2 == [] and [c.covered for c in state2.coverage] == [True, False]


def test_numba_alone_is_comparison_never_a_verdict(tmp_path: Path) -> None:
    from qprof.service.metrics import QprofCollector

    r, alerts, state = runner(tmp_path, backend="numba")
    record_run(r, "a", 1000.0, {"ML-DSA-44": 100_000.0, "ML-DSA-87": 280_000.0},
               backend="numba")
    r.refresh_results()
    record_run(r, "b", 2000.0, {"ML-DSA-44": 100_000.0, "ML-DSA-87": 300_000.0},
               backend="numba")
    r.refresh_results()
    assert alerts == []  # no coverage_lost: numba alone was never covered or not
    assert [(c.suite, c.vu_estimate, c.covered, c.basis) for c in state.coverage] == [
        ("ML-DSA-44", 100, None, "comparison"), ("ML-DSA-87", 300, None, "comparison")]
    assert "numba alone: not what a node runs" in state.coverage[1].verdict
    families = {f.name: f for f in QprofCollector(state, {"version": "t"}).collect()}
    assert families["qprof_vu_covered"].samples == []
    assert {s.labels["basis"] for s in families["qprof_vu_estimate_basis_info"].samples} == {
        "comparison"}


def _families(state: MetricsState) -> dict[str, list[tuple[dict[str, str], float]]]:
    from qprof.service.metrics import QprofCollector

    return {f.name: [(s.labels, s.value) for s in f.samples]
            for f in QprofCollector(state, {"version": "t"}).collect()}


X86 = {"ML-DSA-44": 21_000.0, "ML-DSA-87": 46_000.0, "SLH-DSA-SHAKE-128s": 880_000.0,
       "SLH-DSA-SHAKE-256s": 1_850_000.0}  # this guest's shape: SLH-DSA far over its ratio


def test_a_ratio_that_does_not_bind_never_alerts(tmp_path: Path) -> None:
    """On x86 the SLH-DSA ratios exceed qanum's constants, which follow the reference
    cores: shown as not covered, not binding; no coverage_lost, no binding series at 0."""
    r, alerts, state = runner(tmp_path, root=HW / "vm-this-machine")
    record_run(r, "a", 1000.0, {**X86, "SLH-DSA-SHAKE-128s": 150_000.0})
    r.refresh_results()
    record_run(r, "b", 2000.0, X86)
    r.refresh_results()
    assert alerts == []
    slh = {c.suite: c for c in state.coverage}["SLH-DSA-SHAKE-128s"]
    assert (slh.covered, slh.ratio_binds, slh.policy_decision) == (False, False, "covered")
    assert slh.block_time_covered is True and "not binding here" in slh.verdict
    fam = _families(state)
    assert {(s["suite"], s["binding"], v) for s, v in fam["qprof_vu_covered"]
            if s["suite"].startswith("SLH")} == {("SLH-DSA-SHAKE-128s", "false", 0.0),
                                                 ("SLH-DSA-SHAKE-256s", "false", 0.0)}
    assert fam["qprof_block_time_covered"] == [({"cpu": "0", "profile": "qanum"}, 1.0)]


SILVER = {"ML-DSA-44": 190_750.0, "ML-DSA-87": 545_300.0, "SLH-DSA-SHAKE-128s": 3_005_000.0,
          "SLH-DSA-SHAKE-256s": 6_660_000.0}


def test_capped_reference_core_raises_block_time_exceeded(tmp_path: Path) -> None:
    """A Silver core held at 768 MHz of 1.80 GHz (fixture seeds-arm-silver-capped): the
    same ratios, but every signature 2.35x slower, so its worst-case block takes 2.35x the
    reference core's: block_time_exceeded, and block_time_restored once back."""
    r, alerts, state = runner(tmp_path, root=HW / "seeds-arm-silver-capped")
    record_run(r, "a", 1000.0, SILVER)
    r.refresh_results()
    assert alerts == [] and all(c.block_time_covered for c in state.coverage)
    record_run(r, "b", 2000.0, {s: 2.35 * t for s, t in SILVER.items()}, capped=True)
    r.refresh_results()
    [a] = alerts
    assert (a.kind, a.severity, a.cpu) == ("block_time_exceeded", "critical", 0)
    assert a.details["reference_core"] == "Silver"
    assert a.details["vs_reference"] == pytest.approx(2.35)
    assert a.details["block"] == "608 x ML-DSA-44 + 87 x SLH-DSA-SHAKE-128s"
    assert {c.policy_decision for c in state.coverage} == {"not_covered"}
    assert all(c.covered for c in state.coverage)  # the ratios still hold
    fam = _families(state)
    assert fam["qprof_block_time_covered"] == [({"cpu": "0", "profile": "qanum"}, 0.0)]
    [(labels, ref_s)] = fam["qprof_worst_block_reference_seconds"]
    assert labels["reference"] == "Silver" and ref_s == pytest.approx(0.377411)
    [(_, here_s)] = fam["qprof_worst_block_seconds"]
    assert here_s == pytest.approx(2.35 * 0.377411)
    record_run(r, "c", 3000.0, SILVER)
    r.refresh_results()
    assert [x.kind for x in alerts] == ["block_time_exceeded", "block_time_restored"]


def test_disagreement_alerts_at_once(tmp_path: Path) -> None:
    r, alerts, _ = runner(tmp_path)
    r._sink(Meta(run_id="a", started_at=1.0, qprof_version="t", command=[]))
    r._sink(Disagreement(run_id="a", cpu=4, suite="ML-DSA-87",
                         backends={"liboqs": True, "numba": False}, public_key_hex="ab" * 40,
                         message_hex="00", signature_hex="cd" * 40))
    [a] = alerts
    assert (a.kind, a.severity, a.cpu) == ("disagreement", "critical", 4)
    assert list(r.store.run_records("a"))[-1].type == "disagreement"


def test_result_measured_under_a_cap_is_flagged(tmp_path: Path) -> None:
    r, alerts, _ = runner(tmp_path)
    record_run(r, "a", 1000.0, {"ML-DSA-44": 100_000.0}, capped=True)
    r._check_skew(0, {}, "a")
    [a] = alerts
    assert a.kind == "result_skewed" and a.details["factor"] == 2.24
    r2, alerts2, _ = runner(tmp_path / "x", capped={0: 1.5})
    record_run(r2, "b", 1000.0, {"ML-DSA-44": 100_000.0})
    r2._check_skew(0, {}, "b")
    assert [x.details["factor"] for x in alerts2] == [1.5]


def test_select_cpus() -> None:
    clusters = {0: [0, 1, 2, 3], 1: [4, 5, 6], 2: [7]}
    online = {c: c != 4 and c != 7 for c in range(8)}
    # The highest online CPU of each cluster (qprof.hw.choose: CPU 0 takes more interrupts).
    assert select_cpus("clusters", clusters, online) == ([3, 6], ["cluster 2 has no online CPU"])
    assert select_cpus("all", clusters, online)[0] == [0, 1, 2, 3, 5, 6]
    assert select_cpus("0,4,9", clusters, online) == ([0], ["cpu 4 is offline",
                                                            "cpu 9 does not exist"])
    with pytest.raises(ConfigError):
        select_cpus("zero", clusters, online)


def test_bench_config_is_check_mode_on_one_cpu() -> None:

    cfg = DaemonConfig(suites=["ML-DSA-44"], quick=True, profile="qanum")
    bc = bench_config(cfg, 4, "numba")
    assert (bc.cpus, bc.backends, bc.mode, bc.nice, bc.suites) == (
        [4], ["numba"], "check", 10, ["ML-DSA-44"])
    assert bc.adaptive is False and bc.rounds == 3


def _shared_host_run(run_id: str, t: float, shares: tuple[float, ...]) -> list[Measurement]:
    """Interleaved rounds of 20 turns of 10 operations: in each round a neighbour slows
    the first ``share`` of the turns 1.6x, every suite alike (a shared host). Shares that
    change per round make round medians jump; equal shares give agreeing medians (auto
    takes the quiet ratio either way)."""
    out = []
    turns, size = 20, 10
    for rnd, busy_share in enumerate(shares):
        busy = round(turns * busy_share)
        for suite, quiet in (("ML-DSA-44", 100_000.0), ("ML-DSA-87", 280_000.0)):
            samples = [quiet * (1.6 if turn < busy else 1.0) * (1 + 0.001 * (i % 7))
                       for turn in range(turns + (suite == "ML-DSA-44"))
                       for i in range(size)]
            med = sorted(samples)[len(samples) // 2]
            out.append(Measurement(run_id=run_id, cpu=0, suite=suite, backend="liboqs",
                                   operation="verify", round=rnd, n=len(samples),
                                   median_ns=med, p95_ns=sorted(samples)[-10],
                                   finished_at=t + rnd, samples_ns=samples, turn_size=size))
    return out


@pytest.mark.parametrize("noisy", [False, True])
def test_metrics_use_the_check_verdicts_statistic(tmp_path: Path, noisy: bool) -> None:
    from qprof.consensus.judgement import judge
    from qprof.consensus.verdict import evaluate

    profile = load_profile("qanum")
    shares = (0.2, 0.7, 0.3, 0.8, 0.25) if noisy else (0.2,) * 5
    ms = _shared_host_run("a", 1000.0, shares)
    summary = judge(ms, profile)
    verdicts = {(r.cpu, r.suite): r for r in evaluate(profile, ms, statistic="auto")}
    for res in summary.results:
        cov = verdicts[(res.cpu, res.suite)]
        assert res.statistic == cov.statistic
        assert res.time_ns == cov.suite_time_ns  # what qprof_verify_seconds serves
    # Interleaved turns give the quiet ratio whether the round medians agree or not
    # (equal shares of contention in every round leave the medians agreeing and biased).
    assert {r.statistic for r in summary.results} == {"paired"}
    # Without a profile (it failed to load): the same choice from the samples alone.
    assert [(r.statistic, r.time_ns) for r in judge(ms, None).results] == [
        (r.statistic, r.time_ns) for r in summary.results]
    assert summary.coverage == list(verdicts.values())


def test_bench_config_matches_check_and_adds_the_shadow_pair() -> None:

    bc = bench_config(DaemonConfig(), 0, "liboqs", profile="qanum")
    assert bc.statistic == "auto" and bc.profile == "qanum"
    assert bc.operations == ["verify", "dual_shadow", "dual_shadow_invalid"]
    assert bench_config(DaemonConfig(dual=False), 0, "liboqs").operations is None
    # numba alone has no pair to compare.
    assert bench_config(DaemonConfig(), 0, "numba").operations is None


def test_wrong_verdict_note_alerts_as_a_disagreement(tmp_path: Path) -> None:
    from qprof.measure.records import Note

    r, alerts, _ = runner(tmp_path)
    r._sink(Meta(run_id="a", started_at=1.0, qprof_version="t", command=[]))
    r._sink(Note(run_id="a", level="error", kind="wrong_verdict", cpu=2,
                 text="CPU 2 ML-DSA-44 liboqs verify: 3 of 100 verdicts were wrong"))
    r._sink(Note(run_id="a", level="info", kind="drift", cpu=2, text="drift"))
    [a] = alerts
    assert (a.kind, a.severity, a.cpu) == ("disagreement", "critical", 2)
