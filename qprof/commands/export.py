"""qprof export RUN_ID: a run the daemon or the monitor stored, as the JSONL `qprof bench`
writes (qprof.service.store_paths: the user's stores)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from qprof.commands.output import OutputError, check_output, write_output


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN_ID",
                        help="run to export ('latest': the newest finished or partial run "
                        "of the daemon's or the monitor's store; see qprof history)")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="write here instead of stdout")
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="the state dir holding the daemon's qprof.db and the monitor's "
                        "monitor.db (default as for qprof daemon)")


def run(args: argparse.Namespace) -> int:
    from qprof.service.store_file import StoreError
    from qprof.service.store_paths import locate_run, read_store, user_stores

    try:  # before any store is opened
        check_output(args.output)
    except OutputError as exc:
        print(f"qprof export: {exc}", file=sys.stderr)
        return 2
    try:
        # The user's stores, the daemon's and the monitor's (qprof.service.store_paths).
        loc, run_id = locate_run(user_stores(args.state_dir), args.run_id)
    except StoreError as exc:
        print(f"qprof export: {exc}", file=sys.stderr)
        return 2
    try:
        # All records first: a damaged page found halfway must not leave half a run behind.
        note, text = read_store(loc.path, lambda s: (
            s.note, "".join(rec.to_json() + "\n" for rec in s.run_records(run_id))))
    except StoreError as exc:
        print(f"qprof export: {exc}", file=sys.stderr)
        return 2
    if note:
        print(f"qprof export: {note}", file=sys.stderr)
    if write_output(args.output, text) and args.output is not None:
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
