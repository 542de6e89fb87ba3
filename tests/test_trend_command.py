"""`qprof trend` on real recorded runs: the `qprof check` runs committed under
tests/data/runs (and, as a series of its own, every run under tests/data/trend when there),
as JSONL files (.xz, .gz) and as a daemon's store filled through qprof's own Store API.
A host's steady runs are one segment per suite (no change point but at a known one); the
JSON has the issue's shape (segments and changes, VU as in check --json); a file that
gives no run is one line naming it, exit 2. The Prometheus source:
tests/test_trend_prometheus.py.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import lzma
import math
import re
from pathlib import Path
from typing import Any

import pytest

from qprof.cli import main
from qprof.consensus.trend.analysis import analyze, group
from qprof.consensus.trend.from_jsonl import RunFile, read_run_file
from qprof.consensus.trend.report import segment_dict
from qprof.measure.jsonl import read_run
from qprof.service.store import Store
from qprof.service.store_file import DB_NAME

DATA = Path(__file__).parent / "data"
COMMITTED = sorted((DATA / "runs").glob("*.jsonl.xz"))
# A longer real series, when there: the run files of tests/data/trend (its held/ series
# came hours later with the pools held: beside this one it is a change, found as one).
SERIES = sorted(p for p in (DATA / "trend").glob("*")
                if p.name.endswith((".jsonl", ".jsonl.xz", ".jsonl.gz")))
SUITES = ("ML-DSA-87", "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s")
SEGMENT_KEYS = {"first_run", "last_run", "runs", "estimate", "ci_95"}
CHANGE_KEYS = {"run_index", "started_at", "before", "after", "change_bp", "ci_95_bp",
               "what_changed"}


def _trend(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["trend", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def committed() -> list[RunFile]:
    """The committed runs' points (the estimator `qprof check` uses, once per run)."""
    return [read_run_file(p) for p in COMMITTED]


# Each real series on its own: the committed three (a Zen 4 guest) and tests/data/trend's
# (another host; its hostname and CPU model name may be the same, so together they would
# be one series with a step at the host's change).
SERIES_DIRS = [pytest.param(COMMITTED, id="runs"),
               pytest.param(SERIES, id="trend", marks=pytest.mark.skipif(
                   not SERIES, reason="no runs under tests/data/trend yet"))]


@pytest.fixture(scope="module", params=SERIES_DIRS)
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> dict[str, Any]:
    """`qprof trend --json` on every run of a real series, given newest first; one of
    them recompressed as gzip. Returns the document and each run's start."""
    runs: list[Path] = request.param
    last = runs[-1]
    if last.suffix == ".xz":
        gz = tmp_path_factory.mktemp("gz") / last.name.replace(".xz", ".gz")
        gz.write_bytes(gzip.compress(lzma.decompress(last.read_bytes())))
        last = gz
    files = [*runs[:-1], last]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["trend", *map(str, reversed(files)), "--json"])
    assert code == 0
    starts = {}
    for path in files:
        with lzma.open(path) if path.suffix == ".xz" else gzip.open(path) \
                if path.suffix == ".gz" else path.open("rb") as fh:
            meta = json.loads(fh.readline())
        starts[meta["run_id"]] = meta["started_at"]
    return {"doc": json.loads(out.getvalue()), "starts": starts}


def test_steady_real_runs_are_one_segment_per_suite(recorded: dict[str, Any]) -> None:
    data, starts = recorded["doc"], recorded["starts"]
    assert data["profile"] == "qanum" and data["unit_vu"] == 100
    assert data["runs"] == len(starts) == sum(s["runs"] for s in data["series"])
    for s in data["series"]:
        began = [starts[run_id] for run_id in s["run_ids"]]
        assert began == sorted(began), "runs are ordered by their meta's started_at"
        known = {k["run_index"] for k in s["known_changes"]}
        for suite in SUITES:
            got = s["suites"][suite]
            # Steady runs of one host: no change point but at a known one (versions,
            # kernel, microcode), undecided runs (gaps) included.
            assert {c["run_index"] for c in got["changes"]} <= known, got["changes"]
            if not known:
                assert got["changes"] == [] and len(got["segments"]) == 1, got
            assert sum(g["runs"] + g["gaps"] for g in got["segments"]) == s["runs"]
            assert got["gaps"] == sum(g["gaps"] for g in got["segments"])


