"""qprof history [RUN.jsonl...]: runs, latest results per CPU and suite, the judgement and
recent alerts from the user's stores (the daemon's and the monitor's:
qprof.service.store_paths) and from recorded runs, each source in its section. The
files' judgement stands on their runs and, with ``--state-dir``, the stores' kept runs."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from qprof.commands.history_trend import history_trend
from qprof.commands.options import Number
from qprof.commands.output import shown
from qprof.commands.reading import ReadingRuns
from qprof.consensus import ProfileError, load_profile
from qprof.consensus.judgement import judge
from qprof.consensus.judgement_codec import coverage_json, judgement_json
from qprof.consensus.policy import cores_from_records, with_quota
from qprof.consensus.profiles import profile_unit, run_profile
from qprof.consensus.trend.from_jsonl import RunFileError
from qprof.consensus.verdict import TIME_WORDS
from qprof.measure.records import AdversaryFactors, Throttled
from qprof.measure.units import fmt_ns
from qprof.service.judged import store_judgement
from qprof.service.keep import kept_factors, kept_points
from qprof.service.store_file import StoreError
from qprof.service.store_paths import read_store, user_stores
from qprof.service.trend_source import file_runs


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", metavar="RUN.jsonl",
                        help="recorded runs (check -o, bench -o, export; .xz/.gz too), "
                        "shown and judged together (with --state-dir: with its kept runs)")
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="the state dir holding the daemon's qprof.db and the monitor's "
                        "monitor.db, both read (default as for qprof daemon; with "
                        "RUN.jsonl only when given)")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.add_argument("--runs", type=Number(int, at_least=0), default=10, metavar="N",
                        help="runs to list")
    parser.add_argument("--alerts", type=Number(int, at_least=0), default=20, metavar="N",
                        help="alerts to list")


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _profile(runs: list[Any]) -> Any:
    """The profile the newest runs were measured against (else qanum), or None."""

    name = next((r.profile for r in runs if r.profile), None) or "qanum"
    try:
        return load_profile(name)
    except ProfileError:
        return None


MAX_LINE = 2000  # one line of the text, whatever a stored string holds


def collect(store: Any, n_runs: int, n_alerts: int) -> dict[str, Any]:
    runs = store.runs(max(n_runs, 20))
    profile = _profile(runs)
    found = store_judgement(store, profile)
    return _doc(runs[:n_runs], profile, found.judgement, found.left_out,
                store.latest_measurements(), store.alerts.recent(n_alerts),
                kept_factors(store))


def _doc(runs: list[Any], profile: Any, j: Any, left_out: int, latest: list[Any],
         alerts: list[Any], factors: list[Any]) -> dict[str, Any]:
    """One source's section: the same keys for a store and for recorded runs."""


    unit_vu = profile_unit(profile).vu
    trend = history_trend(j, unit_vu, left_out)
    newest = {(f.suite, f.kind): f for f in factors}  # oldest first: the newest kept
    return {
        "runs": [r.to_dict() for r in runs],
        "profile": profile.name if profile is not None else None,
        "results": [asdict(r) for r in j.results],
        "coverage": [coverage_json(c) for c in j.coverage],
        "judgement": judgement_json(j, unit_vu),
        "latest_measurements": [m.to_dict() for m in latest],
        "alerts": [a.to_dict() for a in alerts],
        "adversary": [f.to_dict() for _k, f in sorted(newest.items())],
        "trend": trend.series,
        "trend_text": trend.lines,
    }


def _files_doc(args: argparse.Namespace) -> dict[str, Any] | None:
    """The recorded runs' section: the newest run judged with every file's points (and
    the stores' kept ones with --state-dir); None when a file gives no run (said)."""

    try:
        with ReadingRuns("history") as progress:
            got = file_runs(args.files, on_read=progress)
    except RunFileError as exc:
        print(f"qprof history: {shown(str(exc), MAX_LINE)}", file=sys.stderr)
        return None
    for problem in got.problems:
        print(f"qprof history: {shown(problem, MAX_LINE)}", file=sys.stderr)
    points = list(got.points)
    if args.state_dir is not None:
        kept, problems = kept_points(args.state_dir)
        points += kept
        for problem in problems:
            print(f"qprof history: {shown(problem, MAX_LINE)}", file=sys.stderr)
    newest = got.newest
    try:
        profile = run_profile(newest.meta.profile if newest.meta else None, "qanum")
    except ProfileError:
        profile = None
    quota = next((r.quota_cpus for r in newest.records if isinstance(r, Throttled)), None)
    try:
        j = judge(newest.measurements, profile, points,
                  cores=with_quota(cores_from_records(newest.records), quota))
    except (ArithmeticError, ValueError) as exc:  # records no engine writes (zero times)
        print(f"qprof history: {newest.path}: its measurements do not give an estimate "
              f"({type(exc).__name__}: {shown(str(exc), 200)})", file=sys.stderr)
        return None
    latest = {(m.cpu, m.suite, m.backend, m.operation): m for m in newest.measurements}
    factors = [r for r in newest.records if isinstance(r, AdversaryFactors)]
    return {"store": None, "kind": "files", "files": [str(f) for f in args.files],
            **_doc(got.runs[:args.runs], profile, j, 0, list(latest.values()), [],
                   factors)}


