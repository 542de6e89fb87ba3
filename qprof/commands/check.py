"""`qprof check --profile NAME`: do the profile's Verify-Unit constants cover this machine?

Measures the profile's suites on the chosen CPUs through the engine's "check" mode
(pairs added while an interval straddles its constant, within a time limit), or judges
a recorded run (``--from``); both end in :func:`conclude`. Each suite and CPU gets both
verdicts of :mod:`qprof.consensus.policy`. A verdict only for the profile's verifier
(``--comparison``: figures only). Exit codes as `qprof --help` gives them (0 covered,
1 not, 2 error, 3 unsure, 4 comparison); the details: docs/FIRST_MINUTES.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path

from qprof.atomicfile import AtomicFile
from qprof.commands.bench import ProgressLine, add_common, resolve_cpus
from qprof.commands.check_adversarial import reference_json
from qprof.commands.check_invalid_block import invalid_block_json
from qprof.commands.check_preflight import (
    decision_with_checks,
    functional_lines,
    mismatched,
    preflight_json,
)
from qprof.commands.check_text import meta as run_meta
from qprof.commands.check_text import notes, print_text, unit_rows
from qprof.commands.interrupt import Stopping, stopping
from qprof.commands.options import Number, add_backend, add_node_cgroup
from qprof.commands.output import OutputError, check_output
from qprof.consensus import Profile, ProfileError, load_profile
from qprof.consensus.basis import comparison_only_reason, verdict_basis
from qprof.consensus.estimate.estimator import UNDECIDED_ADVICE
from qprof.consensus.estimate.statistic import STATISTIC_TEXT
from qprof.consensus.estimate.stopping import rule_for
from qprof.consensus.judgement import Judgement, judge
from qprof.consensus.judgement_codec import coverage_json, judgement_json
from qprof.consensus.policy import cores_from_records, gated_decision, run_gaps, with_quota
from qprof.consensus.profiles import run_profile, run_profile_note
from qprof.consensus.trend.model import RunPoint, SeriesKey
from qprof.consensus.verdict import UNSURE_ADVICE
from qprof.consensus.verdict_types import Decision
from qprof.hw.cgroup import NodeCgroupError, node_of
from qprof.measure.config import CHECK_TIME_LIMIT_S, BenchConfig, RunSummary
from qprof.measure.engine import EngineError, run_bench
from qprof.measure.jsonl import read_run
from qprof.measure.markdown import one_line
from qprof.measure.records import Record, Throttled
from qprof.measure.units import fmt_ns
from qprof.service.keep import RunKeeper, kept_points
from qprof.service.keep import keeper as user_keeper
from qprof.verify import available_backends


def add_parser(parser: argparse.ArgumentParser) -> None:
    add_node_cgroup(parser)
    parser.add_argument("--profile", default=None,
                        help="chain profile, name or path (default: qanum; with --from, "
                        "the run's own)")
    parser.add_argument("--from", dest="from_run", metavar="RUN.jsonl",
                        help="measure nothing: judge a recorded run (the JSONL of check -o, "
                        "bench -o or qprof export) with today's estimator and --profile; "
                        "the same output and exit codes as a live check")
    add_common(parser)
    add_backend(parser, default="liboqs if available, else numba")
    parser.add_argument("--comparison", action="store_true",
                        help="allow a verifier that no node runs alone (e.g. numba when "
                        "liboqs is missing): its figures are shown for comparison, with no "
                        "covered/not covered verdict (exit 4)")
    parser.add_argument("--json", action="store_true", help="machine-readable result")
    parser.add_argument("--time-limit", type=Number(float, at_least=0.0),
                        default=CHECK_TIME_LIMIT_S, metavar="S",
                        help="add no rounds that would end after S seconds (default "
                        f"{CHECK_TIME_LIMIT_S:g})")
    parser.add_argument("-o", "--output", metavar="FILE.jsonl", help="also keep the JSONL run")
    parser.add_argument("--no-store", action="store_true",
                        help="do not keep the run in the user's store (kept by default, "
                        "where history, trend, report and later checks find it)")
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="the store the run is kept in and judged with (default as "
                        "for qprof history: the daemon's qprof.db when writable, else "
                        "monitor.db); with --from, the kept runs it is judged with")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress line")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="the details: method and timer, the statistic and why, each "
                        "suite's rounds and full verdict, the other statistics, the "
                        "contended rounds, the worst signature, the time bound's reasons")
    parser.add_argument("--statistic", choices=("auto", "median", "p10", "paired"),
                        default="auto",
                        help="median: the rule; p10: compare 10th percentiles; paired: each "
                        "suite turn against the unit turns on both sides, only where both ran "
                        "at the quiet speed (rounds are timed in turns of 4 ms); auto "
                        "(default): the quiet-turn pairs when the rounds are interleaved "
                        "(no reliable estimate where the quiet turns are too few), else the "
                        "median; the output says which")


DEFAULT_PROFILE = "qanum"
# Exit codes by the run's decision (see the module's docstring).
EXIT_CODES = {"covered": 0, "not_covered": 1, "unsure": 3, "no_estimate": 3, "comparison": 4}


def _verifier_refusal(profile: Profile, backend: str | None, comparison: bool) -> str | None:
    """Why this run could give no verdict and is refused (None: go ahead)."""

    if comparison:
        return None
    if backend is not None:
        if verdict_basis(profile, backend) == "node":
            return None
        return (f"{comparison_only_reason(profile, backend)}; measure with --backend "
                f"{profile.verifier}, or add --comparison for figures without a verdict")
    status = available_backends().get(profile.verifier)
    if status is not None and status.available:
        return None
    why = status.reason if status is not None else f"unknown backend {profile.verifier!r}"
    return (f"no verdict without {profile.verifier}, the verifier {profile.name}'s constants "
            f"are held to: {why}. Add --comparison to measure another verifier's figures "
            "without a verdict")


def _ms(ns: float) -> str:
    return fmt_ns(ns)


# A recorded run's strings (a profile path, in an error) are shown at most this long, an
# error line at most MAX_LINE: a JSONL may hold megabytes in one field.
MAX_SHOWN = 300
MAX_LINE = 2000


def _shown(text: str, limit: int = MAX_SHOWN) -> str:
    """``text`` (from a recorded run) as one bounded line of plain text."""

    line = one_line(text)
    return line if len(line) <= limit else line[:limit] + "..."


def _fail(args: argparse.Namespace, text: str) -> int:
    if args.json:
        print(json.dumps({"profile": args.profile or DEFAULT_PROFILE, "error": text,
                          "results": []}))
    print(f"qprof check: {_shown(text, MAX_LINE)}", file=sys.stderr)
    return 2


def _measure(args: argparse.Namespace, profile: Profile, cpus: list[int] | None,
             records: list[Record], keeper: RunKeeper | None,
             stop: threading.Event) -> RunSummary:
    """Run the engine in check mode; records also go to ``-o FILE.jsonl`` and the
    user's store."""

    # The run is written line by line to a temporary file beside -o (a crash keeps it
    # there) and renamed over -o at the end, as every file qprof writes.
    jsonl = AtomicFile(args.output) if args.output else None

    def sink(record: Record) -> None:
        records.append(record)
        if keeper is not None:
            keeper.add(record)
        if jsonl is not None:
            jsonl.write(record.to_json() + "\n")
            jsonl.flush()

    config = BenchConfig(
        cpus=cpus, backends=[args.backend] if args.backend else None, mode="check",
        profile=str(profile.path), time_limit_s=args.time_limit, root=args.root,
        timer=args.timer, command=["qprof", "check", *sys.argv[2:]],
        budget_s=args.budget, max_rounds=args.max_rounds, rounds=args.rounds,
        statistic=args.statistic,
        interleave_block_s=None if args.interleave is None else args.interleave / 1000.0,
        allow_mismatch=args.allow_mismatch,
        echo_notes=args.json,  # the text prints each note once, wrapped
    )
    config, rule = rule_for(config)
    line = None if (args.quiet or args.json) else ProgressLine()
    try:
        return run_bench(config, sink, progress=line, stop=stop, rule=rule)
    finally:
        if line:
            line.close()
        if jsonl:
            jsonl.commit()


