"""qprof export RUN_ID: a run recorded by the daemon, as the JSONL `qprof bench` writes."""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path
from typing import Any

from qprof.commands.output import OutputError, check_output, write_output


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN_ID",
                        help="run to export ('latest': the newest finished or partial run; "
                        "see qprof history)")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="write here instead of stdout")
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="the daemon's state dir (default as for qprof daemon)")


def run(args: argparse.Namespace) -> int:
    from qprof.measure.records import RecordError
    from qprof.service.store import Store
    from qprof.service.store_file import DB_NAME, StoreError, damaged, default_state_dir

    try:  # before opening the store
        check_output(args.output)
    except OutputError as exc:
        print(f"qprof export: {exc}", file=sys.stderr)
        return 2
    path = (args.state_dir or default_state_dir()) / DB_NAME
    try:
        store = Store(path, readonly=True)
        if store.note:
            print(f"qprof export: {store.note}", file=sys.stderr)
        return _export(store, path, args)
    except StoreError as exc:
        print(f"qprof export: {exc}", file=sys.stderr)
        return 2
    except (sqlite3.DatabaseError, RecordError, ValueError) as exc:
        print(f"qprof export: {damaged(path, exc)}", file=sys.stderr)
        return 2


def _export(store: Any, path: Path, args: argparse.Namespace) -> int:
    from qprof.service.store import RESULT_STATUSES

    run_id = args.run_id
    if run_id == "latest":
        runs = store.runs(100)
        if not runs:
            print(f"qprof export: {path}: no runs recorded yet", file=sys.stderr)
            return 2
        # The newest run with results: a cycle cut short (aborted, often empty) is
        # rarely what `qprof export latest | qprof report` means. Named ids export any.
        with_results = [r for r in runs if r.status in RESULT_STATUSES]
        run_id = (with_results or runs)[0].run_id
    if store.run_status(run_id) is None:
        print(f"qprof export: no run {run_id!r} in {path} (see qprof history)",
              file=sys.stderr)
        return 2
    # All records first: a damaged page found halfway must not leave half a run behind.
    text = "".join(rec.to_json() + "\n" for rec in store.run_records(run_id))
    if write_output(args.output, text) and args.output is not None:
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
