"""`qprof trend RUN.jsonl... | --state-dir DIR | --prometheus URL`: the verdict over time.

The runs of each series (JSONL files, the stores, or a fleet's Prometheus) go through
:func:`qprof.consensus.trend.analysis.analyze`, as the daemon and the monitor do, in
Verify Units of ``--profile`` (else the runs' own, else qanum). Exit 0: analysed (a
change found is no error); 2: error, one line naming what. Sources: docs/TREND.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qprof.commands.options import Number
from qprof.commands.reading import ReadingRuns
from qprof.consensus import Profile, ProfileError, load_profile
from qprof.consensus.judgement import judge
from qprof.consensus.judgement_codec import judgement_json
from qprof.consensus.profiles import available_profiles, find_profile
from qprof.consensus.trend.analysis import analyze, group
from qprof.consensus.trend.fleet import fleet_changes
from qprof.consensus.trend.from_jsonl import RunFileError
from qprof.consensus.trend.model import FleetChange, RunPoint, SeriesKey, SeriesTrend
from qprof.consensus.trend.report import (
    alarm_text,
    change_text,
    fleet_dict,
    fleet_text,
    segment_text,
    trend_dict,
    waiting_text,
    when,
)
from qprof.measure.units import NO_PROFILE_UNIT
from qprof.service.cores import recorded_cores
from qprof.service.fleet import FleetError
from qprof.service.fleet_trend import fleet_points
from qprof.service.run_files import read_run_files
from qprof.service.store_file import StoreError
from qprof.service.store_paths import read_store, user_stores
from qprof.service.trend_source import MAX_COMPUTED, store_points

DEFAULT_PROFILE = "qanum"
WIDTH = 100  # the text output fits this many columns
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
MAX_WINDOW_S = 400 * 86400.0


def duration(text: str) -> float:
    """argparse type of ``--since``/``--step``: seconds, or a number with s, m, h, d, w."""
    m = DURATION.match(text)
    value = float(m.group(1)) * UNITS[m.group(2)] if m else -1.0
    if not 0 < value <= MAX_WINDOW_S:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a duration such as 90s, 30m, 12h, 7d or 2w (at most 400d)")
    return value


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("Exit status: 0 analysed (a change found is no error); 2 error: a file "
                     "that gives no run, a store or server that cannot be read, a bad "
                     "profile (one line naming it).")
    parser.add_argument("runs", nargs="*", metavar="RUN.jsonl",
                        help="recorded runs (check -o, bench -o, export; .xz/.gz too), "
                        "ordered by their start")
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="the daemon's and the monitor's stores in DIR: every run they "
                        "recorded (without RUN.jsonl or --prometheus: those of the default "
                        "state dir, as for qprof history)")
    parser.add_argument("--prometheus", metavar="URL",
                        help="a fleet: the qprof metrics a Prometheus server "
                        "(http://host:9090) holds, each node's cycles a series")
    parser.add_argument("--since", type=duration, default=duration("7d"),
                        metavar="DURATION",
                        help="with --prometheus: how far back (default 7d)")
    parser.add_argument("--step", type=duration, default=None, metavar="DURATION",
                        help="with --prometheus: the query's resolution, under the "
                        "daemons' cycle interval (default: the window / 10000, at least "
                        "1s)")
    parser.add_argument("--profile", default=None,
                        help="chain profile, name or path: its unit's Verify Units "
                        "(default: the runs' own, else qanum)")
    parser.add_argument("--jobs", type=Number(int, at_least=1, at_most=256), default=None,
                        metavar="N", help="RUN.jsonl files read at once (default: the CPUs "
                        "this process may use)")
    parser.add_argument("--json", action="store_true",
                        help="per series and suite: segments and changes (VU as in check "
                        "--json), and the fleet's changes")


class TrendInputError(ValueError):
    """What to analyse cannot be read; the message names it (a file, a store, a URL)."""


@dataclass
class Input:
    """Run points from one source, and what the source says about them."""

    source: dict[str, Any]  # kind and where, for --json
    points: list[tuple[SeriesKey, RunPoint]]
    profiles: list[str] = field(default_factory=list)  # recorded ones, most used first
    problems: list[str] = field(default_factory=list)  # said on stderr, kept in --json


def _fail(args: argparse.Namespace, text: str) -> int:
    if args.json:
        print(json.dumps({"error": text}))
    print(f"qprof trend: {text}", file=sys.stderr)
    return 2


# -- sources ----------------------------------------------------------------------------

def _from_files(paths: Sequence[str], unit_suite: str | None, jobs: int | None) -> Input:
    """Each file's points, read side by side with their progress on stderr. The first file
    that gives none ends it, named."""

    try:
        with ReadingRuns("trend") as progress:
            files = read_run_files(paths, unit_suite, jobs=jobs, on_read=progress)
    except RunFileError as exc:
        raise TrendInputError(str(exc)) from None
    profiles = [p for p, _n in Counter(f.profile for f in files if f.profile).most_common()]
    return Input(source={"kind": "jsonl", "files": [f.path for f in files]},
                 points=[pt for f in files for pt in f.points], profiles=profiles,
                 problems=[x for f in files for x in f.problems])


def _from_store(state_dir: Path | None, unit_suite: str | None) -> Input:
    """The points of every store of the user's in ``state_dir`` (the daemon's and the
    monitor's: qprof.service.store_paths), the daemon's first."""

    stores = user_stores(state_dir)
    found = stores.existing()
    if not found:
        raise TrendInputError(stores.none_yet())
    inp = Input(source={"kind": "store", "paths": [str(loc.path) for loc in found],
                        "runs_stored": 0, "runs_computed": 0, "runs_left_out": 0},
                points=[])
    for loc in found:
        try:
            got, note = read_store(loc.path, lambda s: (store_points(s, unit_suite), s.note))
        except StoreError as exc:
            raise TrendInputError(str(exc)) from None
        inp.points += got.points
        inp.profiles += [p for p in got.profiles if p not in inp.profiles]
        inp.problems += [note] if note else []
        if got.left_out:
            inp.problems.append(f"{loc.path}: {got.left_out} older runs without stored "
                                f"points left out (the newest {MAX_COMPUTED} computed from "
                                "their records)")
        for name, n in (("runs_stored", got.stored), ("runs_computed", got.computed),
                        ("runs_left_out", got.left_out)):
            inp.source[name] += n
    return inp


def _from_prometheus(url: str, since_s: float, step_s: float | None,
                     unit_suite: str | None) -> Input:
    try:
        got = fleet_points(url, since_s, step_s, unit_suite or NO_PROFILE_UNIT.suite)
    except FleetError as exc:
        raise TrendInputError(str(exc)) from None
    return Input(source={"kind": "prometheus", "url": url, "since_s": since_s,
                         "step_s": got.step_s, "nodes": got.nodes},
                 points=got.points, profiles=got.profiles, problems=got.problems)


# -- the profile ------------------------------------------------------------------------

def _recorded(name: str) -> str | None:
    """A recorded profile as found here: its path, else its name among the profiles here
    (a run records another installation's path), else None."""

    try:
        find_profile(name)
        return name
    except ProfileError:
        stem = Path(name).stem
        return stem if stem in available_profiles() else None


def _recorded_profile(recorded: list[str]) -> Profile:
    """The profile the runs were measured against (the most used one found here), else
    qanum."""

    return load_profile(next((n for r in recorded if (n := _recorded(r))), DEFAULT_PROFILE))


# -- output -----------------------------------------------------------------------------

def _wrap(text: str, indent: int, hang: int = 4) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=" " * indent,
                         subsequent_indent=" " * (indent + hang), break_on_hyphens=False)


