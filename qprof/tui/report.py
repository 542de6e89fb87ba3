"""Markdown report of what the monitor shows (the `e` key; the HTML page beside it
comes from :mod:`qprof.tui.report_html`)."""

from __future__ import annotations

import time
from pathlib import Path

from qprof.atomicfile import OutputError, private_dir, write_private
from qprof.measure.markdown import md_table, md_text
from qprof.measure.units import fmt_ns
from qprof.tui.model import (
    CoverageView,
    Frame,
    fmt_cap,
    fmt_covered,
    fmt_estimate,
    fmt_ghz,
    fmt_stat,
)
from qprof.tui.report_html import report_html


def report_markdown(frame: Frame, profile: str) -> str:
    lines = (_header(frame, profile) + _cores(frame) + _coverage(frame)
             + _frequencies(frame) + _alerts(frame))
    return "\n".join(lines) + "\n"


def _header(frame: Frame, profile: str) -> list[str]:
    m = frame.machine
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(frame.taken_at))
    lines = [
        f"# qprof monitor report — {when}",
        "",
        f"- Machine: {md_text(m.model)} ({md_text(m.arch or 'arch unknown')}); cores: "
        f"{md_text(m.designs)}",
        f"- Profile: {md_text(profile)}; backend: {md_text(m.backend)}",
        f"- Data source: {md_text(m.source)}",
    ]
    return lines + [f"- Note: {md_text(p)}" for p in m.problems]


def _cores(frame: Frame) -> list[str]:
    # Suites in the profile's order (the coverage rows), then any other measured ones.
    order = list(dict.fromkeys(r.suite for r in frame.coverage))
    measured = {s for c in frame.cores for s in c.times_ns}
    suites = [s for s in order if s in measured] + sorted(measured - set(order))
    lines = ["", "## Cores", ""]
    head = ["CPU", "Cluster", "Design", "Part", "Class", "Governor", "Cur GHz", "Max GHz",
            "HW max GHz", "Cap", "Statistic"] + [f"{s} µs (VU)" for s in suites]
    rows: list[list[str]] = []
    for c in frame.cores:
        cur = fmt_ghz(c.cur_khz)
        if c.cur_khz is None and c.est_khz is not None:
            cur = f"~{fmt_ghz(c.est_khz)} (estimated)"
        cells = [str(c.cpu), "?" if c.cluster is None else str(c.cluster), c.design or "?",
                 c.part or "?", c.core_class or "?", c.governor or "—", cur,
                 fmt_ghz(c.max_khz), fmt_ghz(c.hw_max_khz), fmt_cap(c) or "no",
                 c.statistic or "—"]
        for s in suites:
            med = c.times_ns.get(s)
            vu = c.vu.get(s)
            cells.append("—" if med is None else fmt_ns(med, "µs") + (f" ({vu})" if vu else ""))
        rows.append(cells)
    return lines + md_table(head, rows)


