"""Markdown report from one or more JSONL runs (several files: machines side by side).

Tables follow the seeds' pages: machine and method; verify medians with rounds and
Verify-Unit estimates per core with coverage; keygen/sign; ML-KEM-1024; invalid
signatures; dual enforce/shadow; worst-case block; notes on caps, drift and agreement.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from qprof.consensus import Profile
from qprof.consensus.basis import basis_label, verdict_basis
from qprof.consensus.estimate.estimator import SuiteEstimate
from qprof.consensus.estimate.reduce import unit_drift_bp
from qprof.consensus.estimate.statistic import STATISTIC_TEXT, Statistic
from qprof.consensus.judgement import Judgement
from qprof.consensus.trend.model import SeriesTrend
from qprof.consensus.verdict_types import WORDS, CoverageResult
from qprof.consensus.vu import block_signatures
from qprof.hw.caps import RATIOS_UNAFFECTED, cap_message
from qprof.hw.sysfs import format_cpulist
from qprof.measure.block import BlockResult
from qprof.measure.jsonl import RunData
from qprof.measure.markdown import md_code, md_joined, md_table, md_text
from qprof.measure.units import fmt_ns
from qprof.report.columns import (
    Column,
    backends_of,
    build_columns,
    fmt_med_p95,
    fmt_range,
    suites_of,
    unit_of,
)
from qprof.report.figures import column_estimates, column_verdicts
from qprof.report.headroom import headroom_section, worst_lines
from qprof.report.judgement import judgement_lines
from qprof.report.machine import machine_section
from qprof.report.policy import policy_section
from qprof.report.resources import functional_section, resources_section
from qprof.report.trend import report_trends, trend_section

DUAL_VALID = ("dual_enforce", "dual_shadow")


# ---------------------------------------------------------------- sections


def _other_statistics(col: dict[str, SuiteEstimate], backend: str) -> list[str]:
    """Every statistic's estimate of a noisy run beside the one the estimate used (the
    estimator's own side-by-side figures; for comparison, not the verdict)."""
    rows = [e for e in col.values() if not e.is_unit]
    labels: tuple[tuple[Statistic, str], ...] = (
        ("median", "the median rule (the seeds')"), ("p10", "10th percentiles"),
        ("paired", "quiet-turn pairs"))
    alt = "; ".join(
        f"{label}: " + ", ".join(f"{md_text(e.suite)} {e.vu_by_statistic[key]}" for e in rows
                                 if e.vu_by_statistic.get(key))
        for key, label in labels if any(e.vu_by_statistic.get(key) for e in rows))
    return [f"  - Estimates by each statistic ({md_text(backend)}; for comparison, the verdict "
            f"uses the one named above): {alt}"] if alt else []


def _verify(cols: list[Column], profile: Profile | None, op: str, title: str) -> list[str]:
    backends = backends_of(cols, op)
    if not backends:
        return []
    unit = unit_of(profile, cols)
    lines = []
    for backend in backends:
        suites = [s for s in suites_of(cols, profile, (op,))
                  if any(c.get(s, backend, op) for c in cols)]
        if not suites:
            continue
        per_col = column_estimates(cols, profile, unit, backend, op)
        verdicts = column_verdicts(profile, per_col, cols)
        # The seeds' median rule beside the estimate, where the estimate used another.
        beside = any(e.statistic != "median" for col in per_col for e in col.values())
        intro = (f"VU estimate = ceil(100 × t(suite) / t({md_text(unit)})), same core, backend and "
                 "run, with its 95 % interval: the estimator's, as `qprof check` gives it "
                 "for these records (t by the statistic named below the table).")
        if profile:
            basis = verdict_basis(profile, backend, op)
            intro += f" Figures of {md_text(basis_label(profile, backend, basis))}."
        lines += [f"## {title} ({md_text(backend)})", "", intro, ""]
        header = ["Suite"] + [f"{c.label} median (rounds)" for c in cols]
        header += [md_joined((c.label for c in cols), prefix="VU estimate (95 % CI) ")]
        if beside:
            header += [md_joined((c.label for c in cols), prefix="VU by the median rule ")]
        if profile:
            header += ["Consensus VU", "Covered"]
        rows = []
        for suite in suites:
            r = [suite] + [fmt_range(red) if (red := c.get(suite, backend, op)) else "-"
                           for c in cols]
            r.append(md_joined(_estimate_cell(col.get(suite)) for col in per_col))
            if beside:
                r.append(md_joined(_median_rule_cell(col.get(suite)) for col in per_col))
            if profile:
                const = profile.verify_units.get(suite)
                r += [str(const) if const is not None else "-",
                      _covered_cell([v for v in verdicts if v.suite == suite])]
            rows.append(r)
        lines += md_table(header, rows) + [""]
        lines += [f"- {md_text(c.label)}: {md_text(_statistic_text(col))}"
                  for c, col in zip(cols, per_col, strict=True) if col]
        if profile:
            lines += _coverage_bullets(cols, profile, verdicts)
        lines += [""] if lines[-1] else []
    return lines


