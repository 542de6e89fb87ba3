"""`qprof block`: verify a real worst-case block, spread over cores as a node does.

Per suite (or ``--worst``: the costliest mixture under every limit) as many spends as
the profile's limits allow, verified by one pinned thread per CPU, ``--repeat`` times
per scope in alternating order; prints the median wall time with its interval against
the single-core estimate `qprof check` uses. Exit 0 when every verdict was right, 1
otherwise, 2 on errors. What each figure is: docs/FIRST_MINUTES.md.
"""

from __future__ import annotations

import argparse
import json
import sys

from qprof.commands.bench import resolve_cpus
from qprof.commands.block_adversarial import run_adversarial
from qprof.commands.options import Number, add_backend, add_cpus, add_suites
from qprof.commands.output import emit
from qprof.consensus import Profile, ProfileError, load_profile
from qprof.consensus.vu import block_signatures
from qprof.consensus.worst_block import BlockLimits, worst_block
from qprof.hw import read_topology
from qprof.hw.sysfs import format_cpulist
from qprof.measure.block import (
    MODES,
    Block,
    BlockError,
    BlockResult,
    build_block,
    build_mixed_block,
    median_run,
    node_verifier,
    single_core_median_s,
    verify_block,
)
from qprof.verify import SUITES, backend_status


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
        "--signatures", type=Number(int, at_least=1, at_most=MAX_SIGNATURES),
        help="signatures per block (default: the profile's worst case; at most the most "
        "spends a block of the profile can hold)"
    )
    parser.add_argument(
        "--invalid", type=Number(int, at_least=0, at_most=MAX_SIGNATURES), default=0,
        help="tamper with this many signatures, spread out"
    )
    parser.add_argument(
        "--distinct",
        type=Number(int, at_least=1, at_most=MAX_SIGNATURES),
        help="fresh key pairs per block (default: all for ML-DSA, 8 for SLH-DSA)",
    )
    parser.add_argument(
        "--repeat",
        type=Number(int, at_least=1, at_most=1000),
        default=9,
        help="verify each block this many times per scope, scopes in turn (reversed every "
        "other repeat); the median wall time is reported with its 95 %% interval (an "
        "interval needs >= 6; default 9)",
    )
    parser.add_argument(
        "--worst", action="store_true",
        help="measure the worst-case block: the costliest mixture of the suites under all "
        "the profile's limits (VU budget and auth bytes), from the per-signature times "
        "measured here",
    )
    parser.add_argument("--adversarial", action="store_true",
                        help="SLH-DSA: a block of the ground signatures of the last `qprof "
                        "adversary SUITE` run against a block of its median ones")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--root", default="/", help=argparse.SUPPRESS)


# No profile's block holds more spends than this (qanum: 2,000 of ML-DSA-44 under its VU
# budget); the profile's own limits bound --signatures further (_signature_limit).
MAX_SIGNATURES = 100_000


def _signature_limit(profile: Profile) -> int:
    """The most spends a block of ``profile`` can hold, of any priced suite, under every
    limit it states (its VU budget, its auth bytes)."""

    return max((block_signatures(profile, s) for s in profile.verify_units), default=1)


def _unavailable(suites: list[str], backends: list[str]) -> str | None:
    """Why a verifier this block needs cannot run here (None: all can), found before any
    signing: a missing backend was a BackendUnavailable traceback after it."""

    for name in dict.fromkeys(backends):
        try:
            status = backend_status(name)
        except ValueError as exc:  # an unknown name
            return str(exc)
        if not status.available:
            return f"backend {name} is not available here: {status.reason}"
        missing = [s for s in suites if s not in status.suites]
        if missing:
            return f"backend {name} cannot verify {', '.join(missing)} here"
    return None


def _scopes(cpus: list[int], root: str) -> list[tuple[str, list[int]]]:
    """("all", cpus), each cluster's share when the CPUs span several, one core alone."""

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
    return "liboqs" if backend_status("liboqs").available else "numba"