def test_json_shape(recorded: dict[str, Any]) -> None:
    data = recorded["doc"]
    assert {"source", "profile", "unit_vu", "series", "fleet"} <= set(data)
    assert data["source"]["kind"] == "jsonl" and data["fleet"] == []
    for s in data["series"]:
        assert {"node", "cpu", "cpu_model", "backend", "runs", "suites"} <= set(s)
        for got in s["suites"].values():
            for g in got["segments"]:
                assert set(g) >= SEGMENT_KEYS, g
                lo, hi = g["ci_95"]
                assert isinstance(g["estimate"], int) and lo <= g["estimate"] <= hi
                assert g["estimate"] == math.ceil(100 * g["ratio"] - 1e-9)
            for c in got["changes"]:
                assert set(c) >= CHANGE_KEYS, c


def test_one_run_is_its_check_estimate(committed: list[RunFile]) -> None:
    """A segment of one run is that run's estimate and interval, in VU as `qprof check
    --json` printed them live (NAME.json beside each run)."""
    for path, run in zip(COMMITTED, committed, strict=True):
        [trend] = analyze(group(run.points))
        live = json.loads(path.with_name(path.name.replace(".jsonl.xz", ".json")).read_text())
        for r in live["results"]:
            got = trend.suite(r["suite"])
            if got is None:
                continue  # the unit
            [seg] = got.segments
            d = segment_dict(seg, 100)
            assert (d["estimate"], d["ci_95"]) == (r["vu_estimate"], r["vu_ci_95"]), path


def _store(path: Path, runs: list[Path]) -> Store:
    """A store holding ``runs``, each recorded as a daemon records one."""
    store = Store(path)
    for run_path in runs:
        with lzma.open(run_path, "rt") as fh:
            plain = path.parent / run_path.stem
            plain.write_text(fh.read())
        data = read_run(plain)
        assert data.meta is not None
        for record in data.records:
            store.add(record)
        store.finish_run(data.meta.run_id, "finished")
    return store


def test_store_stored_points_and_runs_without(tmp_path: Path, committed: list[RunFile],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The daemon's store, its runs' points stored (as the daemon writes them when a run
    finishes), and the monitor's beside it with a run without (a store older than the
    points table): the same trend as the runs' files."""
    from qprof.service.store_paths import MONITOR_DB

    store = _store(tmp_path / DB_NAME, COMMITTED[:-1])
    for run in committed[:-1]:
        store.points.add(run.points[0][1].run_id, run.points)
    store.close()
    _store(tmp_path / MONITOR_DB, COMMITTED[-1:]).close()
    code, out, err = _trend(capsys, "--state-dir", str(tmp_path), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["source"]["paths"] == [str(tmp_path / DB_NAME), str(tmp_path / MONITOR_DB)]
    assert data["source"]["runs_stored"] == len(COMMITTED) - 1
    assert data["source"]["runs_computed"] == 1
    [series] = data["series"]
    [want] = analyze(group(pt for run in committed for pt in run.points))
    assert series["run_ids"] == [r.run_id for r in want.runs]
    for suite in SUITES:
        [seg] = series["suites"][suite]["segments"]
        expected = segment_dict(want.suite(suite).current, 100)  # type: ignore[union-attr]
        assert (seg["estimate"], seg["ci_95"], seg["runs"]) == (
            expected["estimate"], expected["ci_95"], expected["runs"])
        assert seg["ratio"] == pytest.approx(expected["ratio"], rel=1e-12)
    # The text, with every point stored now: one line per suite, in 100 columns.
    store = Store(tmp_path / MONITOR_DB)
    store.points.add(committed[-1].points[0][1].run_id, committed[-1].points)
    store.close()
    code, text, err = _trend(capsys, "--state-dir", str(tmp_path))
    assert code == 0, err
    lines = text.splitlines()
    assert all(len(line) <= 100 for line in lines), text
    assert lines[0].startswith(f"{len(COMMITTED)} runs, 1 series; profile qanum"), text
    for suite in SUITES:
        [row] = [x for x in lines if x.strip().startswith(suite + " ")]
        assert f"over {len(COMMITTED)} runs" in row, row
    print(text)


def _one_line(code: int, err: str, name: str) -> None:
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"qprof trend: {name}"), err


