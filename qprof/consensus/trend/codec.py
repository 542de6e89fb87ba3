"""Run points as plain JSON data and back: what the daemon's store keeps per run (so a run
stays judgeable after retention strips its samples) and what `qprof trend --json` reads
back; and a series' trend, which the monitor's child sends its UI. The readers take
untrusted data: a wrong shape is a ValueError naming the field."""

from __future__ import annotations

import math
from dataclasses import asdict, fields
from typing import Any

from qprof.consensus.trend.model import (
    Alarm,
    Change,
    KnownChange,
    ReadStep,
    RunContext,
    RunPoint,
    SegmentEstimate,
    SeriesKey,
    SeriesTrend,
    SuiteRun,
    SuiteTrend,
)
from qprof.measure.records import MAX_UNIX_TIME, is_unix_time
from qprof.measure.units import NO_PROFILE_UNIT


def point_to_dict(point: RunPoint) -> dict[str, Any]:
    return asdict(point)


def key_to_dict(key: SeriesKey) -> dict[str, Any]:
    return asdict(key)


def _num(value: object, name: str, positive: bool = False) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name}: not a number")
    x = float(value)
    if not math.isfinite(x) or (positive and x <= 0):
        raise ValueError(f"{name}: {x!r} out of range")
    return x


def _int(value: object, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 1 << 31:
        raise ValueError(f"{name}: not a count")
    return value


def _text(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name}: not a string")
    return value[:200]


def _suite(d: object) -> SuiteRun:
    if not isinstance(d, dict):
        raise ValueError("suites[]: not an object")
    suite = _text(d.get("suite"), "suite")
    if not suite:
        raise ValueError("suite: missing")
    ci = d.get("ratio_ci")
    if ci is not None:
        if not isinstance(ci, list | tuple) or len(ci) != 2:
            raise ValueError(f"{suite}.ratio_ci: not a pair")
        lo, hi = (_num(x, f"{suite}.ratio_ci", positive=True) for x in ci)
        assert lo is not None and hi is not None
        ci = (lo, hi)
    return SuiteRun(suite=suite, ratio=_num(d.get("ratio"), f"{suite}.ratio", positive=True),
                    ratio_ci=ci, undecided=_text(d.get("undecided"), f"{suite}.undecided"),
                    time_ns=_num(d.get("time_ns"), f"{suite}.time_ns", positive=True),
                    pool_se=_num(d.get("pool_se"), f"{suite}.pool_se"),
                    pool_signatures=_int(d.get("pool_signatures"), f"{suite}.pool_signatures"))


def _context(d: object) -> RunContext:
    if not isinstance(d, dict):
        return RunContext()
    values: dict[str, Any] = {}
    for f in fields(RunContext):
        v = d.get(f.name)
        if f.name == "capped":
            values[f.name] = v if isinstance(v, bool) else None
        elif f.type in ("float | None",):
            values[f.name] = _num(v, f"context.{f.name}")
        else:
            values[f.name] = _text(v, f"context.{f.name}")
    return RunContext(**values)


def point_from_dict(d: object) -> RunPoint:
    if not isinstance(d, dict):
        raise ValueError("run point: not an object")
    run_id = _text(d.get("run_id"), "run_id")
    started = _num(d.get("started_at"), "started_at")
    suites = d.get("suites")
    if not run_id or started is None or not isinstance(suites, list | tuple):
        raise ValueError("run point: run_id, started_at and suites are needed")
    if not is_unix_time(started):
        raise ValueError(f"run point: started_at must be a unix time (0 to "
                         f"{MAX_UNIX_TIME:g} s), got {started!r}")
    return RunPoint(run_id=run_id, started_at=started,
                    suites=tuple(_suite(s) for s in suites[:64]),
                    context=_context(d.get("context")),
                    unit_suite=_text(d.get("unit_suite"), "unit_suite") or NO_PROFILE_UNIT.suite,
                    unit_time_ns=_num(d.get("unit_time_ns"), "unit_time_ns", positive=True))


def key_from_dict(d: object) -> SeriesKey:
    if not isinstance(d, dict):
        raise ValueError("series key: not an object")
    cpu = d.get("cpu")
    if isinstance(cpu, bool) or not isinstance(cpu, int) or not 0 <= cpu < 65536:
        raise ValueError("series key: cpu out of range")
    return SeriesKey(node=_text(d.get("node"), "node") or "?", cpu=cpu,
                     cpu_model=_text(d.get("cpu_model"), "cpu_model"),
                     backend=_text(d.get("backend"), "backend") or "?",
                     operation=_text(d.get("operation"), "operation") or "verify",
                     mode=_text(d.get("mode"), "mode") or "?")


# -- a series' trend (the analysis's answer), as the monitor's child sends it -----------

MAX_RUNS = 100_000  # runs of one series a reader takes
MAX_ITEMS = 4096  # segments, changes or known change points of one suite or series


def series_trend_to_dict(trend: SeriesTrend) -> dict[str, Any]:
    return asdict(trend)


def _obj(d: object, name: str) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise ValueError(f"{name}: not an object")
    return d


def _list(value: object, name: str, most: int) -> list[Any]:
    if not isinstance(value, list | tuple) or len(value) > most:
        raise ValueError(f"{name}: not a list of at most {most}")
    return list(value)


def _count(value: object, name: str, below: int = 1 << 31) -> int:
    """A whole number from 0 to ``below`` - 1 (an index into the runs, a count)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < below:
        raise ValueError(f"{name}: not a count below {below}")
    return value


def _need(value: float | None, name: str) -> float:
    if value is None:
        raise ValueError(f"{name}: missing")
    return value


def _pair(value: object, name: str, positive: bool = False) -> tuple[float, float]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise ValueError(f"{name}: not a pair")
    lo, hi = (_need(_num(x, name, positive), name) for x in value)
    if lo > hi:
        raise ValueError(f"{name}: its low end above its high end")
    return lo, hi


def _segment(d: object, runs: int) -> SegmentEstimate:
    d = _obj(d, "segment")
    name = _text(d.get("suite"), "segment.suite") or "?"
    first, last = (_count(d.get(k), f"{name}.{k}", runs) for k in ("first_run", "last_run"))
    ratio = _need(_num(d.get("ratio"), f"{name}.ratio", positive=True), f"{name}.ratio")
    ci = _pair(d.get("ratio_ci"), f"{name}.ratio_ci", positive=True)
    if first > last or not ci[0] <= ratio <= ci[1]:
        raise ValueError(f"{name}: a segment's runs or interval out of order")
    wander = _num(d.get("wander_bp"), f"{name}.wander_bp")
    pool = d.get("pool_signatures")
    return SegmentEstimate(
        suite=name, first_run=first, last_run=last,
        runs=_count(d.get("runs"), f"{name}.runs", runs + 1),
        gaps=_count(d.get("gaps"), f"{name}.gaps", runs + 1), ratio=ratio, ratio_ci=ci,
        **{k: _need(_num(d.get(k), f"{name}.{k}"), f"{name}.{k}")
           for k in ("within_bp", "between_bp", "autocorr", "df", "pool_bp")},
        pool_signatures=None if pool is None else _int(pool, f"{name}.pool_signatures"),
        clipped=_count(d.get("clipped"), f"{name}.clipped", runs + 1),
        wander_bp=wander, wander_from=_count(d.get("wander_from"), f"{name}.wander_from",
                                             runs + 1))


def _change(d: object, runs: int) -> Change:
    d = _obj(d, "change")
    name = _text(d.get("suite"), "change.suite") or "?"
    started = _need(_num(d.get("started_at"), f"{name}.started_at"), f"{name}.started_at")
    cause = d.get("cause")
    if cause not in ("known", "detected") or not is_unix_time(started):
        raise ValueError(f"{name}: a change's cause or start out of range")
    return Change(
        suite=name, run_index=_count(d.get("run_index"), f"{name}.run_index", runs),
        run_id=_text(d.get("run_id"), f"{name}.run_id") or "?", started_at=started,
        before=_need(_num(d.get("before"), f"{name}.before", True), f"{name}.before"),
        after=_need(_num(d.get("after"), f"{name}.after", True), f"{name}.after"),
        change_bp=_need(_num(d.get("change_bp"), f"{name}.change_bp"), f"{name}.change_bp"),
        ci_95_bp=_pair(d.get("ci_95_bp"), f"{name}.ci_95_bp"), cause=cause,
        what_changed=_texts(d.get("what_changed"), f"{name}.what_changed"),
        found_on=_read_step(d.get("found_on"), name))


def _read_step(d: object, name: str) -> ReadStep | None:
    if d is None:
        return None
    d = _obj(d, f"{name}.found_on")
    return ReadStep(reading=_text(d.get("reading"), f"{name}.found_on.reading") or "?",
                    change_bp=_need(_num(d.get("change_bp"), f"{name}.found_on.change_bp"),
                                    f"{name}.found_on.change_bp"),
                    ci_95_bp=_pair(d.get("ci_95_bp"), f"{name}.found_on.ci_95_bp"))


def _texts(value: object, name: str) -> tuple[str, ...]:
    return tuple(_text(x, name) or "" for x in _list(value, name, MAX_ITEMS))


def _alarm(d: object, runs: int) -> Alarm | None:
    if d is None:
        return None
    d = _obj(d, "alarm")
    name = _text(d.get("suite"), "alarm.suite") or "?"
    direction = d.get("direction")
    if direction not in ("up", "down"):
        raise ValueError(f"{name}.direction: not up or down")
    return Alarm(suite=name, run_index=_count(d.get("run_index"), f"{name}.run_index", runs),
                 statistic=_need(_num(d.get("statistic"), f"{name}.statistic"), name),
                 threshold=_need(_num(d.get("threshold"), f"{name}.threshold"), name),
                 direction=direction)


def _suite_trend(d: object, runs: int) -> SuiteTrend:
    d = _obj(d, "suite trend")
    name = _text(d.get("suite"), "suite trend.suite")
    if not name:
        raise ValueError("suite trend: suite missing")
    return SuiteTrend(
        suite=name,
        segments=tuple(_segment(x, runs) for x in _list(d.get("segments"), f"{name}.segments",
                                                         MAX_ITEMS)),
        changes=tuple(_change(x, runs) for x in _list(d.get("changes"), f"{name}.changes",
                                                       MAX_ITEMS)),
        gaps=_count(d.get("gaps"), f"{name}.gaps", runs + 1),
        alarm=_alarm(d.get("alarm"), runs),
        runs_needed=_count(d.get("runs_needed"), f"{name}.runs_needed"))


def series_trend_from_dict(d: object) -> SeriesTrend:
    """A series' trend from untrusted data: every index within its runs, every figure
    finite, each interval in order; a wrong shape is a ValueError naming the field."""
    d = _obj(d, "series trend")
    runs = tuple(point_from_dict(p) for p in _list(d.get("runs"), "runs", MAX_RUNS))
    known = []
    for k in _list(d.get("known"), "known", MAX_ITEMS):
        k = _obj(k, "known change")
        known.append(KnownChange(run_index=_count(k.get("run_index"), "known.run_index",
                                                  len(runs)),
                                 what=_texts(k.get("what"), "known.what")))
    return SeriesTrend(key=key_from_dict(d.get("key")), runs=runs,
                       suites=tuple(_suite_trend(s, len(runs))
                                    for s in _list(d.get("suites"), "suites", 64)),
                       known=tuple(known))
