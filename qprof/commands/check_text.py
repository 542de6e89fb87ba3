"""`qprof check`'s text: one screen within 100 columns, the details behind ``--verbose``.

By default: the run in one line, the warnings (each once), the timer when it is not the
wall clock, one short line per suite and CPU (the verdict's headline, its word first:
``qprof.consensus.verdict_types.WORDS``), where the ratio does not bind and why (its own short
line), the worst signature beside the median (a line per SLH-DSA suite), each CPU's time
bound in a line, and the run's verdict last. ``--verbose`` adds the method and timer, the
statistic and why, each suite's rounds and full verdict, the other statistics, the
contended rounds, each kind of worst signature and the time bound's reasons.
"""

from __future__ import annotations

import sys
from pathlib import Path

from qprof.commands.check_adversarial import print_worst, print_worst_lines
from qprof.commands.check_policy import over_time
from qprof.commands.check_preflight import functional_lines, mismatched, resource_table
from qprof.commands.check_say import INDENT, say
from qprof.consensus import Profile
from qprof.consensus.estimate.estimator import UNDECIDED_ADVICE
from qprof.consensus.estimate.statistic import STATISTIC_TEXT, Statistic
from qprof.consensus.headroom import invalid_blocks
from qprof.consensus.judgement import Judgement
from qprof.consensus.policy import run_gaps
from qprof.consensus.verdict import TIME_WORDS, UNSURE_ADVICE
from qprof.consensus.verdict_types import WORDS, CoverageResult, Decision, contended_text
from qprof.hw.caps import RATIOS_UNAFFECTED, cap_message
from qprof.measure.config import RunSummary
from qprof.measure.markdown import one_line
from qprof.measure.records import Meta, Note, Record
from qprof.measure.units import fmt_ns


def notes(records: list[Record], levels: tuple[str, ...]) -> list[str]:
    return [r.text for r in records if isinstance(r, Note) and r.level in levels]


def meta(records: list[Record]) -> Meta | None:
    return next((r for r in records if isinstance(r, Meta)), None)


def unit_rows(profile: Profile, results: list[CoverageResult]
              ) -> dict[tuple[int, str], CoverageResult]:
    """Per CPU and backend, the unit's row: it says what the estimates used (a suite that
    had no quiet rounds of its own may fall back: its own row says so)."""
    rows = {(r.cpu, r.backend): r for r in results}
    rows.update({(r.cpu, r.backend): r for r in results if r.suite == profile.unit_suite})
    return rows


def print_text(profile: Profile, summary: RunSummary, records: list[Record],
               judgement: Judgement, decision: Decision, verbose: bool) -> None:
    """The run's own rows, each with the kept runs' segment beside it where there is
    one; the verdict (last line) on the judgement's figures."""

    results = judgement.run_coverage

    backend = ", ".join(sorted({r.backend for r in results}))
    more = "" if verbose else " (details: --verbose)"
    say(f"profile {profile.name} ({Path(profile.path).name}), backend {backend}, "
        f"{summary.elapsed_s:.0f} s, status {summary.status}{more}")
    for level, text in ((lvl, n) for lvl in ("error", "warning", "info")
                        for n in dict.fromkeys(notes(records, (lvl,)))):  # each once
        if verbose or level != "info":
            say(f"{'note' if level == 'info' else level}: {text}")
    if not verbose:
        _timer(records)
    _preflight(records, verbose)
    units = unit_rows(profile, results)
    if verbose:
        m = meta(records)
        if m is not None:
            say(f"method: {m.settings.get('interleaving')}; timer "
                f"{m.settings.get('timer_clock')}")
        for (cpu, b), u in sorted(units.items()):
            say(f"CPU {cpu} {b}: statistic {u.statistic} = {STATISTIC_TEXT[u.statistic]} "
                f"({u.estimate.statistic_why})")
    for r in results:
        _row(r, units[(r.cpu, r.backend)], verbose)
        _segment(judgement, r, profile.unit_vu)
    _not_binding(results)

    print_worst_lines(profile, results)
    if verbose:
        for (cpu, b), u in sorted(units.items()):
            _alternatives(profile, results, cpu, b, u)

        print_worst(profile, results)
        for block in invalid_blocks(profile, results):  # never binding: a detail
            say(block.text())
    _footer(summary, judgement.coverage, decision, verbose,
            run_gaps(profile, results, summary.status, summary.reason), records)


def _timer(records: list[Record]) -> None:
    """The timer in use when it is not the wall clock (the seeds' method), and why."""

    m = meta(records)
    if m is None or m.settings.get("timer") in (None, "wall"):
        return
    why = next((r.text for r in records if isinstance(r, Note) and r.kind == "timer"),
               "the CPU time of the worker thread (--timer cpu), not the wall clock")
    say(f"timer: {why}")


