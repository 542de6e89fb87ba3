"""`qprof block`: verify a real worst-case block, spread over cores as a node does.

For each suite: as many signatures as the profile's MAX_BLOCK_VERIFY_UNITS allows
(floor(max / constant)), fresh keys, verified by one pinned thread per CPU
(``qprof.measure.block``). Printed per scope (all the CPUs given, each cluster among
them when there are several, and one core alone): the wall time, the single-core
estimate (signatures x the median per-signature time on the first CPU, the figure
``qprof check`` uses), the speed-up, and the share of the profile's block interval.
Each block is verified ``--repeat`` times per scope, the scopes in turns, and the run
with the median wall time is shown (a neighbour on a shared host easily slows one
short block); the JSON keeps every run's wall time in ``wall_runs_s``.
Exit 0 when every verdict was right, 1 otherwise, 2 on errors.
"""

from __future__ import annotations

import argparse
import json
import sys

from qprof.commands.options import add_backend, add_cpus, add_suites
from qprof.measure.block import MODES


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", default="qanum", help="chain profile, name or path")
    add_suites(parser, "the profile's")
    add_cpus(parser, "all")
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="single",
        help="single: one verifier (enforce-only node); enforce: the second verifier "
        "also checks what the first accepts; shadow: both always, the first decides",
    )
    add_backend(parser, "liboqs if it works here, else numba")
    parser.add_argument("--second", default="numba", help="second verifier in enforce/shadow modes")
    parser.add_argument(
        "--signatures", type=int, help="signatures per block (default: the profile's worst case)"
    )
    parser.add_argument(
        "--invalid", type=int, default=0, help="tamper with this many signatures, spread out"
    )
    parser.add_argument(
        "--distinct",
        type=int,
        help="fresh key pairs per block (default: all for ML-DSA, 8 for SLH-DSA)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="verify each block this many times per scope, scopes in turn; the run with "
        "the median wall time is reported (default 3)",
    )
    parser.add_argument("--adversarial", action="store_true",
                        help="SLH-DSA: a block of the ground signatures of the last `qprof "
                        "adversary SUITE` run against a block of its median ones")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--root", default="/", help=argparse.SUPPRESS)


def _scopes(cpus: list[int], root: str) -> list[tuple[str, list[int]]]:
    """("all", cpus), each cluster's share when the CPUs span several, one core alone."""
    from qprof.hw import read_topology

    scopes = [("all", cpus)]
    try:
        clusters = read_topology(root).clusters
    except Exception:  # no topology: the CPUs still verify; no per-cluster rows
        clusters = []
    shares = [(c.id, [cpu for cpu in cpus if cpu in c.cpus]) for c in clusters]
    shares = [(cid, share) for cid, share in shares if share]
    if len(shares) > 1:
        scopes += [(f"cluster {cid}", share) for cid, share in shares]
    if len(cpus) > 1:
        scopes.append((f"cpu {cpus[0]}", cpus[:1]))
    return scopes


def _default_backend() -> str:
    from qprof.verify import backend_status

    return "liboqs" if backend_status("liboqs").available else "numba"


def run(args: argparse.Namespace) -> int:
    from qprof.commands.bench import resolve_cpus
    from qprof.consensus import ProfileError, load_profile
    from qprof.consensus.vu import block_signatures
    from qprof.measure.block import (
        BlockError,
        build_block,
        median_run,
        node_verifier,
        single_core_median_s,
        verify_block,
    )
    from qprof.verify import SUITES

    def fail(text: str) -> int:
        if args.json:
            print(json.dumps({"error": text, "results": []}))
        else:
            print(f"qprof block: {text}", file=sys.stderr)
        return 2

    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        return fail(str(exc))
    suites = args.suites or profile.suites
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        return fail(f"unknown suite {', '.join(unknown)}; known: {', '.join(SUITES)}")
    unpriced = [s for s in suites if s not in profile.verify_units]
    if unpriced and not args.signatures:
        return fail(f"no Verify-Unit constant in {profile.name} for {', '.join(unpriced)}")
    try:
        cpus = resolve_cpus(args.cpus or "all", args.root) or []
    except ValueError as exc:
        return fail(f"--cpus: {exc}")
    if not cpus:
        return fail(f"--cpus {args.cpus or 'all'}: no CPU to verify on")
    backend = args.backend or _default_backend()
    if args.adversarial:
        from qprof.commands.block_adversarial import run_adversarial

        return run_adversarial(args, profile, suites, cpus, backend)
    results = []
    for suite in suites:
        n = args.signatures or block_signatures(profile, suite)
        invalid = [n * (k + 1) // (args.invalid + 1) for k in range(args.invalid)]
        try:
            if not args.json:
                print(f"{suite}: signing {n} signatures...", file=sys.stderr)
            block = build_block(suite, n, args.distinct, invalid)
            per_sig = single_core_median_s(
                block, cpus[0], node_verifier(suite, backend, args.mode, args.second)
            )
            scopes = _scopes(cpus, args.root)
            runs: dict[str, list] = {scope: [] for scope, _ in scopes}
            for _ in range(max(1, args.repeat)):
                for scope, share in scopes:  # in turns: a slow spell hits every scope
                    runs[scope].append(
                        verify_block(block, share, backend, args.mode, args.second, scope,
                                     profile.target_block_interval_s, per_sig)  # fmt: skip
                    )
            results += [median_run(runs[scope]) for scope, _ in scopes]
        except (BlockError, ValueError, OSError) as exc:
            return fail(f"{suite}: {exc}")
    if args.json:
        print(json.dumps({"profile": profile.name, "results": [r.to_dict() for r in results]},
                         indent=1))  # fmt: skip
    else:
        _print_table(results, profile.name)
    return 0 if all(r.all_verified for r in results) else 1


def _print_table(results: list, profile: str) -> None:
    from qprof.hw.sysfs import format_cpulist

    print(f"worst-case blocks of profile {profile} (one pinned thread per CPU)")
    print(
        f"{'SUITE':19s} {'MODE':8s} {'SCOPE':10s} {'CPUS':6s} {'SIGS':>5s} {'WALL ms':>9s} "
        f"{'1-CORE EST ms':>13s} {'SPEEDUP':>7s} {'% INTERVAL':>10s}  VERDICTS"
    )
    for r in results:
        interval = f"{100 * r.interval_fraction:.3f}" if r.interval_fraction is not None else "-"
        verdicts = "all right" if r.all_verified else f"{len(r.wrong_verdicts)} WRONG"
        if r.rejected:
            verdicts += f" ({r.rejected} rejected)"
        print(
            f"{r.suite:19s} {r.mode:8s} {r.scope:10s} {format_cpulist(r.cpus):6s} "
            f"{r.signatures:5d} {1e3 * r.wall_s:9.2f} {1e3 * r.single_core_estimate_s:13.2f} "
            f"{r.speedup:6.2f}x {interval:>10s}  {verdicts}"
        )
