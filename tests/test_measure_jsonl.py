"""JSONL runs: records round-trip; bad lines are reported with file:line and skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from faults import BAD_LINES, measurement_line, meta_record
from gen_run_json import ALL_SUITES, gen_lines

from qprof.measure.jsonl import JsonlSink, read_run
from qprof.measure.records import End, Measurement, Meta, Note


def _meta() -> Meta:
    return Meta(run_id="r", started_at=1.0, qprof_version="0", command=["qprof", "bench"])


def _m(round_: int = 0) -> Measurement:
    return Measurement(run_id="r", cpu=1, suite="ML-DSA-44", backend="liboqs",
                       operation="verify", round=round_, n=3, median_ns=10.0, p95_ns=12.0)


def test_round_trip(tmp_path):
    path = tmp_path / "run.jsonl"
    with JsonlSink(path) as sink:
        for rec in (_meta(), _m(0), Note(run_id="r", level="info", text="x"),
                    End(run_id="r", finished_at=2.0, status="finished", checks=5)):
            sink(rec)
    run = read_run(path)
    assert run.problems == [] and run.bad_lines == 0
    assert run.meta is not None and run.meta.command == ["qprof", "bench"]
    assert len(run.measurements) == 1 and run.measurements[0].median_ns == 10.0
    assert run.end is not None and run.end.checks == 5


def test_bad_lines_are_reported_with_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = [_meta().to_json(), _m(0).to_json()]
    lines = good + [
        '{"type": "measurement", "run_id": "r"',  # truncated
        "not json at all",
        '{"type": "weird"}',
        '{"type": "measurement", "run_id": "r", "cpu": 1, "suite": "S", "backend": "b", '
        '"operation": "verify", "round": 0, "n": 1, "median_ns": -5, "p95_ns": 1}',
        "",
        _m(1).to_json(),
        _m(2).to_json()[:40],  # cut mid-line, no end line
    ]
    path.write_text("\n".join(lines))
    run = read_run(path)
    assert run.bad_lines == 5
    where = [p.split(": ", 1)[0] for p in run.problems]
    assert f"{path}:3" in where and f"{path}:4" in where and f"{path}:5" in where
    assert f"{path}:6" in where and f"{path}:9" in where
    assert any("median_ns" in p for p in run.problems)
    assert any("no end line" in p for p in run.problems)
    assert [m.round for m in run.measurements] == [0, 1]


def test_missing_meta_is_a_problem(tmp_path):
    path = tmp_path / "nometa.jsonl"
    path.write_text(_m(0).to_json() + "\n")
    run = read_run(path)
    assert any("no meta line" in p for p in run.problems)


def test_a_rounds_steal_round_trips_and_hostile_counts_are_bad_lines(tmp_path):
    import dataclasses
    import json

    path = tmp_path / "run.jsonl"
    with JsonlSink(path) as sink:
        sink(_meta())
        sink(dataclasses.replace(_m(0), steal_ticks=2, cpu_ticks=110))
    line = json.loads(path.read_text().splitlines()[1])
    bad = [{**line, "round": 1, "steal_ticks": -1},
           {**line, "round": 2, "steal_ticks": 5, "cpu_ticks": 4},
           {**line, "round": 3, "steal_ticks": "3"}]
    with path.open("a") as fh:
        fh.writelines(json.dumps(d) + "\n" for d in bad)
    run = read_run(path)
    assert [(m.round, m.steal_ticks, m.cpu_ticks) for m in run.measurements] == [(0, 2, 110)]
    assert run.bad_lines == 3
    assert any("steal_ticks must not be negative" in p for p in run.problems)
    assert any("must not exceed cpu_ticks" in p for p in run.problems)


def test_read_run_reports_each_malformed_line_and_keeps_the_good(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    good = measurement_line()
    path.write_text("\n".join([meta_record().to_json(), good, *BAD_LINES, good]) + "\n")
    run = read_run(path)
    assert run.bad_lines == len(BAD_LINES)
    where = {p.split(": ", 1)[0] for p in run.problems}
    for i in range(len(BAD_LINES)):
        assert f"{path}:{i + 3}" in where
    assert len(run.measurements) == 2
    assert all(len(p) < 400 for p in run.problems)


# -- done when #4: JSONL numbers -------------------------------------------------------------

@pytest.mark.parametrize("field,value", [
    ("samples_ns", [0.0, 0.0, 0.0]), ("cap_factor", 1e300), ("cpu", 10 ** 9),
    ("finished_at", 6e14), ("pool_size", 0), ("min_ns", -1.0),
])
def test_jsonl_numbers_out_of_range_are_one_problem_naming_the_field(
        tmp_path: Path, field: str, value: object) -> None:
    from qprof.measure.jsonl import read_run

    run = gen_lines(tmp_path / "run.jsonl", ALL_SUITES)
    lines = run.read_text().splitlines()
    row = json.loads(lines[1])
    row[field] = value
    lines[1] = json.dumps(row)
    run.write_text("\n".join(lines) + "\n")
    problems = read_run(run).problems
    assert len(problems) == 1 and f"{run}:2:" in problems[0] and field in problems[0]


def test_freq_record_far_future_is_refused(tmp_path: Path) -> None:
    from qprof.measure.records import RecordError, record_from_dict

    with pytest.raises(RecordError, match="taken_at"):
        record_from_dict({"type": "freq", "run_id": "r", "taken_at": 6e14, "cpu": 0,
                          "cur_khz": None, "max_khz": None, "hw_max_khz": None,
                          "capped": None})
