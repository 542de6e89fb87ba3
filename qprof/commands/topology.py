"""qprof topology: clusters with core design, counts, frequency range, governor, caps."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from qprof.commands.options import add_node_cgroup
from qprof.commands.output import emit
from qprof.hw import isa
from qprof.hw.cgroup import NodeCgroupError, limit_lines, node_of, own_limit
from qprof.hw.format import (
    cap_cell,
    ghz,
    ghz_range,
    merge_problems,
    problems_text,
    table,
)
from qprof.hw.freq import FreqReading, read_frequencies
from qprof.hw.model import Topology
from qprof.hw.sysfs import format_cpulist, parse_cpulist, problems_by_cpu
from qprof.hw.topology import NotLinuxRoot, read_topology


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", default="/",
                        help="root directory holding proc/ and sys/ (default: this machine; "
                             "a `qprof snapshot` directory inspects another machine)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    # The same LIST|all shape as the measuring commands; bare --cpus lists them all.
    parser.add_argument("--cpus", nargs="?", const="all", metavar="LIST|all",
                        help="also list these CPUs, e.g. 0,4-5 (bare or all: every CPU)")
    add_node_cgroup(parser)


def combined_dict(topo: Topology, freq: FreqReading) -> dict[str, Any]:
    """Topology JSON (the contract) with each CPU's and cluster's frequency state added."""
    data = topo.to_dict()
    fby = {f.cpu: f for f in freq.cpus}
    for row in data["cpus"]:
        f = fby.get(row["cpu"])
        if f is not None:
            row.update(cur_khz=f.cur_khz, allowed_max_khz=f.max_khz, governor=f.governor,
                       driver=f.driver, capped=f.capped, cap_factor=f.cap_factor,
                       cap_cause=f.cap_cause, estimated=f.estimated)
    cby = {c.id: c for c in freq.clusters}
    for row in data["clusters"]:
        c = cby.get(row["id"])
        if c is not None:
            row.update(allowed_max_khz=c.max_khz, cur_khz=c.cur_khz, governor=c.governor,
                       capped=c.capped, cap_factor=c.cap_factor, cap_cause=c.cap_cause)
    data["boost"], data["no_turbo"] = freq.boost, freq.no_turbo
    data["problems"] = merge_problems(topo.problems, freq.problems)
    per_cpu = problems_by_cpu(data["problems"], topo.domains())
    for row in data["cpus"]:
        row["problems"] = per_cpu.get(row["cpu"], [])
    return data


def render(topo: Topology, freq: FreqReading, with_cpus: set[int] | None = None) -> str:
    """The cluster table, and a row per CPU in ``with_cpus`` (None: no CPU rows)."""
    online = sum(1 for c in topo.cpus if c.online)
    head = topo.model_name or topo.hardware or "unknown CPU"
    lines = [f"{head} ({topo.arch or 'unknown arch'}): {len(topo.cpus)} CPUs, {online} online, "
             f"{len(topo.clusters)} cluster(s)" + (", hybrid" if topo.hybrid else "")]
    if topo.hardware and topo.hardware != head:
        lines.append(f"Hardware: {topo.hardware}")
    if topo.root not in ("/", ""):
        lines.append(f"Root: {topo.root}")
    cby = {c.id: c for c in freq.clusters}
    x86 = topo.arch in ("x86", "x86_64")
    rows = []
    for cl in topo.clusters:
        fc = cby.get(cl.id)
        first = topo.cpu(cl.cpus[0])
        part = cl.part_name or (f"unknown part {first.part}" if first and first.part
                                else "unknown part")
        if cl.vendor and cl.vendor not in part:
            part = f"{part} ({cl.vendor})"
        rows.append([str(cl.id), format_cpulist(cl.cpus), f"{len(cl.online_cpus)}/{len(cl.cpus)}",
                     cl.uarch or "unknown", part, cl.core_class or "unknown",
                     ghz_range(cl.min_khz, cl.max_khz),
                     (fc.governor if fc and fc.governor else "-"),
                     isa.short(cl.isa, cl.isa_missing, x86),
                     cap_cell(fc) if fc else "unknown"])
    lines.append("")
    lines.append(table(["Cluster", "CPUs", "Online", "Core design", "Part", "Class",
                        "Freq range", "Governor", "ISA", "Cap"], rows))
    if with_cpus is not None:
        fby = {f.cpu: f for f in freq.cpus}
        cpu_rows = []
        for c in (c for c in topo.cpus if c.cpu in with_cpus):
            f = fby.get(c.cpu)
            ident = c.midr or (f"{c.vendor_id} {c.family}/{c.model}/{c.stepping}"
                               if c.vendor_id else "-")
            cpu_rows.append([str(c.cpu), "-" if c.cluster is None else str(c.cluster),
                             {True: "yes", False: "no", None: "?"}[c.online],
                             c.uarch or "unknown", ident,
                             c.midr_source or c.uarch_source or "-",
                             format_cpulist(c.smt_siblings) or "-",
                             " ".join(c.isa) if c.isa is not None else "unknown",
                             ghz(f.cur_khz, f.estimated) if f else "unknown"])
        lines.append("")
        lines.append(table(["CPU", "Cluster", "Online", "Core design", "MIDR / id",
                            "Source", "SMT", "ISA features", "Current"], cpu_rows))
    notes = problems_text(merge_problems(topo.problems, freq.problems))
    if notes:
        lines.append("")
        lines.append(notes)
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        topo = read_topology(args.root)
    except NotLinuxRoot as exc:
        print(f"qprof topology: {exc}", file=sys.stderr)
        return 2
    listed: set[int] | None = None
    if args.cpus == "all":
        listed = {c.cpu for c in topo.cpus}
    elif args.cpus is not None:
        listed, problem = parse_cpulist(args.cpus, "--cpus")
        if listed is None:
            print(f"qprof topology: {problem}", file=sys.stderr)
            return 2
    freq = read_frequencies(args.root, topo)
    try:
        own, node = own_limit(args.root), node_of(args.root, args.node_cgroup, args.node_unit)
    except NodeCgroupError as exc:
        print(f"qprof topology: {exc}", file=sys.stderr)
        return 2
    if args.json:
        data = combined_dict(topo, freq)
        data.update({k: asdict(v) for k, v in (("cgroup", own), ("node_cgroup", node)) if v})
        emit(json.dumps(data, indent=2))
    else:
        cgroup = limit_lines(own, node)
        emit(render(topo, freq, listed) + "".join(f"\ncgroup: {line}" for line in cgroup))
    return 0
