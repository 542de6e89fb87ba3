"""How often a change's explanation names the suites that moved (issue 29, what changed):
real runs resampled in blocks (which keeps their autocorrelation), a step in the SLH-DSA
suites' own times from the middle on, and each suite judged moved or steady by the rule of
`qprof trend` (`explain.moved_beyond_noise`, Mann-Whitney U) and by Welch's t test, as
before. With no step, "nothing moved" is the right answer; with one, "only SLH-DSA".

    .venv/bin/python bench/trend_explain.py --points tests/data/trend/zen3/points.json
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Callable, Sequence

from qprof.consensus.trend.explain import MOVED_P, moved_beyond_noise
from qprof.consensus.trend.model import RunPoint
from qprof.consensus.trend.segmentation import differ

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from trend_detection import load_points  # noqa: E402


def own_times(points: Sequence[RunPoint]) -> dict[str, list[float | None]]:
    """Each suite's log time per run (the unit's included), None where undecided."""
    out: dict[str, list[float | None]] = {}
    for p in points:
        decided = any(s.decided for s in p.suites)
        ok = decided and p.unit_time_ns is not None
        out.setdefault(p.unit_suite, []).append(math.log(p.unit_time_ns) if ok else None)
        for s in p.suites:
            t = s.time_ns if s.decided else None
            out.setdefault(s.suite, []).append(math.log(t) if t else None)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*")
    ap.add_argument("--points")
    ap.add_argument("--series", type=int, default=400)
    ap.add_argument("--side", type=int, default=12, help="runs each side (explain_window)")
    ap.add_argument("--block", type=int, default=5)
    ap.add_argument("--steps", default="0,0.01,0.02")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    times = own_times(load_points(args.runs, args.points))
    n = len(next(iter(times.values())))
    rules: dict[str, Callable[[Sequence[float], Sequence[float]], bool]] = {
        "U (qprof)": moved_beyond_noise,
        "Welch": lambda before, after: differ(before, after, MOVED_P)}
    print(f"{n} real runs; {args.series} series of {2 * args.side} runs, blocks of "
          f"{args.block}, p {MOVED_P}")
    for step in (float(x) for x in args.steps.split(",")):
        rng = random.Random(args.seed)
        right = dict.fromkeys(rules, 0)
        expect = sorted(k for k in times if k.startswith("SLH-DSA")) if step else []
        for _ in range(args.series):
            idx: list[int] = []
            while len(idx) < 2 * args.side:
                b = rng.randrange(n - args.block + 1)
                idx += range(b, b + args.block)
            idx = idx[:2 * args.side]
            for name, rule in rules.items():
                moved = []
                for suite, ys in times.items():
                    shift = math.log1p(step) if suite.startswith("SLH-DSA") else 0.0
                    before = [y for i in idx[:args.side] if (y := ys[i]) is not None]
                    after = [y + shift for i in idx[args.side:] if (y := ys[i]) is not None]
                    if rule(before, after):
                        moved.append(suite)
                right[name] += sorted(moved) == expect
        said = "nothing moved" if not step else "only SLH-DSA moved"
        print(f"step {step:+.1%}: '{said}' in " + ", ".join(
            f"{name} {k}/{args.series}" for name, k in right.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
