"""`qprof report FILE... [--block FILE.json]`: Markdown tables from JSONL runs; several
files side by side; measured worst-case blocks (`qprof block --json`) as a section.
With ``--html PAGE`` also one self-contained HTML page with SVG charts of the same runs.

Bad lines are reported on stderr as ``file:line: reason`` and skipped (and listed in the
report's notes); a file that cannot be read is an error (exit 2). Without FILE or
``--block``: the newest run stored by the daemon or the monitor (``--stored RUN_ID`` for
another; qprof.service.store_paths). Every file written is named on stderr.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

from qprof.commands.output import OutputError, check_output, write_file, write_output
from qprof.commands.reading import COMPUTED, ReadingRuns
from qprof.consensus import ProfileError, load_profile
from qprof.consensus.profiles import run_profile, run_profile_note
from qprof.consensus.trend.model import RunPoint, SeriesKey
from qprof.measure.block import BlockError
from qprof.measure.block_file import read_block_results
from qprof.measure.jsonl import RunData, read_run
from qprof.measure.markdown import one_line
from qprof.measure.records import Meta
from qprof.report.html import render_html
from qprof.report.judgement import report_judgement
from qprof.report.markdown import render_report
from qprof.service.keep import kept_points
from qprof.service.run_files import points_of_runs
from qprof.service.store_file import StoreError
from qprof.service.store_paths import locate_run, read_store, user_stores


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", metavar="FILE", help="JSONL runs (qprof bench -o)")
    parser.add_argument("--block", action="append", default=[], metavar="FILE.json",
                        help="measured worst-case blocks (qprof block --json > FILE.json); "
                        "repeatable")
    parser.add_argument("--profile",
                        help="chain profile for VU coverage (default: the runs' own, else qanum)")
    parser.add_argument("-o", "--output", metavar="FILE.md", help="write here instead of stdout")
    parser.add_argument("--stored", metavar="RUN_ID",
                        help="a run of the daemon's or the monitor's store (see qprof "
                        "history; 'latest', the default without FILE: the newest)")
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="where those stores are (default as for qprof daemon)")
    parser.add_argument("--html", metavar="PAGE.html",
                        help="also write one self-contained HTML page with charts (no "
                        "network, no JavaScript); the Markdown then goes to stdout only "
                        "with -o -")


def run(args: argparse.Namespace) -> int:
    try:  # before reading anything
        check_output(args.output)
        check_output(args.html)
    except OutputError as exc:
        print(f"qprof report: {exc}", file=sys.stderr)
        return 2
    runs = []
    failed = False
    for name in args.files:
        try:
            run_data = read_run(name)
        except OSError as exc:
            print(f"qprof report: {name}: {exc.strerror or exc}", file=sys.stderr)
            failed = True
            continue
        for problem in run_data.problems:
            print(f"qprof report: {problem}", file=sys.stderr)
        failed = failed or not run_data.complete
        runs.append(run_data)
    blocks = []
    for name in args.block:
        try:
            blocks += read_block_results(name)
        except BlockError as exc:
            print(f"qprof report: {exc}", file=sys.stderr)
            failed = True
    stored = args.stored or (None if args.files or args.block else "latest")
    kept: list[tuple[SeriesKey, RunPoint]] = []
    if stored is not None:
        from_store = _stored_run(stored, args.state_dir)
        if from_store is None:
            return 2
        runs.append(from_store)
    if stored is not None or args.state_dir is not None:
        kept, problems = kept_points(args.state_dir)
        for problem in problems:
            print(f"qprof report: {problem}", file=sys.stderr)
    if not runs and not blocks:
        return 2
    recorded = next((r.meta.profile for r in runs if r.meta and r.meta.profile), None)
    try:
        # A run's profile is a NAME looked up here, never a path taken from the run.
        profile = load_profile(args.profile) if args.profile else run_profile(recorded,
                                                                              "qanum")
        note = None if args.profile else run_profile_note(recorded, profile)
        if note:
            print(f"qprof report: {one_line(note)}", file=sys.stderr)
    except ProfileError as exc:
        if args.profile:
            print(f"qprof report: {exc}", file=sys.stderr)
            return 2
        print(f"qprof report: {exc}; no coverage columns", file=sys.stderr)
        profile = None

    # Once, for both reports: the judgement over the runs and the kept ones, its series
    # of several runs the trend section.
    with ReadingRuns("report", done=COMPUTED) as progress:
        judgement = report_judgement(runs, profile, kept,
                                     partial(points_of_runs, on_done=progress))
    trends = [t for t in judgement.trends if len(t.runs) >= 2]
    text = render_report(runs, profile, blocks, trends, judgement)
    if args.html:
        write_file(args.html, render_html(runs, profile, trends, judgement))
        print(f"qprof report: wrote {args.html}", file=sys.stderr)
    # -o -, or no file at all: stdout; a file written is named.
    if ((args.output or not args.html) and write_output(args.output, text)
            and args.output not in (None, "-")):
        print(f"qprof report: wrote {args.output}", file=sys.stderr)
    return 2 if failed else 0


def _stored_run(run_id: str, state_dir: Path | None) -> RunData | None:
    """A run of the user's stores (the daemon's, the monitor's) as a JSONL run's data;
    None, said in one line, when there is none."""


    try:
        loc, run_id = locate_run(user_stores(state_dir), run_id)
    except StoreError as exc:
        print(f"qprof report: {exc}", file=sys.stderr)
        return None
    try:
        records = read_store(loc.path, lambda s: list(s.run_records(run_id)))
    except StoreError as exc:
        print(f"qprof report: {exc}", file=sys.stderr)
        return None
    print(f"qprof report: run {run_id} of the {loc.label}", file=sys.stderr)
    meta = next((r for r in records if isinstance(r, Meta)), None)
    return RunData(path=Path(f"{loc.path.name}:{run_id}"), meta=meta, records=records)

