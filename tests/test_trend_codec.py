"""A series' trend as the monitor's child sends it (qprof.consensus.trend.codec): the
committed real series of tests/data/trend (52 check runs, a liboqs build change at run 41)
analysed, encoded to JSON and read back unchanged; untrusted data that breaks the shape
(an index beyond the runs, a non-finite figure, an interval out of order) is refused with
a ValueError naming the field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from qprof.consensus.trend.analysis import analyze_series
from qprof.consensus.trend.codec import (
    key_from_dict,
    point_from_dict,
    series_trend_from_dict,
    series_trend_to_dict,
)
from qprof.consensus.trend.model import Series, SeriesTrend

DATA = Path(__file__).parent / "data" / "trend"


@pytest.fixture(scope="module")
def trend() -> SeriesTrend:
    d = json.loads((DATA / "points.json").read_text())
    series = Series(key_from_dict(d["key"]), tuple(point_from_dict(p) for p in d["points"]))
    return analyze_series(series)


def _wire(t: SeriesTrend) -> Any:
    return json.loads(json.dumps(series_trend_to_dict(t)))


def test_a_real_series_trend_round_trips(trend: SeriesTrend) -> None:
    assert len(trend.runs) == 52 and trend.known  # the build change
    assert any(s.changes for s in trend.suites) and all(s.segments for s in trend.suites)
    assert series_trend_from_dict(_wire(trend)) == trend


@pytest.mark.parametrize(("where", "value", "named"), [
    (("suites", 0, "segments", 0, "last_run"), 52, "last_run"),
    (("suites", 0, "segments", 0, "ratio"), float("nan"), "ratio"),
    (("suites", 0, "segments", 0, "ratio_ci"), [2.0, 1.0], "ratio_ci"),
    (("suites", 0, "changes", 0, "run_index"), -1, "run_index"),
    (("suites", 0, "changes", 0, "cause"), "guessed", "cause"),
    (("suites", 0, "gaps"), "3", "gaps"),
    (("known", 0, "run_index"), True, "known.run_index"),
    (("runs",), {"not": "a list"}, "runs"),
    (("key",), None, "series key"),
])
def test_bad_data_is_refused_naming_the_field(trend: SeriesTrend, where: tuple[Any, ...],
                                              value: object, named: str) -> None:
    doc = copy.deepcopy(_wire(trend))
    doc = {**doc, "suites": [s for s in doc["suites"] if s["changes"]]}  # one with a change
    at = doc
    for step in where[:-1]:
        at = at[step]
    at[where[-1]] = value
    with pytest.raises(ValueError, match=named):
        series_trend_from_dict(doc)
    with pytest.raises(ValueError):
        series_trend_from_dict([doc])
