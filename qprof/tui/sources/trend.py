"""The monitor's trend: per CPU and suite, each of the store's runs' estimates, the change
points and the current segment's estimate beside the newest run's
(the store's judgement, :mod:`qprof.service.judged`: the series check, history and the
daemon judge on).

Computed in a child process, and only after the newest figures are on screen: the
estimator is seconds of CPU for a run read back from its records, and statsmodels, scipy
and ruptures are slow to import. The child sends the consensus's series trends in their
own codec (:mod:`qprof.consensus.trend.codec`); the views are made from them here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from qprof.consensus.trend.codec import series_trend_from_dict, series_trend_to_dict
from qprof.consensus.trend.model import SeriesTrend, SuiteTrend
from qprof.consensus.trend.report import alarm_text, change_text
from qprof.consensus.trend.verdict import ratio_vu, segment_vu
from qprof.service.judged import store_judgement
from qprof.service.store import Store
from qprof.tui.model import TrendView
from qprof.tui.sources.child import run_child
from qprof.tui.sources.consensus import ProfileInfo

# Runs without stored points (the monitor's own measurements, a daemon's runs from before
# the points table) are read back from their records through the estimator, ~3 s of CPU
# each: the newest ones only.
FROM_RECORDS = 48


@dataclass(frozen=True)
class TrendResult:
    views: tuple[TrendView, ...] = ()
    error: str | None = None


def suite_view(t: SeriesTrend, s: SuiteTrend, unit_vu: int) -> TrendView:
    runs = [r.suite(s.suite) for r in t.runs]
    estimates = tuple(unit_vu * x.ratio if x is not None and x.decided and x.ratio
                      else None for x in runs)
    newest = runs[-1] if runs else None
    newest_vu, newest_ci = (ratio_vu(newest.ratio, newest.ratio_ci, unit_vu)
                            if newest is not None and newest.decided and newest.ratio
                            and newest.ratio_ci else (None, None))
    seg = s.current
    seg_vu, seg_ci = segment_vu(seg, unit_vu) if seg is not None else (None, None)
    return TrendView(
        cpu=t.key.cpu, suite=s.suite, backend=t.key.backend, estimates=estimates,
        changes=tuple(c.run_index for c in s.changes),
        change_bp=tuple(c.change_bp for c in s.changes), segment_vu=seg_vu, segment_ci=seg_ci,
        segment_runs=seg.runs if seg is not None else 0,
        segment_gaps=seg.gaps if seg is not None else 0,
        newest_vu=newest_vu, newest_ci=newest_ci,
        change_lines=tuple(change_text(c, unit_vu) for c in s.changes),
        alarm=alarm_text(s.alarm) if s.alarm is not None else None)


def trend_views(trends: Sequence[SeriesTrend], info: ProfileInfo) -> tuple[TrendView, ...]:
    """One view per CPU and suite of the profile (the unit suite has none: its ratio is
    1 by definition), in the profile's order."""
    if info.profile is None:
        return ()
    out = []
    for t in trends:
        for suite in info.suites:
            s = t.suite(suite)
            if s is not None and suite != info.unit_suite:
                out.append(suite_view(t, s, info.profile.unit_vu))
    return tuple(out)


class TrendState:
    """The trend on screen, the one being computed (one child at a time) and the one
    wanted next (the newest evaluation's key: store marker, backend, profile)."""

    def __init__(self) -> None:
        self.views: tuple[TrendView, ...] = ()
        self.error: str | None = None
        self.shown: tuple | None = None
        self.running: tuple | None = None
        self.wanted: tuple | None = None

    def want(self, key: tuple) -> tuple | None:
        """The newest figures for ``key`` are shown: the key to compute now, if any.
        Another backend or profile clears the views at once (never another's trend)."""
        self.wanted = key
        if self.shown is not None and self.shown[1:] != key[1:]:
            self.views, self.error, self.shown = (), None, None
        if self.running is not None or key == self.shown:
            return None
        self.running = key
        return key

    def done(self, key: tuple, result: TrendResult) -> tuple | None:
        """A child finished: keep its result when it is of the wanted backend and
        profile; the key to compute next when the wanted one moved on meanwhile."""
        self.running = None
        if self.wanted is not None and key[1:] == self.wanted[1:]:
            self.views, self.error, self.shown = result.views, result.error, key
        if self.wanted is None or self.wanted == key:
            return None
        return self.want(self.wanted)