def _statistic_text(col: dict[str, SuiteEstimate]) -> str:
    """The statistic a column's estimates used and why (its unit's, as `qprof check`
    prints it; a suite that fell back to another says so)."""
    unit = next((e for e in col.values() if e.is_unit), None) or next(iter(col.values()))
    text = (f"statistic {unit.statistic} = {STATISTIC_TEXT[unit.statistic]} "
            f"({unit.statistic_why})")
    others = [f"{e.suite}: {e.statistic} ({e.statistic_why})" for e in col.values()
              if e.statistic != unit.statistic]
    return text + ("; " + "; ".join(others) if others else "")


def _median_rule_cell(e: SuiteEstimate | None) -> str:
    vu = e.vu_by_statistic.get("median") if e is not None else None
    return "-" if vu is None else str(vu)


def _estimate_cell(e: SuiteEstimate | None) -> str:
    if e is None or e.vu_estimate is None:
        return "-"
    if e.undecided:  # the contended median's figure is no estimate (verdict_types.WORDS)
        return "no reliable estimate"
    if e.vu_ci is not None and not e.is_unit:  # even when it is one value, as check says
        return f"{e.vu_estimate} ({e.vu_ci[0]}-{e.vu_ci[1]})"
    return str(e.vu_estimate)


def _covered_cell(verdicts: list[CoverageResult]) -> str:
    if verdicts and all(v.decision == "comparison" for v in verdicts):
        return "comparison only"
    if verdicts and all(v.estimate.is_unit for v in verdicts):
        return WORDS["unit"]
    if verdicts and not any(v.ratio_binds for v in verdicts if v.decision != "comparison"):
        if any(v.covered is False for v in verdicts):
            return "over, not binding here (not a reference core)"
        if any(v.decision == "unsure" for v in verdicts):
            return "straddles, not binding here (not a reference core)"
        if any(v.decision == "no_estimate" for v in verdicts):
            return "no reliable estimate, not binding here (not a reference core)"
        return WORDS["not_binding"]
    # The verdict's words (qprof.consensus.verdict_types.WORDS): "unsure" only for an interval
    # straddling a binding constant; a contended run has no reliable estimate.
    binding = [v for v in verdicts if v.ratio_binds]
    judged = [v.covered for v in binding if v.covered is not None]
    unsure = "".join(f" ({word} on some cores)" for word, d in (
        ("unsure", "unsure"), ("no reliable estimate", "no_estimate"))
        if any(v.decision == d for v in binding))
    if not judged:
        return unsure.strip(" ()").removesuffix(" on some cores") if unsure else "-"
    return ("yes" if all(judged) else ("no" if not any(judged) else "no (some cores)")) + unsure


def _coverage_bullets(cols: list[Column], profile: Profile,
                      results: list[CoverageResult]) -> list[str]:
    lines = []
    tight = [r for r in results if r.suite != profile.unit_suite and r.margin is not None]
    lines += [f"- {md_text(r.suite)} on {md_text(cols[r.cpu].label)}: {md_text(r.verdict)}."
              for r in results if r.decision == "no_estimate"]
    if not tight:
        return lines + [""] if lines else []
    bad = [r for r in tight if r.covered is not True]
    least = min(tight, key=lambda r: r.margin or 0)
    if bad:
        for r in bad:
            where = f"{md_text(r.suite)} on {md_text(cols[r.cpu].label)}"
            lines.append(
                f"- {where}: estimate {r.vu_estimate} exceeds "
                f"the constant {r.vu_constant} by {r.vu_estimate - r.vu_constant}: NOT covered."
                if r.decision == "not_covered" and r.ratio_binds
                else f"- {where}: {md_text(r.verdict)}.")
    else:
        lines.append(f"- Every constant of profile {md_code(profile.name)} covers its estimate; "
                     f"least room: {md_text(least.suite)} on {md_text(cols[least.cpu].label)} "
                     f"({least.vu_estimate} of "
                     f"{least.vu_constant}, margin {least.margin}).")
    lines += [f"- {md_text(line)}." for line in worst_lines(
        profile, results, label=lambda cpu: cols[cpu].label)]
    return lines + [""]


