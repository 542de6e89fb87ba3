"""contrib/grafana: every PromQL expression of the dashboard parses in the real promtool,
and the dashboard and the alerting rules name only metrics a live daemon exports.

A renamed metric then fails here, not silently in an operator's Grafana.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

from test_contrib_prometheus import CONTRIB, RULES, run_promtool
from test_headroom import _adversary_cache
from test_service_daemon import NO_CYCLE, DaemonProc
from test_tui_helpers import BIG_LITTLE, GOLD_CAPPED_MEDIANS, fixture_root, seed_store

from qprof.measure.records import Throttled
from qprof.service.store import Store

DASHBOARD = CONTRIB / "grafana" / "qprof-dashboard.json"
# Grafana's variables, replaced by what they stand for before promtool sees an expression
# (the job/instance variables are regex matchers: ".*" is their "All").
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h",
                     "$job": ".*", "$instance": ".*"}
# A metric name of qprof's exporter (not a recording rule's level:name:operation).
METRIC_NAME = re.compile(r"(?<![\w:])((?:qprof|process)_\w+)(?![\w:])")


def _panels(panels: list[dict[str, object]]) -> Iterator[dict[str, object]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))  # type: ignore[arg-type]


def dashboard_expressions() -> dict[str, str]:
    """Name -> PromQL of every panel target and of the variables' label_values queries."""
    dash = json.loads(DASHBOARD.read_text())
    exprs: dict[str, str] = {}
    for panel in _panels(dash["panels"]):
        for target in panel.get("targets", []):  # type: ignore[attr-defined]
            exprs[f"panel {panel['id']} ({panel['title']}) {target['refId']}"] = target["expr"]
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            m = re.fullmatch(r"label_values\((.+),\s*\w+\)", var["query"]["query"])
            assert m, f"variable {var['name']}: expected label_values(SELECTOR, LABEL)"
            exprs[f"variable {var['name']}"] = m.group(1)
    return exprs


def substituted(expr: str) -> str:
    for name, value in sorted(GRAFANA_VARIABLES.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(name, value)
    assert "$" not in expr, f"unknown Grafana variable in {expr!r}"
    return expr


def test_dashboard_expressions_parse_in_promtool(tmp_path: Path) -> None:
    exprs = dashboard_expressions()
    assert len(exprs) >= 15
    rules = {"groups": [{"name": "qprof-dashboard", "rules": [
        {"record": f"qprof_dashboard:expr_{i}", "expr": substituted(expr)}
        for i, expr in enumerate(exprs.values())]}]}
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(json.dumps(rules, indent=1))  # JSON is YAML
    out = run_promtool("check", "rules", str(path))
    assert f"SUCCESS: {len(exprs)} rules found" in out


def test_dashboard_and_rules_use_only_exported_metrics(tmp_path: Path) -> None:
    root = fixture_root(BIG_LITTLE)
    state = tmp_path / "state"
    state.mkdir()
    seed_store(state / "qprof.db", cpu=6, medians=GOLD_CAPPED_MEDIANS, capped=True,
               cap_factor=0.45, t0=time.time() - 600)
    store = Store(state / "qprof.db")  # the run ran under a CPU quota: its cgroup metrics
    store.add(Throttled("seed-silver", "/system.slice/qprof.service", 1, 0.5, 2.0, 600, 240,
                        30_000_000))
    store.close()
    _adversary_cache()  # this node's last `qprof adversary` runs: the worst-signature panels
    d = DaemonProc(tmp_path, "--root", str(root), *NO_CYCLE, state_dir=state)
    try:
        exposition = d.scrape()
    finally:
        d.stop()
    exported = set(re.findall(r"^# TYPE (\S+) ", exposition, flags=re.M))
    assert "qprof_vu_covered" in exported and "process_start_time_seconds" in exported
    # The exposition itself passes promtool's lint (units in names, _total, _info).
    (tmp_path / "metrics.txt").write_text(exposition)
    run_promtool("check", "metrics", stdin_path=tmp_path / "metrics.txt")

    used = {f"dashboard {where}": set(METRIC_NAME.findall(expr))
            for where, expr in dashboard_expressions().items()}
    used["contrib/prometheus/qprof.rules.yml"] = set(METRIC_NAME.findall(RULES.read_text()))
    unknown = {where: sorted(names - exported) for where, names in used.items()
               if names - exported}
    assert not unknown, f"metrics the daemon does not export: {unknown}"
