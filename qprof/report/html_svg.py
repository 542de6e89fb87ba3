"""Inline SVG charts and the self-contained HTML page around them: no JavaScript, nothing
from the network, so a page opens the same offline. Two chart shapes: a row chart (one
row per core, a value, its interval, a reference line) and a line chart (values over
time, shaded bands); meaning never by colour alone. Every string passes :func:`esc`
(``qprof.untrusted.one_line``, then HTML's); every label is sized to its text
(:func:`text_width`) and fitted (:func:`fit`), measured by
tests/test_report_html_layout.py in headless Chromium.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from qprof.untrusted import one_line

# Colour-blind-safe palette (Okabe-Ito), cycled over series.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#000000")
BAD = "#D55E00"  # over a limit (not covered, a block over its interval)
GOOD = "#009E73"  # decided within it
NEUTRAL = "#0072B2"  # a value that carries no verdict here
REFERENCE = "#444444"

WIDTH = 820  # the page's charts; a row chart grows wider when its texts need it
# Widths of characters of the page's 12 px sans-serif, generous (DejaVu Sans, the widest
# common one: digits 7.6 px, W 11.9 px): a text sized by them is never wider than its
# room. CHAR_W is a typical character's, for rooms counted in characters.
CHAR_W = 7.8
_NARROW = frozenset(" .,:;!|'`()[]{}/\\-ijlrtf")
_WIDE = frozenset("MWmw@%&")


def _char_width(ch: str) -> float:
    if ch in _NARROW:
        return 5.0
    if ch in _WIDE or ord(ch) > 0x2000:  # and symbols, CJK: as wide as they come
        return 12.5
    if ch.isupper():
        return 9.5
    return CHAR_W
MIN_PLOT_W = 260  # a row chart's plot is never narrower
MAX_LABEL_CHARS = 48  # a row label longer than this is cut (the whole in its tooltip)
ROW_H = 24
LINE_H = 260
MAX_TEXT = 2000  # one string on the page (a title, a sentence); names are cut to fit
MAX_TICKS = 12


def esc(value: object, limit: int = MAX_TEXT) -> str:
    """``value`` as HTML/SVG text: one bounded line without control characters, escaped
    (quotes too: the same text serves attributes)."""
    return html.escape(one_line(value, limit), quote=True)


def text_width(text: str) -> float:
    """At most how wide ``text`` is drawn (see CHAR_W)."""
    return sum(map(_char_width, one_line(text, MAX_TEXT)))


def fit(text: str, room: float, **attrs: object) -> str:
    """An SVG ``<text>`` of ``text`` cut to ``room`` pixels (an ellipsis, the whole text
    in its ``<title>`` tooltip); ``attrs``: its attributes (x, y, text_anchor...)."""
    line = one_line(text, MAX_TEXT)
    shown, used = line, 0.0
    for i, ch in enumerate(line):
        if used + _char_width(ch) > room:  # cut before it, with room for the ellipsis
            while i > 0 and used + _char_width("…") > room:
                i -= 1
                used -= _char_width(line[i])
            shown = line[:i] + "…"
            break
        used += _char_width(ch)
    attr = " ".join(f'{k.replace("_", "-")}="{esc(v)}"' for k, v in attrs.items())
    tip = f"<title>{esc(line)}</title>" if shown != line else ""
    return f"<text {attr}>{tip}{esc(shown)}</text>"


@dataclass(frozen=True)
class Row:
    """One row of a row chart: a value, optionally its interval [lo, hi]."""

    label: str
    value: float
    lo: float | None = None
    hi: float | None = None
    text: str = ""  # printed right of the plot: the numbers, and the verdict's words
    colour: str = NEUTRAL  # of the dot, whisker or bar and of the text (the verdict's)


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
    """About ``count`` round tick values covering [lo, hi]; always finite and at most
    MAX_TICKS, even where the step is below the spacing of floats at lo and hi (values
    near 6e14 that differ by 0.125: the step then cannot move a sum, issue 31 #1)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / count
    if not (math.isfinite(raw) and raw > 0):
        return [lo, hi]
    step = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 2.5, 5, 10):
        if raw <= mult * step:
            step *= mult
            break
    # Ticks by index (k x step), never by adding the step: the count is known first.
    first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    if last - first > MAX_TICKS:
        return [lo, hi]
    ticks: list[float] = []
    for k in range(first, last + 1):
        value = round(k * step, 12) if abs(k * step) < 1e15 else k * step
        if not ticks or value != ticks[-1]:
            ticks.append(value)
    return ticks


