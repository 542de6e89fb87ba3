"""What a pool signature costs beyond what it is known to cost, shared by the runs (or the
rounds) that verified one pool.

    .venv/bin/python bench/pool_residual.py RUN.jsonl... [--suites S,S] [--halves rounds]

Each value is the time of one pool signature; divided by its Keccak-f permutations (a
counted suite, SLH-DSA: records without the counts are left out;
qprof.consensus.estimate.poolmix bounds the rest by RESIDUAL_SD; ML-DSA: a signature's
whole time) and by its half's median of that (the level, contention included) it is the
signature's cost relative to the pool's. Per signature, the median over one half and over
the other: their covariance across the pool's signatures is the variance of what repeats
in both halves (their noise is independent, so it drops out); their correlation says how
much of a signature's spread repeats.

Halves: the odd and even runs (default; what a series of runs shares), or the odd and even
rounds within each run (``--halves rounds``; a round is a worker process), averaged over
the runs.
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections import defaultdict

import numpy as np

from qprof.measure.jsonl import read_run
from qprof.measure.poolcost import counted

Values = dict[int, list[float]]  # signature index -> ln(value / its known cost)


def _values(path: str, suite: str) -> dict[int, Values]:
    """Round -> its values per pool signature."""
    out: dict[int, Values] = defaultdict(lambda: defaultdict(list))
    held = counted(suite)
    for m in read_run(path).measurements:
        if (m.suite != suite or m.operation != "verify" or not m.samples_ns
                or not m.pool_size or (held and m.pool_permutations is None)):
            continue
        start = m.pool_start or 0
        for j, v in enumerate(m.samples_ns):
            s = (start + j) % m.pool_size
            known = m.pool_permutations[s] if m.pool_permutations else 1.0
            out[m.round][s].append(math.log(v / known))
    return out


def _relative(values: Values) -> dict[int, float]:
    """Signature -> median of its values less the median of them all."""
    if not values:
        return {}
    level = statistics.median(x for xs in values.values() for x in xs)
    return {s: statistics.median(xs) - level for s, xs in values.items()}


def _merge(parts: list[Values]) -> Values:
    out: Values = defaultdict(list)
    for p in parts:
        for s, xs in p.items():
            out[s].extend(xs)
    return out


def _repeat(a_rel: dict[int, float], b_rel: dict[int, float]) -> tuple[float, float, int]:
    """(covariance, correlation, signatures) of two halves' relative costs."""
    common = sorted(set(a_rel) & set(b_rel))
    if len(common) < 3:
        return math.nan, math.nan, len(common)
    a = np.array([a_rel[s] for s in common])
    b = np.array([b_rel[s] for s in common])
    return float(np.cov(a, b)[0, 1]), float(np.corrcoef(a, b)[0, 1]), len(common)


def _bp(cov: float) -> str:
    return f"{1e4 * math.copysign(math.sqrt(abs(cov)), cov):+.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--suites", default="ML-DSA-44,ML-DSA-87,SLH-DSA-SHAKE-128s,"
                                        "SLH-DSA-SHAKE-256s")
    ap.add_argument("--halves", choices=("runs", "rounds"), default="runs")
    args = ap.parse_args()
    for suite in args.suites.split(","):
        runs = [r for r in (_values(p, suite) for p in args.runs) if r]
        if not runs:
            continue
        if args.halves == "runs":
            rel = [_relative(_merge(list(r.values()))) for r in runs]
            halves = [rel[0::2], rel[1::2]]
            med = [{s: statistics.median(h[s] for h in half if s in h)
                    for s in set().union(*half)} for half in halves]
            cov, corr, n = _repeat(*med)
            print(f"{suite}: {len(runs)} runs, {n} signatures; odd against even runs: "
                  f"repeating sd {_bp(cov)} bp per signature (covariance), correlation "
                  f"{corr:+.2f}; the pool's mean shares {_bp(cov / max(n, 1))} bp")
        else:
            covs, corrs = [], []
            for r in runs:
                rounds = sorted(r)
                if len(rounds) < 4:
                    continue
                a = _relative(_merge([r[k] for k in rounds[0::2]]))
                b = _relative(_merge([r[k] for k in rounds[1::2]]))
                cov, corr, n = _repeat(a, b)
                if not math.isnan(cov):
                    covs.append(cov)
                    corrs.append(corr)
            if covs:
                cov = statistics.mean(covs)
                print(f"{suite}: {len(covs)} runs; odd against even rounds within a run: "
                      f"repeating sd {_bp(cov)} bp per signature (mean covariance), "
                      f"correlation median {statistics.median(corrs):+.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
