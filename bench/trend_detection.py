"""The trend detector on real noise (issue 29, Done when 2): series built by a moving-block
bootstrap of real runs (which keeps their autocorrelation), a step injected from run k
(every timing of the suite x (1 + step): the ratio and its interval scale with it).

    .venv/bin/python bench/trend_detection.py RUN.jsonl... [--series 200] [--points P.json]
    .venv/bin/python bench/trend_detection.py --points tests/data/trend/points.json

Prints, per suite and step: the detection delay (runs after k until the change is
confirmed: median, 90th percentile, share never found), the located step within 2 runs of
k, the size interval holding the injected size, and with no step the false change points
per 1,000 runs. `--points` caches the runs' estimates (computing them takes ~1 s a run).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from qprof.consensus.trend.analysis import TrendConfig, detect, log_points, suite_trend
from qprof.consensus.trend.codec import point_from_dict, point_to_dict
from qprof.consensus.trend.model import RunPoint, Series, SeriesKey, SuiteRun

KEY = SeriesKey(node="bootstrap", cpu=1, cpu_model=None, backend="liboqs")


def load_points(paths: list[str], cache: str | None) -> list[RunPoint]:
    if cache and Path(cache).exists() and not paths:
        return [point_from_dict(d) for d in json.loads(Path(cache).read_text())["points"]]
    if not paths:
        sys.exit("no runs and no --points cache")
    from qprof.consensus.trend.analysis import group
    from qprof.consensus.trend.from_records import run_points
    from qprof.measure.jsonl import read_run

    pts = []
    for p in paths:
        pts += run_points(read_run(p).records)
    series = group(pts)
    if len(series) != 1:
        sys.exit(f"expected one series, got {[s.key for s in series]}")
    points = list(series[0].runs)
    if cache:
        builds = list(dict.fromkeys(p.context.liboqs_build for p in points))
        Path(cache).write_text(json.dumps(
            {"key": series[0].key.__dict__, "builds": builds,
             "points": [point_to_dict(p) for p in points]}, indent=None) + "\n")
    return points


def scaled(s: SuiteRun, f: float) -> SuiteRun:
    if not s.decided or s.ratio is None or s.ratio_ci is None:
        return s
    return replace(s, ratio=s.ratio * f, ratio_ci=(s.ratio_ci[0] * f, s.ratio_ci[1] * f),
                   time_ns=None if s.time_ns is None else s.time_ns * f)


def rescaled(points: list[RunPoint], suite: str, factor: float) -> list[RunPoint]:
    """The suite's log ratios scaled about their mean by ``factor`` (intervals too)."""
    ys = [math.log(s.ratio) for p in points if (s := p.suite(suite)) and s.decided and s.ratio]
    mean = sum(ys) / len(ys)
    out = []
    for p in points:
        s = p.suite(suite)
        if s is None or not s.decided or s.ratio is None or s.ratio_ci is None:
            out.append(p)
            continue
        y = math.log(s.ratio)
        f = math.exp(mean + factor * (y - mean)) / s.ratio
        lo, hi = s.ratio_ci
        new = replace(s, ratio=s.ratio * f,
                      ratio_ci=(s.ratio * f * (lo / s.ratio) ** factor,
                                s.ratio * f * (hi / s.ratio) ** factor),
                      pool_se=None if s.pool_se is None else s.pool_se * factor)
        out.append(replace(p, suites=tuple(new if x.suite == suite else x for x in p.suites)))
    return out


def bootstrap(points: list[RunPoint], suite: str, n: int, block: int, step: float, k: int,
              rng: random.Random) -> Series:
    """n runs of one suite: blocks of consecutive real runs, a step from run k."""
    out: list[RunPoint] = []
    while len(out) < n:
        start = rng.randrange(len(points) - block + 1)
        out += points[start:start + block]
    runs = []
    for i, p in enumerate(out[:n]):
        s = p.suite(suite)
        assert s is not None
        runs.append(RunPoint(run_id=f"r{i}", started_at=1e9 + 60 * i,
                             suites=(scaled(s, 1 + step) if i >= k else s,),
                             context=p.context, unit_suite=p.unit_suite,
                             unit_time_ns=p.unit_time_ns))
    return Series(KEY, tuple(runs))


