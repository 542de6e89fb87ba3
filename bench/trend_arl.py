"""The detector's in-control average run length, measured (issue 29): the whole procedure
(self-starting chart, delayed reference, clipping, confirmation) on series of independent
normal runs, counted as runs per confirmed false change. ``DetectorConfig.arl0`` is this
chart's nominal one (Siegmund's at its h); the procedure's is shorter.

    .venv/bin/python bench/trend_arl.py [--runs 1000000] [--length 100] [--arl0 10000]
    .venv/bin/python bench/trend_arl.py --lag 0   # the reference without delay

Prints the false changes, the measured ARL with its 95 % interval (Poisson), the nominal
ARL (Siegmund's at h) and their ratio.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from dataclasses import replace

from qprof.consensus.trend.analysis import detect
from qprof.consensus.trend.detector import DetectorConfig, siegmund_arl


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1_000_000, help="runs in all")
    ap.add_argument("--length", type=int, default=100, help="runs per series")
    ap.add_argument("--arl0", type=float, default=DetectorConfig().arl0)
    ap.add_argument("--lag", type=int, default=DetectorConfig().reference_lag)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    cfg = replace(DetectorConfig(), arl0=args.arl0, reference_lag=args.lag)
    h = cfg.h
    rng = random.Random(args.seed)
    series = args.runs // args.length
    false = 0
    started = time.monotonic()
    for _ in range(series):
        # A run's own error 21 bp, the wander 30 bp: ML-DSA-87 on the AMD guests; the
        # score is scale-free, so only their proportion matters.
        ys = [(i, rng.gauss(0, 0.003) + rng.gauss(0, 0.0021), 0.0021 ** 2)
              for i in range(args.length)]
        found, _alarm = detect(ys, "x", cfg)
        false += len(found)
    runs = series * args.length
    nominal = siegmund_arl(h, cfg.k) / 2
    arl = runs / false if false else math.inf
    lo = runs / (false + 1.96 * math.sqrt(false) + 1) if false else runs / 3.7
    hi = runs / max(false - 1.96 * math.sqrt(false), 0.5) if false else math.inf
    print(f"k={cfg.k:.3f} h={h:.3f} lag={cfg.reference_lag} from {cfg.lagged_from} "
          f"clip={cfg.clip}: {false} false changes in {runs} runs ({series} series of "
          f"{args.length}) = {1000 * false / runs:.3f} per 1,000 runs; measured ARL "
          f"{arl:.0f} (95 % ~{lo:.0f}-{hi:.0f}); Siegmund's at h {nominal:.0f}; ratio "
          f"{nominal / arl:.2f} [{time.monotonic() - started:.0f} s]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
