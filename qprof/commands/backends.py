"""`qprof backends [--json]`: which verifier backends work here, and why not."""

from __future__ import annotations

import argparse
import json

from qprof.hw.format import table
from qprof.verify import SUITES, available_backends


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _short_suite(name: str) -> str:
    return name.replace("SLH-DSA-SHAKE-", "SLH-SHAKE-")


def run(args: argparse.Namespace) -> int:
    statuses = available_backends()
    if args.json:
        print(json.dumps({name: s.to_dict() for name, s in statuses.items()}, indent=2))
        return 0
    rows = []
    for name, status in statuses.items():
        if status.available:
            if set(status.suites) == set(SUITES):
                suites = "all 9 suites"
            else:
                suites = ", ".join(_short_suite(s) for s in status.suites)
            info = suites + ("; signs" if status.can_sign else "")
            # Families this backend lacks here, with the reason (e.g. a numba kernel
            # module not written yet, or openssl without SLH-DSA).
            for family in ("ML-DSA", "SLH-DSA"):
                if family in status.details:
                    info += f"; no {family}: {status.details[family]}"
            if "context_limit" in status.details:
                info += f"; deviation: {status.details['context_limit']}"
            if "warning" in status.details:
                info += f"; warning: {status.details['warning']}"
        else:
            info = status.reason
        rows.append((name, "yes" if status.available else "no", status.version or "-", info))
    print(table(("BACKEND", "AVAILABLE", "VERSION", "SUITES / REASON"), rows))
    # Exit 1 only when nothing at all can verify here.
    return 0 if any(s.available for s in statuses.values()) else 1