def run(args: argparse.Namespace) -> int:
    if args.from_run is not None:
        return _judge_recorded(args)
    try:
        check_output(args.output)
    except OutputError as exc:
        return _fail(args, str(exc))
    try:
        profile = load_profile(args.profile or DEFAULT_PROFILE)
    except ProfileError as exc:
        return _fail(args, str(exc))
    try:
        cpus = resolve_cpus(args.cpus, args.root)
    except ValueError as exc:
        return _fail(args, f"--cpus: {exc}")
    refused = _verifier_refusal(profile, args.backend, args.comparison)
    if refused:
        return _fail(args, refused)

    try:
        node_of(args.root, args.node_cgroup, args.node_unit)  # named wrong: before measuring
    except NodeCgroupError as exc:
        return _fail(args, str(exc))
    records: list[Record] = []
    keeper = None
    if not args.no_store:
        keeper = user_keeper(args.state_dir, profile.unit_suite)
    with stopping("check") as stop:
        try:
            summary = _measure(args, profile, cpus, records, keeper, stop.event)
        except (EngineError, ProfileError, ValueError) as exc:
            return _fail(args, str(exc))
        finally:
            if keeper is not None:
                keeper.finish()
    if stop.event.is_set():
        return _interrupted(args, summary, keeper, stop)
    points: list[tuple[SeriesKey, RunPoint]] = []
    if keeper is not None:
        if keeper.error:
            print(f"qprof check: warning: {_shown(keeper.error, MAX_LINE)}", file=sys.stderr)
        else:
            points = kept_points(args.state_dir)[0]
    return conclude(args, profile, summary, records, points)


