"""The retrospective change analysis on every committed real series (issue 48, item 4):
steps injected into the recorded timing values of one suite at a time, or of the unit.

    .venv/bin/python bench/trend_retro.py [--series zen3,sixty] [--lengths 12,16,25,40,60]

A suite's step scales its time, ratio and interval from run k on; the unit's scales the
unit's time and every ratio the other way. Steps of +-1 % and +-3 %, early, middle and
late; windows of 12 to 60 runs of each series (first and last window of each length); the
pools as recorded and, with ``--small-pools``, every run's pool share raised to 90 % of its
error (a pool of a few signatures). Prints per series: found / located within 2 runs /
interval holds the step (and the found steps' median 95 % half-width) / explanations
that contradict whose time moved, and, as
recorded, the changes found per 1,000 runs per suite (the whole series and its windows).
``--oracle`` adds, beside each found share, the share one look at the step's own run finds
(:func:`oracle`): what the ratios' noise leaves within reach of a search of them.
docs/TREND.md ("Retrospective changes") has the table.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import statistics
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from qprof.consensus.trend.analysis import (
    TrendConfig,
    known_changes,
    segment_estimate,
    suite_trend,
)
from qprof.consensus.trend.changepoints import noise_var
from qprof.consensus.trend.codec import key_from_dict, point_from_dict
from qprof.consensus.trend.covariate import adjusted, sibling
from qprof.consensus.trend.model import RunPoint, Series, SuiteRun
from qprof.consensus.trend.segment import run_se
from qprof.consensus.trend.segmentation import step_pvalue

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "trend"
HOSTS = {"first": "Zen 5", "held": "Zen 5", "quiet": "Zen 5", "steal": "Zen 5",
         "sixty": "Zen 5", "zen3": "Zen 3", "zen3-shift": "Zen 3", "zen3-quiet": "Zen 3",
         "zen3-idle": "Zen 3", "zen3-late": "Zen 3", "zen4-fresh": "Zen 4", "zen4": "Zen 4",
         "emerald": "Emerald Rapids", "sapphire": "Sapphire Rapids",
         "sapphire-quiet": "Sapphire Rapids", "sapphire-third": "Sapphire Rapids",
         "zen4-third": "Zen 4"}
TUNED = ("zen3", "zen3-quiet", "sixty")  # the series the defaults were tuned on
SUITES = ("ML-DSA-87", "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s")
UNIT = "unit"  # a step in the unit's own time


def load(name: str) -> Series:
    """A committed series; the first one's runs of its first liboqs build only (its
    second build is a known change, judged by tests/test_trend_real.py)."""
    d = json.loads((DATA / ("points.json" if name == "first" else f"{name}/points.json"))
                   .read_text())
    runs = [point_from_dict(p) for p in d["points"]]
    if name == "first":
        runs = [p for p in runs if p.context.liboqs_build == d["builds"][0]]
    return Series(key_from_dict(d["key"]), tuple(runs))


def noise_bp(series: Series, who: str) -> float:
    """A time's run-to-run sd as the analysis sees it: a suite's ratio's, the unit's own
    time's (robust: 1.4826 x the median absolute successive difference / sqrt 2)."""
    if who == UNIT:
        ys = [math.log(p.unit_time_ns) for p in series.runs if p.unit_time_ns]
    else:
        ys = [math.log(s.ratio) for p in series.runs
              if (s := p.suite(who)) is not None and s.decided and s.ratio]
    return 1e4 * run_sd(ys) if len(ys) > 1 else math.nan


def run_sd(ys: list[float]) -> float:
    """The run-to-run sd of ``ys`` as the analysis reads it (changepoints.noise_var, every
    run weighing alike)."""
    return math.sqrt(noise_var(ys, [1.0] * len(ys)))


def _scale(s: SuiteRun, f: float) -> SuiteRun:
    if s.ratio is None or s.ratio_ci is None:
        return s
    return replace(s, ratio=s.ratio * f, ratio_ci=(s.ratio_ci[0] * f, s.ratio_ci[1] * f),
                   time_ns=None if s.time_ns is None else s.time_ns * f)


