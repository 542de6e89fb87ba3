"""qprof history: runs, latest results per CPU and suite, and recent alerts from the store."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from qprof.measure.units import fmt_ns


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="the daemon's state dir (default as for qprof daemon)")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.add_argument("--runs", type=int, default=10, metavar="N", help="runs to list")
    parser.add_argument("--alerts", type=int, default=20, metavar="N", help="alerts to list")


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _profile(runs: list[Any]) -> Any:
    """The profile the newest runs were measured against (else qanum), or None."""
    from qprof.consensus import ProfileError, load_profile

    name = next((r.profile for r in runs if r.profile), None) or "qanum"
    try:
        return load_profile(name)
    except ProfileError:
        return None


def collect(store: Any, n_runs: int, n_alerts: int) -> dict[str, Any]:
    from dataclasses import asdict

    from qprof.service.cores import recorded_cores
    from qprof.service.metrics import summarize

    runs = store.runs(max(n_runs, 20))
    profile = _profile(runs)
    measurements = store.newest_run_measurements("verify")
    summary = summarize(measurements, profile=profile,
                        cores=recorded_cores(store, measurements))
    return {
        "runs": [r.to_dict() for r in runs[:n_runs]],
        "profile": profile.name if profile is not None else None,
        "results": [asdict(r) for r in summary.results],
        "coverage": [c.to_dict() for c in summary.coverage],
        "latest_measurements": [m.to_dict() for m in store.latest_measurements()],
        "alerts": [a.to_dict() for a in store.alerts.recent(n_alerts)],
    }


def _coverage_line(c: dict[str, Any]) -> str:
    """One verdict as `qprof check` gives it: the estimate with its 95 % interval, and the
    seeds' median rule beside it when the estimate used another statistic."""
    from qprof.consensus.verdict import CoverageResult

    r = CoverageResult.from_dict(c)
    word = {"covered": "covered", "not_covered": "NOT covered", "unsure": "unsure"}.get(
        r.decision, r.basis_label)
    if r.basis != "comparison" and not r.ratio_binds:
        word += " (ratio not binding here: the constants follow the reference cores)"
    unit = r.estimate.is_unit
    ci = (f" (95 % CI {r.vu_ci_low}-{r.vu_ci_high})"
          if r.vu_ci_low is not None and not unit else "")
    rule = r.estimate.vu_by_statistic.get("median")
    beside = (f"; by the median rule {rule}"
              if r.statistic != "median" and rule is not None and not unit else "")
    return (f"  cpu {r.cpu:<3} {r.suite:<20} {r.backend:<8} estimate "
            f"{r.vu_estimate:>5}{ci} vs constant {r.vu_constant:>5}  {word} "
            f"[{r.statistic}]{beside}")


def _block_times(coverage: list[dict[str, Any]]) -> list[str]:
    """Each CPU's time bound, as consensus decided it (qprof.consensus.policy)."""
    lines, seen = [], set()
    for c in coverage:
        bt = c.get("block_time")
        if c["basis"] != "node" or bt is None or (c["cpu"], c["backend"]) in seen:
            continue
        seen.add((c["cpu"], c["backend"]))
        mark = {"covered": "within", "not_covered": "EXCEEDED", "unsure": "unsure"}.get(
            bt.get("decision"), "no verdict")
        lines.append(f"  cpu {c['cpu']:<3} time bound {mark}: {bt['why']}")
    return ["", "block-time bound (worst-case block vs the reference core):", *lines] \
        if lines else []


def run(args: argparse.Namespace) -> int:
    from qprof.measure.records import RecordError
    from qprof.service.store import Store
    from qprof.service.store_file import DB_NAME, StoreError, damaged, default_state_dir

    path = (args.state_dir or default_state_dir()) / DB_NAME
    try:
        store = Store(path, readonly=True)
        data = collect(store, args.runs, args.alerts)
    except StoreError as exc:
        print(f"qprof history: {exc}", file=sys.stderr)
        return 2
    except (sqlite3.DatabaseError, RecordError, ValueError) as exc:
        print(f"qprof history: {damaged(path, exc)}", file=sys.stderr)
        return 2
    if store.note:
        print(f"qprof history: {store.note}", file=sys.stderr)
    if args.json:
        json.dump({"store": str(path), **data}, sys.stdout,
                  indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    out = [f"store: {path}", "", "runs (newest first):"]
    if not data["runs"]:
        out.append("  none yet")
    for r in data["runs"]:
        cpus = ",".join(map(str, r["cpus"])) or "-"
        reason = f" ({r['reason']})" if r["reason"] else ""
        out.append(f"  {r['run_id']}  {_when(r['started_at'])}  cpus {cpus}  "
                   f"{r['measurements']} measurements  {r['status']}{reason}")
    out += ["", "latest verify results (newest run; the statistic the coverage verdict "
            "uses, as qprof check --statistic auto):"]
    if not data["results"]:
        out.append("  none yet")
    for r in data["results"]:
        cap = f"  capped {r['cap_factor']:.2f}x" if r["capped"] and r["cap_factor"] else (
            "  capped" if r["capped"] else "")
        out.append(f"  cpu {r['cpu']:<3} {r['suite']:<20} {r['backend']:<8} "
                   f"{fmt_ns(r['time_ns']):>12} {r['statistic']:<6}  run {r['run_id']}{cap}")
    if data["coverage"]:
        out += ["", f"Verify-Unit coverage ({data['profile']}):"]
    for c in data["coverage"]:
        out.append(_coverage_line(c))
    out += _block_times(data["coverage"])
    out += ["", "recent alerts:"]
    if not data["alerts"]:
        out.append("  none")
    for a in data["alerts"]:
        out.append(f"  {_when(a['ts'])}  {a['severity']:<8} {a['kind']:<18} {a['message']}")
    print("\n".join(out))
    return 0
