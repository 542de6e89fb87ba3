"""Issue 30, one store for one user: `qprof history`, `export` and `report` find the
monitor's results (monitor.db in the state dir) as well as the daemon's (qprof.db), by
the one rule in qprof.service.store_paths; `report --html` names the files it wrote.
A real recorded run (tests/data/runs) in real SQLite stores; nothing is mocked.
"""

from __future__ import annotations

import argparse
import json
import lzma
from pathlib import Path
from types import ModuleType

import pytest

from qprof.commands import export as export_cmd
from qprof.commands import history as history_cmd
from qprof.commands import report as report_cmd
from qprof.measure.jsonl import read_run
from qprof.service.store import Store
from qprof.service.store_file import StoreError
from qprof.service.store_paths import MONITOR_DB, locate_run, user_stores

RUNS = Path(__file__).parent / "data" / "runs"


def _args(module: ModuleType, *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    module.add_parser(parser)
    return parser.parse_args(list(argv))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    name = sorted(RUNS.glob("*.jsonl.xz"))[0]
    path = tmp_path_factory.mktemp("runs") / name.name.removesuffix(".xz")
    path.write_bytes(lzma.decompress(name.read_bytes()))
    return path


def _store(path: Path, records: list) -> str:
    store = Store(path)
    for rec in records:
        store.add(rec)
    store.close()
    return records[0].run_id


def test_history_export_and_report_find_the_monitors_store(recorded, tmp_path, capsys):
    state = tmp_path / "state"
    run_id = _store(state / MONITOR_DB, read_run(recorded).records)
    assert [s.kind for s in user_stores(state).existing()] == ["monitor"]

    assert history_cmd.run(_args(history_cmd, "--state-dir", str(state))) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"monitor store: {state / MONITOR_DB}") and run_id in text
    assert "not binding here: 9345 (95 % CI 9229-9490), constant 3600" in text

    assert export_cmd.run(_args(export_cmd, "latest", "--state-dir", str(state))) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["run_id"] == run_id

    page, md = tmp_path / "page.html", tmp_path / "run.md"
    code = report_cmd.run(_args(report_cmd, "--state-dir", str(state), "--html", str(page),
                                "-o", str(md)))
    err = capsys.readouterr().err
    assert code == 0 and page.is_file() and md.is_file()
    assert f"run {run_id} of the monitor store {state / MONITOR_DB}" in err
    assert f"qprof report: wrote {page}" in err and f"qprof report: wrote {md}" in err


def test_history_reads_both_stores_and_says_where_none_is(recorded, tmp_path, capsys):
    state = tmp_path / "state"
    assert history_cmd.run(_args(history_cmd, "--state-dir", str(state))) == 2
    err = capsys.readouterr().err
    assert "neither the daemon's qprof.db" in err and "monitor.db" in err
    records = read_run(recorded).records
    _store(state / MONITOR_DB, records)
    _store(state / "qprof.db", records)
    assert history_cmd.run(_args(history_cmd, "--json", "--state-dir", str(state))) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(s["kind"], Path(s["store"]).name) for s in doc["stores"]] == [
        ("daemon", "qprof.db"), ("monitor", "monitor.db")]
    assert doc["store"] == doc["stores"][0]["store"] and doc["runs"]  # the keys as before
    with pytest.raises(StoreError, match="no run 'nope' in"):
        locate_run(user_stores(state), "nope")


def test_report_html_names_the_page_it_wrote(recorded, tmp_path, capsys):
    page = tmp_path / "page.html"
    assert report_cmd.run(_args(report_cmd, str(recorded), "--html", str(page))) == 0
    out = capsys.readouterr()
    assert page.is_file() and out.out == ""
    assert f"qprof report: wrote {page}" in out.err
