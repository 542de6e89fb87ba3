"""A fleet on loopback: two `qprof daemon` processes with different hardware snapshots and
stored results, the real Prometheus scraping both with contrib/prometheus/qprof.rules.yml
loaded. Prometheus's HTTP API then shows the capped node's alert pending, the fleet-wide
lowest margins, and the coverage-lost alert firing for the node whose constant falls
short. Every wait is bounded; everything started is stopped.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from test_contrib_prometheus import RULES
from test_service_daemon import NO_CYCLE, DaemonProc, wait_for
from test_service_prometheus import prometheus_binary, query, running_prometheus, scrape_target
from test_tui_helpers import (
    BIG_LITTLE,
    GOLD_CAPPED_MEDIANS,
    SILVER_MEDIANS,
    THIS_VM,
    fixture_root,
    seed_store,
)

from qprof.consensus import load_profile, vu_estimate


def _node(tmp_path: Path, name: str, root: Path, cpu: int, medians: dict[str, int],
          capped: bool) -> DaemonProc:
    """A daemon over ``root`` serving one stored liboqs run (no cycle runs)."""
    state = tmp_path / name
    state.mkdir()
    seed_store(state / "qprof.db", cpu=cpu, medians=medians, capped=capped,
               cap_factor=0.45 if capped else None, run_id=f"seed-{name}",
               t0=time.time() - 600)
    return DaemonProc(tmp_path, "--root", str(root), "--profile", "qanum", *NO_CYCLE,
                      state_dir=state)


def settle(port: int, expr: str, label: str, want: dict[str, float],
           timeout: float = 30.0) -> dict[str, float]:
    """Poll ``expr`` until its values by ``label`` equal ``want`` (or time runs out);
    returns the last values seen."""
    got: dict[str, float] = {}

    def matches() -> bool:
        got.clear()
        got.update({r["metric"].get(label, ""): float(r["value"][1])  # type: ignore[index]
                    for r in query(port, expr)})
        return got == pytest.approx(want)

    with contextlib.suppress(AssertionError):
        wait_for(f"{expr} = {want}", matches, timeout=timeout, every=0.5)
    return dict(got)


# The capped Gold core, with ML-DSA-87 slowed beyond its constant: 296 VU > 290.
ARM_MEDIANS = dict(GOLD_CAPPED_MEDIANS, **{"ML-DSA-87": 359_000})


def test_two_nodes_one_capped(tmp_path: Path) -> None:
    prometheus_binary()
    vm, arm = fixture_root(THIS_VM), fixture_root(BIG_LITTLE)
    nodes: list[DaemonProc] = []
    try:
        nodes.append(_node(tmp_path, "vm", vm, 0, SILVER_MEDIANS, capped=False))
        nodes.append(_node(tmp_path, "arm", arm, 6, ARM_MEDIANS, capped=True))
        vm_target, arm_target = (scrape_target(d) for d in nodes)
        with running_prometheus(tmp_path, [vm_target, arm_target], (RULES,)) as port:
            _check_fleet(port, vm_target, arm_target)
    finally:
        for d in nodes:
            d.stop()


def _check_fleet(port: int, vm_target: str, arm_target: str) -> None:
    # The seeds' Gold cluster (CPUs 6-7) is capped at 1.08 of 2.42 GHz: the rule's alert
    # is pending at once (it fires after 10 min, longer than a test should run).
    alerts = wait_for("QprofCpuCapHeld in ALERTS",
                      lambda: query(port, 'ALERTS{alertname="QprofCpuCapHeld"}'),
                      timeout=60, every=0.5)
    seen = {(a["metric"]["instance"], a["metric"]["cpu"], a["metric"]["alertstate"])
            for a in alerts}  # type: ignore[index]
    assert seen in ({(arm_target, "6", "pending"), (arm_target, "7", "pending")},
                    {(arm_target, "6", "firing"), (arm_target, "7", "firing")}), seen
    # Rules evaluate on their own clock: wait until both nodes' scrapes are in them.
    assert settle(port, "qprof:cpus_capped:sum", "", {"": 2.0}) == {"": 2.0}

    # Fleet-lowest margin per suite: 1 - estimate/constant at the worse of the two nodes.
    profile = load_profile("qanum")
    unit = {"vm": SILVER_MEDIANS["ML-DSA-44"], "arm": ARM_MEDIANS["ML-DSA-44"]}
    expected = {
        suite: min(1 - vu_estimate(medians[suite], unit[node]) / profile.verify_units[suite]
                   for node, medians in (("vm", SILVER_MEDIANS), ("arm", ARM_MEDIANS)))
        for suite in SILVER_MEDIANS}
    margins = settle(port, "suite:qprof_vu_margin:min", "suite", expected)
    assert margins == pytest.approx(expected)
    per_node = settle(port, 'instance_suite:qprof_vu_margin:min{suite="ML-DSA-87"}',
                      "instance", {vm_target: 1 - 286 / 290, arm_target: 1 - 296 / 290})
    assert per_node == pytest.approx({vm_target: 1 - 286 / 290, arm_target: 1 - 296 / 290})
    assert margins["ML-DSA-87"] == pytest.approx(1 - 296 / 290)  # the arm node's, below 0

    # ... so the arm node is not covered, and QprofCoverageLost (no hold time) fires.
    assert settle(port, "qprof:nodes_not_covered:count", "", {"": 1.0}) == {"": 1.0}
    lost = wait_for("QprofCoverageLost firing", lambda: query(
        port, 'ALERTS{alertname="QprofCoverageLost",alertstate="firing"}'), timeout=30,
        every=0.5)
    assert [(a["metric"]["instance"], a["metric"]["cpu"], a["metric"]["suite"])  # type: ignore[index]
            for a in lost] == [(arm_target, "6", "ML-DSA-87")]
    print("fleet margins:", margins, "cap alerts:", sorted(seen))
