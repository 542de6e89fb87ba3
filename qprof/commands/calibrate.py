"""`qprof calibrate RUN.jsonl... [--prometheus URL] [--profile P] [-o FILE.toml]`:
Verify-Unit constants proposed from a fleet's runs.

Each JSONL run (of `qprof check -o`, `qprof bench` or a daemon export) is one node's; a
Prometheus server scraping the fleet's daemons adds every node it knows. Each estimate is
judged as `qprof check` judges it (``qprof.consensus``: the profile's verifier, the
estimator's 95 % interval, where the ratio binds). The proposal
(``qprof.consensus.calibrate``): the smallest constant of each suite covering the top of
the 95 % interval on every CPU where the ratio binds, written as a profile TOML
(``-o``), with a table against the current constants, and per node whether the time
bound holds with them. Exit 0: proposed, every time bound holds; 1: some node's
worst-case block exceeds its time bound with the proposed constants; 2: error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from qprof.commands.output import OutputError, check_output, shown, write_file

MAX_ERROR = 2000  # an error line names what a run or a server held: bounded
NODES_NAMED = 20  # in the proposed TOML's comment and the text's first line

if TYPE_CHECKING:
    from qprof.consensus import Profile
    from qprof.consensus.calibrate import NodeEstimate, Proposal
    from qprof.consensus.headroom import Factors


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="*", metavar="RUN.jsonl",
                        help="recorded runs, one node each (check -o, bench, daemon export)")
    parser.add_argument("--prometheus", metavar="URL",
                        help="also every node of the fleet in this Prometheus server "
                        "(http://host:9090), through its HTTP API")
    parser.add_argument("--profile", default="qanum",
                        help="the current profile, name or path (default qanum)")
    parser.add_argument("-o", "--output", metavar="FILE.toml",
                        help="write the proposed constants as a profile TOML")
    parser.add_argument("--name", help="name of the proposed profile (default "
                        "PROFILE-proposed)")
    parser.add_argument("--json", action="store_true", help="machine-readable result")
    parser.add_argument("--headroom", choices=("median", "ground", "crafted"),
                        help="cover the median signature, or the worst an adversary brings "
                        "(each node's last qprof adversary factors, recorded in its runs): "
                        "ground valid, or crafted invalid (default: the profile's "
                        "constants_held_to: worst_signature -> ground, else median)")


def _fail(args: argparse.Namespace, text: str) -> int:
    if args.json:
        print(json.dumps({"error": text}))
    print(f"qprof calibrate: {shown(text, MAX_ERROR)}", file=sys.stderr)
    return 2


# A node's name (a run's hostname, a file name) is at most this long, one line.
MAX_NODE_NAME = 100
MAX_PROFILE_NAME = 100


def _node_name(path: Path, hostname: object, seen: dict[str, int]) -> str:
    """The run's hostname and file, one bounded line; a name already taken gets " #2",
    " #3"... (``seen``: name -> how many runs had it; constant work per run)."""
    name = (f"{shown(hostname, MAX_NODE_NAME)} ({shown(path.name, MAX_NODE_NAME)})"
            if isinstance(hostname, str) and hostname.strip()
            else shown(path.name, MAX_NODE_NAME))
    count = seen.get(name, 0)
    seen[name] = count + 1
    if count == 0:
        return name
    unique = f"{name} #{count + 1}"
    while unique in seen:  # a hostname that itself ends in " #2"
        count += 1
        seen[name] = count + 1
        unique = f"{name} #{count + 1}"
    seen[unique] = 1
    return unique


def _from_runs(profile: Profile, paths: list[str], factors: dict[str, Factors] | None = None
               ) -> tuple[list[NodeEstimate], list[str]]:
    from qprof.consensus.calibrate import MAX_CONSTANT, node_estimates
    from qprof.consensus.headroom import factors_of_records
    from qprof.consensus.judgement import judge
    from qprof.consensus.policy import cores_from_records
    from qprof.measure.jsonl import read_run

    estimates: list[NodeEstimate] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for text in paths:
        path = Path(text)
        try:
            run = read_run(path)
        except OSError as exc:
            raise ValueError(f"{path}: {exc.strerror or exc}") from None
        problems += run.problems[:3]
        if not run.measurements:
            raise ValueError(f"{path}: no measurements")
        node = _node_name(path, (run.meta.machine if run.meta else {}).get("hostname"), seen)
        try:
            results = judge(run.measurements, profile,
                            cores=cores_from_records(run.records)).coverage
        except (ArithmeticError, ValueError) as exc:  # records no engine writes (zero times)
            raise ValueError(f"{path}: its measurements do not give an estimate "
                             f"({type(exc).__name__}: {exc})") from None
        found = node_estimates(node, results)
        absurd = next((e for e in found if e.vu_high > MAX_CONSTANT), None)
        if absurd is not None:
            raise ValueError(f"{path}: {absurd.suite} on CPU {absurd.cpu}: an estimate of "
                             f"{absurd.vu_high:.3g} VU, beyond any constant ({MAX_CONSTANT:,}): "
                             "the run's unit times are no verify times")
        if not found:
            raise ValueError(f"{path}: nothing judged by {profile.verifier} (the verifier "
                             f"{profile.name}'s constants are held to)")
        estimates += found
        if factors is not None:  # the node's adversary factors, as its run recorded them
            factors[node] = factors_of_records(run.records)
    return estimates, problems


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from qprof.commands.calibrate_headroom import headroom_json, headroom_lines
    from qprof.consensus import ProfileError, load_profile
    from qprof.consensus.calibrate import profile_toml, propose
    from qprof.consensus.headroom import apply_headroom, default_headroom
    from qprof.service.fleet import FleetError, fleet_estimates

    if not args.runs and not args.prometheus:
        return _fail(args, "nothing to calibrate from: give RUN.jsonl files and/or "
                     "--prometheus URL")
    if args.name is not None and (shown(args.name, MAX_PROFILE_NAME) != args.name
                                  or not args.name.strip()):
        return _fail(args, f"--name {shown(args.name, 40)!r}: a profile name is one line "
                     f"of at most {MAX_PROFILE_NAME} characters, no control characters")
    try:
        check_output(args.output)  # before any work: a path that cannot be written
    except OutputError as exc:
        return _fail(args, str(exc))
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        return _fail(args, str(exc))
    try:
        factors: dict[str, Factors] = {}
        estimates, problems = _from_runs(profile, args.runs, factors)
        if args.prometheus:
            fleet = fleet_estimates(args.prometheus)
            if profile.ratio_binds == "all":  # the user's profile binds every core
                fleet = [replace(e, binds=True) for e in fleet]
            if not fleet:
                raise ValueError(f"{args.prometheus}: no qprof estimates of the node's "
                                 "verifier (qprof_vu_estimate, basis node)")
            estimates += fleet
    except (ValueError, FleetError) as exc:
        return _fail(args, str(exc))
    applied = apply_headroom(profile, estimates, factors,
                             args.headroom or default_headroom(profile))
    proposal = propose(profile, applied.estimates, args.name)
    if args.output:
        text = profile_toml(proposal.proposed_profile, _comment(proposal))
        try:
            write_file(args.output, text)  # whole or not at all
        except OutputError as exc:
            return _fail(args, str(exc))
    ok = all(b.proposed.covered is not False for b in proposal.time_bounds)
    if args.json:
        print(json.dumps({**_json(proposal, args.output, problems),
                          **headroom_json(applied)}, indent=2))
    else:
        _print(proposal, args.output, problems)
        print("\n".join(headroom_lines(applied, bool(args.prometheus))))
    return 0 if ok else 1


def _comment(p: Proposal) -> list[str]:
    more = f", and {len(p.nodes) - NODES_NAMED} more" if len(p.nodes) > NODES_NAMED else ""
    lines = [f"Proposed by qprof calibrate from {len(p.nodes)} node(s): "
             + ", ".join(p.nodes[:NODES_NAMED]) + more,
             f"against {p.profile.name} ({p.profile.path}). Each constant is the smallest "
             "covering the top of", "the 95 % interval of its estimate on every CPU where "
             "the ratio binds.", ""]
    lines += [f"{s.suite}: {s.current} -> {s.proposed} ({s.note})" for s in p.suites]
    return lines


def _json(p: Proposal, output: str | None, problems: list[str]) -> dict[str, object]:
    from qprof.commands.check_policy import block_time_json

    return {
        "profile": p.profile.name, "proposed_profile": p.proposed_profile.name,
        "output": output, "nodes": list(p.nodes), "constants": p.constants,
        "suites": [{"suite": s.suite, "current": s.current, "proposed": s.proposed,
                    "change": s.change, "upper_bound": s.upper_bound,
                    "driven_by": s.driven_by, "binding_cpus": s.binding_cpus,
                    "other_cpus": s.other_cpus, "largest_elsewhere": s.largest_elsewhere,
                    "note": s.note} for s in p.suites],
        "time_bounds": [{"node": b.node, "cpu": b.cpu, "backend": b.backend,
                         "covered": b.proposed.covered,
                         "covered_now": b.current.covered,
                         "proposed": block_time_json(b.proposed),
                         "current": block_time_json(b.current)} for b in p.time_bounds],
        "problems": problems,
    }


def _print(p: Proposal, output: str | None, problems: list[str]) -> None:
    from qprof.hw.format import table

    more = f", and {len(p.nodes) - NODES_NAMED} more" if len(p.nodes) > NODES_NAMED else ""
    print(f"calibrate {shown(p.profile.name)} from {len(p.nodes)} node(s): "
          f"{', '.join(shown(n) for n in p.nodes[:NODES_NAMED])}{more}")
    for line in problems:
        print(f"note: {shown(line, MAX_ERROR)}")
    rows = [[s.suite, str(s.current), str(s.proposed), f"{s.change:+d}",
             "-" if s.upper_bound is None else str(s.upper_bound), shown(s.driven_by or "-"),
             f"{s.binding_cpus} / {s.other_cpus}",
             "-" if s.largest_elsewhere is None else str(s.largest_elsewhere), s.note]
            for s in p.suites]
    print(table(["SUITE", "CURRENT", "PROPOSED", "CHANGE", "95% UPPER", "FROM",
                 "CPUS BIND/NOT", "UPPER ELSEWHERE", "NOTE"], rows))
    print("time bound per node (worst-case block with the proposed constants vs the same "
          "block on the slowest reference core):")
    for b in p.time_bounds:
        mark = {True: "✓", False: "✗", None: "-"}[b.proposed.covered]
        print(f"  {shown(b.node)} cpu {b.cpu} ({shown(b.backend)}) {mark}: "
              f"{shown(b.proposed.why, MAX_ERROR)}")
    if output:
        print(f"wrote {output} (judge a run with it: qprof check --from RUN.jsonl "
              f"--profile {output})")
