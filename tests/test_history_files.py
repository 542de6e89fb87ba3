"""`qprof history RUN.jsonl... [--state-dir DIR]`: recorded runs shown and judged as a
store's are (the same text and --json shape), through the one judgement; with a state dir,
the stores' kept runs stand behind them. The three real check runs of tests/data/runs
(AMD EPYC guest, liboqs 0.16.0, CPU 1), read from their xz files. Bad files: one line,
exit 2."""

from __future__ import annotations

import argparse
import json
import lzma
from pathlib import Path
from typing import Any

import pytest

from qprof.commands import history, trend
from qprof.measure.jsonl import read_run
from qprof.service.keep import RunKeeper
from qprof.service.store_paths import user_stores

RUNS = sorted((Path(__file__).parent / "data" / "runs").glob("*.jsonl.xz"))
pytestmark = pytest.mark.timeout(300)


def _run(module: Any, argv: list[str], capsys: pytest.CaptureFixture[str]
         ) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    module.add_parser(parser)
    code = module.run(parser.parse_args(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_files_show_their_runs_and_judgement_as_a_store_does(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert len(RUNS) == 3
    code, out, err = _run(history, [*map(str, RUNS), "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["kind"] == "files" and doc["files"] == [str(p) for p in RUNS]
    assert [r["status"] for r in doc["runs"]] == ["finished"] * 3
    starts = [r["started_at"] for r in doc["runs"]]
    assert starts == sorted(starts, reverse=True)  # newest first, as a store lists them
    store_keys = {"runs", "profile", "results", "coverage", "judgement",
                  "latest_measurements", "alerts", "adversary", "trend", "trend_text"}
    assert store_keys <= set(doc) and doc["stores"][0]["kind"] == "files"
    suites = {s["suite"]: s for s in doc["judgement"]["suites"]}
    assert set(suites) >= {"ML-DSA-87", "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s"}
    for name in ("ML-DSA-87", "SLH-DSA-SHAKE-256s"):
        s = suites[name]
        assert s["series_runs"] == 3 and s["stands_on"] == "segment"
        assert s["segment"]["runs"] == 3
    # The same series trend --json gives for the same files (one analysis).
    code, out, err = _run(trend, [*map(str, RUNS), "--json"], capsys)
    assert code == 0, err
    assert doc["trend"] == json.loads(out)["series"]
    code, text, err = _run(history, list(map(str, RUNS)), capsys)
    assert code == 0, err
    assert text.startswith("recorded runs: ") and "runs (newest first):" in text
    assert "Verify-Unit coverage (qanum):" in text
    assert "this machine, 3 decided runs (runs 1-3 of 3)" in text
    assert "segment of runs 1-3 of 3:" in text and "recent alerts" not in text


def test_files_and_a_store_together(tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The first run kept in a store (as check keeps it), the other two given as files:
    their judgement stands on all three; the store has its own section beside it."""
    plain = tmp_path / "first.jsonl"
    plain.write_bytes(lzma.decompress(RUNS[0].read_bytes()))
    keeper = RunKeeper(user_stores(tmp_path).for_writing(), "ML-DSA-44")
    for record in read_run(plain).records:
        keeper.add(record)
    keeper.finish()
    assert keeper.error is None
    code, out, err = _run(history, [*map(str, RUNS[1:]), "--state-dir", str(tmp_path),
                                    "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert [d["kind"] for d in doc["stores"]] == ["files", "monitor"]
    assert len(doc["runs"]) == 2 and len(doc["stores"][1]["runs"]) == 1
    suites = {s["suite"]: s for s in doc["judgement"]["suites"]}
    assert suites["SLH-DSA-SHAKE-256s"]["series_runs"] == 3


@pytest.mark.parametrize("content", [None, b"not json\n", b"cut"])
def test_a_bad_file_is_one_line_and_exit_2(tmp_path: Path, content: bytes | None,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / ("run.jsonl.xz" if content == b"cut" else "run.jsonl")
    if content == b"cut":
        path.write_bytes(RUNS[0].read_bytes()[:1000])  # an xz file cut short
    elif content is not None:
        path.write_bytes(content)
    code, out, err = _run(history, [str(path)], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"qprof history: {path}")
    assert "Traceback" not in err
