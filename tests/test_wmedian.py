"""The compiled weighted median gives the value of the numpy rule it replaced (sort each
row, cumulative weight, the first to reach half): ties, zero weights, a row of zero
weight, a NaN, values shared by every row, rows sorted when the pivots are defeated."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from qprof.consensus.estimate.wmedian import weighted_medians


def sorting_rule(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    z = np.broadcast_to(values, weights.shape)
    order = np.argsort(z, axis=1, kind="stable")
    cum = np.cumsum(np.take_along_axis(weights, order, 1), axis=1)
    pos = np.argmax(cum >= cum[:, -1:] / 2, axis=1)
    out: np.ndarray = np.take_along_axis(z, order, 1)[np.arange(len(pos)), pos]
    return out


# Few distinct values (ties) or many; weights with exact zeros; now and then a NaN.
VALUES = st.one_of(st.sampled_from([0.5, 1.0, 1.5, 2.0]),
                   st.floats(-1e6, 1e6, allow_nan=False), st.just(float("nan")))
WEIGHTS = st.one_of(st.just(0.0), st.floats(0.0, 10.0, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 4).flatmap(lambda rows: st.integers(1, 40).flatmap(
    lambda n: st.tuples(hnp.arrays(np.float64, (rows, n), elements=VALUES),
                        hnp.arrays(np.float64, (rows, n), elements=WEIGHTS)))))
def test_the_value_of_the_sorting_rule(rows: tuple[np.ndarray, np.ndarray]) -> None:
    values, weights = rows
    assert np.array_equal(weighted_medians(values, weights), sorting_rule(values, weights),
                          equal_nan=True)
    shared = values[0]
    assert np.array_equal(weighted_medians(shared, weights), sorting_rule(shared, weights),
                          equal_nan=True)
    # Rows whose values defeat the pivots are sorted: the same value.
    assert np.array_equal(weighted_medians(values, weights, most_steps=0),
                          sorting_rule(values, weights), equal_nan=True)


def test_a_bootstrap_chunk() -> None:
    rng = np.random.default_rng(7)
    z = 1 + 0.01 * rng.standard_normal((32, 4000))
    w = rng.exponential(size=(32, 4000))
    w[:, ::5] = 0.0  # operations left out
    assert np.array_equal(weighted_medians(z, w), sorting_rule(z, w))
    assert np.array_equal(weighted_medians(np.sort(z[0]), w), sorting_rule(np.sort(z[0]), w))