def _interrupted(args: argparse.Namespace, summary: RunSummary, keeper: RunKeeper | None,
                 stop: Stopping) -> int:
    """A check stopped by a signal: where its finished measurements are, no verdict."""
    where = [str(args.output)] if args.output else []
    if keeper is not None and not keeper.error:
        where.append("the store (qprof history)")
    kept = (f"are kept in {' and '.join(where)}" if where else
            f"are not kept ({keeper.error})" if keeper is not None else
            "are not kept (--no-store)")
    print(f"qprof check: interrupted; the run's {len(summary.measurements)} finished "
          f"measurements {_shown(kept, MAX_LINE)}; no verdict from part of a run",
          file=sys.stderr)
    return stop.exit_code


def conclude(args: argparse.Namespace, profile: Profile, summary: RunSummary,
             records: list[Record],
             points: list[tuple[SeriesKey, RunPoint]] | None = None) -> int:
    """A run's records (and the kept runs' ``points`` behind it) -> the judgement printed
    (text, or JSON with ``--json``) and the exit code: the one path of a live check and
    of ``--from``. The rows are the run's own; the verdict stands on the segment."""

    try:
        node = node_of(getattr(args, "root", "/"), args.node_cgroup, args.node_unit)
    except NodeCgroupError as exc:
        return _fail(args, str(exc))
    # The node's quota: the one named, else the run's own cgroup's (qprof beside the node)
    quota = node.cpus if node else next((r.quota_cpus for r in records
                                         if isinstance(r, Throttled)), None)
    try:
        judgement = judge(summary.measurements, profile, points or (),
                          cores=with_quota(cores_from_records(records), quota),
                          statistic=args.statistic)
    except (ArithmeticError, ValueError) as exc:  # records no engine writes (zero times)
        return _fail(args, f"cannot judge run {summary.run_id}: its measurements do not "
                     f"give an estimate ({type(exc).__name__}: {exc})")

    results = judgement.run_coverage
    if not results:
        return _fail(args, "nothing measured: " + ("; ".join(
            f"CPU {c}: {why}" for c, why in summary.aborted_cpus.items()) or "; ".join(
                functional_lines(mismatched(records))) or summary.status))
    # A suite whose verifier failed its known answers is never decided (qprof.verify.functional).
    decision = decision_with_checks(judgement.decision, records, profile)
    # Priced suites not measured, a run not finished: never a passing verdict.
    decision = gated_decision(decision, run_gaps(profile, results, summary.status,
                                                 summary.reason))
    if args.json:
        print(json.dumps(_json(args, profile, summary, records, judgement, decision),
                         indent=2))
    else:
        # The known answers, the memory table and the invalid block are said there too,
        # within 100 columns and before the verdict (the last line).
        print_text(profile, summary, records, judgement, decision,
                   getattr(args, "verbose", False))
    return EXIT_CODES[decision]


MAX_PROBLEMS_SHOWN = 10  # bad lines of a --from file on stderr (then how many more)
# Options that say how to measure: a recorded run was measured already.
_MEASURING_OPTIONS = (("cpus", "--cpus"), ("backend", "--backend"), ("output", "-o"),
                      ("rounds", "--rounds"), ("interleave", "--interleave"),
                      ("budget", "--budget"), ("max_rounds", "--max-rounds"))


