"""The weighted median of each row of a bootstrap's weights: its inner step, compiled.

Each replicate of the quiet bootstrap weighs every operation anew and, through its own
curve, moves every operation's ratio, so each row needs its own weighted median. Sorting
every row costs O(n log n) plus two gathers and a cumulative sum; a three-way quickselect
that carries the weights finds the same value in O(n). The value is the sorting rule's:
the smallest one whose weight, with all below it, reaches half the row's weight (sums
rounded in another order). A row with a NaN, or whose values defeat the pivots, is sorted
(NaN last, as numpy sorts); values shared by every row are sorted once. Compiled at first
use, cached with qprof's numba kernels. Measured: bench/weighted_median.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qprof.verify.nb_cache import configure_numba

_kernels: tuple[Any, Any] | None = None


def _sorted_medians(ordered: Any, weights: Any, order: Any
                    ) -> Any:  # pragma: no cover - compiled by numba
    """Per row of ``weights``: the weighted median of values sorted once (``ordered``,
    their ``order``): the first whose cumulative weight reaches half, summed in order."""
    reps, n = weights.shape
    out = np.empty(reps)
    for r in range(reps):
        total = 0.0
        for k in range(n):
            total += weights[r, order[k]]
        cum, out[r] = 0.0, ordered[0]
        for k in range(n):
            cum += weights[r, order[k]]
            if cum >= total / 2:
                out[r] = ordered[k]
                break
    return out


def _medians(values: Any, weights: Any, most_steps: int
             ) -> Any:  # pragma: no cover - compiled by numba
    """Per row: the weighted median of that row of ``values`` with that row of
    ``weights``; NaN for a row with a NaN or still undecided after ``most_steps``
    partitions (the caller sorts it)."""
    reps, n = weights.shape
    out = np.empty(reps)
    idx = np.empty(n, np.int64)
    for r in range(reps):
        vals, wts = values[r], weights[r]
        total, by_sorting = 0.0, False
        for k in range(n):
            by_sorting = by_sorting or vals[k] != vals[k]  # a NaN
            total += wts[k]
            idx[k] = k
        half = total / 2
        lo, hi, below = 0, n - 1, 0.0  # idx[lo..hi] undecided; `below`: the weight under
        steps = 0
        while lo < hi and not by_sorting:
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
            steps += 1
            by_sorting = steps > most_steps  # values laid out against the pivots
        out[r] = np.nan if by_sorting else vals[idx[lo]]  # NaN: the caller sorts the row
    return out


def weighted_medians(values: np.ndarray, weights: np.ndarray, most_steps: int | None = None
                     ) -> np.ndarray:
    """Per row of ``weights`` (rows x n): the weighted median of ``values``, one row of
    values per row of weights (rows x n: a quickselect each) or one row for all (n:
    sorted once, each row's weights summed in that order). ``most_steps``: the partitions
    a row may take before it is sorted (default 4 log2(n) + 16; about 2 log2(n) is
    usual)."""
    global _kernels
    if _kernels is None:
        from numba import njit  # heavy: imported by the first interval that needs it

        configure_numba()
        _kernels = (njit(cache=True, nogil=True)(_medians),
                    njit(cache=True, nogil=True)(_sorted_medians))
    per_row, sorted_once = _kernels

    def by_sorting(vals: np.ndarray, w: np.ndarray) -> np.ndarray:
        order = np.argsort(vals, kind="stable")  # NaN last; O(n log n) whatever the values
        out: np.ndarray = sorted_once(np.ascontiguousarray(vals[order], dtype=np.float64),
                                      w, order)
        return out

    w = np.ascontiguousarray(weights, dtype=np.float64)
    if values.ndim == 1:
        return by_sorting(values, w)
    if most_steps is None:
        most_steps = 4 * int(np.log2(w.shape[1] + 1)) + 16
    v = np.ascontiguousarray(values, dtype=np.float64)
    out: np.ndarray = per_row(v, w, most_steps)
    for r in np.flatnonzero(np.isnan(out)):
        out[r] = by_sorting(v[r], w[r:r + 1])[0]
    return out
