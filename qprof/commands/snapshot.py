"""qprof snapshot DIR: copy this machine's CPU /proc and /sys files into DIR."""

from __future__ import annotations

import argparse
import sys

from qprof.hw.snapshot import take_snapshot
from qprof.hw.topology import NotLinuxRoot, read_topology


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", help="directory to write (created if missing)")
    parser.add_argument("--root", default="/", help="copy from this root instead of /")


def run(args: argparse.Namespace) -> int:
    try:
        read_topology(args.root)  # refuse to copy from something that is not Linux
    except NotLinuxRoot as exc:
        print(f"qprof snapshot: {exc}", file=sys.stderr)
        return 2
    try:
        result = take_snapshot(args.dir, args.root)
    except OSError as exc:
        print(f"qprof snapshot: cannot write {args.dir}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"copied {result.copied} files into {result.dest}"
          + (f" ({len(result.failed)} unreadable)" if result.failed else ""))
    for problem in result.failed[:10]:
        print(f"  - {problem}")
    topo = read_topology(result.dest)
    print(f"inspect with: qprof topology --root {result.dest}  "
          f"({len(topo.cpus)} CPUs, {len(topo.clusters)} cluster(s))")
    return 0
