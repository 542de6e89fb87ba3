"""A real series' segment estimates (issue 29, Done when 1): `qprof trend`'s verdict over
all runs, the half-width at 10, 20 and all runs, the two halves against the interval of
their difference, and how often the interval of 10 consecutive runs holds the estimate
over all of them.

    .venv/bin/python bench/trend_series.py RUN.jsonl...
    .venv/bin/python bench/trend_series.py --points tests/data/trend/points.json [--first 40]

``--skip N`` leaves out the first N runs (the segment after a change the series shows).
``--decided``: the decided runs alone, renumbered, so "the first 40" are 40 decided runs
(on a contended host most runs are gaps, and 40 runs hold few estimates).
"""

from __future__ import annotations

import argparse
import math
import sys

from qprof.consensus.trend.analysis import analyze_series
from qprof.consensus.trend.model import Series
from qprof.consensus.trend.segment import combine
from qprof.consensus.trend.segmentation import step_size

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from trend_detection import KEY, load_points  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*")
    ap.add_argument("--points")
    ap.add_argument("--skip", type=int, default=0,
                    help="leave out the first N runs (a segment that starts later)")
    ap.add_argument("--first", type=int, default=0, help="only the first N runs (0: all)")
    ap.add_argument("--decided", action="store_true",
                    help="only the runs with a decided suite (before --first)")
    ap.add_argument("--suites", default="ML-DSA-87,SLH-DSA-SHAKE-128s,SLH-DSA-SHAKE-256s")
    args = ap.parse_args()
    points = load_points(args.runs, args.points)
    points = points[args.skip:]
    if args.decided:
        points = [p for p in points if any(s.decided for s in p.suites)]
    if args.first:
        points = points[:args.first]
    series = Series(KEY, tuple(points))
    trend = analyze_series(series)
    print(f"{len(points)} runs; known changes: {[k.what for k in trend.known] or 'none'}")
    for name in args.suites.split(","):
        st = trend.suite(name)
        if st is None:
            continue
        runs = [(i, s) for i, p in enumerate(points) if (s := p.suite(name)) is not None]
        decided = [(i, s) for i, s in runs if s.decided]
        print(f"\n{name}: {len(decided)} decided, {st.gaps} undecided; changes found: "
              f"{len(st.changes)}; alarm pending: {st.alarm is not None}")
        for c in st.changes:
            print(f"  change at run {c.run_index}: {c.change_bp:+.0f} bp "
                  f"({c.ci_95_bp[0]:+.0f} to {c.ci_95_bp[1]:+.0f}), {c.cause}: "
                  f"{'; '.join(c.what_changed)}")
        for g in st.segments:
            print(f"  segment runs {g.first_run}-{g.last_run}: {100 * g.ratio:.2f} "
                  f"(95 % {100 * g.ratio_ci[0]:.2f}-{100 * g.ratio_ci[1]:.2f}), "
                  f"+-{g.half_width_bp:.1f} bp over {g.runs} runs; within {g.within_bp:.0f} "
                  f"bp, between {g.between_bp:.0f} bp, lag-1 {g.autocorr:+.2f}, df {g.df:.0f}, "
                  f"pool {g.pool_bp:.0f} bp (se)")
        if len(st.segments) != 1:
            continue
        full = st.segments[0]
        for n in sorted({10, 20, 30, 40, len(runs)}):
            seg = combine(name, [x for x in runs if x[0] < n])
            if seg is not None and n <= len(runs):
                meas = (seg.half_width_bp ** 2 - (1.96 * seg.pool_bp) ** 2) ** 0.5
                print(f"  first {n:>2} runs: {100 * seg.ratio:.2f} +-{seg.half_width_bp:.1f} bp"
                      f" (without the pool's share: +-{meas:.1f} bp)")
        half = len(runs) // 2
        a = combine(name, runs[:half])
        b = combine(name, runs[half:])
        if a is not None and b is not None:
            d, (lo, hi) = step_size(a, b)
            print(f"  halves: {100 * a.ratio:.2f} vs {100 * b.ratio:.2f}: {d:+.1f} bp, "
                  f"95 % of the difference {lo:+.1f} to {hi:+.1f}: "
                  f"{'agree' if lo <= 0 <= hi else 'DIFFER'}")
        held = total = 0
        for start in range(0, len(runs) - 9):
            w = combine(name, runs[start:start + 10])
            if w is None:
                continue
            total += 1
            held += w.ratio_ci[0] <= full.ratio <= w.ratio_ci[1]
        print(f"  10-run windows holding the {len(runs)}-run estimate: {held}/{total} "
              f"({held / max(total, 1):.0%})")
        ys = [math.log(s.ratio) for _i, s in decided if s.ratio]
        m = sum(ys) / len(ys)
        sd = math.sqrt(sum((y - m) ** 2 for y in ys) / (len(ys) - 1))
        print(f"  run-to-run sd {1e4 * sd:.0f} bp")
    return 0


if __name__ == "__main__":
    sys.exit(main())
