"""The weighted median of each row of a bootstrap's weights: its inner step, compiled.

Each replicate of the quiet bootstrap weighs every operation anew and, through its own
curve, moves every operation's ratio, so each row needs its own weighted median. Sorting
every row costs O(n log n) plus two gathers and a cumulative sum; a three-way quickselect
that carries the weights finds the same value in O(n). The value is the sorting rule's:
the smallest one whose weight, with all below it, reaches half the row's weight (sums
rounded in another order; a row with a NaN is sorted, NaN last, as numpy sorts).
Compiled at first use, cached where qprof's numba kernels are (``verify.nb_cache``). Measured:
bench/weighted_median.py, docs/ESTIMATOR.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qprof.verify.nb_cache import configure_numba

_kernel: Any = None


def _medians(values: Any, weights: Any) -> Any:  # pragma: no cover - compiled by numba
    """Per row of ``weights``: the weighted median of that row of ``values`` (or of its
    one row for all)."""
    reps, n = weights.shape
    out = np.empty(reps)
    idx = np.empty(n, np.int64)
    for r in range(reps):
        vals, wts = values[min(r, values.shape[0] - 1)], weights[r]
        total, nan = 0.0, False
        for k in range(n):
            nan = nan or vals[k] != vals[k]
            total += wts[k]
            idx[k] = k
        if nan:  # numpy's order (NaN last) and sums
            order = np.argsort(vals)
            total = 0.0
            for k in range(n):
                total += wts[order[k]]
            cum, out[r] = 0.0, vals[order[0]]
            for k in range(n):
                cum += wts[order[k]]
                if cum >= total / 2:
                    out[r] = vals[order[k]]
                    break
            continue
        half = total / 2
        lo, hi, below = 0, n - 1, 0.0  # idx[lo..hi] undecided; `below`: the weight under
        while lo < hi:
            a, b, c = vals[idx[lo]], vals[idx[(lo + hi) // 2]], vals[idx[hi]]
            pivot = max(min(a, b), min(max(a, b), c))  # the middle one
            lt, i, gt = lo, lo, hi  # [lo, lt) < pivot, [lt, i) == pivot, (gt, hi] > pivot
            while i <= gt:
                v = vals[idx[i]]
                if v < pivot:
                    idx[lt], idx[i] = idx[i], idx[lt]
                    lt += 1
                    i += 1
                elif v > pivot:
                    idx[gt], idx[i] = idx[i], idx[gt]
                    gt -= 1
                else:
                    i += 1
            w_less = 0.0
            for k in range(lo, lt):
                w_less += wts[idx[k]]
            w_equal = 0.0
            for k in range(lt, gt + 1):
                w_equal += wts[idx[k]]
            if lt > lo and below + w_less >= half:
                hi = lt - 1
            elif below + w_less + w_equal >= half or gt + 1 > hi:
                hi = lo = lt  # the answer: the pivot (idx[lt] holds one)
            else:
                below += w_less + w_equal
                lo = gt + 1
        out[r] = vals[idx[lo]]
    return out


def weighted_medians(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per row of ``weights`` (rows x n): the weighted median of ``values``, one row of
    values per row of weights (rows x n) or one row for all (n)."""
    global _kernel
    if _kernel is None:
        from numba import njit  # heavy: imported by the first interval that needs it

        configure_numba()
        _kernel = njit(cache=True, nogil=True)(_medians)
    v = np.ascontiguousarray(np.atleast_2d(values), dtype=np.float64)
    out: np.ndarray = _kernel(v, np.ascontiguousarray(weights, dtype=np.float64))
    return out