def _judged_series(path: Path, info: ProfileInfo, backend: str | None,
                   from_records: int) -> list[SeriesTrend]:
    """The series of the store's judgement (the ones check, history and the daemon judge
    on), read through its own connection."""

    store = Store(path, readonly=True)
    try:
        judgement = store_judgement(store, info.profile, max_computed=from_records).judgement
    finally:
        store.close()
    return list(judgement.series(backend))


def evaluate_trend(path: Path, info: ProfileInfo, backend: str | None,
                   from_records: int = FROM_RECORDS) -> TrendResult:
    """The trend of the store file at ``path``: its stored run points, and those of its
    newest ``from_records`` runs without them from their records; failures become
    ``error``."""
    if info.profile is None:
        return TrendResult()
    try:
        return TrendResult(trend_views(_judged_series(path, info, backend, from_records),
                                       info))
    except Exception as exc:  # noqa: BLE001 - a broken store or record: show, keep the UI
        return TrendResult(error=f"trend of {path}: {type(exc).__name__}: {exc}")


def series_to_json(path: Path, info: ProfileInfo, backend: str | None,
                   from_records: int = FROM_RECORDS) -> str:
    """What the child sends: the consensus's own series trends (its codec), or the error
    line; the views are built on the UI's side."""

    if info.profile is None:
        return json.dumps({"series": []})
    try:
        trends = _judged_series(path, info, backend, from_records)
    except Exception as exc:  # noqa: BLE001 - a broken store or record: show, keep the UI
        return json.dumps({"error": f"trend of {path}: {type(exc).__name__}: {exc}"})
    return json.dumps({"series": [series_trend_to_dict(t) for t in trends]})


def result_from_json(text: str, info: ProfileInfo) -> TrendResult:
    """The child's answer as the views on screen (a wrong shape: ValueError)."""

    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not an object")
    if data.get("error") is not None:
        return TrendResult(error=str(data["error"]))
    series = data.get("series")
    if not isinstance(series, list):
        raise ValueError("series: not a list")
    return TrendResult(trend_views([series_trend_from_dict(t) for t in series], info))


def evaluate_trend_in_child(path: Path, info: ProfileInfo, backend: str | None,
                            stop: threading.Event | None = None,
                            timeout_s: float = 900.0) -> TrendResult:
    """:func:`evaluate_trend` in a child process (blocking: from a worker; ``stop`` kills
    the child and raises ChildStopped)."""

    cmd = [sys.executable, "-m", "qprof.tui.sources.trend", str(path), info.location,
           backend or ""]
    try:
        rc, out, err = run_child(cmd, stop, timeout_s)
        if rc != 0:
            tail = (err.strip().splitlines() or [f"exit code {rc}"])[-1]
            return TrendResult(error=f"trend of {path}: {tail}")
        return result_from_json(out, info)
    except (OSError, subprocess.SubprocessError, ValueError, TypeError, KeyError) as exc:
        return TrendResult(error=f"trend of {path}: {type(exc).__name__}: {exc}")


if __name__ == "__main__":  # the child of evaluate_trend_in_child: PATH PROFILE BACKEND
    import os

    from qprof.tui.sources.consensus import load_profile_info

    os.nice(10)  # background work: the UI and the user's own jobs come first
    _path, _profile, _backend = sys.argv[1:4]
    _info = load_profile_info(_profile)
    if _info.error:
        sys.exit(f"profile: {_info.error}")
    print(series_to_json(Path(_path), _info, _backend or None))