@dataclass
class Case:
    delays: list[float]
    located: int = 0
    covered: int = 0
    found: int = 0
    early: int = 0  # confirmed changes before the step (false ones)


def run_case(points: list[RunPoint], suite: str, step: float, n_series: int, k: int, n: int,
             block: int, seed: int, cfg: TrendConfig) -> Case:
    rng = random.Random(seed)
    case = Case(delays=[])
    for _ in range(n_series):
        series = bootstrap(points, suite, n, block, step, k, rng)
        ys = log_points(series, suite, 0, n)
        found, _alarm = detect(ys, suite, cfg.detector)
        case.early += sum(1 for f in found if f.confirmed_at < k)
        late = [f for f in found if f.confirmed_at >= k]
        if not late:
            case.delays.append(math.inf)
            continue
        case.delays.append(late[0].confirmed_at - k + 1)  # runs since the step, inclusive
        case.found += 1
        trend = suite_trend(series, suite, [], cfg)
        near = min(trend.changes, key=lambda c: abs(c.run_index - k), default=None)
        if near is None:
            continue
        case.located += abs(near.run_index - k) <= 2
        lo, hi = near.ci_95_bp
        case.covered += lo <= 1e4 * step <= hi
    return case


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*")
    ap.add_argument("--points", help="cache of the runs' estimates (JSON)")
    ap.add_argument("--series", type=int, default=200)
    ap.add_argument("--block", type=int, default=5)
    ap.add_argument("--k", type=int, default=30, help="first run of the step")
    ap.add_argument("--after", type=int, default=40, help="runs after the step")
    ap.add_argument("--null-runs", type=int, default=100, help="runs of each no-step series")
    ap.add_argument("--suites", default="ML-DSA-87,SLH-DSA-SHAKE-128s,SLH-DSA-SHAKE-256s")
    ap.add_argument("--steps", default="0.01,0.02")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale-sd", type=float, default=0.0, metavar="BP",
                    help="scale each suite's runs about their mean (ratio and interval) to a "
                         "run-to-run sd of BP: the same noise's shape at another level")
    args = ap.parse_args()
    points = load_points(args.runs, args.points)
    cfg = TrendConfig()
    d = cfg.detector
    print(f"{len(points)} real runs; CUSUM k={d.k:.3f} h={d.h:.3f} clip={d.clip} "
          f"warmup={d.warmup} ARL0={d.arl0:.0f}; {args.series} series per case, blocks of "
          f"{args.block}")
    for suite in args.suites.split(","):
        ys = [math.log(s.ratio) for p in points if (s := p.suite(suite)) and s.decided
              and s.ratio]
        sd = statistics.stdev(ys) * 1e4
        if args.scale_sd:
            points = rescaled(points, suite, args.scale_sd / sd)
            print(f"\n{suite}: scaled x{args.scale_sd / sd:.2f} to a run-to-run sd of "
                  f"{args.scale_sd:.0f} bp")
        print(f"\n{suite}: {len(ys)} decided runs, run-to-run sd {sd:.0f} bp")
        null = run_case(points, suite, 0.0, args.series, args.null_runs + 1,
                        args.null_runs, args.block, args.seed, cfg)
        total = args.series * args.null_runs
        print(f"  no step: {null.early} false change points in {total} runs = "
              f"{1000 * null.early / total:.2f} per 1,000 runs")
        for step in (float(x) for x in args.steps.split(",")):
            c = run_case(points, suite, step, args.series, args.k, args.k + args.after,
                         args.block, args.seed + 1, cfg)
            print(f"  step {step:+.1%}: found {c.found}/{args.series}; delay median "
                  f"{pct(c.delays, 0.5):.0f} runs, p90 {pct(c.delays, 0.9):.0f}; located "
                  f"within 2 runs {c.located}/{c.found}; size interval holds it "
                  f"{c.covered}/{c.found}; false before the step {c.early}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