def _wallet(cols: list[Column], profile: Profile | None) -> list[str]:
    backends = [b for b in backends_of(cols, "keygen") + backends_of(cols, "sign")]
    backends = list(dict.fromkeys(backends))
    if not backends:
        return []
    lines = []
    for backend in backends:
        suites = suites_of(cols, profile, ("keygen", "sign"))
        header = ["Suite"] + [f"Keygen {c.label}" for c in cols] + [f"Sign {c.label}" for c in cols]
        rows = []
        for s in suites:
            rows.append([s] + [fmt_med_p95(c.get(s, backend, "keygen")) for c in cols]
                        + [fmt_med_p95(c.get(s, backend, "sign")) for c in cols])
        lines += [f"## Key generation and signing, what a wallet pays ({md_text(backend)})", ""]
        lines += md_table(header, rows)
        lines += ["", "SLH-DSA \"s\" signing (about a second each) is measured only with "
                  "`--full`; `-` = not measured.", ""]
    return lines


def _kem(cols: list[Column]) -> list[str]:
    names = {(s, b) for c in cols for (cpu, s, b, o) in c.reduced
             if cpu == c.cpu and o.startswith("kem_")}
    if not names:
        return []
    lines = []
    for suite, backend in sorted(names):
        rows = []
        for op, label in (("kem_keygen", "keygen"), ("kem_encaps", "encapsulate"),
                          ("kem_decaps", "decapsulate")):
            rows.append([label] + [fmt_med_p95(c.get(suite, backend, op)) for c in cols])
        lines += [f"## {md_text(suite)} (P2P handshake), through {md_text(backend)}", ""]
        lines += md_table(["Operation"] + [c.label for c in cols], rows) + [""]
    return lines


def _invalid(cols: list[Column], profile: Profile | None) -> list[str]:
    ops = [("verify_invalid", b) for b in backends_of(cols, "verify_invalid")]
    ops += [(o, b) for o in ("dual_enforce_invalid", "dual_shadow_invalid")
            for b in backends_of(cols, o)]
    if not ops:
        return []
    suites = suites_of(cols, profile, tuple(o for o, _b in ops))
    header = ["Suite"] + [
        md_joined((c.label for c in cols), prefix=(
            f"{o.replace('_invalid', '').replace('verify', b).replace('_', ' ')}"
            + (f" ({b})" if o != "verify_invalid" else "") + " "))
        for o, b in ops
    ]
    rows = []
    for s in suites:
        rows.append([s] + [md_joined(fmt_ns(r.median_ns) if (r := c.get(s, b, o)) else "-"
                                      for c in cols) for o, b in ops])
    lines = ["## Invalid signatures (one byte flipped)", ""] + md_table(header, rows)
    lines += ["", "Median of the round medians. In enforce mode the second verifier is not "
              "called when liboqs rejects, so an invalid signature costs what it cost before; "
              "shadow mode runs both.", ""]
    return lines


def _dual(cols: list[Column], profile: Profile | None) -> list[str]:
    pairs = list(dict.fromkeys(backends_of(cols, "dual_enforce")
                               + backends_of(cols, "dual_shadow")))
    if not pairs:
        return []
    lines = []
    unit = unit_of(profile, cols)
    for pair in pairs:
        first = pair.split("+")[0]
        suites = suites_of(cols, profile, DUAL_VALID)
        header = ["Suite"] + [f"{m} {c.label}" for m in ("enforce", "shadow") for c in cols]
        header += [f"VU under enforce {' / '.join(c.label for c in cols)}"]
        enforce = column_estimates(cols, profile, unit, pair, "dual_enforce")
        rows = []
        for s in suites:
            r = [s]
            for op in DUAL_VALID:
                for c in cols:
                    red = c.get(s, pair, op)
                    base = c.get(s, first, "verify")
                    if red is None:
                        r.append("-")
                        continue
                    pct = f" ({100 * red.median_ns / base.median_ns:.0f} %)" if base else ""
                    r.append(fmt_ns(red.median_ns) + pct)
            r.append(md_joined(str(e.vu_estimate) if (e := col.get(s)) and e.vu_estimate
                                else "-" for col in enforce))
            rows.append(r)
        lines += [f"## Both verifiers, valid signatures ({md_text(pair.replace('+', ' then '))})",
                  ""]
        lines += md_table(header, rows)
        lines += ["", f"The percentage is against {md_text(first)} alone in the same run. A valid "
                  "signature costs the sum of both verifiers.", ""]
    return lines


