"""HTML page of what the monitor shows (the `e` key writes it beside the Markdown):
the same charts as `qprof report --html`, drawn from the monitor's frame."""

from __future__ import annotations

import time

from qprof.measure.units import fmt_ns
from qprof.report.html import DECISION_TEXT
from qprof.report.html_svg import (
    Reference,
    Row,
    Section,
    Series,
    fmt_seconds_tick,
    html_page,
    line_chart,
    paragraph,
    row_chart,
)
from qprof.tui.model import CoverageView, Frame, fmt_estimate


def _estimate_row(r: CoverageView, const: int | None) -> Row:
    """The estimate with its 95 % interval (the whisker), as `qprof check` gives it."""
    text = fmt_estimate(r)
    if const is not None and r.decision in DECISION_TEXT:
        text += DECISION_TEXT[r.decision].format(c=const)
    if r.statistic not in (None, "median") and r.vu_median_rule is not None and not r.is_unit:
        text += f"; median rule {r.vu_median_rule}"
    lo, hi = r.vu_ci if r.vu_ci is not None and not r.is_unit else (None, None)
    return Row(r.where, float(r.vu_estimate or 0), lo, hi, text=text,
               bad=r.decision == "not_covered")


def _estimates(frame: Frame) -> Section:
    figures = []
    for suite in dict.fromkeys(r.suite for r in frame.coverage):
        rows: list[CoverageView] = [r for r in frame.coverage
                                    if r.suite == suite and r.vu_estimate is not None]
        if not rows:
            continue
        const = rows[0].vu_constant
        figures.append(row_chart(
            f"{suite}: VU estimate per cluster", [_estimate_row(r, const) for r in rows],
            Reference(const, f"constant {const}") if const is not None else None,
            unit="Verify Units"))
    return Section("Verify Units per cluster", "ceil(100 × t(suite) / t(unit)) on the "
                   "cluster's measured core, as `qprof check` computes it, the whisker its "
                   "95 % interval (the seeds' median rule beside it when the estimate used "
                   "another statistic); the dashed line is the profile's constant. "
                   "✓ covered, ✗ not, ? unsure (the interval straddles the constant).",
                   tuple(figures) or (paragraph("Nothing measured yet."),))


def _frequencies(frame: Frame) -> Section:
    series = [Series(h.label, tuple((i, khz / 1e6) for i, khz in enumerate(h.samples_khz)))
              for h in frame.history if h.samples_khz]
    if not series:
        return Section("Frequencies", "", (paragraph("No cpufreq data (the system reports "
                                                     "no frequency, e.g. a VM)."),))
    hw_max = max((h.max_khz or 0) for h in frame.history) or None
    ref = Reference(hw_max / 1e6, f"hardware maximum {hw_max / 1e6:.2f} GHz") \
        if hw_max else None
    return Section("Frequencies", "Recent samples per cluster, oldest first; a flat run "
                   "below the hardware maximum is a cap.",
                   (line_chart("Frequency per cluster", series, "sample", "GHz",
                               reference=ref),))


def _worst_block(frame: Frame, interval_s: float | None) -> Section | None:
    rows = [Row(f"{r.suite} {r.where}", r.worst_block_ns / 1e9,
                text=fmt_ns(r.worst_block_ns, missing="—")
                + (f" ({100 * r.worst_block_ns / 1e9 / interval_s:.2f} %)" if interval_s
                   else ""), bad=bool(interval_s and r.worst_block_ns / 1e9 > interval_s))
            for r in frame.coverage if r.worst_block_ns]
    if not rows:
        return None
    ref = Reference(interval_s, f"block interval {interval_s:.0f} s") if interval_s else None
    return Section("Worst-case block", "A block of one suite's signatures only, verified on "
                   "one core: an estimate, not a measured block.",
                   (row_chart("Worst-case block per suite and cluster", rows, ref,
                              unit="seconds (log scale)", bars=True, log=True,
                              tick_format=fmt_seconds_tick),))


def report_html(frame: Frame, profile: str, block_interval_s: float | None = None) -> str:
    m = frame.machine
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(frame.taken_at))
    lines = [f"Machine: {m.model} ({m.arch or 'arch unknown'}); cores: {m.designs}.",
             f"Profile: {profile}; backend: {m.backend}; data: {m.source}."]
    sections = [_estimates(frame), _frequencies(frame)]
    block = _worst_block(frame, block_interval_s)
    if block is not None:
        sections.append(block)
    return html_page(f"qprof monitor report — {when}", lines, sections)
