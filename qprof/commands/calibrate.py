"""`qprof calibrate RUN.jsonl... [--prometheus URL] [--profile P] [-o FILE.toml]`:
Verify-Unit constants proposed from a fleet's runs, a table of current, proposed and why.

Runs are one node per machine (hostname, architecture, CPU model), judged as `check`
judges them; a Prometheus server adds every node it scrapes. The proposal
(``qprof.consensus.calibrate``) covers each suite where the ratio binds, else the
profile's reference medians with the nodes' adversary factors (``--headroom``), written
as a profile TOML (``-o``). Exit 0: every node's time bound holds with it; 1: one does
not; 2: error.
"""
from __future__ import annotations

import argparse
import json
import sys
import textwrap
from dataclasses import replace
from functools import partial
from pathlib import Path

from qprof.commands.calibrate_headroom import headroom_json, headroom_lines
from qprof.commands.output import OutputError, check_output, shown, write_file
from qprof.commands.reading import COMPUTED, ReadingRuns
from qprof.consensus import Profile, ProfileError, load_profile
from qprof.consensus.adversarial import AdversaryFactor
from qprof.consensus.calibrate import (
    MAX_CONSTANT,
    NodeEstimate,
    Proposal,
    node_estimates,
    profile_toml,
    propose,
)
from qprof.consensus.headroom import (
    Factors,
    apply_headroom,
    default_headroom,
    factors_of_records,
    reference_projections,
)
from qprof.consensus.judgement_codec import block_time_json
from qprof.hw.format import table
from qprof.measure.jsonl import RunData, read_run
from qprof.measure.records_parts import MachineInfo
from qprof.report.judgement import report_judgement
from qprof.service.fleet import FleetError, fleet_estimates
from qprof.service.keep import kept_node
from qprof.service.run_files import points_of_runs

MAX_ERROR = 2000  # an error line names what a run or a server held: bounded
NODES_NAMED = 20  # in the proposed TOML's comment and the text's first line
WHY_WIDTH = 52  # the WHY column: the table (47 columns before it) within 100 columns