def stepped(series: Series, who: str, step: float, k: int) -> Series:
    """``series`` with ``who``'s own time (a suite's, or the unit's: every ratio the other
    way) times 1 + step from run k on."""
    f = 1 + step
    runs = []
    for i, p in enumerate(series.runs):
        if i >= k and who == UNIT:
            p = replace(p, suites=tuple(
                replace(_scale(s, 1 / f), time_ns=s.time_ns) for s in p.suites),
                unit_time_ns=None if p.unit_time_ns is None else p.unit_time_ns * f)
        elif i >= k:
            p = replace(p, suites=tuple(_scale(s, f) if s.suite == who else s
                                        for s in p.suites))
        runs.append(p)
    return Series(series.key, tuple(runs))


def small_pools(series: Series) -> Series:
    """Every decided run's pool share raised to 90 % of its error: the pool of a few
    signatures, whose deviation every run shares."""
    def small(s: SuiteRun) -> SuiteRun:
        return replace(s, pool_se=max(s.pool_se or 0.0, 0.9 * run_se(s))) if s.decided else s
    return Series(series.key, tuple(replace(p, suites=tuple(small(s) for s in p.suites))
                                    for p in series.runs))


def windows(series: Series, lengths: list[int]) -> Iterator[Series]:
    n = len(series.runs)
    for length in lengths:
        if length > n:
            continue
        for start in dict.fromkeys((0, n - length)):
            yield Series(series.key, series.runs[start:start + length])


def sliding(series: Series, lengths: list[int], every: int = 4) -> Iterator[Series]:
    """Windows of each length starting every ``every`` runs (as recorded: more runs)."""
    n = len(series.runs)
    for length in lengths:
        for start in range(0, n - length + 1, every):
            yield Series(series.key, series.runs[start:start + length])