def run(args: argparse.Namespace) -> int:
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
    limit = _signature_limit(profile)
    if args.signatures is not None and args.signatures > limit:
        return fail(f"--signatures {args.signatures}: a block of {profile.name} holds at most "
                    f"{limit} spends under its limits")
    if args.invalid > (args.signatures or limit):
        return fail(f"--invalid {args.invalid}: more than the block's signatures")
    backend = args.backend or _default_backend()
    refused = _unavailable(suites, [backend] + ([args.second] if args.mode != "single"
                                                else []))
    if refused:
        return fail(refused)
    if args.adversarial:
        return run_adversarial(args, profile, suites, cpus, backend)
    scopes = _scopes(cpus, args.root)
    results: list[BlockResult] = []
    worst: dict[str, object] | None = None
    try:
        if args.worst:
            block, per_sig, worst = _worst_block(args, profile, suites, cpus[0], backend)
            results += _repeat(args, profile, block, per_sig, scopes, backend)
        for suite in ([] if args.worst else suites):
            n = args.signatures or block_signatures(profile, suite)
            invalid = [n * (k + 1) // (args.invalid + 1) for k in range(args.invalid)]
            if not args.json:
                print(f"{suite}: signing {n} signatures...", file=sys.stderr)
            block = build_block(suite, n, args.distinct, invalid)
            per_sig = single_core_median_s(
                block, cpus[0], node_verifier(suite, backend, args.mode, args.second)
            )
            results += _repeat(args, profile, block, per_sig, scopes, backend)
    except (BlockError, ValueError, OSError) as exc:
        return fail(str(exc))
    if args.json:
        out: dict[str, object] = {"profile": profile.name,
                                  "results": [r.to_dict() for r in results]}
        if worst is not None:
            out["worst_block"] = worst
        emit(json.dumps(out, indent=1))
    else:
        if worst is not None:
            print(f"worst-case block of {profile.name} from the times on CPU {cpus[0]}: "
                  f"{worst['block']} ({worst['binding_text']}), estimated "
                  f"{1e3 * float(worst['estimate_s']):.2f} ms on one core "  # type: ignore[arg-type]
                  f"({worst['verify_units']} VU, {worst['auth_bytes']} auth bytes)")
        _print_table(results, profile.name)
    return 0 if all(r.all_verified for r in results) else 1


def _repeat(args: argparse.Namespace, profile: Profile, block: Block, per_sig: float,
            scopes: list[tuple[str, list[int]]], backend: str) -> list[BlockResult]:
    """Every scope ``--repeat`` times, in turns, the order reversed every other repeat;
    each scope's median run, paired with the single-CPU runs of the same repeats."""

    runs: dict[str, list[BlockResult]] = {scope: [] for scope, _ in scopes}
    for k in range(max(1, args.repeat)):
        for scope, share in (scopes if k % 2 == 0 else scopes[::-1]):
            runs[scope].append(verify_block(block, share, backend, args.mode, args.second,
                                            scope, profile.target_block_interval_s,
                                            per_sig))  # fmt: skip
    single = next((runs[scope] for scope, share in scopes if len(share) == 1), None)
    return [median_run(runs[scope], single if len(share) > 1 else None)
            for scope, share in scopes]


def _worst_block(args: argparse.Namespace, profile: Profile, suites: list[str], cpu: int,
                 backend: str) -> tuple[Block, float, dict[str, object]]:
    """The costliest mixture under the profile's limits, from per-signature medians
    measured here on ``cpu`` (a pool of each suite), built as a real block."""

    times = {}
    for suite in suites:
        if not args.json:
            print(f"{suite}: timing a pool of signatures on CPU {cpu}...", file=sys.stderr)
        pool = build_block(suite, 16, args.distinct)
        times[suite] = 1e9 * single_core_median_s(
            pool, cpu, node_verifier(suite, backend, args.mode, args.second), sample=64)
    w = worst_block(BlockLimits.of(profile), times, suites)
    if not args.json:
        print(f"worst-case block: {w.text()}: signing...", file=sys.stderr)
    block = build_mixed_block(w.composition, args.distinct)
    per_sig = w.time_ns / 1e9 / max(1, w.spends)
    return block, per_sig, {
        "block": w.text(), "composition": dict(w.composition), "binding": list(w.binding),
        "binding_text": w.binding_text(), "verify_units": w.verify_units,
        "max_verify_units": w.max_verify_units, "auth_bytes": w.auth_bytes,
        "max_auth_bytes": w.max_auth_bytes, "estimate_s": w.time_ns / 1e9,
        "per_signature_ns": times, "cpu": cpu,
    }


def _print_table(results: list, profile: str) -> None:
    print(f"worst-case blocks of profile {profile} (one pinned thread per CPU; median "
          "wall time of the repeats, [95 % interval])")
    print(
        f"{'SUITE':19s} {'MODE':8s} {'SCOPE':10s} {'CPUS':6s} {'SIGS':>5s} {'WALL ms':>9s} "
        f"{'[95 % CI]':>17s} {'1-CORE EST ms':>13s} {'SPEEDUP':>7s} {'VS 1 CPU':>20s} "
        f"{'% INTERVAL':>10s}  VERDICTS"
    )
    for r in results:
        wall = r.wall_median_s if r.wall_median_s is not None else r.wall_s
        interval = (f"{100 * wall / r.block_interval_s:.3f}" if r.block_interval_s
                    else "-")
        verdicts = "all right" if r.all_verified else f"{len(r.wrong_verdicts)} WRONG"
        if r.rejected:
            verdicts += f" ({r.rejected} rejected)"
        ci = (f"[{1e3 * r.wall_ci_s[0]:.2f}-{1e3 * r.wall_ci_s[1]:.2f}]" if r.wall_ci_s
              else "[too few runs]")
        vs = "-"
        if r.vs_single is not None:
            vs = f"{r.vs_single:.2f}x" + (f" [{r.vs_single_ci[0]:.2f}-{r.vs_single_ci[1]:.2f}]"
                                          if r.vs_single_ci else "")
        label = r.suite if len(r.suite) <= 19 else "worst mixture"
        print(
            f"{label:19s} {r.mode:8s} {r.scope:10s} {format_cpulist(r.cpus):6s} "
            f"{r.signatures:5d} {1e3 * wall:9.2f} {ci:>17s} "
            f"{1e3 * r.single_core_estimate_s:13.2f} "
            f"{r.single_core_estimate_s / wall if wall else 0:6.2f}x {vs:>20s} "
            f"{interval:>10s}  {verdicts}"
        )