def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="*", metavar="RUN.jsonl",
                        help="recorded runs, one node each (check -o, bench, daemon export)")
    parser.add_argument("--prometheus", metavar="URL",
                        help="also every node of the fleet in this Prometheus server "
                        "(http://host:9090), through its HTTP API")
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="also this node as its stores in DIR keep it (check's and "
                        "adversary's runs: qprof history)")
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
    """A machine's name, one bounded line: its hostname, else its first run's file; a name
    already taken by another machine gets " #2", " #3"... (``seen``: name -> how many
    machines had it; constant work per machine)."""
    name = (shown(hostname, MAX_NODE_NAME) if isinstance(hostname, str) and hostname.strip()
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


def _machine(run: RunData) -> tuple[str, ...]:
    """What tells machines apart in a run: hostname, architecture and CPU model (a run
    without a hostname is a machine of its own)."""
    m = run.meta.machine if run.meta else MachineInfo()
    host = m.hostname
    if host is None or not host.strip():
        return ("file", str(run.path))
    return ("host", host, str(m.arch), str(m.cpu_model))


def _read(paths: list[str]) -> tuple[dict[tuple[str, ...], list[RunData]], list[str]]:
    """The runs by machine, each machine's oldest first, and the readers' problems."""

    machines: dict[tuple[str, ...], list[RunData]] = {}
    problems: list[str] = []
    for text in paths:
        path = Path(text)
        try:
            run = read_run(path)
        except OSError as exc:
            raise ValueError(f"{path}: {exc.strerror or exc}") from None
        problems += run.problems[:3]
        if not run.measurements:
            raise ValueError(f"{path}: no measurements")
        machines.setdefault(_machine(run), []).append(run)
    for runs in machines.values():
        runs.sort(key=lambda r: r.meta.started_at if r.meta else 0.0)
    return machines, problems


def _from_runs(profile: Profile, paths: list[str], factors: dict[str, Factors] | None = None
               ) -> tuple[list[NodeEstimate], list[str]]:
    """Each machine's estimates (its newest run, on the segment its runs make, as check
    judges it) and, in ``factors``, its newest recorded adversary factors."""

    estimates: list[NodeEstimate] = []
    machines, problems = _read(paths)
    seen: dict[str, int] = {}
    for runs in machines.values():
        first = runs[0]
        node = _node_name(first.path, first.meta.machine.hostname if first.meta else None,
                          seen)
        where = ", ".join(str(r.path) for r in runs)
        try:
            with ReadingRuns("calibrate", done=COMPUTED) as progress:
                results = report_judgement(runs, profile, (), partial(
                    points_of_runs, on_done=progress)).coverage
        except (ArithmeticError, ValueError) as exc:  # records no engine writes (zero times)
            raise ValueError(f"{where}: its measurements do not give an estimate "
                             f"({type(exc).__name__}: {exc})") from None
        found = node_estimates(node, results)
        absurd = next((e for e in found if e.vu_high > MAX_CONSTANT), None)
        if absurd is not None:
            raise ValueError(f"{where}: {absurd.suite} on CPU {absurd.cpu}: an estimate of "
                             f"{absurd.vu_high:.3g} VU, beyond any constant ({MAX_CONSTANT:,}): "
                             "the run's unit times are no verify times")
        if not found:
            raise ValueError(f"{where}: nothing judged by {profile.verifier} (the verifier "
                             f"{profile.name}'s constants are held to)")
        estimates += found
        if factors is not None:  # the machine's adversary factors, its newest run's last
            mine: dict[str, dict[str, AdversaryFactor]] = {}
            for r in runs:
                for suite, kinds in factors_of_records(r.records).items():
                    mine.setdefault(suite, {}).update(kinds)
            factors[node] = mine
    return estimates, problems


def _from_store(profile: Profile, state_dir: Path, factors: dict[str, Factors],
                problems: list[str]) -> list[NodeEstimate]:
    """The node the user's stores in ``state_dir`` keep (named by the directory): its
    estimates as check judges them, and its kept adversary factors into ``factors``."""

    kept = kept_node(state_dir, profile)
    if not kept.coverage and not kept.factors:
        raise ValueError(kept.problems[0] if kept.problems else
                         f"{state_dir}: no run kept there (qprof check, qprof adversary)")
    problems += kept.problems
    node = shown(str(state_dir), MAX_NODE_NAME)
    factors[node] = factors_of_records(kept.factors)
    return node_estimates(node, kept.coverage)


def run(args: argparse.Namespace) -> int:

    if not args.runs and not args.prometheus and args.state_dir is None:
        return _fail(args, "nothing to calibrate from: give RUN.jsonl files, --state-dir "
                     "DIR and/or --prometheus URL")
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
        if args.state_dir is not None:
            estimates += _from_store(profile, args.state_dir, factors, problems)
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
    headroom = args.headroom or default_headroom(profile)
    applied = apply_headroom(profile, estimates, factors, headroom)
    proposal = propose(profile, applied.estimates, args.name,
                       reference_projections(profile, factors, headroom))
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
        print("\n".join(headroom_lines(applied, bool(args.prometheus),
                                        sum(s.projected for s in proposal.suites))))
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
    return {
        "profile": p.profile.name, "proposed_profile": p.proposed_profile.name,
        "output": output, "nodes": list(p.nodes), "constants": p.constants,
        "suites": [{"suite": s.suite, "current": s.current, "proposed": s.proposed,
                    "change": s.change, "upper_bound": s.upper_bound,
                    "driven_by": s.driven_by, "binding_cpus": s.binding_cpus,
                    "other_cpus": s.other_cpus, "largest_elsewhere": s.largest_elsewhere,
                    "note": s.note, "projected": s.projected} for s in p.suites],
        "time_bounds": [{"node": b.node, "cpu": b.cpu, "backend": b.backend,
                         "covered": b.proposed.covered,
                         "covered_now": b.current.covered,
                         "proposed": block_time_json(b.proposed),
                         "current": block_time_json(b.current)} for b in p.time_bounds],
        "problems": problems,
    }


def _print(p: Proposal, output: str | None, problems: list[str]) -> None:
    """The nodes, then a table per suite of the current constant, the proposal and why
    (wrapped on words within ``WHY_WIDTH``), then each node's time bound."""

    more = f", and {len(p.nodes) - NODES_NAMED} more" if len(p.nodes) > NODES_NAMED else ""
    print(f"calibrate {shown(p.profile.name)} from {len(p.nodes)} node(s): "
          f"{', '.join(shown(n) for n in p.nodes[:NODES_NAMED])}{more}")
    for line in problems:
        print(f"note: {shown(line, MAX_ERROR)}")
    rows = []
    for s in p.suites:
        highest = f" (highest: {s.driven_by})" if s.driven_by and not s.projected else ""
        why = shown(s.note + highest, MAX_ERROR)
        lines = textwrap.wrap(why, WHY_WIDTH) or [""]
        rows.append([s.suite, str(s.current), str(s.proposed),
                     f"{s.change:+d}" if s.change else "=", lines[0]])
        rows += [["", "", "", "", more_line] for more_line in lines[1:]]
    print(table(["SUITE", "CURRENT", "PROPOSED", "CHANGE", "WHY"], rows, right=(1, 2, 3)))
    print("time bound per node (worst-case block with the proposed constants vs the same "
          "block\non the slowest reference core):")
    for b in p.time_bounds:
        mark = {True: "✓", False: "✗", None: "-"}[b.proposed.covered]
        print(textwrap.fill(f"{shown(b.node)} cpu {b.cpu} ({shown(b.backend)}) {mark}: "
                            f"{shown(b.proposed.why, MAX_ERROR)}", 100,
                            initial_indent="  ", subsequent_indent="    "))
    if output:
        print(f"wrote {output} (judge a run with it: qprof check --from RUN.jsonl "
              f"--profile {output})")
