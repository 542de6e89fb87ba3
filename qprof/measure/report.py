"""Markdown report from one or more JSONL runs (several files: machines side by side).

Tables follow the seeds' pages: machine and method; verify medians with rounds and
Verify-Unit estimates per core with coverage; keygen/sign; ML-KEM-1024; invalid
signatures; dual enforce/shadow; worst-case block; notes on caps, drift and agreement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from qprof.consensus import Profile, SuiteMedian, coverage, vu_estimate
from qprof.measure.hwinfo import cap_text
from qprof.measure.jsonl import RunData
from qprof.measure.reduce import (
    Reduced,
    paired_ratios,
    reduce_measurements,
    unit_drift_bp,
    vu_estimate_ci,
)

DUAL_VALID = ("dual_enforce", "dual_shadow")


# ---------------------------------------------------------------- formatting


def fmt_ns(ns: float | None) -> str:
    """Seed style: 866 ns, 59.0 µs, 3.00 ms, 18.18 ms, 116 ms, 3,095 ms."""
    if ns is None or not math.isfinite(ns):
        return "-"
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.1f} µs"
    if ns < 100_000_000:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e6:,.0f} ms"


def fmt_range(red: Reduced) -> str:
    """The pooled median, or the range of round medians when they differ on display."""
    if len(red.round_medians) > 1:
        lo, hi = red.round_range
        if fmt_ns(lo) != fmt_ns(hi):
            return f"{fmt_ns(lo)}-{fmt_ns(hi)}"
    return fmt_ns(red.median_ns)


def fmt_med_p95(red: Reduced | None) -> str:
    if red is None:
        return "-"
    return f"{fmt_ns(red.median_ns)} ({fmt_ns(red.p95_ns)})"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


# ---------------------------------------------------------------- model


@dataclass
class Column:
    """One measured CPU of one run."""

    run: RunData
    cpu: int
    label: str
    reduced: dict = field(default_factory=dict)

    def get(self, suite: str, backend: str, op: str) -> Reduced | None:
        return self.reduced.get((self.cpu, suite, backend, op))

    @property
    def cpu_row(self) -> dict:
        meta = self.run.meta
        for row in meta.cpus if meta else []:
            if row.get("cpu") == self.cpu:
                return row
        return {"cpu": self.cpu}


def _core_name(row: dict) -> str | None:
    return row.get("part_name") or row.get("uarch")


def build_columns(runs: list[RunData]) -> list[Column]:
    cols = []
    many = len(runs) > 1
    for run in runs:
        reduced = reduce_measurements(run.measurements)
        for cpu in sorted({m.cpu for m in run.measurements}):
            stem = Path(run.path).stem
            label = f"{stem} CPU {cpu}" if many else f"CPU {cpu}"
            col = Column(run, cpu, label, reduced)
            name = _core_name(col.cpu_row)
            if name:
                col.label += f" ({name})"
            cols.append(col)
    return cols


def _backends(cols: list[Column], op: str) -> list[str]:
    seen: list[str] = []
    for c in cols:
        for (cpu, _s, b, o) in c.reduced:
            if cpu == c.cpu and o == op and b not in seen:
                seen.append(b)
    return seen


def _suites(cols: list[Column], profile: Profile | None, ops: tuple[str, ...]) -> list[str]:
    order = list(profile.suites) if profile else []
    for c in cols:
        for (cpu, s, _b, o) in sorted(c.reduced):
            if cpu == c.cpu and o in ops and s not in order:
                order.append(s)
    present = {s for c in cols for (cpu, s, _b, o) in c.reduced if cpu == c.cpu and o in ops}
    return [s for s in order if s in present]


def _unit(profile: Profile | None, cols: list[Column]) -> str:
    if profile:
        return profile.unit_suite
    for c in cols:
        meta = c.run.meta
        if meta and meta.settings.get("unit_suite"):
            return meta.settings["unit_suite"]
    return "ML-DSA-44"


# ---------------------------------------------------------------- sections


def _machine(cols: list[Column]) -> list[str]:
    lines = ["## Machine and method", ""]
    header = [""] + [c.label for c in cols]
    rows: list[list[str]] = []

    def row(name: str, fn) -> None:
        rows.append([name] + [fn(c) for c in cols])

    def meta(c: Column):
        return c.run.meta

    row("File", lambda c: f"`{Path(c.run.path).name}`")
    row("Machine", lambda c: (meta(c).machine.get("cpu_model") or "?") + ", "
        + (meta(c).machine.get("arch") or "?") if meta(c) else "?")
    row("Kernel", lambda c: meta(c).machine.get("kernel") or "?" if meta(c) else "?")

    def core(c: Column) -> str:
        r = c.cpu_row
        bits = [f"{c.cpu}"]
        if r.get("part_name") or r.get("uarch"):
            bits.append(" / ".join(x for x in (r.get("part_name"), r.get("uarch")) if x))
        if r.get("part"):
            bits.append(f"CPU part `{r['part']}`")
        return ", ".join(bits)

    row("Core (pinned)", core)

    def freq(c: Column) -> str:
        r = c.cpu_row
        hw, mx = r.get("hw_max_khz"), r.get("scaling_max_khz")
        if hw is None and mx is None:
            return "unknown (no cpufreq data)"
        text = f"{(mx or hw) / 1e6:.2f} GHz"
        capped = [m for m in c.run.measurements if m.cpu == c.cpu and m.capped]
        if r.get("capped") or capped:
            text += " (capped by the system)"
        return text

    row("Max frequency at start", freq)
    row("Governor", lambda c: str(c.cpu_row.get("governor") or "unknown"))

    def runtime(c: Column) -> str:
        m, e = c.run.meta, c.run.end
        if not m or not e:
            return "? (no end line)"
        return f"{e.finished_at - m.started_at:.0f} s ({e.status})"

    row("Run time (whole run)", runtime)

    def versions(c: Column) -> str:
        v = meta(c).versions if meta(c) else {}
        parts = [
            f"liboqs {v.get('liboqs_linked') or '-'} "
            f"(liboqs-python {v.get('liboqs_python') or '-'})",
            f"Python {v.get('python') or '-'}", f"numba {v.get('numba') or '-'}",
            f"pyperf {v.get('pyperf') or '-'}",
        ]
        if v.get("qprof_commit"):
            parts.append(f"qprof {v.get('qprof')} @{str(v['qprof_commit'])[:10]}")
        return "; ".join(parts)

    row("Versions", versions)

    def method(c: Column) -> str:
        s = meta(c).settings if meta(c) else {}
        return (f"mode {s.get('mode', '?')}, {s.get('rounds', '?')} base rounds "
                f"(up to {s.get('max_rounds', '?')}), nice {s.get('nice', '?')}")

    row("Method", method)
    lines += _table(header, rows)
    lines += [
        "",
        "- One core, one job: each round ran in a pyperf worker process pinned to the core "
        "(pyperf `--affinity`) under nice 10; one operation per sample (pyperf loops = 1).",
        "- A/B/A/B/A rounds: A = the unit suite, B = the other suites, so a drift of the "
        "machine affects all alike; extra B/A pairs were added while an estimate was unsure.",
    ]
    inter = sorted({str(c.run.meta.settings.get("interleaving")) for c in cols
                    if c.run.meta and c.run.meta.settings.get("interleave_block_s")})
    lines += [f"- Interleaving: {t}." for t in inter]
    lines += [
        "- Statistics: median and, in brackets, the 95th percentile of all samples of all "
        "rounds; invalid signatures: median of the round medians. Every Verify-Unit "
        "estimate in this report uses the median rule, ceil(100 x median(suite) / "
        "median(unit)) on the same core, backend and run (`qprof check` may use another "
        "statistic on a busy host and says which).",
    ]
    cmds = {" ".join(c.run.meta.command) for c in cols if c.run.meta}
    for cmd in sorted(cmds):
        lines.append(f"- Command: `{cmd}`")
    return lines + [""]


def _verify(cols: list[Column], profile: Profile | None, op: str, title: str) -> list[str]:
    backends = _backends(cols, op)
    if not backends:
        return []
    unit = _unit(profile, cols)
    lines = []
    for backend in backends:
        suites = [s for s in _suites(cols, profile, (op,))
                  if any(c.get(s, backend, op) for c in cols)]
        if not suites:
            continue
        lines += [f"## {title} ({backend})", "",
                  f"Estimate = ceil(100 × median / median of {unit}), same core, backend and "
                  "run; 95 % CI from a bootstrap over rounds and samples.", ""]
        header = ["Suite"] + [f"{c.label} median (rounds)" for c in cols]
        header += ["VU estimate " + " / ".join(c.label for c in cols)]
        if profile:
            header += ["Consensus VU", "Covered"]
        rows = []
        for suite in suites:
            r = [suite]
            ests, covered = [], []
            for c in cols:
                red = c.get(suite, backend, op)
                u = c.get(unit, backend, op)
                r.append(fmt_range(red) if red else "-")
                if red is None or u is None:
                    ests.append("-")
                    continue
                est, ci = vu_estimate_ci(red, u, suite == unit)
                ests.append(f"{est} ({ci[0]}-{ci[1]})" if ci and ci[0] != ci[1] else str(est))
                if profile and suite in profile.verify_units:
                    covered.append(est <= profile.verify_units[suite])
            r.append(" / ".join(ests))
            if profile:
                const = profile.verify_units.get(suite)
                r.append(str(const) if const is not None else "-")
                if const is None or not covered:
                    r.append("-")
                else:
                    r.append("yes" if all(covered) else
                             ("no" if not any(covered) else "no (some cores)"))
            rows.append(r)
        lines += _table(header, rows) + [""]
        if profile:
            lines += _coverage_bullets(cols, profile, backend, op)
    return lines


def _medians(cols: list[Column], backend: str, op: str) -> list[SuiteMedian]:
    out = []
    for i, c in enumerate(cols):
        for (cpu, s, b, o), red in c.reduced.items():
            if cpu == c.cpu and b == backend and o == op:
                # One "cpu" per column so that two runs of the same CPU stay apart.
                out.append(SuiteMedian(i, b, s, red.median_ns, red.capped, red.cap_factor))
    return out


def _coverage_bullets(cols: list[Column], profile: Profile, backend: str, op: str) -> list[str]:
    results = coverage(profile, _medians(cols, backend, op))
    lines = []
    tight = [r for r in results if r.suite != profile.unit_suite]
    if not tight:
        return []
    bad = [r for r in tight if not r.covered]
    least = min(tight, key=lambda r: r.margin)
    if bad:
        for r in bad:
            lines.append(f"- {r.suite} on {cols[r.cpu].label}: estimate {r.vu_estimate} exceeds "
                         f"the constant {r.vu_constant} by {-r.margin}: NOT covered.")
    else:
        lines.append(f"- Every constant of profile `{profile.name}` covers its estimate; least "
                     f"room: {least.suite} on {cols[least.cpu].label} ({least.vu_estimate} of "
                     f"{least.vu_constant}, margin {least.margin}).")
    return lines + [""]


def _wallet(cols: list[Column], profile: Profile | None) -> list[str]:
    backends = [b for b in _backends(cols, "keygen") + _backends(cols, "sign")]
    backends = list(dict.fromkeys(backends))
    if not backends:
        return []
    lines = []
    for backend in backends:
        suites = _suites(cols, profile, ("keygen", "sign"))
        header = ["Suite"] + [f"Keygen {c.label}" for c in cols] + [f"Sign {c.label}" for c in cols]
        rows = []
        for s in suites:
            rows.append([s] + [fmt_med_p95(c.get(s, backend, "keygen")) for c in cols]
                        + [fmt_med_p95(c.get(s, backend, "sign")) for c in cols])
        lines += [f"## Key generation and signing, what a wallet pays ({backend})", ""]
        lines += _table(header, rows)
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
        lines += [f"## {suite} (P2P handshake), through {backend}", ""]
        lines += _table(["Operation"] + [c.label for c in cols], rows) + [""]
    return lines


def _invalid(cols: list[Column], profile: Profile | None) -> list[str]:
    ops = [("verify_invalid", b) for b in _backends(cols, "verify_invalid")]
    ops += [(o, b) for o in ("dual_enforce_invalid", "dual_shadow_invalid")
            for b in _backends(cols, o)]
    if not ops:
        return []
    suites = _suites(cols, profile, tuple(o for o, _b in ops))
    header = ["Suite"] + [
        f"{o.replace('_invalid', '').replace('verify', b).replace('_', ' ')}"
        + (f" ({b})" if o != "verify_invalid" else "") + " " + " / ".join(c.label for c in cols)
        for o, b in ops
    ]
    rows = []
    for s in suites:
        rows.append([s] + [" / ".join(fmt_ns(r.median_ns) if (r := c.get(s, b, o)) else "-"
                                      for c in cols) for o, b in ops])
    lines = ["## Invalid signatures (one byte flipped)", ""] + _table(header, rows)
    lines += ["", "Median of the round medians. In enforce mode the second verifier is not "
              "called when liboqs rejects, so an invalid signature costs what it cost before; "
              "shadow mode runs both.", ""]
    return lines


def _dual(cols: list[Column], profile: Profile | None) -> list[str]:
    pairs = list(dict.fromkeys(_backends(cols, "dual_enforce") + _backends(cols, "dual_shadow")))
    if not pairs:
        return []
    lines = []
    unit = _unit(profile, cols)
    for pair in pairs:
        first = pair.split("+")[0]
        suites = _suites(cols, profile, DUAL_VALID)
        header = ["Suite"] + [f"{m} {c.label}" for m in ("enforce", "shadow") for c in cols]
        header += [f"VU under enforce {' / '.join(c.label for c in cols)}"]
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
            ests = []
            for c in cols:
                red, u = c.get(s, pair, "dual_enforce"), c.get(unit, pair, "dual_enforce")
                ests.append(str(vu_estimate(red.median_ns, u.median_ns)) if red and u else "-")
            r.append(" / ".join(ests))
            rows.append(r)
        lines += [f"## Both verifiers, valid signatures ({pair.replace('+', ' then ')})", ""]
        lines += _table(header, rows)
        lines += ["", f"The percentage is against {first} alone in the same run. A valid "
                  "signature costs the sum of both verifiers.", ""]
    return lines


def _worst_block(cols: list[Column], profile: Profile | None) -> list[str]:
    if profile is None:
        return []
    ways = [(b, "verify") for b in _backends(cols, "verify")]
    ways += [(b, "dual_enforce") for b in _backends(cols, "dual_enforce")]
    if not ways:
        return []
    ref = profile.reference_core()
    header = ["Suite (signatures)"] + [
        f"{b}{' enforce' if o == 'dual_enforce' else ''} " + " / ".join(c.label for c in cols)
        for b, o in ways
    ]
    if ref:
        header.append(f"Reference: {ref.name} ({ref.part_name or ref.uarch})")
    rows = []
    for suite in profile.suites:
        nsig = profile.max_block_verify_units // profile.verify_units[suite]
        r = [f"{suite} ({nsig:,})"]
        any_value = False
        for b, o in ways:
            vals = []
            for c in cols:
                red = c.get(suite, b, o)
                vals.append(fmt_ns(nsig * red.median_ns) if red else "-")
                any_value = any_value or red is not None
            r.append(" / ".join(vals))
        if ref:
            med = ref.verify_median_ns.get(suite)
            r.append(fmt_ns(nsig * med) if med else "-")
        if any_value:
            rows.append(r)
    lines = ["## Worst-case block estimate", "",
             f"A block holding as many signatures of one suite as MAX_BLOCK_VERIFY_UNITS "
             f"({profile.max_block_verify_units:,}) allows, times the median of one signature, "
             "on one core. An estimate, not a measured block; validation on several cores "
             "takes less.", ""]
    lines += _table(header, rows) + [""]
    worst, worst_suite = 0.0, None
    for suite in profile.suites:
        nsig = profile.max_block_verify_units // profile.verify_units[suite]
        for b, o in ways:
            for c in cols:
                red = c.get(suite, b, o)
                if red and nsig * red.median_ns > worst:
                    worst, worst_suite = nsig * red.median_ns, suite
    if worst and worst_suite:
        text = f"- Slowest worst-case block here: {fmt_ns(worst)} ({worst_suite})"
        ref_med = ref.verify_median_ns.get(worst_suite) if ref else None
        if ref and ref_med:
            ref_block = (profile.max_block_verify_units
                         // profile.verify_units[worst_suite]) * ref_med
            text += (f"; the same block on the reference core {ref.name}: {fmt_ns(ref_block)} "
                     f"({worst / ref_block:.2f}×)")
        if profile.target_block_interval_s:
            text += (f"; {100 * worst / (profile.target_block_interval_s * 1e9):.2f} % of the "
                     f"target block interval ({profile.target_block_interval_s:.0f} s)")
        lines += [text + ".", ""]
    return lines


def _notes(cols: list[Column], profile: Profile | None) -> list[str]:
    lines = ["## Notes: caps, drift, agreement", ""]
    unit = _unit(profile, cols)
    for c in cols:
        reds = [r for k, r in c.reduced.items() if k[0] == c.cpu]
        if not reds:
            continue
        spread = max(reds, key=lambda r: r.spread_bp)
        text = (f"- {c.label}: largest spread between rounds {spread.spread_bp:.0f} bp "
                f"({spread.suite} {spread.backend} {spread.operation})")
        for b in _backends(cols, "verify"):
            u = c.get(unit, b, "verify")
            d = unit_drift_bp(u) if u else None
            if d is not None:
                text += f"; {unit} ({b}) at the end vs the start: {d:+.0f} bp"
        lines.append(text + ".")
        mlspread = [r for r in reds if r.suite.startswith("ML-DSA") and r.operation == "verify"]
        if mlspread:
            worst = max(r.spread_bp for r in mlspread)
            if worst > 100:
                lines.append(f"  - ML-DSA round spread above 100 bp ({worst:.0f} bp): the machine "
                             "was not quiet; treat estimates near a constant with care.")
                for b in _backends(cols, "verify"):
                    u = c.get(unit, b, "verify")
                    if u is None or not u.p10_ns:
                        continue
                    alt = [f"{r.suite} {vu_estimate(r.p10_ns, u.p10_ns)}" for r in reds
                           if r.backend == b and r.operation == "verify" and r.suite != unit
                           and r.p10_ns]
                    if alt:
                        lines.append(f"  - Estimates from the 10th percentile ({b}; the speed "
                                     "when nothing else ran, not the rule): " + ", ".join(alt))
                    pairs = []
                    for r in reds:
                        if (r.backend != b or r.operation != "verify" or r.suite == unit):
                            continue
                        pr = paired_ratios(r, u)
                        if pr is not None and pr.by_round:
                            pairs.append(
                                f"{r.suite} {math.ceil(100 * pr.ratio)} ({len(pr.by_round)} of "
                                f"{len(pr.quiet_fraction)} rounds, per round "
                                f"{100 * min(pr.by_round.values()):.1f}-"
                                f"{100 * max(pr.by_round.values()):.1f}, "
                                f"{pr.spread_bp:.0f} bp apart)")
                    if pairs:
                        lines.append(f"  - Estimates from quiet-turn pairs ({b}; interleaved "
                                     "rounds, each suite turn against the unit turns on both "
                                     "sides where all three ran at the quiet speed; what `qprof "
                                     "check` uses on a busy host, not the rule): "
                                     + ", ".join(pairs))
        capped = sorted({r for red in reds for r in red.capped_rounds})
        if capped:
            factor = max((red.cap_factor or 0) for red in reds) or None
            row = c.cpu_row
            text = cap_text(row.get("hw_max_khz"), row.get("scaling_max_khz"), factor)
            rounds = ", ".join(str(x + 1) for x in capped)
            lines.append(f"  - Frequency cap: {text} (rounds {rounds}).")
    for c in {id(c.run): c for c in cols}.values():
        e = c.run.end
        if e is not None:
            if e.disagreements:
                lines.append(f"- `{Path(c.run.path).name}`: {e.disagreements} of {e.checks:,} "
                             "checks DISAGREED (see the disagreement records).")
            elif e.checks:
                lines.append(f"- `{Path(c.run.path).name}`: {e.checks:,} checks with two "
                             "verifiers, they never disagreed.")
        for n in c.run.notes:
            # Caps, drift and agreement are summarized above from the records themselves.
            if n.kind not in ("cap", "drift", "agreement"):
                lines.append(f"- `{Path(c.run.path).name}` {n.level}: {n.text}")
        for p in c.run.problems:
            lines.append(f"- input problem: {p}")
    return lines + [""]


def render_report(runs: list[RunData], profile: Profile | None = None) -> str:
    cols = build_columns(runs)
    lines = ["# Post-quantum verification cost per core", ""]
    if profile:
        lines += [f"Profile: `{profile.name}` ({profile.description or profile.path}).", ""]
    if not cols:
        lines += ["No measurements in " + ", ".join(str(r.path) for r in runs) + "."]
        for r in runs:
            lines += [f"- input problem: {p}" for p in r.problems]
        return "\n".join(lines) + "\n"
    lines += _machine(cols)
    lines += _verify(cols, profile, "verify", "Signature verification and Verify Units")
    lines += _wallet(cols, profile)
    lines += _kem(cols)
    lines += _invalid(cols, profile)
    lines += _dual(cols, profile)
    lines += _worst_block(cols, profile)
    lines += _notes(cols, profile)
    return "\n".join(lines).rstrip() + "\n"