def _series_head(t: SeriesTrend) -> str:
    k = t.key
    model = f" ({k.cpu_model})" if k.cpu_model else ""
    span = (f", {when(t.runs[0].started_at)} to {when(t.runs[-1].started_at)}"
            if len(t.runs) > 1 else f", {when(t.runs[0].started_at)}" if t.runs else "")
    return (f"{k.node}  cpu {k.cpu}{model}  {k.backend}  {k.mode}: {len(t.runs)} "
            f"run{'s' if len(t.runs) != 1 else ''}{span}")


def _suite_lines(t: SeriesTrend, unit_vu: int) -> list[str]:
    out: list[str] = []
    width = max((len(s.suite) for s in t.suites), default=0)
    for s in t.suites:
        seg = s.current
        now = segment_text(seg, unit_vu) if seg is not None else "no decided run"
        out += _wrap(f"{s.suite:<{width}}  {now}", 2, width + 2)
        if len(s.segments) > 1 and seg is not None:
            out += _wrap(f"current segment since run {seg.first_run + 1}, "
                         f"{len(s.segments)} segments", width + 4)
        for c in s.changes:
            out += _wrap("change: " + change_text(c, unit_vu), width + 4, 8)
        if (waiting := waiting_text(s)) is not None:
            out += _wrap(waiting, width + 4)
        if s.gaps:
            out += _wrap(f"{s.gaps} undecided run{'s' if s.gaps != 1 else ''} (gaps: "
                         "too contended for a quiet ratio, never combined)", width + 4)
        if s.alarm is not None:
            out += _wrap("alarm: " + alarm_text(s.alarm), width + 4, 7)
    return out