def _coverage_line(c: dict[str, Any], segments: dict[str, str | None]) -> list[str]:
    """One verdict as `qprof check` gives it: its headline (the word first, the estimate
    with its 95 % interval), the seeds' median rule beside it when the estimate used
    another statistic, and the segment it stands on where one holds several runs (``c``:
    :func:`qprof.consensus.judgement_codec.coverage_json`)."""
    used, rule = c["statistic_used"], c["vu_estimate_median"]
    beside = (f"; by the median rule {rule}"
              if used != "median" and rule is not None and c["state"] != "unit"
              and c["decision"] != "no_estimate" else "")
    segment = segments.get(f"{c['cpu']}/{c['suite']}/{c['backend']}")
    return [f"  cpu {c['cpu']:<3} {c['suite']:<20} {c['backend']:<8} {c['headline']} "
            f"[{used}]{beside}", *([f"      {segment}"] if segment else [])]


def _block_times(coverage: list[dict[str, Any]]) -> list[str]:
    """Each CPU's time bound, as consensus decided it (qprof.consensus.policy)."""

    lines, seen = [], set()
    for c in coverage:
        bt = c["worst_block"]
        if c["basis"] != "node" or bt is None or (c["cpu"], c["backend"]) in seen:
            continue
        seen.add((c["cpu"], c["backend"]))
        mark = TIME_WORDS.get(bt["decision"] or "none", "no verdict")
        lines.append(f"  cpu {c['cpu']:<3} time bound {mark}: {bt['why']}")
    return ["", "block-time bound (worst-case block vs the reference core):", *lines] \
        if lines else []


def run(args: argparse.Namespace) -> int:
    """Every source, each in its own section: recorded runs (RUN.jsonl) first, then every
    store of the user's (without files, or with --state-dir); JSON: the first section's
    keys at the top (as before) and every section under "stores"."""

    docs: list[dict[str, Any]] = []
    failed = False
    if args.files:
        files = _files_doc(args)
        if files is None:
            return 2
        docs.append(files)
    if not args.files or args.state_dir is not None:
        stores = user_stores(args.state_dir)
        found = stores.existing()
        if not found and not docs:
            print(f"qprof history: {stores.none_yet()}", file=sys.stderr)
            return 2
        for loc in found:
            data = _read(loc.path, args.runs, args.alerts)
            if data is None:
                failed = True
                continue
            docs.append({"store": str(loc.path), "kind": loc.kind, **data})
    if not docs:
        return 2
    if args.json:
        json.dump({**docs[0], "stores": docs}, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 2 if failed else 0
    # Each line of the text one bounded line: a store holds strings from runs (a status,
    # a reason, an alert's message) that may carry newlines (qprof.untrusted).
    print("\n\n".join("\n".join(shown(line, MAX_LINE) for line in _text(doc))
                      for doc in docs))
    return 2 if failed else 0


def _read(path: Path, n_runs: int, n_alerts: int) -> dict[str, Any] | None:
    """One store's runs, results and alerts; None (said on stderr) when it cannot be read."""

    try:
        data, note = read_store(path, lambda s: (collect(s, n_runs, n_alerts), s.note))
    except StoreError as exc:
        print(f"qprof history: {exc}", file=sys.stderr)
        return None
    if note:
        print(f"qprof history: {note}", file=sys.stderr)
    return data


def _text(data: dict[str, Any]) -> list[str]:
    head = (f"recorded runs: {', '.join(data['files'])}" if data["kind"] == "files"
            else f"{data['kind']} store: {data['store']}")
    out = [head, "", "runs (newest first):"]
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
    segments = {f"{x['cpu']}/{x['suite']}/{x['backend']}": x["segment"]["text"]
                for x in data["judgement"]["suites"] if x["segment"] is not None}
    for c in data["coverage"]:
        out += _coverage_line(c, segments)
    out += _block_times(data["coverage"])
    if data["adversary"]:
        out += ["", "adversary factors kept (qprof adversary; the newest of each suite and "
                "kind; calibrate --headroom reads them):"]
        out += [f"  {f['suite']:<20} {f['kind']:<16} x{f['factor']:.3f} (95 % "
                f"{f['low']:.3f}-{f['high']:.3f}) on {f['cpu_model']}, measured "
                f"{_when(f['measured_at'])}, run {f['run_id']}" for f in data["adversary"]]
    if data["trend_text"]:
        out += ["", "the ratio over time (per CPU and suite: the current segment, every run "
                "since the last change point, and the changes):", *data["trend_text"]]
    if data["kind"] == "files":  # recorded runs raise no alerts
        return out
    out += ["", "recent alerts:"]
    if not data["alerts"]:
        out.append("  none")
    for a in data["alerts"]:
        out.append(f"  {_when(a['ts'])}  {a['severity']:<8} {a['kind']:<18} {a['message']}")
    return out