def _judge_recorded(args: argparse.Namespace) -> int:
    """``--from RUN.jsonl``: the recorded run's records through :func:`conclude`."""

    given = [flag for dest, flag in _MEASURING_OPTIONS if getattr(args, dest) is not None]
    if given or args.comparison:
        return _fail(args, f"{', '.join(given + ['--comparison'] * args.comparison)}: "
                     "--from judges a recorded run, it measures nothing")
    path = args.from_run
    try:
        run_data = read_run(path)
    except OSError as exc:
        return _fail(args, f"{path}: {exc.strerror or exc}")
    problems = run_data.problems
    if not run_data.measurements or not run_data.complete:
        first = f" (first problem: {problems[0]})" if problems else ""
        return _fail(args, f"{path}: no measurements: not a recorded run{first}"
                     if not run_data.measurements else
                     f"{path}: not read to its end, no verdict from part of a file{first}")
    for problem in problems[:MAX_PROBLEMS_SHOWN]:
        print(f"qprof check: {problem}", file=sys.stderr)
    if len(problems) > MAX_PROBLEMS_SHOWN:
        print(f"qprof check: {path}: {len(problems) - MAX_PROBLEMS_SHOWN} more problems "
              "(qprof report lists them all)", file=sys.stderr)
    if len(run_data.run_ids) > 1:
        return _fail(args, f"{path}: holds {len(run_data.run_ids)} runs "
                     f"({', '.join(run_data.run_ids)}); --from judges one: keep one run's "
                     "lines (its run_id) in a file of its own")
    recorded = run_data.meta.profile if run_data.meta else None
    try:
        # A run's profile is a NAME looked up here, never a path taken from the run.
        profile = load_profile(args.profile) if args.profile else run_profile(
            recorded, DEFAULT_PROFILE)
    except ProfileError as exc:
        return _fail(args, f"{exc}" if args.profile else
                     f"{exc} (the profile {path} was measured against); give --profile")
    note = None if args.profile else run_profile_note(recorded, profile)
    if note:
        print(f"qprof check: {path}: {_shown(note, MAX_LINE)}", file=sys.stderr)
    points = None
    if args.state_dir is not None:  # judged with the kept runs of that store

        points, problems = kept_points(args.state_dir)
        for problem in problems:
            print(f"qprof check: {_shown(problem, MAX_LINE)}", file=sys.stderr)
    return conclude(args, profile, run_data.summary(), run_data.records, points)


def _json(args: argparse.Namespace, profile: Profile, summary: RunSummary,
          records: list[Record], judgement: Judgement, decision: Decision
          ) -> dict[str, object]:

    results = judgement.run_coverage
    meta = run_meta(records)
    return {
        "profile": profile.name,
        "profile_path": str(profile.path),
        "backend": ", ".join(sorted({r.backend for r in results})),
        "run_id": summary.run_id,
        "status": summary.status,
        "elapsed_s": round(summary.elapsed_s, 1),
        "cpus": summary.cpus,
        "aborted_cpus": {str(k): v for k, v in summary.aborted_cpus.items()},
        # True / False once decided; None when unsure (see "unsure") or comparison only.
        "covered": {"covered": True, "not_covered": False}.get(decision),
        "decision": decision,
        "unsure": [f"{r.suite} on CPU {r.cpu}" for r in judgement.coverage
                   if r.policy_decision == "unsure"],
        "no_estimate": [f"{r.suite} on CPU {r.cpu}" for r in judgement.coverage
                        if r.policy_decision == "no_estimate"],
        # What keeps the run from a passing verdict (consensus.policy.run_gaps).
        "gaps": run_gaps(profile, results, summary.status, summary.reason),
        "ratio_binds": profile.ratio_binds,
        "advice": {"unsure": UNSURE_ADVICE, "no_estimate": UNDECIDED_ADVICE}.get(decision),
        "exit_code": EXIT_CODES[decision],
        "statistic": args.statistic,
        "statistic_used": {
            f"{cpu}/{backend}": {"statistic": r.statistic,
                                 "means": STATISTIC_TEXT[r.statistic],
                                 "why": r.estimate.statistic_why}
            for (cpu, backend), r in sorted(unit_rows(profile, results).items())
        },
        "method": meta.settings.interleaving if meta else None,
        "timer": meta.settings.timer if meta else None,
        "results": [coverage_json(r, args.statistic) for r in results],
        # The judgement: per suite the verdict on the kept runs' current segment, the
        # run's own beside it, the changes (qprof.consensus.judgement).
        "judgement": judgement_json(judgement, profile.unit_vu),
        "constants_held_to": profile.constants_held_to,
        "worst_signature_reference": reference_json(profile),
        "notes": notes(records, ("warning", "error", "info")),
        **preflight_json(records),
        **invalid_block_json(profile, results),
    }