def _text(inp: Input, profile: Profile, trends: list[SeriesTrend],
          fleet: list[FleetChange]) -> str:
    runs = len({p.run_id for _k, p in inp.points})
    out = _wrap(f"{runs} run{'s' if runs != 1 else ''}, {len(trends)} series; profile "
                f"{profile.name} ({profile.unit_suite} = {profile.unit_vu} VU): estimates "
                "in VU with their 95 % interval", 0)
    for t in trends:
        out += ["", *_wrap(_series_head(t), 0)]
        for k in t.known:
            out += _wrap(f"known change at run {k.run_index + 1}: {'; '.join(k.what)}", 2)
        out += _suite_lines(t, profile.unit_vu)
    nodes = sorted({t.key.node for t in trends})
    if len(nodes) > 1:
        out += ["", f"fleet ({len(nodes)} nodes):"]
        if not fleet:
            out.append("  no change on any node")
        for f in fleet:
            out += _wrap(fleet_text(f), 2)
    return "\n".join(out)


def _json(inp: Input, profile: Profile, trends: list[SeriesTrend],
          fleet: list[FleetChange]) -> dict[str, Any]:
    unit_vu = profile.unit_vu
    return {"source": inp.source, "profile": profile.name, "unit_suite": profile.unit_suite,
            "unit_vu": unit_vu, "runs": len({p.run_id for _k, p in inp.points}),
            "series": [trend_dict(t, unit_vu) for t in trends],
            "fleet": [fleet_dict(f, unit_vu) for f in fleet],
            "problems": inp.problems}


# -- the command ------------------------------------------------------------------------

def _input(args: argparse.Namespace, unit_suite: str | None) -> Input:
    """Every source given, together (files, stores and a Prometheus server); none given:
    the default state dir's stores. A run seen in two sources counts once."""
    inputs = []
    if args.runs:
        inputs.append(_from_files(args.runs, unit_suite, args.jobs))
    if args.prometheus:
        inputs.append(_from_prometheus(args.prometheus, args.since, args.step, unit_suite))
    if args.state_dir is not None or not inputs:
        inputs.append(_from_store(args.state_dir, unit_suite))
    if len(inputs) == 1:
        return inputs[0]
    kinds = [i.source for i in inputs]
    return Input(source={"kind": "combined", "sources": kinds},
                 points=[p for i in inputs for p in i.points],
                 profiles=list(dict.fromkeys(p for i in inputs for p in i.profiles)),
                 problems=[x for i in inputs for x in i.problems])


def _store_judgement(args: argparse.Namespace, profile: Profile, inp: Input
                     ) -> dict[str, Any] | None:
    """Where a store is a source: the judgement of its newest run with every point
    given behind it, as check, history and the monitor show it."""
    if args.prometheus or (args.runs and args.state_dir is None):
        return None

    found = user_stores(args.state_dir).existing()
    if not found:
        return None
    try:
        measurements, cores = read_store(found[0].path, lambda s: (
            ms := s.newest_run_measurements("verify"), recorded_cores(s, ms)))
    except StoreError:
        return None
    return judgement_json(judge(measurements, profile, inp.points, cores=cores),
                          profile.unit_vu)


def run(args: argparse.Namespace) -> int:
    try:
        given = load_profile(args.profile) if args.profile else None
        inp = _input(args, given.unit_suite if given else None)
        profile = given or _recorded_profile(inp.profiles)
    except (TrendInputError, ProfileError) as exc:
        return _fail(args, str(exc))
    if not inp.points:
        return _fail(args, f"{_where(inp)}: no runs with estimates to analyse")
    units = {p.unit_suite for _k, p in inp.points}
    if units != {profile.unit_suite}:
        return _fail(args, f"the runs' estimates are ratios to {', '.join(sorted(units))}; "
                     f"the profile {profile.name}'s unit is {profile.unit_suite}")
    for problem in inp.problems[:5]:
        print(f"qprof trend: {problem}", file=sys.stderr)
    if len(inp.problems) > 5:
        print(f"qprof trend: {len(inp.problems) - 5} more problems (--json lists them)",
              file=sys.stderr)
    trends = analyze(group(inp.points))
    fleet = fleet_changes(trends)
    if args.json:
        doc = _json(inp, profile, trends, fleet)
        judged = _store_judgement(args, profile, inp)
        if judged is not None:
            doc["judgement"] = judged
        print(json.dumps(doc, indent=2))
    else:
        print(_text(inp, profile, trends, fleet))
    return 0


def _where(inp: Input) -> str:
    src = inp.source
    if src.get("kind") == "combined":
        return "; ".join(_where(Input(source=x, points=[])) for x in src["sources"])
    return str(src.get("url") or ", ".join(src.get("paths") or src.get("files") or []))
