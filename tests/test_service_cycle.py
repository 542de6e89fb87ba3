"""What a cycle makes of its records: coverage lost/regained, disagreements, skew, and
which CPUs a cycle measures. Real store, real profile (profiles/qanum.toml), real records.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qprof.consensus import load_profile
from qprof.measure.records import Disagreement, End, Measurement, Meta
from qprof.service.alerts import Alert, AlertDispatcher
from qprof.service.config import ConfigError, DaemonConfig
from qprof.service.cycle import CycleRunner, bench_config, select_cpus
from qprof.service.metrics import MetricsState
from qprof.service.store import Store


def runner(tmp_path: Path, capped: dict[int, float | None] | None = None
           ) -> tuple[CycleRunner, list[Alert], MetricsState]:
    got: list[Alert] = []
    state = MetricsState(profile=load_profile("qanum"))
    r = CycleRunner(DaemonConfig(), Store(tmp_path / "qprof.db"), AlertDispatcher([got.append]),
                    state, "numba", capped_now=lambda: dict(capped or {}),
                    online_now=lambda cpu: True)
    return r, got, state


def record_run(r: CycleRunner, run_id: str, t: float, medians: dict[str, float],
               capped: bool = False) -> None:
    r._sink(Meta(run_id=run_id, started_at=t, qprof_version="t", command=[],
                 cpus=[{"cpu": 0}]))
    for rnd in range(3):
        for suite, ns in medians.items():
            r._sink(Measurement(run_id=run_id, cpu=0, suite=suite, backend="numba",
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
    assert select_cpus("clusters", clusters, online) == ([0, 5], ["cluster 2 has no online CPU"])
    assert select_cpus("all", clusters, online)[0] == [0, 1, 2, 3, 5, 6]
    assert select_cpus("0,4,9", clusters, online) == ([0], ["cpu 4 is offline",
                                                            "cpu 9 does not exist"])
    with pytest.raises(ConfigError):
        select_cpus("zero", clusters, online)


def test_bench_config_is_check_mode_on_one_cpu() -> None:
    from qprof.measure.config import BenchConfig

    cfg = DaemonConfig(suites=["ML-DSA-44"], quick=True, profile="qanum")
    bc = bench_config(BenchConfig, cfg, 4, "numba")
    assert (bc.cpus, bc.backends, bc.mode, bc.nice, bc.suites) == (
        [4], ["numba"], "check", 10, ["ML-DSA-44"])
    assert bc.adaptive is False and bc.rounds == 3
