"""The ratio over time in the HTML report: per series and suite, the runs' estimates
with their 95 % intervals in order of start, each segment as a horizontal band (its
estimate and 95 % interval) and each change point as a vertical mark with its size
(:mod:`qprof.report.trend` computes the trend; the primitives are
:mod:`qprof.report.html_svg`'s). Meaning is never carried by colour alone: the
segments and changes are labelled with their figures."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from qprof.consensus import Profile
from qprof.consensus.trend.model import SeriesTrend, SuiteTrend
from qprof.consensus.trend.report import change_text
from qprof.consensus.trend.verdict import segment_vu
from qprof.measure.jsonl import RunData
from qprof.report.html_svg import (
    BAD,
    LINE_H,
    REFERENCE,
    WIDTH,
    Section,
    _svg,
    fit,
    fmt_tick,
    nice_ticks,
    paragraph,
    text_width,
)
from qprof.report.trend import INTRO, run_names, run_order, series_title, unit_of

SEGMENT = "#009E73"  # the segments' bands and lines (Okabe-Ito green)
RUN = "#555555"


@dataclass(frozen=True)
class RunMark:
    """One run: its estimate and 95 % interval, or none (undecided: a gap)."""

    index: int
    value: float | None
    lo: float | None = None
    hi: float | None = None


@dataclass(frozen=True)
class SegmentBand:
    first: int  # run indices, inclusive
    last: int
    value: float
    lo: float
    hi: float
    label: str


@dataclass(frozen=True)
class ChangeMark:
    index: int  # the first run after the change
    label: str


def trend_chart(title: str, runs: Sequence[RunMark], segments: Sequence[SegmentBand],
                changes: Sequence[ChangeMark], y_label: str) -> str:
    """Runs as dots with interval whiskers over their index, segments as bands (their
    figures above the plot, from where each begins), changes as dashed vertical lines
    labelled above those, undecided runs as crosses on the plot's floor; a legend below."""
    values = [v for r in runs for v in (r.value, r.lo, r.hi) if v is not None]
    values += [v for s in segments for v in (s.lo, s.hi)]
    values = [v for v in values if math.isfinite(v)]
    y_lo, y_hi = (min(values), max(values)) if values else (0.0, 1.0)
    pad = (y_hi - y_lo) * 0.08 or abs(y_hi) * 0.01 or 1.0
    y_lo, y_hi = y_lo - pad, y_hi + pad
    n = max(len(runs), 1)
    x_lo, x_hi = -0.5, n - 0.5
    y_ticks = nice_ticks(y_lo, y_hi)
    left = 24 + max((text_width(fmt_tick(t)) for t in y_ticks), default=0) + 6
    right, top = 20, 62  # the title, the segments' and the changes' labels, then the plot
    plot_w, plot_h = WIDTH - left - right, LINE_H - top - 46
    legend = [("run: estimate and 95 % interval", RUN, False, 2),
              ("segment: estimate and 95 % interval", SEGMENT, False, 8),
              ("change point, its size", BAD, True, 2)]
    if any(r.value is None for r in runs):
        legend.append(("× undecided run (a gap)", BAD, False, 0))
    height = LINE_H + 8 + 18 * math.ceil(len(legend) / 2)

    def x(value: float) -> float:
        return left + (value - x_lo) / (x_hi - x_lo) * plot_w

    def y(value: float) -> float:
        return top + min(max((y_hi - value) / (y_hi - y_lo), -0.01), 1.01) * plot_h

    bottom = top + plot_h
    body = [fit(title, WIDTH, x=0, y=16, font_weight="bold")]
    for tick in y_ticks:
        ty = y(tick)
        body.append(f'<line x1="{left:.1f}" y1="{ty:.1f}" x2="{left + plot_w:.1f}" '
                    f'y2="{ty:.1f}" stroke="#e4e4e4"/>')
        body.append(fit(fmt_tick(tick), left, x=f"{left - 6:.1f}", y=f"{ty + 4:.1f}",
                        text_anchor="end", fill="#555"))
    for tick in nice_ticks(0, n - 1) if n > 1 else [0.0]:
        if tick == int(tick):  # runs are whole
            body.append(fit(f"{tick:.0f}", 40, x=f"{x(tick):.1f}", y=bottom + 15,
                            text_anchor="middle", fill="#555"))
    for k, s in enumerate(segments):
        x0, x1 = x(s.first - 0.5), x(s.last + 0.5)
        # Its label reaches to where the next segment's begins.
        room = (x(segments[k + 1].first - 0.5) if k + 1 < len(segments)
                else left + plot_w) - x0 - 6
        body.append(f'<rect x="{x0:.1f}" y="{y(s.hi):.1f}" width="{x1 - x0:.1f}" '
                    f'height="{max(y(s.lo) - y(s.hi), 1):.1f}" fill="{SEGMENT}" '
                    'fill-opacity="0.18"/>')
        body.append(f'<line x1="{x0:.1f}" y1="{y(s.value):.1f}" x2="{x1:.1f}" '
                    f'y2="{y(s.value):.1f}" stroke="{SEGMENT}" stroke-width="2"/>')
        body.append(fit(s.label, room, x=f"{x0 + 3:.1f}", y=top - 6, fill=SEGMENT))
    for r in runs:
        rx = x(r.index)
        if r.value is None:
            body.append(fit("×", 12, x=f"{rx:.1f}", y=f"{bottom - 4:.1f}",
                            text_anchor="middle", fill=BAD, font_weight="bold"))
            continue
        if r.lo is not None and r.hi is not None:
            body.append(f'<line x1="{rx:.1f}" y1="{y(r.hi):.1f}" x2="{rx:.1f}" '
                        f'y2="{y(r.lo):.1f}" stroke="{RUN}" stroke-width="1.5"/>')
        body.append(f'<circle cx="{rx:.1f}" cy="{y(r.value):.1f}" r="3" fill="{RUN}"/>')
    room = plot_w / max(len(changes), 1)
    for c in changes:
        cx = x(c.index - 0.5)
        body.append(f'<line x1="{cx:.1f}" y1="{top - 34}" x2="{cx:.1f}" y2="{bottom}" '
                    f'stroke="{BAD}" stroke-width="2" stroke-dasharray="6 3"/>')
        width = min(text_width(c.label), room)
        anchor = "end" if cx + width > left + plot_w else "start"
        shift = -4 if anchor == "end" else 4
        body.append(fit(c.label, room, x=f"{cx + shift:.1f}", y=top - 24,
                        text_anchor=anchor, fill=BAD))
    body.append(f'<rect x="{left:.1f}" y="{top}" width="{plot_w:.1f}" height="{plot_h}" '
                'fill="none" stroke="#999"/>')
    body.append(fit("run, in order of start", plot_w, x=f"{left + plot_w / 2:.1f}",
                    y=bottom + 31, text_anchor="middle", fill="#555"))
    body.append(fit(y_label, plot_h, x=14, y=f"{top + plot_h / 2:.1f}", text_anchor="middle",
                    fill="#555", transform=f"rotate(-90 14 {top + plot_h / 2:.1f})"))
    column = plot_w / 2
    for i, (label, colour, dashed, stroke) in enumerate(legend):
        lx, ly = left + (i % 2) * column, LINE_H + 8 + 18 * (i // 2)
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        if stroke:
            body.append(f'<line x1="{lx:.1f}" y1="{ly - 4}" x2="{lx + 18:.1f}" '
                        f'y2="{ly - 4}" stroke="{colour}" stroke-width="{stroke}"{dash}/>')
        body.append(fit(label, column - 30, x=f"{lx + 24:.1f}", y=ly, fill=REFERENCE))
    return _svg(title, WIDTH, height, body)


def suite_chart(t: SeriesTrend, s: SuiteTrend, unit_vu: int) -> str:
    marks = []
    for i, r in enumerate(t.runs):
        x = r.suite(s.suite)
        if x is not None and x.decided and x.ratio and x.ratio_ci:
            marks.append(RunMark(i, unit_vu * x.ratio, unit_vu * x.ratio_ci[0],
                                 unit_vu * x.ratio_ci[1]))
        else:
            marks.append(RunMark(i, None))
    bands = []
    for g in s.segments:
        vu, (lo, hi) = segment_vu(g, unit_vu)
        bands.append(SegmentBand(g.first_run, g.last_run, unit_vu * g.ratio,
                                 unit_vu * g.ratio_ci[0], unit_vu * g.ratio_ci[1],
                                 f"{vu} ({lo}-{hi}), {g.runs} run{'s' if g.runs != 1 else ''}"))
    changes = [ChangeMark(c.run_index, f"{c.change_bp:+.0f} bp (95 % {c.ci_95_bp[0]:+.0f} "
                                       f"to {c.ci_95_bp[1]:+.0f})") for c in s.changes]
    return trend_chart(f"{s.suite}, {series_title(t)}", marks, bands, changes,
                       "Verify Units")


def trend_section(trends: Sequence[SeriesTrend], profile: Profile | None,
                  runs: Sequence[RunData]) -> Section | None:
    """The HTML section; None when no series has two runs."""
    if not trends:
        return None

    _unit, unit_vu = unit_of(profile)
    names = run_names(runs)
    figures: list[str] = []
    for t in trends:
        figures.append(paragraph(f"{series_title(t)}. Runs in order of start: "
                                 f"{run_order(t, names)}."))
        for s in t.suites:
            figures.append(suite_chart(t, s, unit_vu))
            figures += [paragraph(f"Change: {change_text(c, unit_vu)}.") for c in s.changes]
    return Section("The ratio over time", INTRO, tuple(figures))