def positions(series: Series, step: float) -> dict[str, int]:
    """Early, middle and late: 1 % steps with 8 decided runs each side at least, 3 % with
    5 before (and 5 after); a run is decided when every suite is."""
    side = 8 if abs(step) < 0.02 else 5
    decided = [i for i, p in enumerate(series.runs) if all(s.decided for s in p.suites)]
    if len(decided) < 2 * side:
        return {}
    at: dict[int, str] = {}
    for name, j in (("early", side), ("middle", len(decided) // 2),
                    ("late", len(decided) - side)):
        at.setdefault(decided[j], name)
    return {name: k for k, name in at.items()}


def _names_alone(text: str, who: str, suite: str, moved: bool) -> bool:
    """Whether an explanation names one own time alone as moved: the one moved (``moved``)
    or the other one."""
    mine = f"{suite}'s own time moved" if who != UNIT else "the unit's ("
    other = "the unit's (" if who != UNIT else f"{suite}'s own time moved"
    return text.startswith(mine if moved else other) and "own time moved" in text


def contradicts(text: str, who: str, suite: str) -> bool:
    """Whether an explanation (explain.whose_time) denies whose time was moved: "the
    ratio alone moved", or the other time alone. "Cannot be told" and "both" do not."""
    return "ratio alone moved" in text or _names_alone(text, who, suite, moved=False)


def tells(text: str, who: str, suite: str) -> bool:
    """Whether an explanation names the time that was moved, alone."""
    return _names_alone(text, who, suite, moved=True)


@dataclass
class Tally:
    cases: int = 0
    found: int = 0
    located: int = 0
    covered: int = 0
    halves: list[float] = field(default_factory=list)  # the found steps' 95 % half-widths
    contradicted: int = 0
    told: int = 0  # explanations naming the moved time alone, rightly
    wrong: int = 0  # changes the step made in a suite whose ratio it did not move
    reachable: int = 0  # found by one look at the step's own run (oracle): its estimates
    white: int = 0  # ... white noise
    read: int = 0  # found against the sibling (Change.found_on)
    read_own_zero: int = 0  # ... the ratio's own interval holding no change
    read_zero: int = 0  # ... the step as so read holding no change
    read_covered: int = 0  # ... the step as so read holding the injected step
    examples: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@functools.lru_cache(maxsize=64)
def recorded(series: Series, suite: str, cfg: TrendConfig) -> tuple[int, ...]:
    """Where ``suite`` changes in ``series`` as recorded (a wrong suite's change is one
    the step made, not one the window had)."""
    return tuple(c.run_index for c in suite_trend(series, suite, known_changes(series),
                                                  cfg).changes)


ORACLE_P = 0.001  # the per-run level the false-change target (1 per 1,000 runs) allows
ORACLE_Z = 3.29  # the normal's two-sided ORACLE_P


def _white(ys: list[tuple[int, float]], k: int, size: float) -> bool:
    """The means of ``ys`` ((run, log value)) before run ``k`` and from it differ the way
    of ``size`` by ORACLE_Z standard errors, the run-to-run noise known (robust, from the
    successive differences) and white."""
    y1, y2 = [y for i, y in ys if i < k], [y for i, y in ys if i >= k]
    if len(y1) < 2 or len(y2) < 2:
        return False
    se = run_sd([y for _i, y in ys]) * math.sqrt(1 / len(y1) + 1 / len(y2))
    step = statistics.fmean(y2) - statistics.fmean(y1)
    return (step > 0) == (size > 0) and abs(step) > ORACLE_Z * se


def oracle(series: Series, suite: str, k: int, size: float, unit: bool) -> tuple[bool, bool]:
    """Whether one look told the step's run sees a step of ``size``'s sign at ORACLE_P:
    the window's runs before ``k`` against those from it, on the suite's ratio and
    (SLH-DSA) on it read against its sibling's; for a step of the unit (``unit``), the
    white look also on the mean of every suite's log ratio (it moves them all alike). No
    search, no second look, no rule for short sides. Two looks: the analysis' own segment
    estimates (their wander, drift and degrees of freedom), and the runs' means with the
    window's run-to-run noise known and white (optimistic: the host's wander is slow).
    What neither look sees, no search of these ratios finds at that level (the joint look
    also reads the unit's own time, a second measurement)."""
    n = len(series.runs)
    looks = [series]
    other = sibling(suite, series.suite_names())
    if other is not None and (adj := adjusted(series, suite, other, 0, n)) is not None:
        looks.append(adj[0])
    ours = white = False
    for s in looks:
        a, b = segment_estimate(s, suite, 0, k), segment_estimate(s, suite, k, n)
        if a is not None and b is not None and (b.ratio > a.ratio) == (size > 0):
            ours = ours or step_pvalue(a, b) < ORACLE_P
        white = white or _white([(i, math.log(x.ratio)) for i, p in enumerate(s.runs)
                                 if (x := p.suite(suite)) is not None and x.decided
                                 and x.ratio], k, size)
    if unit:
        white = white or _white([(i, statistics.fmean(math.log(x.ratio) for x in p.suites
                                                       if x.ratio))
                                 for i, p in enumerate(series.runs)
                                 if all(x.decided and x.ratio for x in p.suites)], k, size)
    return ours, white


def judge(series: Series, who: str, step: float, k: int, cfg: TrendConfig,
          label: str, with_oracle: bool = False) -> Tally:
    """One injected case: every suite whose ratio the step moves."""
    t = Tally()
    s2 = stepped(series, who, step, k)
    known = known_changes(s2)
    for other in () if who == UNIT else (x for x in SUITES if x != who):
        base = recorded(series, other, cfg)
        wrong = [c for c in suite_trend(s2, other, known, cfg).changes
                 if abs(c.run_index - k) <= 5 and all(abs(c.run_index - j) > 2 for j in base)]
        t.wrong += len(wrong)
        t.examples += [f"wrong suite {label} {other} {who} {step:+.0%}" for _c in wrong]
    for suite in (SUITES if who == UNIT else (who,)):
        st = suite_trend(s2, suite, known, cfg)
        size = 1e4 * (1 / (1 + step) - 1 if who == UNIT else step)
        t.cases += 1
        if with_oracle:
            ours, white = oracle(s2, suite, k, size, who == UNIT)
            t.reachable += ours
            t.white += white
        near = [c for c in st.changes if abs(c.run_index - k) <= 5
                and (c.change_bp > 0) == (size > 0)]
        if not near:
            t.examples.append(f"missed {label} {suite} {who} {step:+.0%} at {k}")
            continue
        c = min(near, key=lambda c: abs(c.run_index - k))
        t.found += 1
        t.located += abs(c.run_index - k) <= 2
        lo, hi = c.ci_95_bp
        t.covered += lo <= size <= hi
        t.halves.append((hi - lo) / 2)
        if c.found_on is not None:
            t.read += 1
            t.read_own_zero += lo <= 0 <= hi
            rlo, rhi = c.found_on.ci_95_bp
            t.read_zero += rlo <= 0 <= rhi
            t.read_covered += rlo <= size <= rhi
        t.told += tells(c.what_changed[-1], who, suite)
        if contradicts(c.what_changed[-1], who, suite):
            t.contradicted += 1
            t.examples.append(f"contradicts {label} {suite} {who} {step:+.0%}: "
                              f"{c.what_changed[-1]}")
    return t


def as_recorded(series: Series, lengths: list[int], cfg: TrendConfig
                ) -> tuple[dict[str, int], int, int]:
    """Changes found per suite with no step: over the whole series (and its runs), and
    over its windows (and their runs)."""
    whole: dict[str, int] = {}
    known = known_changes(series)
    for suite in SUITES:
        whole[suite] = len(suite_trend(series, suite, known, cfg).changes)
    in_windows, runs = 0, 0
    for w in sliding(series, lengths):
        wk = known_changes(w)
        runs += len(w.runs)
        in_windows += sum(len(suite_trend(w, s, wk, cfg).changes) for s in SUITES)
    return whole, in_windows, runs


def cost() -> int:
    """`analyze`'s CPU time (best of 3, imports done) on the committed series and on 720 runs
    made of blocks of 5 of the Zen 3 series' runs (one context, so no known change)."""
    import random
    import time

    from qprof.consensus.trend.analysis import analyze_series

    def best(series: Series) -> float:
        analyze_series(series)
        out = []
        for _ in range(3):
            t = time.process_time()
            analyze_series(series)
            out.append(time.process_time() - t)
        return min(out)

    for name in ("emerald", "zen4-fresh", "sixty"):
        s = load(name)
        print(f"{name}: {len(s.runs)} runs, {best(s):.3f} s")
    pool = [p for n in ("zen3", "zen3-quiet", "zen3-idle", "zen3-late") for p in load(n).runs]
    rng = random.Random(1)
    runs: list[RunPoint] = []
    while len(runs) < 720:
        b = rng.randrange(len(pool) - 5)
        runs += pool[b:b + 5]
    ctx = pool[0].context
    big = Series(load("zen3").key, tuple(
        replace(p, run_id=f"r{i}", started_at=1e9 + 60 * i, context=ctx)
        for i, p in enumerate(runs[:720])))
    print(f"720 runs: {best(big):.2f} s")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", default=",".join(HOSTS))
    ap.add_argument("--lengths", default="12,16,25,40,60")
    ap.add_argument("--steps", default="0.01,-0.01,0.03,-0.03")
    ap.add_argument("--who", default=",".join((*SUITES, UNIT)))
    ap.add_argument("--small-pools", action="store_true")
    ap.add_argument("--examples", type=int, default=0, help="misses to print per series")
    ap.add_argument("--penalty", type=float, help="Pelt's penalty (default: the analysis')")
    ap.add_argument("--keep-p", type=float, help="the pruning level (default: the analysis')")
    ap.add_argument("--no-steps", action="store_true", help="as recorded only")
    ap.add_argument("--oracle", action="store_true",
                    help="a column: the cases found by one look at the step's own run")
    ap.add_argument("--cost", action="store_true",
                    help="time analyze on the longest series and on 720 runs, and stop")
    args = ap.parse_args()
    if args.cost:
        return cost()
    cfg = TrendConfig()
    if args.penalty is not None or args.keep_p is not None:
        cfg = replace(cfg, retro=replace(
            cfg.retro, penalty=cfg.retro.penalty if args.penalty is None else args.penalty,
            keep_p=cfg.retro.keep_p if args.keep_p is None else args.keep_p))
    lengths = [int(x) for x in args.lengths.split(",")]
    steps = [float(x) for x in args.steps.split(",")]
    r = cfg.retro
    pools = "small (90 %)" if args.small_pools else "as recorded"
    print(f"Pelt penalty {r.penalty} x ln(runs) run-to-run variances, min side "
          f"{r.min_side}, kept at p < {r.keep_p}; pools {pools}")
    whos = args.who.split(",")
    sizes = sorted({round(abs(s) * 100, 1) for s in steps})  # in %
    reach = (" (one look at the step's run: its estimates, white noise)" if args.oracle
             else "")
    cols = "".join(f" {z:g} %: found{reach} ({' / '.join(whos)}) | {z:g} %: located / "
                   "holds |" for z in sizes)
    print("| series (CPU) | runs | run-to-run sd, bp (87 / 128s / 256s ratios / the "
          f"unit's own time) |{cols} contradicted (told right, of found) | wrong suite | "
          "as recorded: whole (87 / 128s / 256s) | windows: false per 1,000 runs |")
    print("|---" * (7 + 2 * len(sizes)) + "|")
    read_rows = []
    for name in args.series.split(","):
        series = load(name)
        if args.small_pools:
            series = small_pools(series)
        by = {(size, who): Tally() for size in sizes for who in whos}
        for w in () if args.no_steps else windows(series, lengths):
            for step in steps:
                for where, k in positions(w, step).items():
                    for who in whos:
                        label = f"{len(w.runs)} runs {where}"
                        by[round(abs(step) * 100, 1), who].add(
                            judge(w, who, step, k, cfg, label, args.oracle))
        whole, false_w, runs_w = as_recorded(series, lengths, cfg)
        tuned = " (tuned)" if name in TUNED else ""
        cells = []
        for size in sizes:
            total = Tally()
            for who in whos:
                total.add(by[size, who])
            cells.append(" / ".join(
                (f"{t.found / t.cases:.0%}" + (
                    f" ({t.reachable / t.cases:.0%}, {t.white / t.cases:.0%})"
                    if args.oracle else ""))
                if (t := by[size, who]).cases else "-" for who in whos))
            cells.append(f"{total.located / max(total.found, 1):.0%} / "
                         f"{total.covered / max(total.found, 1):.0%} of {total.found}, "
                         f"±{statistics.median(total.halves):.0f} bp"
                         if total.found else "-")
        contra = sum(t.contradicted for t in by.values())
        told = sum(t.told for t in by.values())
        found = sum(t.found for t in by.values())
        wrong = sum(t.wrong for t in by.values())
        sds = " / ".join(f"{noise_bp(series, who):.0f}" for who in whos)
        print(f"| {name}{tuned} ({HOSTS[name]}) | {len(series.runs)} | {sds} | "
              f"{' | '.join(cells)} | {contra} ({told} of {found}) | {wrong} | "
              f"{' / '.join(str(whole[s]) for s in SUITES)} | "
              f"{false_w} in {runs_w} runs x 3 = {1000 * false_w / (3 * max(runs_w, 1)):.2f} |")
        read = Tally()
        for t in by.values():
            read.add(t)
        if read.read:
            read_rows.append(f"| {name} | {read.read} of {read.found} | {read.read_own_zero} "
                             f"| {read.read_zero} | {read.read_covered} |")
        examples = [x for t in by.values() for x in t.examples]
        for line in examples[:args.examples]:
            print(f"    {line}")
        sys.stdout.flush()
    if read_rows:
        print("\n| series | found against the sibling, of all found | the ratio's interval "
              "holds 0 | the step read against the sibling: its interval holds 0 | ... holds "
              "the injected step |\n|---|---|---|---|---|")
        print("\n".join(read_rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
