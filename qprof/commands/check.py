"""`qprof check --profile NAME`: do the profile's Verify-Unit constants cover this machine?

Measures the profile's suites (verify only) on the chosen CPUs through the engine's
"check" mode: A/B/A/B/A rounds, adding B/A pairs while an estimate's 95 % interval
straddles its constant, within a time limit. Exit 0: every suite covered on every CPU;
1: some suite not covered; 2: error (nothing measured, bad profile, bad CPU list...).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from qprof.commands.bench import ProgressLine, add_common, resolve_cpus
from qprof.commands.options import add_backend


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", default="qanum", help="chain profile, name or path")
    add_common(parser)
    add_backend(parser, default="liboqs if available, else numba")
    parser.add_argument("--json", action="store_true", help="machine-readable result")
    parser.add_argument("--time-limit", type=float, default=50.0, metavar="S",
                        help="add no rounds that would end after S seconds (default 50)")
    parser.add_argument("-o", "--output", metavar="FILE.jsonl", help="also keep the JSONL run")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress line")
    parser.add_argument("--statistic", choices=("auto", "median", "p10", "paired"),
                        default="auto",
                        help="median: the rule; p10: compare 10th percentiles; paired: each "
                        "suite turn against the unit turns on both sides, only where both ran "
                        "at the quiet speed (rounds are timed in turns of 4 ms); auto "
                        "(default): the median while ML-DSA rounds agree within 100 bp, else "
                        "the quiet-turn pairs (else the steadier 10th percentile); the output "
                        "says which")


def _ms(ns: float) -> str:
    from qprof.measure.units import fmt_ns

    return fmt_ns(ns)


def run(args: argparse.Namespace) -> int:
    from qprof.consensus import ProfileError, load_profile
    from qprof.hw.caps import RATIOS_UNAFFECTED, cap_message
    from qprof.measure.config import BenchConfig
    from qprof.measure.engine import EngineError, run_bench
    from qprof.measure.jsonl import JsonlSink
    from qprof.measure.records import Meta, Note, Record
    from qprof.measure.verdict import evaluate

    def fail(text: str) -> int:
        if args.json:
            print(json.dumps({"profile": args.profile, "error": text, "results": []}))
        print(f"qprof check: {text}", file=sys.stderr)
        return 2

    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        return fail(str(exc))
    try:
        cpus = resolve_cpus(args.cpus, args.root)
    except ValueError as exc:
        return fail(f"--cpus: {exc}")

    records: list[Record] = []
    jsonl = JsonlSink(args.output) if args.output else None

    def sink(record: Record) -> None:
        records.append(record)
        if jsonl is not None:
            jsonl(record)

    config = BenchConfig(
        cpus=cpus, backends=[args.backend] if args.backend else None, mode="check",
        profile=str(profile.path), time_limit_s=args.time_limit, root=args.root,
        timer=args.timer, command=["qprof", "check", *sys.argv[2:]],
        budget_s=args.budget, max_rounds=args.max_rounds, rounds=args.rounds,
        statistic=args.statistic,
        interleave_block_s=None if args.interleave is None else args.interleave / 1000.0,
    )
    line = None if (args.quiet or args.json) else ProgressLine()
    try:
        summary = run_bench(config, sink, progress=line)
    except (EngineError, ProfileError, ValueError) as exc:
        return fail(str(exc))
    finally:
        if line:
            line.close()
        if jsonl:
            jsonl.close()

    evaluated = evaluate(profile, summary.measurements, statistic=args.statistic)
    results = [r for r, _x in evaluated]
    notes = [r.text for r in records
             if isinstance(r, Note) and r.level in ("warning", "error", "info")]
    backend = ", ".join(sorted({r.backend for r in results})) or (args.backend or "?")
    if not results:
        return fail("nothing measured: " + ("; ".join(
            f"CPU {c}: {why}" for c, why in summary.aborted_cpus.items()) or summary.status))
    all_covered = all(r.covered for r in results)
    code = 0 if all_covered else 1
    if args.json:
        out = {
            "profile": profile.name,
            "profile_path": str(profile.path),
            "backend": backend,
            "run_id": summary.run_id,
            "status": summary.status,
            "elapsed_s": round(summary.elapsed_s, 1),
            "cpus": summary.cpus,
            "aborted_cpus": {str(k): v for k, v in summary.aborted_cpus.items()},
            "covered": all_covered,
            "exit_code": code,
            "statistic": args.statistic,
            # What each CPU's estimates used ("median", "p10" or "paired") and why (the
            # unit's row; a suite that fell back says so in its own "statistic_used").
            "statistic_used": {
                f"{r.cpu}/{r.backend}": {"statistic": x["statistic_used"],
                                         "means": x["statistic_text"],
                                         "why": x["statistic_why"]}
                for r, x in sorted(evaluated, key=lambda e: e[0].suite == profile.unit_suite)
            },
            "method": next((r.settings.get("interleaving") for r in records
                            if isinstance(r, Meta)), None),
            "timer": next((r.settings.get("timer") for r in records
                           if isinstance(r, Meta)), None),
            "results": [
                {
                    "cpu": r.cpu, "suite": r.suite, "backend": r.backend,
                    "vu_estimate": r.vu_estimate,
                    "vu_constant": r.vu_constant, "covered": r.covered, "margin": r.margin,
                    "vu_ci_95": [r.vu_ci_low, r.vu_ci_high], "confidence": r.confidence,
                    "capped": r.capped, "cap_factor": r.cap_factor,
                    "worst_block_signatures": r.worst_block_signatures,
                    "worst_block_ns": r.worst_block_ns,
                    "reference_block_ns": r.reference_block_ns,
                    "verdict": r.verdict, **extra,
                    # median_ns stays the median of all samples; the estimate used:
                    "estimate_from_ns": r.median_ns,
                }
                for r, extra in evaluated
            ],
            "notes": notes,
        }
        print(json.dumps(out, indent=2))
        return code

    print(f"profile {profile.name} ({Path(profile.path).name}), backend {backend}, "
          f"{summary.elapsed_s:.0f} s, status {summary.status}")
    for n in notes:
        print(f"note: {n}")
    meta = next((r for r in records if isinstance(r, Meta)), None)
    if meta is not None:
        print(f"method: {meta.settings.get('interleaving')}; timer "
              f"{meta.settings.get('timer_clock')}")
    # Per CPU and backend, the unit's row says what the estimates used (a suite that had
    # no quiet rounds of its own may fall back to its 10th percentile: its row says so).
    used = {(r.cpu, r.backend): x for r, x in evaluated}
    used.update({(r.cpu, r.backend): x for r, x in evaluated if r.suite == profile.unit_suite})
    for (cpu, backend), x in sorted(used.items()):
        print(f"CPU {cpu} {backend}: statistic {x['statistic_used']} = {x['statistic_text']} "
              f"({x['statistic_why']})")
    for r, extra in evaluated:
        cap = f" [capped x{r.cap_factor:.2f}]" if r.capped and r.cap_factor else ""
        by_round = list((extra.get("vu_by_round") or {}).values())
        rounds_vu = (f", per-round VU {min(by_round):.1f}-{max(by_round):.1f}"
                     if by_round else "")
        plural = "s" if extra["rounds"] != 1 else ""
        rounds = (f"{extra['rounds_used']} of {extra['rounds']} round{plural}"
                  if extra["rounds_used"] != extra["rounds"]
                  else f"{extra['rounds']} round{plural}")
        spread = extra["round_spread_bp"]
        spread_text = f"spread {spread:.0f} bp" if spread is not None else "spread ?"
        if (extra["statistic_used"] != used[(r.cpu, r.backend)]["statistic_used"]):
            print(f"CPU {r.cpu} {r.suite}: {extra['statistic_used']} ({extra['statistic_why']})")
        print(f"CPU {r.cpu} {r.suite:<20} {extra['statistic_used']:<6} "
              f"{_ms(r.median_ns):>10}  {rounds}, {spread_text}{rounds_vu}  "
              f"{r.verdict}{cap}")
    for (cpu, backend), x in sorted(used.items()):
        if x["statistic_used"] == "median":
            continue
        rows = [(r.suite, xx) for r, xx in evaluated
                if (r.cpu, r.backend) == (cpu, backend) and r.suite != profile.unit_suite]
        alt = "; ".join(
            f"{label}: " + ", ".join(f"{suite} {xx[key]}" for suite, xx in rows if xx[key])
            for label, key in (("median rule", "vu_estimate_median"),
                               ("10th percentiles", "vu_estimate_p10"),
                               ("quiet-turn pairs", "vu_estimate_paired"))
            if any(xx[key] for _s, xx in rows)
        )
        print(f"CPU {cpu} {backend}: other statistics, for comparison: {alt}")
        if x["contended_rounds"]:
            contended = [r + 1 for r in x["contended_rounds"]]
            print(f"CPU {cpu} {backend}: round{'s' if len(contended) > 1 else ''} "
                  f"{', '.join(map(str, contended))} "
                  f"ran mostly under contention ({profile.unit_suite} slower than its quiet "
                  "speed in most turns): left out of the estimates; rounds were added while "
                  "time allowed")
    for cpu in sorted({r.cpu for r in results if r.capped}):
        factor = max(r.cap_factor or 0.0 for r in results if r.cpu == cpu) or None
        print(f"CPU {cpu}: {cap_message(None, None, factor)}; {RATIOS_UNAFFECTED}")
    worst = max(results, key=lambda r: r.worst_block_ns)
    ref = f"; on the reference core {worst.reference_core}: {_ms(worst.reference_block_ns)}" if (
        worst.reference_block_ns) else ""
    print(f"worst-case block: {worst.worst_block_signatures} x {worst.suite} = "
          f"{_ms(worst.worst_block_ns)} on CPU {worst.cpu}{ref}")
    for cpu, why in summary.aborted_cpus.items():
        print(f"CPU {cpu}: not measured: {why}", file=sys.stderr)
    print("verdict: " + ("every suite covered" if all_covered else "NOT covered: " + ", ".join(
        f"{r.suite} on CPU {r.cpu}" for r in results if not r.covered)))
    return code