def _segment(judgement: Judgement, r: CoverageResult, unit_vu: int) -> None:
    """The kept runs' segment under the run's row, in the verdict's words, where it
    holds more than this run."""
    s = judgement.suite(r.cpu, r.suite, r.backend)
    if s is None or s.segment is None or s.segment.runs < 2 or r.estimate.is_unit:
        return
    text = s.segment_text(unit_vu)
    say(f"{INDENT}{text}: {WORDS[s.verdict.state]}", INDENT * 2)


def _preflight(records: list[Record], verbose: bool) -> None:
    """The known answers (a MISMATCH always); the memory table with --verbose (a table,
    as wide as its columns)."""

    for line in functional_lines(records):
        say(line)
    table = resource_table(records) if verbose else None
    if table:
        print(table)


def _row(r: CoverageResult, unit: CoverageResult, verbose: bool) -> None:
    """The suite's headline; with --verbose its statistic, rounds and full verdict below."""
    e = r.estimate
    cap = f" [capped x{r.cap_factor:.2f}]" if r.capped and r.cap_factor else ""
    # No reliable estimate: its time is the contended median's, not shown as a figure.
    time = "—" if r.decision == "no_estimate" else fmt_ns(r.suite_time_ns)
    say(f"CPU {r.cpu} {r.suite:<18} {time:>9}  {r.headline}{cap}", " " * 36)
    if not verbose:
        return
    by_round = list((e.vu_by_round or {}).values())
    rounds_vu = f", per-round VU {min(by_round):.1f}-{max(by_round):.1f}" if by_round else ""
    plural = "s" if e.rounds != 1 else ""
    rounds = (f"{e.rounds_used} of {e.rounds} round{plural}" if e.rounds_used != e.rounds
              else f"{e.rounds} round{plural}")
    spread = (f"spread {e.round_spread_bp:.0f} bp" if e.round_spread_bp is not None
              else "spread ?")
    why = f" ({e.statistic_why})" if r.statistic != unit.statistic else ""
    # The headline said the word; below it what it rests on (no reason twice: the
    # not-binding one has its own line, the unit's figure is its definition).
    detail = (UNDECIDED_ADVICE if r.decision == "no_estimate" else
              "" if r.state in ("unit", "not_binding") else r.verdict)
    say(f"{INDENT}{r.statistic}{why} {fmt_ns(r.suite_time_ns)}, {rounds}, {spread}"
        f"{rounds_vu}" + (f": {detail}" if detail else ""), INDENT * 2)


def _not_binding(results: list[CoverageResult]) -> None:
    """Where the ratio does not bind, once per CPU: "not binding here" first, then why;
    and the suites there with no reliable estimate (the verdict line names only binding
    ones), with how contended the host was and what to do."""
    seen: set[int] = set()
    undecided: dict[int, list[CoverageResult]] = {}  # per CPU: linear in the CPUs
    for x in results:
        if x.state == "not_binding" and x.decision == "no_estimate":
            undecided.setdefault(x.cpu, []).append(x)
    for r in results:
        if r.state == "not_binding" and r.cpu not in seen:
            seen.add(r.cpu)
            say(f"CPU {r.cpu}: {r.ratio_binding_why}")
            aside = undecided.get(r.cpu, [])
            if aside:
                say(f"CPU {r.cpu}: {WORDS['no_estimate']} ({', '.join(x.suite for x in aside)}): "
                    f"{contended_text(aside[0].estimate)}; {UNDECIDED_ADVICE}")


def _alternatives(profile: Profile, results: list[CoverageResult], cpu: int,
                  backend: str, unit: CoverageResult) -> None:
    """Every statistic's estimate beside the one used, and the rounds left out."""
    if unit.statistic == "median":
        return
    rows = [r for r in results
            if (r.cpu, r.backend) == (cpu, backend) and r.suite != profile.unit_suite]
    labels: tuple[tuple[str, Statistic], ...] = (
        ("median rule", "median"), ("10th percentiles", "p10"), ("quiet-turn pairs", "paired"))
    alt = "; ".join(
        f"{label}: " + ", ".join(f"{r.suite} {r.estimate.vu_by_statistic[key]}"
                                 for r in rows if r.estimate.vu_by_statistic.get(key))
        for label, key in labels if any(r.estimate.vu_by_statistic.get(key) for r in rows))
    if alt:
        say(f"CPU {cpu} {backend}: other statistics, for comparison: {alt}")
    contended = unit.estimate.contended_rounds
    if contended:
        n = [r + 1 for r in contended]
        say(f"CPU {cpu} {backend}: round{'s' if len(n) > 1 else ''} {', '.join(map(str, n))} "
            f"ran under contention throughout or had no quiet turns ({profile.unit_suite} "
            "slower than its quiet speed): their operations count only through the run's "
            "contention curve; rounds were added while time allowed")
    share = unit.estimate.contended_share
    if share is not None:
        say(f"CPU {cpu} {backend}: the host was contended {100 * share:.0f} % of the time "
            f"({profile.unit_suite} more than 3 % slower than its quiet speed)")