def fmt_tick(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1e9 or abs(value) < 1e-4:  # no 300-digit tick label
        return f"{value:.4g}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.0f}"
    return f"{value:.3g}"


def fmt_seconds_tick(value: float) -> str:
    """Ticks of a logarithmic seconds axis: 1 ms, 10 ms, 100 ms, 1 s, 10 s, 100 s."""
    return f"{value * 1e3:.0f} ms" if value < 1 else f"{value:.0f} s"


def _svg(title: str, width: float, height: float, body: list[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width:.0f}" '
            f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'font-family="sans-serif" font-size="12">'
            f"<title>{esc(title)}</title>" + "".join(body) + "</svg>")


def log_ticks(lo: float, hi: float) -> list[float]:
    if not (0 < lo <= hi and math.isfinite(hi)):
        return []
    first, last = math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9)
    return [10.0 ** e for e in range(first, last + 1)][:4 * MAX_TICKS]


def _placed(x: float, width: float, left: float, right: float) -> tuple[float, str]:
    """Where a text ``width`` wide centred at ``x`` is drawn so that it stays within
    [left, right]: (x, text-anchor)."""
    if x - width / 2 < left:
        return left, "start"
    if x + width / 2 > right:
        return right, "end"
    return x, "middle"


def _finite(values: Sequence[float | None]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def row_chart(title: str, rows: Sequence[Row], reference: Reference | None = None,
              unit: str = "", bars: bool = False, log: bool = False,
              tick_format: Callable[[float], str] = fmt_tick) -> str:
    """Rows of values (dots with interval whiskers, or bars) against one reference line.
    ``log``: a logarithmic axis (bars then start at its left end), for values decades
    away from their reference, such as a block's verify time against the block interval.
    Labels left, texts right: each column as wide as its longest text (a row label at
    most MAX_LABEL_CHARS), the chart wider than WIDTH when they need it.
    """
    values = _finite([v for r in rows for v in (r.value, r.lo, r.hi)])
    if reference is not None:
        values += _finite([reference.value])
    if log:
        values = [v for v in values if v > 0]
        log = bool(values)
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if log:
        lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
        hi = hi if hi > lo else lo * 10
    else:
        if bars:
            lo = min(lo, 0.0)
        pad = (hi - lo) * 0.06 or abs(hi) * 0.05 or 1.0
        lo = lo if bars else lo - pad
        hi += pad
        if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
            lo, hi = (lo, lo + 1.0) if math.isfinite(lo) else (0.0, 1.0)
    label_w = min(max((text_width(r.label) for r in rows), default=0),
                  MAX_LABEL_CHARS * CHAR_W) + 14
    text_w = max((text_width(r.text) for r in rows), default=0) + 16
    ref_w = text_width(reference.label) + 8 if reference is not None else 0
    width = max(WIDTH, label_w + MIN_PLOT_W + text_w)
    plot_w = width - label_w - text_w
    # The title, then the reference's label, above the rows; below them the ticks and the
    # unit, a line apart: a 12 px text's box is 14-15 px tall (DejaVu Sans in Chromium).
    top, axis_h = 40, 34
    height = top + ROW_H * max(len(rows), 1) + axis_h

    def x(value: float) -> float:
        if not math.isfinite(value):
            value = hi if value > 0 else lo
        if log:
            value = max(value, lo)
            return label_w + math.log10(value / lo) / math.log10(hi / lo) * plot_w
        return label_w + min(max((value - lo) / (hi - lo), -0.02), 1.02) * plot_w

    body = [fit(title, width, x=0, y=16, font_weight="bold")]
    bottom = top + ROW_H * max(len(rows), 1)
    for tick in log_ticks(lo, hi) if log else nice_ticks(lo, hi):
        tx = x(tick)
        body.append(f'<line x1="{tx:.1f}" y1="{top}" x2="{tx:.1f}" y2="{bottom}" '
                    'stroke="#e4e4e4"/>')
        label = tick_format(tick)
        px, anchor = _placed(tx, text_width(label), 0, width)
        body.append(fit(label, width, x=f"{px:.1f}", y=bottom + 14, text_anchor=anchor,
                        fill="#555"))
    if unit:
        body.append(fit(unit, plot_w, x=f"{label_w + plot_w / 2:.1f}", y=bottom + 30,
                        text_anchor="middle", fill="#555"))
    for i, r in enumerate(rows):
        cy = top + ROW_H * i + ROW_H / 2
        body.append(fit(r.label, label_w - 10, x=f"{label_w - 8:.1f}", y=f"{cy + 4:.1f}",
                        text_anchor="end"))
        body.append(fit(r.text, text_w - 8, x=f"{label_w + plot_w + 8:.1f}",
                        y=f"{cy + 4:.1f}", fill=r.colour))
        if not math.isfinite(r.value):  # no figure (no reliable estimate): its words only
            continue
        if bars:
            x0 = x(lo if log else 0.0)
            body.append(f'<rect x="{min(x0, x(r.value)):.1f}" y="{cy - 7:.1f}" '
                        f'width="{abs(x(r.value) - x0):.1f}" height="14" '
                        f'fill="{esc(r.colour)}"/>')
        if r.lo is not None and r.hi is not None and math.isfinite(r.lo + r.hi):
            body.append(f'<line x1="{x(r.lo):.1f}" y1="{cy:.1f}" x2="{x(r.hi):.1f}" '
                        f'y2="{cy:.1f}" stroke="{esc(r.colour)}" stroke-width="2"/>')
            for end in (r.lo, r.hi):
                body.append(f'<line x1="{x(end):.1f}" y1="{cy - 5:.1f}" x2="{x(end):.1f}" '
                            f'y2="{cy + 5:.1f}" stroke="{esc(r.colour)}" stroke-width="2"/>')
        if not bars:
            body.append(f'<circle cx="{x(r.value):.1f}" cy="{cy:.1f}" r="5" '
                        f'fill="{esc(r.colour)}"/>')
    if reference is not None and math.isfinite(reference.value):
        rx = x(reference.value)
        body.append(f'<line x1="{rx:.1f}" y1="{top - 4}" x2="{rx:.1f}" y2="{bottom}" '
                    f'stroke="{REFERENCE}" stroke-width="2" stroke-dasharray="6 3"/>')
        # Right of the line where it fits in the chart, else left of it.
        if rx + ref_w <= width:
            px, anchor = rx + 4, "start"
        else:
            px, anchor = max(rx - 4, ref_w), "end"
        body.append(fit(reference.label, width, x=f"{px:.1f}", y=top - 8,
                        text_anchor=anchor, fill=REFERENCE))
    return _svg(title, width, height, body)


def line_chart(title: str, series: Sequence[Series], x_label: str, y_label: str,
               bands: Sequence[Band] = (), reference: Reference | None = None) -> str:
    """Series of (x, y) points as lines with markers, shaded bands, a horizontal
    reference line, and a legend below (the reference's label in it: on the line it
    would cover the data)."""
    series = [Series(s.label, tuple(p for p in s.points
                                    if math.isfinite(p[0]) and math.isfinite(p[1])),
                     s.dashed) for s in series]
    bands = [b for b in bands if math.isfinite(b.x0) and math.isfinite(b.x1)]
    xs = [p[0] for s in series for p in s.points] + [v for b in bands for v in (b.x0, b.x1)]
    ys = [p[1] for s in series for p in s.points]
    if reference is not None and math.isfinite(reference.value):
        ys.append(reference.value)
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    y_lo, y_hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    if not x_hi > x_lo or not math.isfinite(x_hi - x_lo):
        x_lo, x_hi = x_lo - 1, x_lo + 1
    pad = (y_hi - y_lo) * 0.08 or abs(y_hi) * 0.05 or 1.0
    y_lo, y_hi = y_lo - pad, y_hi + pad
    if not (math.isfinite(y_hi - y_lo) and y_hi > y_lo):
        y_lo, y_hi = -1.0, 1.0
    y_ticks = nice_ticks(y_lo, y_hi)
    left = 24 + max((text_width(fmt_tick(t)) for t in y_ticks), default=0) + 6
    right, top = 20, 28
    plot_w, plot_h = WIDTH - left - right, LINE_H - top - 46
    legend = [(s.label, PALETTE[i % len(PALETTE)], s.dashed, 2) for i, s in enumerate(series)]
    if bands:  # a thick swatch: the shaded range
        legend.append((bands[0].label, BAD, False, 8))
    if reference is not None:
        legend.append((reference.label, REFERENCE, True, 2))
    legend_rows = math.ceil(len(legend) / 3)
    height = LINE_H + 8 + 18 * legend_rows

    def x(value: float) -> float:
        return left + min(max((value - x_lo) / (x_hi - x_lo), -0.01), 1.01) * plot_w

    def y(value: float) -> float:
        return top + min(max((y_hi - value) / (y_hi - y_lo), -0.01), 1.01) * plot_h

    bottom = top + plot_h
    body = [fit(title, WIDTH, x=0, y=16, font_weight="bold")]
    for b in bands:
        body.append(f'<rect x="{x(b.x0):.1f}" y="{top}" '
                    f'width="{max(x(b.x1) - x(b.x0), 2):.1f}" '
                    f'height="{plot_h}" fill="{BAD}" fill-opacity="0.15"/>')
    for tick in y_ticks:
        ty = y(tick)
        body.append(f'<line x1="{left}" y1="{ty:.1f}" x2="{left + plot_w}" y2="{ty:.1f}" '
                    'stroke="#e4e4e4"/>')
        body.append(fit(fmt_tick(tick), left, x=f"{left - 6:.1f}", y=f"{ty + 4:.1f}",
                        text_anchor="end", fill="#555"))
    for tick in nice_ticks(x_lo, x_hi):
        label = fmt_tick(tick)
        px, anchor = _placed(x(tick), text_width(label), 0, WIDTH)
        body.append(fit(label, WIDTH, x=f"{px:.1f}", y=bottom + 15, text_anchor=anchor,
                        fill="#555"))
    body.append(f'<rect class="plot" x="{left:.1f}" y="{top}" width="{plot_w:.1f}" '
                f'height="{plot_h}" fill="none" stroke="#999"/>')
    body.append(fit(x_label, plot_w, x=f"{left + plot_w / 2:.1f}", y=bottom + 31,
                    text_anchor="middle", fill="#555"))
    body.append(fit(y_label, plot_h, x=14, y=f"{top + plot_h / 2:.1f}", text_anchor="middle",
                    fill="#555", transform=f"rotate(-90 14 {top + plot_h / 2:.1f})"))
    if reference is not None and math.isfinite(reference.value):
        ry = y(reference.value)
        body.append(f'<line x1="{left:.1f}" y1="{ry:.1f}" x2="{left + plot_w:.1f}" '
                    f'y2="{ry:.1f}" stroke="{REFERENCE}" stroke-dasharray="6 3"/>')
    for i, s in enumerate(series):
        if not s.points:
            continue
        colour = PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="5 3"' if s.dashed else ""
        pts = " ".join(f"{x(px):.1f},{y(py):.1f}" for px, py in s.points)
        body.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" '
                    f'stroke-width="2"{dash}/>')
        if len(s.points) <= 40:
            body += [f'<circle cx="{x(px):.1f}" cy="{y(py):.1f}" r="3" fill="{colour}"/>'
                     for px, py in s.points]
    column = plot_w / 3
    for i, (label, colour, dashed, stroke) in enumerate(legend):
        lx = left + (i % 3) * column
        ly = LINE_H + 8 + 18 * (i // 3)
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        body.append(f'<line x1="{lx:.1f}" y1="{ly - 4}" x2="{lx + 18:.1f}" y2="{ly - 4}" '
                    f'stroke="{colour}" stroke-width="{stroke}"{dash}/>')
        body.append(fit(label, column - 30, x=f"{lx + 24:.1f}", y=ly))
    return _svg(title, WIDTH, height, body)


STYLE = """
body { font-family: sans-serif; max-width: 1600px; margin: 1.5em auto; padding: 0 2%;
       color: #222; }
p { max-width: 60em; } p.verdict { font-size: 1.15em; font-weight: bold; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: 0.9em; }
svg { width: 100%; height: auto; }
p.note, li { font-size: 0.95em; }
"""


@dataclass(frozen=True)
class Section:
    title: str
    intro: str
    figures: tuple[str, ...]  # SVG charts (or HTML paragraphs when there is nothing to draw)


def html_page(title: str, lines: Sequence[str], sections: Sequence[Section],
              verdict: str | None = None) -> str:
    """One self-contained HTML page: a title, the overall verdict line (in bold), intro
    lines, then the sections' charts, each as wide as the page."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>",
             f"<h1>{esc(title)}</h1>"]
    if verdict:
        parts.append(f'<p class="verdict">{esc(verdict)}</p>')
    parts += [f"<p>{esc(line)}</p>" for line in lines]
    for section in sections:
        parts.append(f"<section><h2>{esc(section.title)}</h2>")
        if section.intro:
            parts.append(f'<p class="note">{esc(section.intro)}</p>')
        parts += [f"<figure>{fig}</figure>" for fig in section.figures]
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def paragraph(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'
