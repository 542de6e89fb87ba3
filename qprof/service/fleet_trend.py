"""A fleet's runs from its Prometheus: the source of `qprof trend --prometheus URL`.

A run is a step at which a node's ``qprof_vu_ratio{scope="run"}`` series changed (the
server sends back only those steps); all suites of one node's CPU and backend changing at
one step are one run, with its verify times, libraries and cap read at the same steps.
Every read is a subquery through :func:`qprof.service.fleet.query`, within one deadline.
Runs left undecided have no figure in the metrics and are not seen (docs/TREND.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from qprof.consensus.trend.model import RunContext, RunPoint, SeriesKey, SuiteRun
from qprof.measure.records import is_unix_time
from qprof.measure.units import NO_PROFILE_UNIT
from qprof.service.fleet import DEADLINE_S as FLEET_DEADLINE_S
from qprof.service.fleet import MAX_LABEL, FleetError, query
from qprof.untrusted import one_line

RATIO = "qprof_vu_ratio"
# The unit's VU of a daemon without a profile (service.metrics_trend's).
RUN_SCOPE = '{scope="run"}'
# All the queries of one `qprof trend --prometheus`, connect to last byte (each is also
# held to fleet.query's own deadline and size cap).
DEADLINE_S = 120.0
# Steps of the window at most (Prometheus's own limit for a range query).
MAX_STEPS = 11_000

Labels = dict[str, str]


@dataclass(frozen=True)
class FleetPoints:
    points: list[tuple[SeriesKey, RunPoint]]
    nodes: list[str]
    step_s: float
    profiles: list[str] = field(default_factory=list)  # the daemons' profiles
    problems: list[str] = field(default_factory=list)


def default_step(since_s: float) -> float:
    """The query's resolution: fine enough for hourly cycles over a week (60 s)."""
    return max(1.0, math.ceil(since_s / 10_000))


def _changed(expr: str, step_ms: int) -> str:
    """``expr`` only at the steps where its value is new (changed, or not there one step
    before)."""
    return f"({expr} unless ({expr} == {expr} offset {step_ms}ms))"


def _series(rows: Iterable[object]) -> Iterable[tuple[Labels, dict[float, float]]]:
    """(labels, {step time: value}) of a matrix result; rows and samples of another
    shape, values that are not finite numbers and times that are no unix time
    (``records.is_unix_time``: 1e15 is in the year 31690708) are left out."""
    for r in rows:
        if not isinstance(r, dict):
            continue
        metric = r.get("metric")
        values = r.get("values")
        if not isinstance(metric, dict) or not isinstance(values, list):
            continue
        out: dict[float, float] = {}
        for v in values:
            try:
                t, x = float(v[0]), float(v[1])
            except (TypeError, ValueError, IndexError, KeyError):
                continue
            if math.isfinite(t) and math.isfinite(x) and is_unix_time(t):
                out[t] = x
        yield {one_line(k, MAX_LABEL): one_line(val, MAX_LABEL)
               for k, val in metric.items()}, out


def _cpu(labels: Labels) -> int | None:
    try:
        cpu = int(labels.get("cpu", ""))
    except ValueError:
        return None
    return cpu if 0 <= cpu < 65536 else None


SuiteKey = tuple[str, int, str, str]  # instance, cpu, backend, suite


def _by_suite(rows: list[dict[str, Any]]) -> dict[SuiteKey, dict[float, float]]:
    out: dict[SuiteKey, dict[float, float]] = {}
    for labels, values in _series(rows):
        cpu = _cpu(labels)
        if cpu is None or not labels.get("suite") or not labels.get("backend"):
            continue
        key = (labels.get("instance", "?"), cpu, labels["backend"], labels["suite"])
        out.setdefault(key, {}).update(values)
    return out


def _builds(rows: list[dict[str, Any]]) -> dict[str, dict[float, Labels]]:
    out: dict[str, dict[float, Labels]] = {}
    for labels, values in _series(rows):
        for t in values:
            out.setdefault(labels.get("instance", "?"), {})[t] = labels
    return out


def _caps(rows: list[dict[str, Any]]) -> dict[tuple[str, int], dict[float, float]]:
    out: dict[tuple[str, int], dict[float, float]] = {}
    for labels, values in _series(rows):
        cpu = _cpu(labels)
        if cpu is not None:
            out.setdefault((labels.get("instance", "?"), cpu), {}).update(values)
    return out


def _labels(rows: list[dict[str, Any]], name: str) -> list[str]:
    """The values of label ``name`` in an instant query's result."""
    out: set[str] = set()
    for r in rows:
        metric = r.get("metric") if isinstance(r, dict) else None
        if isinstance(metric, dict) and isinstance(metric.get(name), str) and metric[name]:
            out.add(one_line(metric[name], MAX_LABEL))
    return sorted(out)