def test_bad_files_are_one_line_naming_them(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("not json\n{\"type\": \"nonsense\"}\n")
    meta_only = tmp_path / "meta.jsonl"
    with lzma.open(COMMITTED[0], "rt") as fh:
        meta_only.write_text(fh.readline())
    cut = tmp_path / "cut.jsonl.xz"
    cut.write_bytes(COMMITTED[0].read_bytes()[:5000])
    not_xz = tmp_path / "plain.jsonl.xz"
    not_xz.write_text("{}\n")
    not_gz = tmp_path / "plain.jsonl.gz"
    not_gz.write_text("{}\n")
    directory = tmp_path / "dir.jsonl"
    directory.mkdir()
    two = tmp_path / "two-runs.jsonl"  # a second run appended to the first one's file
    two.write_bytes(lzma.decompress(COMMITTED[0].read_bytes())
                    + lzma.decompress(COMMITTED[1].read_bytes()))
    for bad in (tmp_path / "missing.jsonl", empty, garbage, meta_only, cut, not_xz, not_gz,
                directory, Path("/proc/self/status.xz"), two):
        code, out, err = _trend(capsys, str(bad))
        _one_line(code, err, str(bad))
        assert out == ""
    # --json: the error as JSON on stdout too; a bad file among good ones ends the run.
    code, out, err = _trend(capsys, str(garbage), str(COMMITTED[0]), "--json")
    _one_line(code, err, str(garbage))
    assert json.loads(out)["error"].startswith(str(garbage))


def test_sources_together_and_a_real_profile(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    # Files and stores are read together; a state dir without a store is said.
    code, _out, err = _trend(capsys, str(COMMITTED[0]), "--state-dir", str(tmp_path))
    _one_line(code, err, f"no results yet in {tmp_path}")
    code, _out, err = _trend(capsys, str(COMMITTED[0]), "--profile", "no-such-profile")
    _one_line(code, err, "profile 'no-such-profile' not found")
    code, _out, err = _trend(capsys, "--state-dir", str(tmp_path / "none"))
    _one_line(code, err, f"no results yet in {tmp_path / 'none'}")
    with pytest.raises(SystemExit) as exc:
        main(["trend", "--prometheus", "http://127.0.0.1:9", "--since", "forever"])
    assert exc.value.code == 2


def test_shell_completion_completes_trend(tmp_path: Path) -> None:
    import shutil
    import subprocess

    from test_cli_options import completion

    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not installed")
    script = tmp_path / "qprof.bash"
    script.write_text(completion("bash"))
    (tmp_path / "run-1.jsonl.xz").write_bytes(b"")

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        probe = (f"cd {tmp_path}; source {script}; COMP_WORDS=({line}); "
                 f'COMP_CWORD={len(words) - 1}; COMP_LINE="{line}"; COMP_POINT={len(line)}; '
                 '_shtab_qprof; printf "%s\\n" "${COMPREPLY[@]}"')
        run = subprocess.run([bash, "-c", probe], capture_output=True, text=True,
                             timeout=30, check=True)
        return run.stdout.split()

    assert complete("qprof", "tre") == ["trend"]
    assert set(complete("qprof", "trend", "--s")) == {"--state-dir", "--since", "--step"}
    assert set(complete("qprof", "trend", "--p")) == {"--prometheus", "--profile"}
    assert "run-1.jsonl.xz" in complete("qprof", "trend", "ru")


def _synthetic_points(node: str = "node-a", seed: int = 3, cpu: int = 0
                      ) -> list[tuple[Any, Any]]:
    """Thirty hourly runs of one CPU: run 8 undecided (a gap), liboqs 0.16.0 -> 0.17.0
    at run 15 with the SLH-DSA suites 4 % costlier."""
    import random

    from qprof.consensus.trend.model import RunContext, RunPoint, SeriesKey, SuiteRun

    key = SeriesKey(node=node, cpu=cpu, cpu_model="AMD EPYC 9R45", backend="liboqs")
    rng = random.Random(seed)
    base = {"ML-DSA-87": 2.25, "SLH-DSA-SHAKE-128s": 37.69, "SLH-DSA-SHAKE-256s": 80.13}
    out = []
    for i in range(30):
        suites = []
        for suite, ratio in base.items():
            r = ratio * math.exp(rng.gauss(0, 0.004))
            r *= 1.04 if i >= 15 and suite.startswith("SLH") else 1.0
            suites.append(SuiteRun(suite, None, None, undecided="contended") if i == 8 else
                          SuiteRun(suite, r, (r * 0.994, r * 1.006), time_ns=r * 2e4))
        ctx = RunContext(liboqs="0.16.0" if i < 15 else "0.17.0", kernel="6.8.0")
        out.append((key, RunPoint(run_id=f"{node}-{i:02d}", started_at=1.79e9 + 3600 * i,
                                  suites=tuple(suites), context=ctx, unit_time_ns=2e4)))
    return out


def test_text_shows_gaps_and_known_changes(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    points = _synthetic_points()
    store = Store(tmp_path / DB_NAME)
    for key, point in points:
        store.points.add(point.run_id, [(key, point)])
    store.close()
    code, text, err = _trend(capsys, "--state-dir", str(tmp_path))
    assert code == 0, err
    lines = text.splitlines()
    assert all(len(line) <= 100 for line in lines), text
    # Text counts runs from 1 (the 16th run), --json's run_index from 0 (issue 48).
    assert "known change at run 16: liboqs 0.16.0 -> 0.17.0" in text, text
    flat = " ".join(text.split())  # wrapped lines joined
    for suite in ("SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s"):
        assert re.search(f"change: {suite}: [^:]* at run 16 \\([^)]*, known\\): liboqs "
                         "0.16.0 -> 0.17.0; only SLH-DSA moved", flat), text
    assert text.count("1 undecided run (gaps") == 3, text
    code, out, err = _trend(capsys, "--state-dir", str(tmp_path), "--json")
    data = json.loads(out)
    assert data["series"][0]["suites"]["ML-DSA-87"]["gaps"] == 1
    [change] = data["series"][0]["suites"]["SLH-DSA-SHAKE-256s"]["changes"]
    assert change["run_index"] == 15 and change["cause"] == "known"
    assert change["what_changed"][0] == "liboqs 0.16.0 -> 0.17.0"
    assert change["ci_95_bp"][0] > 0  # a step up, sized (its interval: test_trend_core)
    print(text)


def test_a_pending_alarm_is_said() -> None:
    """The detector's alarm the runs have not confirmed yet, under its suite (the
    detector itself: tests/test_trend_core.py)."""
    from dataclasses import replace

    from qprof.commands.trend import WIDTH, _suite_lines
    from qprof.consensus.trend.model import Alarm

    [trend] = analyze(group(_synthetic_points()))
    alarm = Alarm("ML-DSA-87", 29, 6.8, 6.56, "up")
    trend = replace(trend, suites=tuple(replace(s, alarm=alarm) if s.suite == "ML-DSA-87"
                                        else s for s in trend.suites))
    lines = _suite_lines(trend, 100)
    text = "\n".join(lines)
    assert "alarm: rising at run 30 (CUSUM 6.8 past its limit 6.6)" in text, text
    assert text.count("alarm:") == 1 and all(len(x) <= WIDTH for x in lines), text


def test_too_few_runs_say_how_many_more_and_a_factor_reads_as_one() -> None:
    """Issue 48's words: on too few decided runs "no change found; N more decided runs are
    needed before a change can be found"; a step of a factor reads as that factor."""
    from qprof.commands.trend import _suite_lines
    from qprof.consensus.trend.report import step_words

    [trend] = analyze(group(_synthetic_points()[:4]))
    flat = " ".join(" ".join(_suite_lines(trend, 100)).split())
    assert flat.count("no change found; 4 more decided runs are needed before a change can "
                      "be found") == 3, flat
    [trend] = analyze(group(_synthetic_points()))
    assert "more decided run" not in " ".join(_suite_lines(trend, 100))
    assert step_words(-7440.0) == "÷3.9, -74 %"
    assert step_words(-7440.0, (-7500.0, -7380.0)) == "÷3.9, -74 %, 95 % -75 to -74 %"
    assert step_words(94.4, (70.2, 117.3)) == "+94 bp, 95 % +70 to +117"
    assert step_words(13000.0) == "×2.3, +130 %"


def test_a_rollout_over_two_nodes_is_one_fleet_wide_change_per_suite_it_moved(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """liboqs 0.17.0 on two nodes in the same hour (two CPUs of node-a), SLH-DSA 4 %
    costlier on every CPU: one fleet-wide change per SLH-DSA suite; ML-DSA-87's known
    change point moved nothing and is no fleet's change (nor a node's alone)."""
    store = Store(tmp_path / DB_NAME)
    for node, seed, cpu in (("node-a", 3, 0), ("node-a", 5, 1), ("node-b", 4, 0)):
        for key, point in _synthetic_points(node, seed, cpu):
            store.points.add(point.run_id, [(key, point)])
    store.close()
    code, out, err = _trend(capsys, "--state-dir", str(tmp_path), "--json")
    assert code == 0, err
    data = json.loads(out)
    for s in data["series"]:
        [change] = s["suites"]["ML-DSA-87"]["changes"]
        lo, hi = change["ci_95_bp"]
        assert change["cause"] == "known" and lo <= 0 <= hi, change  # the setup
    assert [(f["suite"], f["nodes"], f["fleet_wide"]) for f in data["fleet"]] == [
        (suite, ["node-a", "node-b"], True)
        for suite in ("SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s")]
    assert [sorted((c["node"], c["cpu"]) for c in f["changes"]) for f in data["fleet"]] == [
        [("node-a", 0), ("node-a", 1), ("node-b", 0)]] * 2
    code, text, err = _trend(capsys, "--state-dir", str(tmp_path))
    assert text.count("fleet-wide change on 2 nodes: SLH-DSA-SHAKE-") == 2, text
    assert " alone: " not in text, text


# -- issue 49, finding 16: every gzip member and xz stream is read ---------------------------

def test_finding_16_compressed_runs_of_several_members_are_read_to_the_end(
        tmp_path: Path) -> None:
    text = lzma.decompress(COMMITTED[0].read_bytes())
    lines = text.splitlines(keepends=True)
    first, rest = b"".join(lines[:len(lines) // 2]), b"".join(lines[len(lines) // 2:])
    plain = tmp_path / "run.jsonl"
    plain.write_bytes(text)
    files = {"members.jsonl.gz": gzip.compress(first) + gzip.compress(rest) + b"\0" * 8,
             "streams.jsonl.xz": lzma.compress(first) + b"\0" * 4 + lzma.compress(rest)}
    whole = read_run_file(plain)
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        got = read_run_file(tmp_path / name)
        assert got.points == whole.points and got.problems == whole.problems, name
    cut = tmp_path / "cut.jsonl.xz"  # the second stream cut short is still a cut-off file
    cut.write_bytes(lzma.compress(first) + lzma.compress(rest)[:-40])
    with pytest.raises(ValueError, match="ends early"):
        read_run_file(cut)
