"""qprof env: environment snapshot (load, frequencies, governors, temperatures) as JSON."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict

from qprof.commands.options import Number, add_node_cgroup
from qprof.commands.output import emit
from qprof.hw.cgroup import NodeCgroupError, node_of
from qprof.hw.envsnap import take_env_snapshot
from qprof.hw.topology import NotLinuxRoot


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", default="/", help="root directory (default: this machine)")
    parser.add_argument("--no-estimate", action="store_true",
                        help="on a machine without cpufreq, do not measure the clock")
    parser.add_argument("--busy-window", type=Number(float, at_least=0.0, at_most=10.0),
                        default=0.2, metavar="SECONDS",
                        help="on this machine, measure per-CPU busy/steal %% over this "
                             "window with psutil (0: skip; default 0.2)")
    add_node_cgroup(parser)


def run(args: argparse.Namespace) -> int:
    estimate = not args.no_estimate and os.path.abspath(args.root) == "/"
    try:
        snap = take_env_snapshot(args.root, estimate=estimate,
                                 busy_window_s=args.busy_window)
        node = node_of(args.root, args.node_cgroup, args.node_unit)
    except (NotLinuxRoot, NodeCgroupError) as exc:
        print(f"qprof env: {exc}", file=sys.stderr)
        return 2
    if node is not None:
        snap["node_cgroup"] = {**asdict(node), "quota_cpus": node.cpus, "text": node.text()}
    emit(json.dumps(snap, indent=2))
    return 0
