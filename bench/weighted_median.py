"""The quiet bootstrap's weighted medians: the compiled quickselect against sorting.

    .venv/bin/python bench/weighted_median.py [--cpu N] [--rounds R] [RUN.jsonl[.xz]...]

Pinned to one CPU, alternating the two in each round, and the median of the rounds:
1. rows of a bootstrap chunk (32 x 1000 and 32 x 4000 ratios, exponential weights), the
   kernel (``qprof.consensus.estimate.wmedian``) against numpy's sort, gathers and
   cumulative sum (the rule it replaced), same values asserted;
2. the points of whole runs (``run_points``; default: tests/data/trend/zen4's first four)
   with the kernel and with the numpy rule patched in, the points asserted identical.
Prints each one's time and the ratio numpy / kernel.
"""

from __future__ import annotations

import argparse
import lzma
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from qprof.consensus.estimate import quiet, wmedian
from qprof.consensus.trend.codec import point_to_dict
from qprof.consensus.trend.from_records import run_points
from qprof.measure.jsonl import read_run
from qprof.measure.records import Record

REPO = Path(__file__).resolve().parents[1]
PER = 50  # chunks a timing of the rows


def by_sorting(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The code the kernel replaced (quiet.py at 5ca3a04): one row of values for all
    sorted once, else each row sorted; the weights gathered in that order and summed."""
    if values.ndim == 1:
        order = np.argsort(values, kind="stable")
        cum = np.cumsum(weights[:, order], axis=1)
        out: np.ndarray = values[order][np.argmax(cum >= cum[:, -1:] / 2, axis=1)]
        return out
    order = np.argsort(values, axis=1)
    zs = np.take_along_axis(values, order, 1)
    cum = np.cumsum(np.take_along_axis(weights, order, 1), axis=1)
    pos = np.argmax(cum >= cum[:, -1:] / 2, axis=1)
    out = zs[np.arange(len(pos)), pos]
    return out


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def rounds_of(pair: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {k: [] for k in pair}
    results: dict[str, object] = {}
    for _ in range(rounds):
        for name, fn in pair.items():
            t, results[name] = timed(fn)
            times[name].append(t)
    a, b = results.values()
    assert repr(a) == repr(b), "the kernel and the numpy rule disagree"
    return {k: statistics.median(v) for k, v in times.items()}


def repeated(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], z: np.ndarray,
             w: np.ndarray) -> np.ndarray:
    for _ in range(PER - 1):
        fn(z, w)
    return fn(z, w)


def records(path: Path) -> list[Record]:
    if path.suffix == ".xz":
        plain = Path(tempfile.mkdtemp()) / path.name.removesuffix(".xz")
        plain.write_bytes(lzma.decompress(path.read_bytes()))
        path = plain
    return read_run(path).records


def points(runs: list[list[Record]]) -> list[object]:
    return [[point_to_dict(p) for _k, p in run_points(r)] for r in runs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="*", type=Path)
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.cpu})
    paths = args.runs or sorted((REPO / "tests/data/trend/zen4").glob("check-*.jsonl.xz"))[:4]
    kernel = wmedian.weighted_medians
    kernel(np.ones(3), np.ones((1, 3)))  # compiled (or loaded from the cache) before timing
    rng = np.random.default_rng(1)
    print(f"cpu {args.cpu}, {args.rounds} rounds, median times")
    for n in (1000, 4000):
        z = 1 + 0.01 * rng.standard_normal((32, n))
        w = rng.exponential(size=(32, n))
        t = rounds_of({"numpy": partial(repeated, by_sorting, z, w),
                       "kernel": partial(repeated, kernel, z, w)}, args.rounds)
        print(f"32 x {n} rows: numpy {t['numpy'] / PER * 1e3:.2f} ms, "
              f"kernel {t['kernel'] / PER * 1e3:.2f} ms: x{t['numpy'] / t['kernel']:.2f}")
    runs = [records(p) for p in paths]

    def with_numpy() -> object:
        vars(quiet)["weighted_medians"] = by_sorting  # what quiet.py calls
        try:
            return points(runs)
        finally:
            vars(quiet)["weighted_medians"] = kernel

    t = rounds_of({"numpy": with_numpy, "kernel": lambda: points(runs)}, args.rounds)
    print(f"run_points of {len(runs)} runs: numpy {t['numpy'] / len(runs):.3f} s a run, "
          f"kernel {t['kernel'] / len(runs):.3f} s: x{t['numpy'] / t['kernel']:.2f} "
          "(points identical)")


if __name__ == "__main__":
    main()
