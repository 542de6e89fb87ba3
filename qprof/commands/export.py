"""qprof export RUN_ID: a run the daemon or the monitor stored, as the JSONL `qprof bench`
writes (qprof.service.store_paths: the user's stores)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from qprof.commands.output import OutputError, check_output, write_output
from qprof.consensus import ProfileError, load_profile
from qprof.consensus.judgement_codec import judgement_json
from qprof.consensus.profiles import run_profile
from qprof.service.judged import store_judgement
from qprof.service.store import Store
from qprof.service.store_file import StoreError
from qprof.service.store_paths import locate_run, read_store, user_stores


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN_ID",
                        help="run to export ('latest': the newest finished or partial run "
                        "of the daemon's or the monitor's store; see qprof history)")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="write here instead of stdout")
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="the state dir holding the daemon's qprof.db and the monitor's "
                        "monitor.db (default as for qprof daemon)")
    parser.add_argument("--judgement", action="store_true",
                        help="instead of the run's records: the judgement of the store "
                        "holding it (JSON, as history --json and check --json carry it)")


def run(args: argparse.Namespace) -> int:
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
            s.note, _judgement(s, run_id) if args.judgement else
            "".join(rec.to_json() + "\n" for rec in s.run_records(run_id))))
    except StoreError as exc:
        print(f"qprof export: {exc}", file=sys.stderr)
        return 2
    if note:
        print(f"qprof export: {note}", file=sys.stderr)
    if write_output(args.output, text) and args.output is not None:
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _judgement(store: Store, run_id: str) -> str:
    """The store's judgement (its newest runs, every kept run behind them) as JSON, with
    the profile the run was measured against."""


    name = store.run_status(run_id)
    recorded = next((r.profile for r in store.runs(100) if r.run_id == run_id), None)
    try:
        profile = run_profile(recorded, "qanum")
    except ProfileError:
        profile = load_profile("qanum")
    found = store_judgement(store, profile)
    return json.dumps({"run_id": run_id, "status": name,
                       "judgement": judgement_json(found.judgement, profile.unit_vu)},
                      indent=2) + "\n"
