"""`qprof adversary SUITE`: what the costliest signatures an adversary can bring cost.

Fresh random, pooled, ground valid and crafted invalid signatures of one key, timed
together on one pinned core; prints each kind's cost over the random ones' median and
writes the signatures (``--out``) for anyone to check. ``--minutes`` bounds the whole
command; the run is kept in the user's store as check's are (``--no-store``: not).
Exit 0, 2 on errors. What it times: docs/ADVERSARY.md.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sys
import time
import uuid
from pathlib import Path

from qprof import __version__
from qprof.commands.options import Number
from qprof.commands.output import OutputError, check_output, shown, write_file
from qprof.consensus import ProfileError, load_profile
from qprof.hw.format import table
from qprof.measure.adversary import (
    AdversaryError,
    AdversaryRun,
    run_adversary,
    save_last,
    summary_path,
)
from qprof.measure.preflight import adversary_records
from qprof.measure.records import End, Meta
from qprof.measure.records_parts import CpuRow, MachineInfo, RunSettings
from qprof.measure.runmeta import collect_versions, cpuinfo_field
from qprof.measure.sigtime import DEFAULT_ROUNDS, SigTimeError
from qprof.measure.units import NO_PROFILE_UNIT
from qprof.service.keep import keeper
from qprof.verify import SUITES, available_backends


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("suite", nargs="?",
                        help="e.g. SLH-DSA-SHAKE-128s, ML-DSA-44 (default: every SLH-DSA "
                        "suite of --profile)")
    parser.add_argument("--profile", default="qanum",
                        help="whose SLH-DSA suites to run without SUITE (default qanum)")
    parser.add_argument("--minutes", type=Number(float, at_least=0.0, at_most=1440.0),
                        default=2.0,
                        help="the whole command's time in minutes: signing, grinding and "
                        "timing, shared by the suites (default 2)")
    parser.add_argument("--cpu", type=Number(int, at_least=0, at_most=65535),
                        help="CPU to time on (default: the highest one "
                        "this process may use)")
    parser.add_argument("--out", type=Path, help="write the signatures as a JSON list here")
    parser.add_argument("--pool", type=Number(int, at_least=1, at_most=1024), default=64,
                        help="signatures in the cached pool (64-256; default 64)")
    parser.add_argument("--rounds", type=Number(int, at_least=3, at_most=1000),
                        default=DEFAULT_ROUNDS,
                        help=f"timing rounds (default {DEFAULT_ROUNDS})")
    parser.add_argument("--no-dual", action="store_true",
                        help="time liboqs only (skip the numba second verifier)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--no-store", action="store_true",
                        help="do not keep the run in the user's store (kept by default, "
                        "where history and calibrate --state-dir find its factors)")
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="the store the run is kept in (default as for qprof history)")


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1000:.1f}"


def _suites(args: argparse.Namespace) -> list[str] | None:
    """SUITE, else the profile's SLH-DSA suites (None: said why on stderr)."""

    if args.suite is not None:
        if args.suite in SUITES:
            return [args.suite]
        print(f"qprof adversary: unknown suite {shown(args.suite, 100)!r}; known: "
              f"{', '.join(SUITES)}", file=sys.stderr)
        return None
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        print(f"qprof adversary: {exc}", file=sys.stderr)
        return None
    found = [s for s in profile.suites if s.startswith("SLH-DSA")]
    if not found:
        print(f"qprof adversary: {profile.name} prices no SLH-DSA suite: name a SUITE",
              file=sys.stderr)
    return found or None


