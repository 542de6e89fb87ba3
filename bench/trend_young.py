"""A young segment's interval with and without the series' history (issue 29): on each
committed real series of one segment, a change is pretended at run k (nothing moved), the
runs before k are the earlier segment, and the first m decided runs from k are the young
segment. Its 95 % interval is computed alone and with the earlier segment's wander
(``segment.pooled_wander``), and judged against the whole series' estimate: how often it
holds it, and how wide it is (median half-width, bp).

    .venv/bin/python bench/trend_young.py [--m 1,2,3,5,8] [--from 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from qprof.consensus.trend.codec import point_from_dict
from qprof.consensus.trend.model import RunPoint, SuiteRun
from qprof.consensus.trend.segment import combine, pooled_wander

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "trend"
# One segment each (zen3-shift holds a real shift; the first series' later runs are
# another build).
SERIES = ("", "held", "quiet", "steal", "sixty", "zen3", "zen3-quiet", "zen3-idle",
          "zen3-late")
SUITES = ("ML-DSA-87", "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s")


def load(name: str) -> list[RunPoint]:
    d = json.loads((DATA / name / "points.json").read_text())
    points = [point_from_dict(p) for p in d["points"]]
    first = d["builds"][0] if d.get("builds") else None
    return [p for p in points if first is None or p.context.liboqs_build == first][:60]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--m", default="1,2,3,5,8", help="young segments' decided runs")
    ap.add_argument("--from", dest="start", type=int, default=10,
                    help="the earlier segment's runs, at least")
    ap.add_argument("--series", default=",".join(SERIES))
    args = ap.parse_args()
    ms = [int(x) for x in args.m.split(",")]
    # (m, with history) -> [held], [half-width]
    held: dict[tuple[int, bool], list[bool]] = {}
    width: dict[tuple[int, bool], list[float]] = {}
    for name in args.series.split(","):
        points = load(name)
        for suite in SUITES:
            runs: list[tuple[int, SuiteRun]] = [
                (i, s) for i, p in enumerate(points) if (s := p.suite(suite)) is not None]
            whole = combine(suite, runs)
            assert whole is not None
            for k in range(args.start, len(points)):
                earlier = combine(suite, [x for x in runs if x[0] < k])
                after = [x for x in runs if x[0] >= k and x[1].decided]
                if earlier is None:
                    continue
                history = pooled_wander([earlier])
                for m in ms:
                    if len(after) < m:
                        continue
                    for use in (False, True):
                        seg = combine(suite, after[:m], history=history if use else None)
                        assert seg is not None
                        lo, hi = seg.ratio_ci
                        held.setdefault((m, use), []).append(lo <= whole.ratio <= hi)
                        width.setdefault((m, use), []).append(seg.half_width_bp)
    print("young segment: decided runs | alone: holds the whole, median half-width | "
          "with the earlier runs' wander")
    for m in ms:
        row = []
        for use in (False, True):
            h, w = held[(m, use)], width[(m, use)]
            row.append(f"{sum(h) / len(h):6.1%} {statistics.median(w):7.1f} bp")
        print(f"  {m:2d} runs ({len(held[(m, False)])} cases): {row[0]} | {row[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
