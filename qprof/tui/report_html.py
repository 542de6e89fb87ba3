"""HTML page of what the monitor shows (the `e` key writes it beside the Markdown):
the same charts as `qprof report --html`, drawn from the monitor's frame."""

from __future__ import annotations

import math
import time
from typing import cast

from qprof.consensus.verdict_types import State
from qprof.measure.units import fmt_ns
from qprof.report.html import STATE_STYLE, verdict_text
from qprof.report.html_svg import (
    BAD,
    NEUTRAL,
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


def _state(r: CoverageView) -> State | None:
    """The row's verdict state, as ``CoverageResult.state`` (qprof.consensus.verdict)
    says it for the result this view was made from; None: no verdict yet."""
    if r.decision not in ("covered", "not_covered", "unsure", "no_estimate", "comparison"):
        return None
    if r.decision == "comparison":
        return "comparison"
    if r.is_unit:
        return "unit"
    if r.ratio_binds is False:
        return "not_binding"
    return cast(State, r.decision)


def _estimate_row(r: CoverageView, const: int | None) -> Row:
    """The estimate with its 95 % interval (the whisker), as `qprof check` gives it, in
    the verdict's words and colour (the report's: qprof.report.html)."""
    state = _state(r)
    figure = fmt_estimate(r)
    if state is None:
        return Row(r.where, float(r.vu_estimate or 0), text=figure)
    text = verdict_text(state, figure, const, r.note or "" if state == "no_estimate" else "")
    if (r.statistic not in (None, "median") and r.vu_median_rule is not None
            and not r.is_unit and state != "no_estimate"):
        text += f"; median rule {r.vu_median_rule}"
    lo, hi = (r.vu_ci if r.vu_ci is not None and not r.is_unit and state != "no_estimate"
              else (None, None))
    value = float(r.vu_estimate or 0) if state != "no_estimate" else math.nan
    return Row(r.where, value, lo, hi, text=text, colour=STATE_STYLE[state][0])


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
                   "another statistic); the dashed line is the profile's constant. In the "
                   "verdict's words and colours: ✓ covered (green), ✗ NOT covered (red), "
                   "? unsure (purple: the interval straddles the constant), not binding "
                   "here (blue), no reliable estimate (grey).",
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
                   else ""),
                colour=BAD if interval_s and r.worst_block_ns / 1e9 > interval_s else NEUTRAL)
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
