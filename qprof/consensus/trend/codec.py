"""Run points as plain JSON data and back: what the daemon's store keeps per run (so a run
stays judgeable after retention strips its samples) and what `qprof trend --json` reads
back. ``point_from_dict`` takes untrusted data: a wrong shape is a ValueError naming the
field."""

from __future__ import annotations

import math
from dataclasses import asdict, fields
from typing import Any

from qprof.consensus.trend.model import RunContext, RunPoint, SeriesKey, SuiteRun
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