def run(args: argparse.Namespace) -> int:
    suites = _suites(args)
    if suites is None:
        return 2
    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    if cpu not in os.sched_getaffinity(0):
        print(f"qprof adversary: CPU {cpu} is not one this process may use", file=sys.stderr)
        return 2
    try:  # before minutes of grinding, not after
        check_output(args.out)
    except OutputError as exc:
        print(f"qprof adversary: --out: {exc}", file=sys.stderr)
        return 2
    deadline = time.monotonic() + 60 * args.minutes
    started_at = time.time()
    results: list[AdversaryRun] = []
    for i, suite in enumerate(suites):  # each suite an equal share of what is left
        end = time.monotonic() + (deadline - time.monotonic()) / (len(suites) - i)
        result = _one(args, suite, cpu, end)
        if result is None:
            _keep(args, cpu, started_at, results, f"{suite} failed")
            return 2
        results.append(result)
    _keep(args, cpu, started_at, results, None)
    if args.out:
        try:
            write_file(args.out, json.dumps([s for r in results for s in r.to_json_list()],
                                            indent=1) + "\n")
        except OutputError as exc:
            kept = ", ".join(str(summary_path(r.suite)) for r in results)
            print(f"qprof adversary: --out: {exc}; the run is kept in {kept}",
                  file=sys.stderr)
            return 2
    if args.json:
        summaries = [r.summary() for r in results]
        print(json.dumps(summaries[0] if args.suite else summaries, indent=2))
        return 0
    for i, result in enumerate(results):
        if i:
            print()
        _print(result)
    if args.out:
        print(f"\nsignatures written to {args.out}")
    return 0


def _one(args: argparse.Namespace, suite: str, cpu: int, deadline: float) -> AdversaryRun | None:
    """One suite's run by ``deadline``, kept in the cache (None: said why on stderr)."""

    say = (lambda _: None) if args.json else (lambda m: print(m, file=sys.stderr))
    try:
        result = run_adversary(suite, args.minutes, cpu, pool_size=args.pool,
                               rounds=args.rounds, dual=not args.no_dual, say=say,
                               deadline=deadline,
                               stream=io.StringIO() if args.json else None)
    except (AdversaryError, SigTimeError, ValueError) as exc:
        print(f"qprof adversary: {exc}", file=sys.stderr)
        return None
    # The cache first: a failed --out (the disk filled meanwhile) loses no run.
    try:
        save_last(result)
    except OutputError as exc:
        print(f"qprof adversary: the run's cache: {exc}", file=sys.stderr)
        return None
    return result


def _keep(args: argparse.Namespace, cpu: int, started_at: float,
          results: list[AdversaryRun], failed: str | None) -> None:
    """The run into the user's store (unless ``--no-store``): a Meta, each suite's
    factors as the records a check run carries (read back from the cache just written)
    and an End; a store that cannot take it is a warning."""
    if args.no_store or not results:
        return
    run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
    suites = [r.suite for r in results]
    meta = Meta(run_id=run_id, started_at=started_at, qprof_version=__version__,
                command=["qprof", "adversary", *sys.argv[2:]],
                versions=collect_versions(available_backends()),
                machine=MachineInfo(hostname=platform.node(), kernel=platform.release(),
                                    arch=platform.machine(), cpu_model=results[0].cpu_model,
                                    microcode=cpuinfo_field("/", "microcode"),
                                    keys=("hostname", "kernel", "arch", "cpu_model",
                                          "microcode")),
                cpus=[CpuRow(cpu=cpu)],
                settings=RunSettings(mode="adversary", suites=tuple(suites),
                                     extra={"minutes": args.minutes, "pool": args.pool},
                                     rounds=args.rounds, dual=not args.no_dual,
                                     keys=("mode", "suites", "minutes", "pool", "rounds",
                                           "dual")))
    factors = adversary_records(run_id, suites)
    for why in factors.unreadable:
        print(f"qprof adversary: warning: {shown(why, 2000)}", file=sys.stderr)
    kept = keeper(args.state_dir, NO_PROFILE_UNIT.suite)
    for record in (meta, *factors.records,
                   End(run_id=run_id, finished_at=time.time(),
                       status="partial" if failed else "finished", reason=failed)):
        kept.add(record)
    kept.finish()
    if kept.error:
        print(f"qprof adversary: warning: {shown(kept.error, 2000)}", file=sys.stderr)