def _coverage(frame: Frame) -> list[str]:
    lines = ["", "## Verify-Unit coverage", ""]
    if frame.coverage_note:
        lines += [f"_{md_text(frame.coverage_note)}_", ""]
    if frame.verdict_note:  # why there is no verdict, and what to run (as on screen)
        lines += [f"**{md_text(frame.verdict_note)}**", ""]
    head = ["Suite", "Where", "Verify", "Statistic", "Estimate (95 % CI)", "Constant", "Margin",
            "Covered", "Worst-case block", "Capped"]
    table: list[list[str]] = []
    for r in frame.coverage:
        where = r.where + (f" (CPU {r.cpu})" if r.cpu is not None else "")
        capped = ("yes" + (f" ×{r.cap_factor:.2f}" if r.cap_factor else "")) if r.capped \
            else ("unknown" if r.capped is None and r.time_ns else "no")
        table.append([
            r.suite, where, fmt_ns(r.time_ns, missing="—"),
            fmt_stat(r.statistic) if r.time_ns else "—",
            fmt_estimate(r),
            "—" if r.vu_constant is None else str(r.vu_constant),
            "—" if r.margin is None else f"{r.margin:+d}",
            fmt_covered(r.covered, r.note or "not measured yet", r.decision, r.ratio_binds,
                        r.is_unit),
            fmt_ns(r.worst_block_ns, missing="—"),
            capped if r.time_ns else "—",
        ])
    lines += md_table(head, table)
    lines += [f"- {md_text(label)}" for label in sorted({r.basis_label for r in frame.coverage
                                                 if r.basis == "comparison" and r.basis_label})]
    lines += ["", "Estimate = ceil(100 × t(suite) / t(unit suite)), both on the same core and "
              "backend, as `qprof check` computes it (--statistic auto): t is the quiet "
              "ratio of the quiet-turn pairs when the rounds are interleaved (no reliable "
              "estimate where the quiet turns are too few), else the median. "
              "Worst-case block = (max block Verify Units / constant) signatures × t, on "
              "one core: an estimate, not a measured block."]
    # Per core, which statistic and why, with the other rule's estimate beside it.
    whys: dict[int, list[CoverageView]] = {}
    for r in frame.coverage:
        if r.cpu is not None and r.statistic_why:
            whys.setdefault(r.cpu, []).append(r)
    if whys:
        lines += [""]
    for cpu, rows in sorted(whys.items()):
        r = rows[0]
        line = f"- CPU {cpu}: {md_text(r.statistic)} — {md_text(r.statistic_why)}"
        if r.statistic != "median":
            line += "; by the median rule: " + ", ".join(
                f"{md_text(x.suite)} {x.vu_median_rule}" for x in rows
                if x.vu_median_rule is not None)
        lines.append(line)
    return lines


def _frequencies(frame: Frame) -> list[str]:
    if not frame.history:
        return []
    lines = ["", "## Frequencies", ""]
    for h in frame.history:
        if not h.samples_khz:
            lines.append(f"- {md_text(h.label)}: no cpufreq data (the system reports no "
                         "frequency, e.g. a VM)")
            continue
        lines.append(f"- {md_text(h.label)}: now {fmt_ghz(h.samples_khz[-1])} GHz, lowest seen "
                     f"{fmt_ghz(min(h.samples_khz))} GHz, hardware max {fmt_ghz(h.max_khz)} "
                     f"GHz ({len(h.samples_khz)} samples)")
    return lines


def _alerts(frame: Frame) -> list[str]:
    lines = ["", "## Alerts (newest first)", ""]
    if not frame.alerts:
        lines.append("none")
    for a in frame.alerts:
        t = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(a.ts))
        text = f"{a.severity} {a.where} {a.kind}: {a.message}".replace("  ", " ")
        lines.append(f"- {t} {md_text(text)}")
    return lines


def write_report(frame: Frame, directory: Path, profile: str,
                 block_interval_s: float | None = None) -> Path:
    """Write the Markdown report and, beside it with the same name, the HTML page with
    charts; returns the Markdown's path. Both are new files (``atomicfile.write_private``:
    a name taken, by an export in the same second or by anything else, is skipped)."""

    directory = private_dir(directory)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(frame.taken_at))
    markdown = report_markdown(frame, profile)
    html = report_html(frame, profile, block_interval_s)
    for n in range(1, 1000):
        name = f"qprof-monitor-{stamp}" + (f"-{n}" if n > 1 else "")
        try:
            write_private(directory, f"{name}.md", markdown, replace=False)
        except FileExistsError:
            continue
        try:
            write_private(directory, f"{name}.html", html, replace=False)
        except FileExistsError:
            (directory / f"{name}.md").unlink()  # written just now: ours to remove
            continue
        return (directory / f"{name}.md").resolve()
    raise OutputError(f"cannot write in {directory}: every name for {stamp} is taken")
