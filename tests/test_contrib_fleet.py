"""A fleet on loopback: two `qprof daemon` processes with different hardware snapshots and
stored results, the real Prometheus scraping both with contrib/prometheus/qprof.rules.yml
loaded. Prometheus's HTTP API then shows the capped node's alerts pending, the fleet-wide
lowest margins where the ratio binds, the coverage-lost alert firing for the reference
core whose constant falls short (and not for the x86 node, whose SLH-DSA ratios are over
the constants where they do not bind), and the block-time alert firing for the capped
reference core whose worst-case block takes longer than the reference core's. Every wait
is bounded; everything started is stopped.
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


def _node(tmp_path: Path, name: str, root: Path,
          runs: list[tuple[int, dict[str, int], bool]]) -> DaemonProc:
    """A daemon over ``root`` serving stored liboqs runs, one per (cpu, medians, capped)
    (no cycle runs)."""
    state = tmp_path / name
    state.mkdir()
    for cpu, medians, capped in runs:
        seed_store(state / "qprof.db", cpu=cpu, medians=medians, capped=capped,
                   cap_factor=0.45 if capped else None, run_id=f"seed-{name}-{cpu}",
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
# A Silver core (the reference core) held at 768 MHz of 1.80 GHz: the seeds' ratios, every
# time 2.35x longer, so its worst-case block takes 2.35x the reference core's.
SILVER_CAPPED_MEDIANS = {s: round(2.35 * t) for s, t in SILVER_MEDIANS.items()}
# This x86 guest's shape (liboqs): ML-DSA gains from AVX2, SLH-DSA does not, so the
# SLH-DSA ratios are far over qanum's constants, which do not bind here.
X86_MEDIANS = {"ML-DSA-44": 21_000, "ML-DSA-87": 46_000, "SLH-DSA-SHAKE-128s": 880_000,
               "SLH-DSA-SHAKE-256s": 1_850_000}
SILVER_CAPPED = BIG_LITTLE.parent / "seeds-arm-silver-capped"


def test_two_nodes_one_capped(tmp_path: Path) -> None:
    prometheus_binary()
    vm, arm = fixture_root(THIS_VM), fixture_root(SILVER_CAPPED)
    nodes: list[DaemonProc] = []
    try:
        nodes.append(_node(tmp_path, "vm", vm, [(0, X86_MEDIANS, False)]))
        nodes.append(_node(tmp_path, "arm", arm, [(6, ARM_MEDIANS, True),
                                                  (2, SILVER_CAPPED_MEDIANS, True)]))
        vm_target, arm_target = (scrape_target(d) for d in nodes)
        with running_prometheus(tmp_path, [vm_target, arm_target], (RULES,)) as port:
            _check_fleet(port, vm_target, arm_target)
    finally:
        for d in nodes:
            d.stop()


def _margin(medians: dict[str, int], suite: str) -> float:
    constant = load_profile("qanum").verify_units[suite]
    return 1 - vu_estimate(medians[suite], medians["ML-DSA-44"]) / constant


def _check_fleet(port: int, vm_target: str, arm_target: str) -> None:
    # The fixture's Silver (CPUs 0-5, 0.77 of 1.80 GHz) and Gold (6-7, 1.08 of 2.42 GHz)
    # clusters are capped: the rule's alert is pending at once (it fires after 10 min,
    # longer than a test should run).
    alerts = wait_for("QprofCpuCapHeld in ALERTS",
                      lambda: query(port, 'ALERTS{alertname="QprofCpuCapHeld"}'),
                      timeout=60, every=0.5)
    seen = {(a["metric"]["instance"], a["metric"]["cpu"], a["metric"]["alertstate"])
            for a in alerts}  # type: ignore[index]
    states = {state for _, _, state in seen}
    assert len(states) == 1 and states <= {"pending", "firing"}, seen
    assert {(i, c) for i, c, _ in seen} == {(arm_target, str(c)) for c in range(8)}, seen
    # Rules evaluate on their own clock: wait until both nodes' scrapes are in them.
    assert settle(port, "qprof:cpus_capped:sum", "", {"": 8.0}) == {"": 8.0}

    # Fleet-lowest margin per suite where the ratio binds: the arm node's reference
    # cores (Gold CPU 6, Silver CPU 2), not the x86 node, whose SLH-DSA ratios are far
    # over the constants that do not follow them.
    expected = {suite: min(_margin(ARM_MEDIANS, suite), _margin(SILVER_CAPPED_MEDIANS, suite))
                for suite in SILVER_MEDIANS}
    margins = settle(port, "suite:qprof_vu_margin:min", "suite", expected)
    assert margins == pytest.approx(expected)
    assert all(_margin(X86_MEDIANS, s) < -0.5 for s in ("SLH-DSA-SHAKE-128s",
                                                       "SLH-DSA-SHAKE-256s"))
    per_node = settle(port, 'instance_suite:qprof_vu_margin:min{suite="ML-DSA-87"}',
                      "instance", {vm_target: _margin(X86_MEDIANS, "ML-DSA-87"),
                                   arm_target: 1 - 296 / 290})
    assert per_node == pytest.approx({vm_target: _margin(X86_MEDIANS, "ML-DSA-87"),
                                      arm_target: 1 - 296 / 290})
    assert margins["ML-DSA-87"] == pytest.approx(1 - 296 / 290)  # the arm node's, below 0

    # ... so the arm node is not covered, and QprofCoverageLost (no hold time) fires for
    # its Gold core alone: the x86 node's SLH-DSA ratios do not bind.
    assert settle(port, "qprof:nodes_not_covered:count", "", {"": 1.0}) == {"": 1.0}
    lost = wait_for("QprofCoverageLost firing", lambda: query(
        port, 'ALERTS{alertname="QprofCoverageLost",alertstate="firing"}'), timeout=30,
        every=0.5)
    assert [(a["metric"]["instance"], a["metric"]["cpu"], a["metric"]["suite"])  # type: ignore[index]
            for a in lost] == [(arm_target, "6", "ML-DSA-87")]
    not_binding = query(port, 'qprof_vu_covered{binding="false"} == 0')
    assert {(r["metric"]["instance"], r["metric"]["suite"])  # type: ignore[index]
            for r in not_binding} == {(vm_target, "SLH-DSA-SHAKE-128s"),
                                      (vm_target, "SLH-DSA-SHAKE-256s")}

    # The capped Silver core's worst-case block takes 2.35x the reference core's: the
    # time bound's alert fires for it, and for no other CPU (Gold capped at 1.08 GHz and
    # the x86 guest are still faster than Silver at full speed).
    late = wait_for("QprofBlockTimeExceeded firing", lambda: query(
        port, 'ALERTS{alertname="QprofBlockTimeExceeded",alertstate="firing"}'), timeout=30,
        every=0.5)
    assert [(a["metric"]["instance"], a["metric"]["cpu"])  # type: ignore[index]
            for a in late] == [(arm_target, "2")]
    from qprof.consensus.policy import block_time_verdict

    def vs(medians: dict[str, int]) -> float:
        return block_time_verdict(load_profile("qanum"), medians).vs_reference or 0.0

    want = {"0": vs(X86_MEDIANS), "6": vs(ARM_MEDIANS), "2": vs(SILVER_CAPPED_MEDIANS)}
    ratios = settle(port, "qprof:worst_block_vs_reference:ratio", "cpu", want)
    assert ratios == pytest.approx(want)
    assert ratios["2"] == pytest.approx(2.35, rel=1e-4) and ratios["0"] < 0.3
    # qprof calibrate through the real Prometheus's HTTP API: constants from the CPUs
    # where the ratio binds (the arm node's Gold and Silver), none from the x86 node; the
    # capped Silver core still breaks the time bound with them (exit 1).
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "qprof", "calibrate", "--prometheus",
                          f"http://127.0.0.1:{port}", "--json"], capture_output=True,
                         text=True, timeout=120, check=False)
    assert out.returncode == 1, out.stderr
    proposal = json.loads(out.stdout)
    assert sorted(proposal["nodes"]) == sorted([vm_target, arm_target])
    suites = {s["suite"]: s for s in proposal["suites"]}
    assert suites["ML-DSA-87"]["proposed"] == 296
    assert suites["ML-DSA-87"]["driven_by"] == f"{arm_target} cpu 6"
    slh = suites["SLH-DSA-SHAKE-128s"]
    assert slh["proposed"] == vu_estimate(SILVER_CAPPED_MEDIANS["SLH-DSA-SHAKE-128s"],
                                          SILVER_CAPPED_MEDIANS["ML-DSA-44"])
    assert slh["other_cpus"] == 1 and slh["largest_elsewhere"] > 4000  # the x86 node's
    late_nodes = {(b["node"], b["cpu"]) for b in proposal["time_bounds"] if not b["covered"]}
    assert late_nodes == {(arm_target, 2)}
    print("fleet margins:", margins, "cap alerts:", sorted(seen), "block vs reference:",
          ratios, "calibrate:", proposal["constants"])