def _print(run: AdversaryRun) -> None:
    base = run.baseline_ns
    nb_base = run.numba_baseline_ns
    print(f"{run.suite} on CPU {run.cpu} ({run.cpu_model}), {run.rounds} rounds interleaved; "
          f"baseline: median of {len(run.of_kind('random'))} random signatures = "
          f"{base / 1000:.1f} us (liboqs)")
    rows = []
    for s in run.signatures:
        if s.kind == "random":
            continue
        r = run.ratio(s)
        shadow = (f"{(s.verify_ns + s.numba_ns) / (base + nb_base):.3f}x"
                  if s.numba_ns is not None and nb_base else "-")
        rows.append([s.kind, s.label, "yes" if s.valid else "no",
                     str(s.hash_calls) if s.hash_calls is not None else "-",
                     str(s.permutations) if s.permutations is not None else "-",
                     _us(s.verify_ns), f"{r.value:.3f}x", f"{r.low:.3f}-{r.high:.3f}",
                     _us(s.numba_ns), shadow])
    randoms = run.of_kind("random")
    calls = sorted(s.hash_calls for s in randoms if s.hash_calls is not None)
    perms = sorted(s.permutations for s in randoms if s.permutations is not None)
    if calls:
        rows.insert(0, ["random (median)", f"{len(randoms)} fresh", "yes",
                        str(calls[len(calls) // 2]),
                        str(perms[len(perms) // 2]) if perms else "-", _us(base), "1.000x", "",
                        _us(nb_base), "1.000x"])
    print(table(["kind", "what", "valid", "hash calls", "keccak perms", "liboqs us", "ratio",
                 "95% interval", "numba us", "shadow ratio"], rows))
    print("enforce mode: an invalid signature costs liboqs alone (the second verifier only "
          "sees what liboqs accepts); a valid one liboqs + numba")
    g = run.grind.get("valid")
    if g:
        calls_gain = (max(g["best_steps"]) - g["random_mean_steps"]) if g["best_steps"] else 0
        print(f"valid grinding: {g['cpu_seconds']:.0f} CPU-s ({g['seconds']:.0f} s wall): "
              f"{g['trees']} XMSS trees, {g['fors_keys']} FORS keys, "
              f"{g['landing_tries'] / 1e6:.1f} M landing tries, {g['hits']} hits; best "
              f"+{calls_gain:.0f} chain steps over the random mean "
              f"({g['random_mean_steps']:.0f})")
        if g["trajectory"]:
            print("  best so far at CPU-s: " + ", ".join(
                f"{cpu:.0f} s +{best - g['random_mean_steps']:.0f}"
                for cpu, best in _improvements(g["trajectory"])))
    c = run.grind.get("crafted")
    if c:
        print(f"crafted invalid: {c['cpu_seconds']:.0f} CPU-s, "
              f"{sum(c['tries_per_layer']) / 1e6:.1f} M tries; chain steps per layer "
              f"{c['layer_steps']}")
    if run.pool:
        t, m = run.pool["time_ns"], run.pool["model"]
        print(f"pool of {t['count']} (liboqs, medians): median {t['median'] / 1000:.1f} us, "
              f"p90 {t['p90'] / t['median']:.3f}x, p99 {t['p99'] / t['median']:.3f}x, "
              f"max {t['max'] / t['median']:.3f}x")
        print(f"time = {m['ns_per_permutation']:.1f} ns x Keccak-f permutations (fitted on the "
              f"pool's quickest rounds, rms {100 * m['rms_error']:.1f} %); largest error "
              "(predicted / quickest - 1): " + ", ".join(
                  f"{k} {100 * v:+.1f} %" for k, v in run.pool["model_max_error"].items()))


def _improvements(trajectory: list[list[float]]) -> list[tuple[float, float]]:
    """The (CPU seconds, best steps) points where the best grew."""
    out: list[tuple[float, float]] = []
    for cpu, best in trajectory:
        if not out or best > out[-1][1]:
            out.append((cpu, best))
    return out