def _worst_block(cols: list[Column], profile: Profile | None) -> list[str]:
    if profile is None:
        return []
    ways = [(b, "verify") for b in backends_of(cols, "verify")]
    ways += [(b, "dual_enforce") for b in backends_of(cols, "dual_enforce")]
    if not ways:
        return []
    ref = profile.reference_core()
    header = ["Suite (signatures)"] + [
        md_joined((c.label for c in cols),
                  prefix=f"{b}{' enforce' if o == 'dual_enforce' else ''} ")
        for b, o in ways
    ]
    if ref:
        header.append(f"Reference: {ref.name} ({ref.part_name or ref.uarch})")
    rows = []
    for suite in profile.suites:
        nsig = block_signatures(profile, suite)
        r = [f"{suite} ({nsig:,})"]
        any_value = False
        for b, o in ways:
            vals = []
            for c in cols:
                red = c.get(suite, b, o)
                vals.append(fmt_ns(nsig * red.median_ns) if red else "-")
                any_value = any_value or red is not None
            r.append(md_joined(vals))
        if ref:
            med = ref.verify_median_ns.get(suite)
            r.append(fmt_ns(nsig * med) if med else "-")
        if any_value:
            rows.append(r)
    lines = ["## Worst-case block estimate", "",
             f"A block holding as many signatures of one suite as every limit allows "
             f"(MAX_BLOCK_VERIFY_UNITS {profile.max_block_verify_units:,}"
             + (f", auth bytes {profile.max_block_auth_bytes:,}"
                if profile.max_block_auth_bytes else "")
             + "), times the median of one signature, on one core; the costliest mixture "
             "of suites is in the chain's rule section above. An estimate, not a measured "
             "block; validation on several cores takes less.", ""]
    lines += md_table(header, rows) + [""]
    worst, worst_suite = 0.0, None
    for suite in profile.suites:
        nsig = block_signatures(profile, suite)
        for b, o in ways:
            for c in cols:
                red = c.get(suite, b, o)
                if red and nsig * red.median_ns > worst:
                    worst, worst_suite = nsig * red.median_ns, suite
    if worst and worst_suite:
        text = f"- Slowest worst-case block here: {fmt_ns(worst)} ({md_text(worst_suite)})"
        ref_med = ref.verify_median_ns.get(worst_suite) if ref else None
        if ref and ref_med:
            ref_block = (profile.max_block_verify_units
                         // profile.verify_units[worst_suite]) * ref_med
            text += (f"; the same block on the reference core {md_text(ref.name)}: "
                     f"{fmt_ns(ref_block)} "
                     f"({worst / ref_block:.2f}×)")
        if profile.target_block_interval_s:
            text += (f"; {100 * worst / (profile.target_block_interval_s * 1e9):.2f} % of the "
                     f"target block interval ({profile.target_block_interval_s:.0f} s)")
        lines += [text + ".", ""]
    return lines


def _notes(cols: list[Column], profile: Profile | None) -> list[str]:
    lines = ["## Notes: caps, drift, agreement", ""]
    unit = unit_of(profile, cols)
    backends = backends_of(cols, "verify")
    # Each backend's estimates, made once for all columns and only when a column needs them.
    estimates: dict[str, list[dict[str, SuiteEstimate]]] = {}
    for i, c in enumerate(cols):
        reds = list(c.reduced.values())
        if not reds:
            continue
        spread = max(reds, key=lambda r: r.spread_bp)
        text = (f"- {md_text(c.label)}: largest spread between rounds {spread.spread_bp:.0f} bp "
                f"({md_text(f'{spread.suite} {spread.backend} {spread.operation}')})")
        for b in backends:
            u = c.get(unit, b, "verify")
            d = unit_drift_bp(u) if u else None
            if d is not None:
                text += f"; {md_text(f'{unit} ({b})')} at the end vs the start: {d:+.0f} bp"
        lines.append(text + ".")
        mlspread = [r for r in reds if r.suite.startswith("ML-DSA") and r.operation == "verify"]
        if mlspread:
            worst = max(r.spread_bp for r in mlspread)
            if worst > 100:
                lines.append(f"  - ML-DSA round spread above 100 bp ({worst:.0f} bp): the machine "
                             "was not quiet; treat estimates near a constant with care.")
                for b in backends:
                    if b not in estimates:
                        estimates[b] = column_estimates(cols, profile, unit, b, "verify")
                    lines += _other_statistics(estimates[b][i], b)
        capped = sorted({r for red in reds for r in red.capped_rounds})
        if capped:
            factor = max((red.cap_factor or 0) for red in reds) or None
            row = c.cpu_row
            text = (cap_message(row.get("scaling_max_khz"), row.get("hw_max_khz"), factor,
                                row.get("cap_cause")) + f"; {RATIOS_UNAFFECTED}")
            rounds = ", ".join(str(x + 1) for x in capped)
            lines.append(f"  - Frequency cap: {md_text(text)} (rounds {rounds}).")
    for c in {id(c.run): c for c in cols}.values():
        e, file = c.run.end, md_code(Path(c.run.path).name)
        if e is not None:
            if e.disagreements:
                lines.append(f"- {file}: {e.disagreements} of {e.checks:,} "
                             "checks DISAGREED (see the disagreement records).")
            elif e.checks:
                lines.append(f"- {file}: {e.checks:,} checks with two "
                             "verifiers, they never disagreed.")
        for n in c.run.notes:
            # Caps, drift and agreement are summarized above from the records themselves.
            if n.kind not in ("cap", "drift", "agreement"):
                lines.append(f"- {file} {md_text(n.level)}: {md_text(n.text)}")
        for p in c.run.problems:
            lines.append(f"- input problem: {md_text(p)}")
    return lines + [""]


def _measured_blocks(blocks: list[BlockResult]) -> list[str]:
    """Blocks verified for real (``qprof block --json``), beside the estimate above."""
    header = ["Suite (signatures)", "Mode", "Scope (CPUs)", "Wall", "1-core estimate",
              "Speed-up", "% of interval", "Verdicts"]
    rows = []
    for b in blocks:
        interval = f"{100 * b.interval_fraction:.3f} %" if b.interval_fraction else "-"
        verifiers = b.backend if b.second is None else f"{b.backend} + {b.second}"
        rows.append([
            f"{b.suite} ({b.signatures:,})", f"{b.mode} ({verifiers})",
            f"{b.scope} ({format_cpulist(b.cpus)})", fmt_ns(b.wall_s * 1e9),
            fmt_ns(b.single_core_estimate_s * 1e9), f"{b.speedup:.2f}×", interval,
            "all right" if b.all_verified else f"{len(b.wrong_verdicts)} wrong",
        ])
    return [
        "## Measured worst-case blocks",
        "",
        "Real blocks (`qprof block`): fresh signatures verified by one pinned thread per "
        "CPU, against signatures × the single-core median.",
        "",
        *md_table(header, rows),
        "",
    ]


def render_report(runs: list[RunData], profile: Profile | None = None,
                  blocks: Sequence[BlockResult] = (),
                  trends: Sequence[SeriesTrend] | None = None,
                  judgement: Judgement | None = None) -> str:
    """``trends``: :func:`qprof.report.trend.report_trends` of ``runs`` when the caller
    has them (the HTML report takes the same), else computed here; ``judgement``: the
    verdict every view shows (:mod:`qprof.report.judgement`), first."""
    cols = build_columns(runs)
    lines = ["# Post-quantum verification cost per core", ""]
    if profile:
        lines += [f"Profile: {md_code(profile.name)} "
                  f"({md_text(profile.description or profile.path)}).", ""]
    said = judgement_lines(judgement, profile) if judgement is not None else []
    if said:
        lines += ["## Verdict", "", f"**{md_text(said[0])}**", "",
                  *(f"- {md_text(line)}" for line in said[1:]), ""]
    if not cols:
        if runs:
            lines += ["No measurements in " + ", ".join(md_text(r.path) for r in runs) + ".", ""]
        for r in runs:
            lines += [f"- input problem: {md_text(p)}" for p in r.problems]
        lines += _measured_blocks(list(blocks)) if blocks else []
        return "\n".join(lines).rstrip() + "\n"
    lines += machine_section(cols)
    lines += functional_section(runs)
    lines += _verify(cols, profile, "verify", "Signature verification and Verify Units")
    lines += _wallet(cols, profile)
    lines += _kem(cols)
    lines += _invalid(cols, profile)
    lines += _dual(cols, profile)
    lines += policy_section(cols, profile)
    lines += _worst_block(cols, profile)
    lines += headroom_section(cols, profile)
    lines += resources_section(runs)
    if blocks:
        lines += _measured_blocks(list(blocks))
    lines += trend_section(report_trends(runs, profile) if trends is None else trends,
                           profile, runs)
    lines += _notes(cols, profile)
    return "\n".join(lines).rstrip() + "\n"