def _time_bounds(results: list[CoverageResult], verbose: bool) -> None:
    """One line per CPU and backend: its worst-case block here and on the reference
    core; --verbose (or no verdict) adds the reasons."""
    seen: set[tuple[int, str, str]] = set()
    for r in results:
        key = (r.cpu, r.backend, r.operation)
        if key in seen or r.block_time is None or r.basis == "comparison":
            continue
        seen.add(key)
        bt = r.block_time
        word = TIME_WORDS.get(bt.decision, bt.decision)
        if verbose or bt.decision == "none":
            say(f"CPU {r.cpu} {r.backend} time bound: {word}: {bt.why}")
            continue
        ref = (f", {fmt_ns(bt.reference_ns)} on {bt.reference_core}"
               + (f" ({bt.vs_reference:.2f}x)" if bt.vs_reference is not None else "")
               if bt.reference_ns is not None else "")
        say(f"CPU {r.cpu} {r.backend} time bound: {word}: worst-case block "
            f"{fmt_ns(bt.time_ns)} here{ref}")


def _where(results: list[CoverageResult], decision: str) -> str:
    return ", ".join(f"{r.suite} on CPU {r.cpu}" for r in results
                     if r.policy_decision == decision and r.decision == decision)


def _footer(summary: RunSummary, results: list[CoverageResult], decision: Decision,
            verbose: bool, gaps: list[str], records: list[Record]) -> None:

    for cpu in sorted({r.cpu for r in results if r.capped}):
        factor = max(r.cap_factor or 0.0 for r in results if r.cpu == cpu) or None
        say(f"CPU {cpu}: {cap_message(None, None, factor)}; {RATIOS_UNAFFECTED}")
    _time_bounds(results, verbose)
    for cpu, why in summary.aborted_cpus.items():
        print(f"CPU {cpu}: not measured: {one_line(why)}", file=sys.stderr)
    binding = any(r.ratio_binds for r in results if r.basis != "comparison")
    if decision == "comparison":
        say("verdict: none: " + "; ".join(sorted({r.basis_label for r in results})))
    elif decision == "covered":
        say("verdict: every binding verdict holds: "
            + ("each ratio covered where it binds" if binding
               else "no ratio binds on these cores")
            + ("; every worst-case block within its time bound"
               if any(r.block_time_covered for r in results) else ""))
    elif decision == "not_covered":
        late = over_time(results)
        also = "; ".join(f"{word}: {w}" for word, d in (("unsure", "unsure"), (
            WORDS["no_estimate"], "no_estimate")) if (w := _where(results, d)))
        say("verdict: NOT covered: " + "; ".join(x for x in (
            _where(results, "not_covered"), f"worst-case block over the time bound on {late}"
            if late else "") if x) + (f" ({also})" if also else ""))
    elif decision == "no_estimate":
        first = next((r for r in results if r.policy_decision == "no_estimate"), None)
        if first is None:  # a verifier that failed its known answers (check_preflight)
            say(f"verdict: {WORDS['no_estimate']}: "
                + "; ".join(x.strip() for x in functional_lines(mismatched(records))))
        else:
            say(f"verdict: {WORDS['no_estimate']}: {_where(results, 'no_estimate')}: "
                f"{contended_text(first.estimate)}; {UNDECIDED_ADVICE}")
    elif gaps and not any(r.policy_decision == "unsure" for r in results):
        # Everything measured holds, but not everything was measured (run_gaps): its
        # own word, not "unsure" (an interval straddling a constant); exit 3 as unsure.
        say(f"verdict: incomplete: {'; '.join(gaps)}: no passing verdict without every "
            "suite the profile prices, from a finished run")
    else:
        where = _where(results, "unsure")
        what = ("the 95 % interval straddles the constant" if where else
                "a worst-case block's time over the rounds straddles its bound")
        where = where or ", ".join(sorted({f"CPU {r.cpu}" for r in results
                                           if r.policy_decision == "unsure"}))
        say(f"verdict: unsure: {where}: {what}; {UNSURE_ADVICE}")
