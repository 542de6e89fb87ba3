"""Inline SVG charts and the self-contained HTML page around them.

No JavaScript, no fonts or styles from the network: a report page opens the same way
offline, in a mail attachment or from a CI artifact. Two chart shapes cover the
reports: a row chart (one row per core: a value, an optional interval, a reference line
such as a Verify-Unit constant or the block interval) and a line chart (values over
rounds or seconds, with shaded bands such as frequency caps). Meaning is never carried
by colour alone: rows that fail their reference are also marked in their text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

# Colour-blind-safe palette (Okabe-Ito), cycled over series.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#000000")
BAD = "#D55E00"
GOOD = "#0072B2"
REFERENCE = "#444444"

WIDTH = 820
CHAR_W = 6.8  # about the width of a character at 12 px sans-serif
TEXT_W = 200  # row values, right of the plot
ROW_H = 24
LINE_H = 260


@dataclass(frozen=True)
class Row:
    """One row of a row chart: a value, optionally its interval [lo, hi]."""

    label: str
    value: float
    lo: float | None = None
    hi: float | None = None
    text: str = ""  # printed right of the plot (the numbers, and ✗ when bad)
    bad: bool = False  # beyond the reference: drawn in the warning colour


@dataclass(frozen=True)
class Reference:
    """A vertical (row chart) or horizontal (line chart) line with its label."""

    value: float
    label: str


@dataclass(frozen=True)
class Series:
    label: str
    points: tuple[tuple[float, float], ...]  # (x, y), x ascending
    dashed: bool = False


@dataclass(frozen=True)
class Band:
    """A shaded x range of a line chart (e.g. a frequency cap held)."""

    x0: float
    x1: float
    label: str


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    step = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 2.5, 5, 10):
        if raw <= mult * step:
            step *= mult
            break
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    value = first
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def fmt_tick(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.0f}"
    return f"{value:.3g}"


def fmt_seconds_tick(value: float) -> str:
    """Ticks of a logarithmic seconds axis: 1 ms, 10 ms, 100 ms, 1 s, 10 s, 100 s."""
    return f"{value * 1e3:.0f} ms" if value < 1 else f"{value:.0f} s"


def _svg(title: str, height: float, body: list[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{WIDTH}" '
            f'height="{height:.0f}" viewBox="0 0 {WIDTH} {height:.0f}" '
            f'font-family="sans-serif" font-size="12">'
            f"<title>{escape(title)}</title>" + "".join(body) + "</svg>")


def log_ticks(lo: float, hi: float) -> list[float]:
    return [10.0 ** e for e in range(math.ceil(math.log10(lo) - 1e-9),
                                     math.floor(math.log10(hi) + 1e-9) + 1)]


def row_chart(title: str, rows: Sequence[Row], reference: Reference | None = None,
              unit: str = "", bars: bool = False, log: bool = False,
              tick_format: Callable[[float], str] = fmt_tick) -> str:
    """Rows of values (dots with interval whiskers, or bars) against one reference line.
    ``log``: a logarithmic axis (bars then start at its left end), for values decades
    away from their reference, such as a block's verify time against the block interval.
    """
    values = [v for r in rows for v in (r.value, r.lo, r.hi) if v is not None]
    if reference is not None:
        values.append(reference.value)
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if log:
        lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
    else:
        if bars:
            lo = min(lo, 0.0)
        pad = (hi - lo) * 0.06 or abs(hi) * 0.05 or 1.0
        lo = lo if bars else lo - pad
        hi += pad
    # Row labels take what their longest needs (up to 40 % of the width).
    label_w = min(max((len(r.label) for r in rows), default=0) * CHAR_W + 14, WIDTH * 0.4)
    plot_w = WIDTH - label_w - TEXT_W
    top, axis_h = 40, 30  # the title, then the reference's label, above the rows
    height = top + ROW_H * max(len(rows), 1) + axis_h

    def x(value: float) -> float:
        if log:
            return label_w + math.log10(value / lo) / math.log10(hi / lo) * plot_w
        return label_w + (value - lo) / (hi - lo) * plot_w

    body = [f'<text x="0" y="16" font-weight="bold">{escape(title)}</text>']
    bottom = top + ROW_H * max(len(rows), 1)
    for tick in log_ticks(lo, hi) if log else nice_ticks(lo, hi):
        tx = x(tick)
        body.append(f'<line x1="{tx:.1f}" y1="{top}" x2="{tx:.1f}" y2="{bottom}" '
                    'stroke="#e4e4e4"/>')
        body.append(f'<text x="{tx:.1f}" y="{bottom + 14}" text-anchor="middle" '
                    f'fill="#555">{escape(tick_format(tick))}</text>')
    if unit:
        body.append(f'<text x="{label_w + plot_w / 2:.1f}" y="{bottom + 27}" '
                    f'text-anchor="middle" fill="#555">{escape(unit)}</text>')
    for i, r in enumerate(rows):
        cy = top + ROW_H * i + ROW_H / 2
        colour = BAD if r.bad else GOOD
        body.append(f'<text x="{label_w - 8}" y="{cy + 4:.1f}" text-anchor="end">'
                    f"{escape(r.label)}</text>")
        if bars:
            x0 = x(lo if log else 0.0)
            body.append(f'<rect x="{min(x0, x(r.value)):.1f}" y="{cy - 7:.1f}" '
                        f'width="{abs(x(r.value) - x0):.1f}" height="14" fill="{colour}"/>')
        if r.lo is not None and r.hi is not None:
            body.append(f'<line x1="{x(r.lo):.1f}" y1="{cy:.1f}" x2="{x(r.hi):.1f}" '
                        f'y2="{cy:.1f}" stroke="{colour}" stroke-width="2"/>')
            for end in (r.lo, r.hi):
                body.append(f'<line x1="{x(end):.1f}" y1="{cy - 5:.1f}" x2="{x(end):.1f}" '
                            f'y2="{cy + 5:.1f}" stroke="{colour}" stroke-width="2"/>')
        if not bars:
            body.append(f'<circle cx="{x(r.value):.1f}" cy="{cy:.1f}" r="5" '
                        f'fill="{colour}"/>')
        body.append(f'<text x="{label_w + plot_w + 8}" y="{cy + 4:.1f}" '
                    f'fill="{BAD if r.bad else "#222"}">{escape(r.text)}</text>')
    if reference is not None:
        rx = x(reference.value)
        body.append(f'<line x1="{rx:.1f}" y1="{top - 4}" x2="{rx:.1f}" y2="{bottom}" '
                    f'stroke="{REFERENCE}" stroke-width="2" stroke-dasharray="6 3"/>')
        anchor = "end" if rx > label_w + plot_w * 0.7 else "start"
        shift = -4 if anchor == "end" else 4
        body.append(f'<text x="{rx + shift:.1f}" y="{top - 8}" text-anchor="{anchor}" '
                    f'fill="{REFERENCE}">{escape(reference.label)}</text>')
    return _svg(title, height, body)


def line_chart(title: str, series: Sequence[Series], x_label: str, y_label: str,
               bands: Sequence[Band] = (), reference: Reference | None = None) -> str:
    """Series of (x, y) points as lines with markers, shaded bands, a horizontal
    reference line, and a legend below."""
    xs = [p[0] for s in series for p in s.points] + [v for b in bands for v in (b.x0, b.x1)]
    ys = [p[1] for s in series for p in s.points]
    if reference is not None:
        ys.append(reference.value)
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y_lo, y_hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    if x_hi == x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    pad = (y_hi - y_lo) * 0.08 or abs(y_hi) * 0.05 or 1.0
    y_lo, y_hi = y_lo - pad, y_hi + pad
    left, right, top = 70, 20, 28
    plot_w, plot_h = WIDTH - left - right, LINE_H - top - 46
    legend_rows = math.ceil((len(series) + (1 if bands else 0)) / 3)
    height = LINE_H + 8 + 18 * legend_rows

    def x(value: float) -> float:
        return left + (value - x_lo) / (x_hi - x_lo) * plot_w

    def y(value: float) -> float:
        return top + (y_hi - value) / (y_hi - y_lo) * plot_h

    bottom = top + plot_h
    body = [f'<text x="0" y="16" font-weight="bold">{escape(title)}</text>']
    for b in bands:
        body.append(f'<rect x="{x(b.x0):.1f}" y="{top}" width="{max(x(b.x1) - x(b.x0), 2):.1f}" '
                    f'height="{plot_h}" fill="{BAD}" fill-opacity="0.15"/>')
    for tick in nice_ticks(y_lo, y_hi):
        ty = y(tick)
        body.append(f'<line x1="{left}" y1="{ty:.1f}" x2="{left + plot_w}" y2="{ty:.1f}" '
                    'stroke="#e4e4e4"/>')
        body.append(f'<text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end" '
                    f'fill="#555">{fmt_tick(tick)}</text>')
    for tick in nice_ticks(x_lo, x_hi):
        tx = x(tick)
        body.append(f'<text x="{tx:.1f}" y="{bottom + 15}" text-anchor="middle" '
                    f'fill="#555">{fmt_tick(tick)}</text>')
    body.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" '
                'fill="none" stroke="#999"/>')
    body.append(f'<text x="{left + plot_w / 2:.1f}" y="{bottom + 31}" text-anchor="middle" '
                f'fill="#555">{escape(x_label)}</text>')
    body.append(f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" fill="#555" '
                f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">{escape(y_label)}</text>')
    if reference is not None:
        ry = y(reference.value)
        body.append(f'<line x1="{left}" y1="{ry:.1f}" x2="{left + plot_w}" y2="{ry:.1f}" '
                    f'stroke="{REFERENCE}" stroke-dasharray="6 3"/>')
        body.append(f'<text x="{left + plot_w - 4}" y="{ry - 4:.1f}" text-anchor="end" '
                    f'fill="{REFERENCE}">{escape(reference.label)}</text>')
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="5 3"' if s.dashed else ""
        pts = " ".join(f"{x(px):.1f},{y(py):.1f}" for px, py in s.points)
        body.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" '
                    f'stroke-width="2"{dash}/>')
        if len(s.points) <= 40:
            body += [f'<circle cx="{x(px):.1f}" cy="{y(py):.1f}" r="3" fill="{colour}"/>'
                     for px, py in s.points]
    legend = [(s.label, PALETTE[i % len(PALETTE)], s.dashed, 2) for i, s in enumerate(series)]
    if bands:  # a thick swatch: the shaded range
        legend.append((bands[0].label, BAD, False, 8))
    for i, (label, colour, dashed, width) in enumerate(legend):
        lx = left + (i % 3) * (plot_w / 3)
        ly = LINE_H + 8 + 18 * (i // 3)
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        body.append(f'<line x1="{lx:.1f}" y1="{ly - 4}" x2="{lx + 18:.1f}" y2="{ly - 4}" '
                    f'stroke="{colour}" stroke-width="{width}"{dash}/>')
        body.append(f'<text x="{lx + 24:.1f}" y="{ly}">{escape(label)}</text>')
    return _svg(title, height, body)


STYLE = """
body { font-family: sans-serif; max-width: 860px; margin: 1.5em auto; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: 0.9em; }
p.note, li { font-size: 0.95em; }
"""


@dataclass(frozen=True)
class Section:
    title: str
    intro: str
    figures: tuple[str, ...]  # SVG charts (or HTML paragraphs when there is nothing to draw)


def html_page(title: str, lines: Sequence[str], sections: Sequence[Section]) -> str:
    """One self-contained HTML page: a title, intro lines, then the sections' charts."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
             f"<h1>{escape(title)}</h1>"]
    parts += [f"<p>{escape(line)}</p>" for line in lines]
    for section in sections:
        parts.append(f"<section><h2>{escape(section.title)}</h2>")
        if section.intro:
            parts.append(f'<p class="note">{escape(section.intro)}</p>')
        parts += [f"<figure>{fig}</figure>" for fig in section.figures]
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def paragraph(text: str) -> str:
    return f'<p class="note">{escape(text)}</p>'
