"""`qprof report FILE... [--block FILE.json]`: Markdown tables from JSONL runs; several
files side by side; measured worst-case blocks (`qprof block --json`) as a section.
With ``--html PAGE`` also one self-contained HTML page with SVG charts of the same runs.

Bad lines are reported on stderr as ``file:line: reason`` and skipped (and listed in the
report's notes); a file that cannot be read is an error (exit 2).
"""

from __future__ import annotations

import argparse
import sys

from qprof.commands.output import OutputError, check_output, write_file, write_output


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", metavar="FILE", help="JSONL runs (qprof bench -o)")
    parser.add_argument("--block", action="append", default=[], metavar="FILE.json",
                        help="measured worst-case blocks (qprof block --json > FILE.json); "
                        "repeatable")
    parser.add_argument("--profile",
                        help="chain profile for VU coverage (default: the runs' own, else qanum)")
    parser.add_argument("-o", "--output", metavar="FILE.md", help="write here instead of stdout")
    parser.add_argument("--html", metavar="PAGE.html",
                        help="also write one self-contained HTML page with charts (no "
                        "network, no JavaScript); the Markdown then goes to stdout only "
                        "with -o -")


def run(args: argparse.Namespace) -> int:
    from qprof.consensus import ProfileError, load_profile
    from qprof.consensus.profiles import run_profile
    from qprof.measure.block import BlockError
    from qprof.measure.block_file import read_block_results
    from qprof.measure.jsonl import read_run
    from qprof.report.markdown import render_report

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
    if not runs and not blocks:
        if not args.files and not args.block:
            print("qprof report: give JSONL runs and/or --block files", file=sys.stderr)
        return 2
    recorded = next((r.meta.profile for r in runs if r.meta and r.meta.profile), None)
    try:
        # A run's profile is a NAME looked up here, never a path taken from the run.
        profile = load_profile(args.profile) if args.profile else run_profile(recorded,
                                                                              "qanum")
        if not args.profile:
            print(f"qprof report: judged against the profile {profile.name} found here, "
                  f"{profile.path}; give --profile to choose another", file=sys.stderr)
    except ProfileError as exc:
        if args.profile:
            print(f"qprof report: {exc}", file=sys.stderr)
            return 2
        print(f"qprof report: {exc}; no coverage columns", file=sys.stderr)
        profile = None
    text = render_report(runs, profile, blocks)
    if args.html:
        from qprof.report.html import render_html

        write_file(args.html, render_html(runs, profile))
    if args.output or not args.html:  # -o -, or no file at all: stdout
        write_output(args.output, text)
    return 2 if failed else 0