def _unit_vu(rows: list[dict[str, Any]], unit_suite: str) -> dict[str, float]:
    """Each node's Verify Units of the unit suite (its profile's constant): the ratio
    metrics are the ratio times it."""
    out: dict[str, float] = {}
    for r in rows:
        metric = r.get("metric") if isinstance(r, dict) else None
        if not isinstance(metric, dict) or metric.get("suite") != unit_suite:
            continue
        try:
            vu = float(r["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        if math.isfinite(vu) and vu > 0:
            out[one_line(metric.get("instance", "?"), MAX_LABEL)] = vu
    return out


def _none_if_unknown(value: str | None) -> str | None:
    return None if not value or value == "none" else value


@dataclass(frozen=True)
class _History:
    """What the server holds at the steps where a run's ratios changed."""

    ratios: dict[SuiteKey, dict[float, float]]  # ratio x unit VU
    low: dict[SuiteKey, dict[float, float]]
    high: dict[SuiteKey, dict[float, float]]
    times: dict[SuiteKey, dict[float, float]]  # verify seconds
    builds: dict[str, dict[float, Labels]]  # qprof_build_info's labels per node
    caps: dict[tuple[str, int], dict[float, float]]
    unit_vu: dict[str, float]  # per node
    profiles: list[str]


def _read(url: str, since_s: float, step: float, unit_suite: str) -> _History:
    """Every query, all within :data:`DEADLINE_S`."""
    step_ms = max(1, round(step * 1000))
    window = f"{round(since_s * 1000)}ms"
    deadline = time.monotonic() + DEADLINE_S

    def within(expr: str) -> list[dict[str, Any]]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise FleetError(f"{one_line(url, MAX_LABEL)}: no whole answer to the "
                             f"queries within {DEADLINE_S:.0f} s")
        return query(url, expr, deadline_s=min(left, FLEET_DEADLINE_S))

    def ask(expr: str) -> list[dict[str, Any]]:
        return within(f"({expr})[{window}:{step_ms}ms]")

    changed = _changed(RATIO + RUN_SCOPE, step_ms)
    same_suite = "and on (job, instance, cpu, suite, backend)"
    constants = within(f"last_over_time(qprof_vu_constant[{window}])")
    return _History(
        ratios=_by_suite(ask(changed)),
        low=_by_suite(ask(f"{RATIO}_ci_low{RUN_SCOPE} {same_suite} {changed}")),
        high=_by_suite(ask(f"{RATIO}_ci_high{RUN_SCOPE} {same_suite} {changed}")),
        times=_by_suite(ask(f"qprof_verify_seconds and on (job, instance, cpu, backend) "
                            f"{changed}")),
        builds=_builds(ask(f"qprof_build_info and on (job, instance) {changed}")),
        caps=_caps(ask(f"qprof_cpu_capped and on (job, instance, cpu) {changed}")),
        unit_vu=_unit_vu(constants, unit_suite), profiles=_labels(constants, "profile"))


RunKey = tuple[str, int, str]  # instance, cpu, backend


def _suite_runs(h: _History, unit_suite: str) -> tuple[dict[RunKey, dict[float, list[SuiteRun]]],
                                                       int]:
    """Each node's CPU and backend: its suites' estimates by the step they changed at;
    and how many came without their interval."""
    runs: dict[RunKey, dict[float, list[SuiteRun]]] = {}
    without_ci = 0
    for (instance, cpu, backend, suite), values in sorted(h.ratios.items()):
        if suite == unit_suite:
            continue
        key = (instance, cpu, backend, suite)
        vu = h.unit_vu.get(instance, float(NO_PROFILE_UNIT.vu))
        seen: tuple[float, float | None, float | None] | None = None
        for t, ratio in sorted(values.items()):
            lo, hi = h.low.get(key, {}).get(t), h.high.get(key, {}).get(t)
            if (ratio, lo, hi) == seen:
                continue  # the same run again after a gap in the scrapes
            seen = (ratio, lo, hi)
            secs = h.times.get(key, {}).get(t)
            ci = (lo / vu, hi / vu) if lo is not None and hi is not None else None
            without_ci += ci is None
            runs.setdefault((instance, cpu, backend), {}).setdefault(t, []).append(SuiteRun(
                suite=suite, ratio=ratio / vu, ratio_ci=ci,
                undecided=None if ci is not None else "no interval exported",
                time_ns=secs * 1e9 if secs else None))
    return runs, without_ci


def fleet_points(url: str, since_s: float, step_s: float | None = None,
                 unit_suite: str = NO_PROFILE_UNIT.suite) -> FleetPoints:
    """Every node's runs in the window ``since_s`` before the server's now."""
    step = step_s or default_step(since_s)
    if since_s / step > MAX_STEPS:
        raise FleetError(f"{one_line(url, MAX_LABEL)}: {since_s:.0f} s in steps of {step:g} "
                         f"s is more than {MAX_STEPS} points a series: a longer --step or a "
                         "shorter --since")
    h = _read(url, since_s, step, unit_suite)
    runs, without_ci = _suite_runs(h, unit_suite)
    points: list[tuple[SeriesKey, RunPoint]] = []
    for (instance, cpu, backend), by_step in sorted(runs.items()):
        key = SeriesKey(node=instance, cpu=cpu, cpu_model=None, backend=backend,
                        operation="verify", mode="check")
        unit_times = h.times.get((instance, cpu, backend, unit_suite), {})
        for t, suites in sorted(by_step.items()):
            build = h.builds.get(instance, {}).get(t, {})
            capped = h.caps.get((instance, cpu), {}).get(t)
            ctx = RunContext(liboqs=_none_if_unknown(build.get("liboqs")),
                             numba=_none_if_unknown(build.get("numba")),
                             qprof=_none_if_unknown(build.get("version")),
                             capped=None if capped is None else capped > 0)
            unit_s = unit_times.get(t)
            points.append((key, RunPoint(
                run_id=f"{instance} cpu {cpu} {backend} @{t:.3f}", started_at=t,
                suites=tuple(suites), context=ctx, unit_suite=unit_suite,
                unit_time_ns=unit_s * 1e9 if unit_s else None)))
    problems = [f"{one_line(url, MAX_LABEL)}: {without_ci} suite estimates without their "
                f"interval ({RATIO}_ci_low/_ci_high): counted as gaps"] if without_ci else []
    return FleetPoints(points=points, nodes=sorted({k.node for k, _p in points}), step_s=step,
                       profiles=h.profiles, problems=problems)
