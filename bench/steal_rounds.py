"""Rounds the hypervisor took time from, against the ratio (issue 29): how far each
round's paired ratio sits from its run's estimate by the steal the measured CPU saw in
that round (``Measurement.steal_ticks``), and what leaving such rounds out does to the
runs' scatter and the segment's interval.

    .venv/bin/python bench/steal_rounds.py RUN.jsonl... [--thresholds 0,1,2,4]

"none" keeps every round (the estimator does); a number T leaves out every round with
more than T steal ticks (10 ms each). Figures: per suite, the
run-to-run sd of ln(ratio) over the decided runs, the undecided runs, and the segment's
95 % half-width.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict

from qprof.consensus.estimate.estimator import estimate
from qprof.consensus.trend.analysis import analyze_series
from qprof.consensus.trend.from_records import run_points
from qprof.consensus.trend.model import Series, SeriesKey
from qprof.measure.jsonl import read_run
from qprof.measure.records import Measurement, Record

KEY = SeriesKey(node="steal", cpu=1, cpu_model=None, backend="liboqs")
SUITES = ("ML-DSA-87", "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s")


def round_steal(ms: list[Measurement]) -> dict[int, int]:
    return {m.round: m.steal_ticks for m in ms if m.steal_ticks is not None}


def without_stolen(records: list[Record], how: str) -> list[Record]:
    """The run's records as ``how`` says (see the module text)."""
    if how == "none":
        return records
    return [r for r in records if not (isinstance(r, Measurement) and r.steal_ticks
                                       is not None and r.steal_ticks > int(how))]


def per_round(runs: list[list[Record]]) -> None:
    """Each round's paired ratio against its run's estimate, by the round's steal."""
    dev: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for records in runs:
        ms = [r for r in records if isinstance(r, Measurement)]
        steal = round_steal(ms)
        for e in estimate(ms, replicates=0):
            if e.is_unit or not e.vu_by_round or e.ratio is None or e.undecided:
                continue
            base = math.log(100 * e.ratio)
            for r, vu in e.vu_by_round.items():
                ticks = steal.get(r)
                if ticks is None:
                    continue
                band = "0" if ticks == 0 else "1" if ticks == 1 else "2-3" if ticks <= 3 else "4+"
                dev[e.suite][band].append(1e4 * (math.log(vu) - base))
    print("round ratio - run estimate (bp), by the round's steal ticks: mean (n)")
    for suite in SUITES:
        cells = [f"{b}: {statistics.fmean(v):+6.0f} ({len(v)})"
                 for b in ("0", "1", "2-3", "4+") if (v := dev[suite][b])]
        print(f"  {suite:20} " + "   ".join(cells))


def scatter(runs: list[list[Record]], how: str) -> None:
    points = []
    for records in runs:
        points += [p for _k, p in run_points(without_stolen(records, how))]
    trend = analyze_series(Series(KEY, tuple(points)))
    label = how if how == "none" else f"> {how} ticks out"
    for suite in SUITES:
        ys = [math.log(s.ratio) for p in points if (s := p.suite(suite)) and s.ratio]
        gaps = sum(1 for p in points if (s := p.suite(suite)) and not s.decided)
        st = trend.suite(suite)
        seg = st.segments[-1] if st and st.segments else None
        print(f"  {label:16} {suite:20} decided {len(ys):2} undecided {gaps} "
              f"sd {1e4 * statistics.stdev(ys):5.0f} bp  half-width "
              f"{seg.half_width_bp if seg else float('nan'):5.1f} bp "
              f"(segments {len(st.segments) if st else 0})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--thresholds", default="none,0,1,2")
    args = ap.parse_args()
    runs = [read_run(path).records for path in args.runs]  # each file read once
    per_round(runs)
    print("runs' scatter and the segment, by the rounds left out:")
    for how in args.thresholds.split(","):
        scatter(runs, how)
    return 0


if __name__ == "__main__":
    sys.exit(main())
