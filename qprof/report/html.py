"""HTML report with charts from one or more JSONL runs (`qprof report --html`).

The same columns (run x CPU) and the same figures as the Markdown report
(:mod:`qprof.report.markdown`: the estimator's, as `qprof check` gives them), drawn
instead of tabulated: per suite the Verify-Unit estimate of each core with its 95 %
interval against the profile's constant (the seeds' median rule written beside it when
the estimate used another statistic); the round
medians over the run (drift); frequencies and caps over the run; the worst-case block
against the target block interval.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path

from qprof.consensus import Profile
from qprof.consensus.estimate.stats import drift_bp
from qprof.consensus.judgement import Judgement
from qprof.consensus.trend.model import SeriesTrend
from qprof.consensus.verdict_types import WORDS, State, contended_text
from qprof.consensus.vu import block_signatures
from qprof.measure.jsonl import RunData
from qprof.measure.records import FreqSample
from qprof.measure.units import fmt_ns
from qprof.report.columns import (
    Column,
    backends_of,
    build_columns,
    suites_of,
    unit_of,
)
from qprof.report.figures import column_estimates, column_verdicts
from qprof.report.html_svg import (
    BAD,
    GOOD,
    NEUTRAL,
    Band,
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
from qprof.report.html_trend import trend_section
from qprof.report.judgement import judgement_lines
from qprof.report.trend import report_trends

# The verdict's colour and mark by its state (qprof.consensus.verdict: WORDS, the words
# beside them); the monitor's HTML export uses the same. Decided covered green, not
# covered red, unsure its own colour; a ratio that does not bind, a run too contended to
# estimate and comparison figures carry no mark and no warning colour.
UNSURE_COLOUR = "#CC79A7"
NO_VERDICT_COLOUR = "#6E6E6E"
STATE_STYLE: dict[State, tuple[str, str]] = {
    "covered": (GOOD, "✓ "), "not_covered": (BAD, "✗ "), "unsure": (UNSURE_COLOUR, "? "),
    "no_estimate": (NO_VERDICT_COLOUR, ""), "not_binding": (NEUTRAL, ""),
    "comparison": (NO_VERDICT_COLOUR, ""), "unit": (NEUTRAL, ""),
}


def verdict_text(state: State, figure: str, constant: int | None, why: str = "") -> str:
    """The text beside an estimate: the verdict's mark and word first (WORDS), then the
    figure against the constant; a run with no reliable estimate shows no figure."""
    mark, word = STATE_STYLE[state][1], WORDS[state]
    if state == "no_estimate":
        return word + (f": {why}" if why else "")
    if state == "unit":
        return f"{figure}: {word}"
    if constant is None:
        return f"{mark}{word}: {figure}"
    against = {"covered": f"≤ {constant}", "not_covered": f"> {constant}",
               "unsure": f"straddles {constant}"}.get(state, f"constant {constant}")
    return f"{mark}{word}: {figure} {against}"


def _estimates(cols: list[Column], profile: Profile | None) -> Section:
    unit = unit_of(profile, cols)
    figures = []
    for backend in backends_of(cols, "verify"):
        per_col = column_estimates(cols, profile, unit, backend, "verify")
        verdicts = {(v.cpu, v.suite): v for v in column_verdicts(profile, per_col, cols)}
        for suite in suites_of(cols, profile, ("verify",)):
            if suite == unit:
                continue
            const = profile.verify_units.get(suite) if profile else None
            rows = []
            for i, (c, col) in enumerate(zip(cols, per_col, strict=True)):
                e = col.get(suite)
                if e is None or e.vu_estimate is None:
                    continue
                ci = e.vu_ci
                figure = f"{e.vu_estimate}" + (f" ({ci[0]}-{ci[1]})" if ci else "")
                v = verdicts.get((i, suite))
                state: State = v.state if v is not None else "comparison"
                text = verdict_text(state, figure, const,
                                    contended_text(e) if state == "no_estimate" else "")
                rule = e.vu_by_statistic.get("median")
                if e.statistic != "median" and rule is not None and state != "no_estimate":
                    text += f"; median rule {rule}"
                lo, hi = ci if ci is not None and state != "no_estimate" else (None, None)
                value = e.vu_estimate if state != "no_estimate" else math.nan
                rows.append(Row(c.label, value, lo, hi, text=text,
                                colour=STATE_STYLE[state][0]))
            if rows:
                ref = Reference(const, f"constant {const}") if const is not None else None
                figures.append(row_chart(f"{suite} ({backend}): VU estimate per core",
                                         rows, ref, unit="Verify Units"))
    intro = (f"Estimate = ceil(100 × t(suite) / t({unit})) on the same core, backend and "
             "run: the estimator's, as `qprof check` gives it for these records (t by the "
             "statistic it chose; the seeds' median rule is written beside it when that "
             "is another); the whisker is its 95 % interval; the dashed line is the "
             "profile's constant. In the verdict's words and colours: ✓ covered (green) and "
             "✗ NOT covered (red), the whole interval on one side, where the ratio binds; "
             "? unsure (purple), it straddles the constant; not binding here (blue): the "
             "profile does not hold this core to the ratio; no reliable estimate (grey): "
             "the host was too contended, no figure; a verifier no node runs alone is "
             "comparison only.")
    return Section("Verify Units per core", intro,
                   tuple(figures) or (paragraph("No verify measurements."),))


def _drift(cols: list[Column]) -> Section:
    figures = []
    for c in cols:
        series, capped = [], set()
        for (_cpu, suite, backend, op), red in sorted(c.reduced.items()):
            if op != "verify" or len(red.round_medians) < 2:
                continue
            series.append(Series(f"{suite} ({backend})", tuple(
                (rnd + 1, drift_bp(red.median_ns, med))
                for rnd, med in sorted(red.round_medians.items()))))
            capped.update(red.capped_rounds)
        if series:
            bands = [Band(r + 0.5, r + 1.5, "round under a frequency cap") for r in sorted(capped)]
            figures.append(line_chart(f"{c.label}: round medians against the run's median",
                                      series, "round", "basis points", bands,
                                      Reference(0.0, "median of all samples")))
    intro = ("Each round's median verify time against the median of all its samples, in "
             "basis points (100 bp = 1 %). Lines that climb or fall together are a drift of "
             "the machine (heat, a cap, other load); shaded rounds ran under a cap.")
    return Section("Round medians over the run (drift)", intro,
                   tuple(figures) or (paragraph("Fewer than two rounds per suite: no drift "
                                                "to draw."),))


def _cap_bands(samples: list[FreqSample], t0: float) -> list[Band]:
    bands, start, last = [], None, None
    for s in samples:
        if s.capped and start is None:
            start = s.taken_at
        if not s.capped and start is not None:
            bands.append(Band(start - t0, s.taken_at - t0, "capped"))
            start = None
        last = s.taken_at
    if start is not None and last is not None:
        bands.append(Band(start - t0, last - t0, "capped"))
    return bands


def _frequencies(runs: list[RunData]) -> Section:
    figures = []
    for run in runs:
        name = Path(run.path).name
        freqs = sorted((f for f in run.freqs if f.cur_khz or f.max_khz),
                       key=lambda f: f.taken_at)
        if not freqs:
            figures.append(paragraph(f"{name}: no frequency data (the system reports none, "
                                     "e.g. a VM without cpufreq)."))
            continue
        t0 = run.meta.started_at if run.meta else freqs[0].taken_at
        series, bands = [], []
        hw_max = max((f.hw_max_khz or 0) for f in freqs) or None
        per_cpu: dict[int, list[FreqSample]] = {}
        for f in freqs:
            per_cpu.setdefault(f.cpu, []).append(f)
        for cpu, mine in sorted(per_cpu.items()):
            cur = tuple((f.taken_at - t0, f.cur_khz / 1e6) for f in mine if f.cur_khz)
            allowed = tuple((f.taken_at - t0, f.max_khz / 1e6) for f in mine if f.max_khz)
            if cur:
                series.append(Series(f"CPU {cpu} now", cur))
            if allowed:
                series.append(Series(f"CPU {cpu} allowed", allowed, dashed=True))
            bands += _cap_bands(mine, t0)
        ref = Reference(hw_max / 1e6, f"hardware maximum {hw_max / 1e6:.2f} GHz") \
            if hw_max else None
        figures.append(line_chart(f"{name}: frequency of the measured CPUs", series,
                                  "seconds since the run started", "GHz", bands, ref))
    intro = ("Frequency sampled during each run: solid, what the CPU ran at; dashed, the "
             "most it was allowed (a cap lowers it); shaded, while the CPU was capped.")
    return Section("Frequency and caps over the run", intro, tuple(figures))


def _worst_block(cols: list[Column], profile: Profile | None) -> Section | None:
    if profile is None:
        return None
    ways = [(b, "verify") for b in backends_of(cols, "verify")]
    ways += [(b, "dual_enforce") for b in backends_of(cols, "dual_enforce")]
    interval = profile.target_block_interval_s
    figures = []
    for suite in profile.suites:
        nsig = block_signatures(profile, suite)
        rows = []
        for backend, op in ways:
            for c in cols:
                red = c.get(suite, backend, op)
                if red is None:
                    continue
                block_s = nsig * red.median_ns / 1e9
                text = fmt_ns(block_s * 1e9)
                if interval:
                    text += f" ({100 * block_s / interval:.2f} %)"
                how = backend + (" enforce" if op == "dual_enforce" else "")
                rows.append(Row(f"{c.label} {how}", block_s, text=text,
                                colour=BAD if interval and block_s > interval else NEUTRAL))
        if rows:
            ref = Reference(interval, f"block interval {interval:.0f} s") if interval else None
            figures.append(row_chart(f"{suite}: {nsig:,} signatures in one block", rows, ref,
                                     unit="seconds on one core (log scale)", bars=True,
                                     log=True, tick_format=fmt_seconds_tick))
    if not figures:
        return None
    intro = (f"A block holding as many signatures of one suite as "
             f"{profile.max_block_verify_units:,} Verify Units allow, times the median of one "
             "signature, on one core (an estimate, not a measured block), against the target "
             "block interval; the percentage is the share of the interval.")
    return Section("Worst-case block against the block interval", intro, tuple(figures))


def render_html(runs: list[RunData], profile: Profile | None = None,
                trends: Sequence[SeriesTrend] | None = None,
                judgement: Judgement | None = None) -> str:
    """``trends``: :func:`qprof.report.trend.report_trends` of ``runs`` when the caller
    has them (the Markdown report takes the same), else computed here; ``judgement``:
    the verdict every view shows, its overall line first on the page."""
    cols = build_columns(runs)
    said = judgement_lines(judgement, profile) if judgement is not None else []
    lines = ["Runs: " + ", ".join(Path(r.path).name for r in runs) + "."]
    for run in runs:
        if run.meta:
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(run.meta.started_at))
            model = run.meta.machine.get("cpu_model") or "unknown CPU"
            lines.append(f"{Path(run.path).name}: {model}, started {when}.")
    if profile:
        lines.append(f"Profile: {profile.name} ({profile.description or profile.path}).")
    sections = [_estimates(cols, profile), _drift(cols), _frequencies(runs)]
    if said[1:]:
        sections.insert(0, Section("Verdict", "The verdict on every kept run of each "
                                   "series since its last change, as check, history and "
                                   "the monitor give it.",
                                   tuple(paragraph(line) for line in said[1:])))
    block = _worst_block(cols, profile)
    if block is not None:
        sections.append(block)
    trend = trend_section(report_trends(runs, profile) if trends is None else trends,
                          profile, runs)
    if trend is not None:
        sections.append(trend)
    problems = [p for r in runs for p in r.problems]
    if problems:
        sections.append(Section("Input problems", "", tuple(paragraph(p) for p in problems)))
    return html_page("Post-quantum verification cost per core", lines, sections,
                     said[0] if said else None)
