"""What an SLH-DSA signature costs beyond its Keccak-f permutations, measured over a series
of runs that verified one pool (qprof.consensus.estimate.poolmix bounds it by RESIDUAL_SD).

    .venv/bin/python bench/pool_residual.py RUN.jsonl...

Each value is the time of one pool signature; divided by its permutations and by its run's
median of that (the run's level, contention included) it is the signature's cost per
permutation relative to the pool's. Per signature, the median over the odd runs and over
the even runs: their covariance across the pool's signatures is the variance of what the
count does not explain (the runs' noise is independent between the halves, so it drops
out); their correlation says how much of a signature's spread is its own.
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections import defaultdict

import numpy as np

from qprof.measure.jsonl import read_run
from qprof.measure.records import Measurement


def per_signature(path: str, suite: str) -> dict[int, float]:
    """Signature index -> median of ln(value / permutations) less the run's median."""
    values: dict[int, list[float]] = defaultdict(list)
    for m in read_run(path).records:
        if (not isinstance(m, Measurement) or m.suite != suite or m.operation != "verify"
                or not m.samples_ns or not m.pool_size or m.pool_permutations is None):
            continue
        start = m.pool_start or 0
        for j, v in enumerate(m.samples_ns):
            s = (start + j) % m.pool_size
            values[s].append(math.log(v / m.pool_permutations[s]))
    if not values:
        return {}
    level = statistics.median(x for xs in values.values() for x in xs)
    return {s: statistics.median(xs) - level for s, xs in values.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--suites", default="SLH-DSA-SHAKE-128s,SLH-DSA-SHAKE-256s")
    args = ap.parse_args()
    for suite in args.suites.split(","):
        runs = [per_signature(p, suite) for p in args.runs]
        runs = [r for r in runs if r]
        halves: list[dict[int, list[float]]] = [defaultdict(list), defaultdict(list)]
        for i, r in enumerate(runs):
            for s, x in r.items():
                halves[i % 2][s].append(x)
        common = sorted(set(halves[0]) & set(halves[1]))
        a = np.array([statistics.median(halves[0][s]) for s in common])
        b = np.array([statistics.median(halves[1][s]) for s in common])
        cov = float(np.cov(a, b)[0, 1])
        sd = math.sqrt(cov) if cov > 0 else 0.0
        print(f"{suite}: {len(runs)} runs, {len(common)} signatures; residual sd "
              f"{1e4 * sd:.0f} bp (covariance of the halves), halves' sd "
              f"{1e4 * a.std(ddof=1):.0f} / {1e4 * b.std(ddof=1):.0f} bp, correlation "
              f"{float(np.corrcoef(a, b)[0, 1]):+.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
