"""The run metadata is typed: Meta's machine, CPU rows and settings and Env's snapshot are
frozen dataclasses, read from and written to the JSON shape earlier versions wrote; no
reader outside ``qprof/measure/records*`` looks their keys up in a dict."""

from __future__ import annotations

import ast
import json
import lzma
from pathlib import Path
from typing import Any

import pytest

from qprof.consensus.profiles import profile_unit
from qprof.measure.records import Env, Meta, RecordError, record_from_dict
from qprof.measure.records_parts import (
    CpuRow,
    CpuTimes,
    EnvSnapshot,
    LoadAvg,
    MachineInfo,
    Part,
    RunSettings,
)
from qprof.measure.units import NO_PROFILE_UNIT, Unit

REPO = Path(__file__).resolve().parents[1]
PARTS = (MachineInfo, CpuRow, RunSettings, EnvSnapshot, CpuTimes, LoadAvg)
PART_KEYS = frozenset(k for cls in PARTS for k in cls._typed().values())
# Modules whose dicts are other JSON (their own documents, worker messages, profile files,
# stored points, Prometheus), with the part key names they share; qprof/hw writes the
# snapshot's dicts. Anything else that looks a part's key up fails.
OTHER_JSON = {
    "qprof/commands/adversary.py": {"model"},  # the adversary pool's summary
    "qprof/commands/history.py": {"cpu", "capped", "cap_factor", "suites",
                                  "cpu_model"},  # its own --json document
    "qprof/commands/topology.py": {"cpu", "clusters", "problems"},  # topology --json
    "qprof/consensus/adversarial.py": {"cpu_model"},  # the adversary cache
    "qprof/consensus/profiles.py": {"part_name", "uarch", "implementer", "part",
                                    "unit_suite"},  # profile TOML
    "qprof/consensus/trend/codec.py": {"suites", "unit_suite", "cpu", "cpu_model",
                                       "mode"},  # stored run points
    "qprof/measure/protocol.py": {"dual", "budget_s", "min_n", "max_n", "cpu", "nice",
                                  "timer", "interleave_block_s", "operations", "tasks"},
    "qprof/measure/sigtime.py": {"cpu", "rounds", "timer", "nice", "backends"},  # workers
    "qprof/service/fleet_trend.py": {"values", "cpu"},  # Prometheus answers
    "qprof/tui/collect.py": {"arch", "model"},  # the hardware source's summary
    "qprof/tui/sources/trend.py": {"cpu"},  # stored run points
    "qprof/verify/vectors.py": {"part"},  # test-vector files
}


def dict_reads(source: str) -> list[tuple[int, str]]:
    """(line, key) of every ``x.get("key"...)`` and ``x["key"]`` on a part's key."""
    found = []
    for node in ast.walk(ast.parse(source)):
        key: Any = None
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get" and node.args
                and isinstance(node.args[0], ast.Constant)):
            key = node.args[0].value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        if isinstance(key, str) and key in PART_KEYS:
            found.append((node.lineno, key))
    return found


def test_no_reader_looks_up_a_record_part_in_a_dict() -> None:
    bad = []
    for path in sorted((REPO / "qprof").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(("qprof/measure/records", "qprof/hw/")):
            continue
        allowed = OTHER_JSON.get(rel, set())
        bad += [f"{rel}:{line}: [{key!r}]" for line, key in dict_reads(path.read_text())
                if key not in allowed]
    assert bad == [], "read the typed parts' attributes instead:\n" + "\n".join(bad)


def test_the_scan_finds_the_old_readers() -> None:
    old = ('t0 = before["cpu_times"][str(cpu)]\n'
           'f = row.get("cap_factor")\n'
           'u = meta.settings.get("unit_suite")\n'
           'labels = ["cpu", "suite"]\n')
    assert sorted(dict_reads(old)) == [(1, "cpu_times"), (2, "cap_factor"), (3, "unit_suite")]


def _committed_lines() -> list[tuple[str, dict[str, Any]]]:
    lines = []
    for path in sorted((REPO / "tests").glob("data/**/*.jsonl*")):
        opener: Any = lzma.open if path.suffix == ".xz" else open
        with opener(path, "rt") as f:
            for n, text in enumerate(f, 1):
                try:
                    d = json.loads(text)
                except ValueError:
                    continue  # the corrupt fixture's bad lines
                if isinstance(d, dict) and d.get("type") in ("meta", "env"):
                    lines.append((f"{path.name}:{n}", d))
    return lines


def test_committed_old_records_read_typed_and_write_the_same_json() -> None:
    lines = _committed_lines()
    assert sum(d["type"] == "meta" for _, d in lines) >= 60
    assert sum(d["type"] == "env" for _, d in lines) >= 100
    for where, d in lines:
        rec = record_from_dict(d)
        out = rec.to_dict()
        for part in ("machine", "cpus", "settings", "snapshot"):
            if part in d:  # the same keys, values and order, to the text
                assert json.dumps(out[part]) == json.dumps(d[part]), (where, part)
        if isinstance(rec, Meta):
            assert isinstance(rec.machine, MachineInfo) and isinstance(rec.settings,
                                                                       RunSettings)
            assert all(isinstance(r, CpuRow) and isinstance(r.cpu, int) for r in rec.cpus)
        else:
            assert isinstance(rec, Env) and isinstance(rec.snapshot, EnvSnapshot)


def test_an_old_run_reads_its_cpu_times_and_settings_as_values() -> None:
    records = [record_from_dict(d) for _, d in _committed_lines()]
    meta = next(r for r in records if isinstance(r, Meta) and r.machine.hostname)
    env = next(r for r in records if isinstance(r, Env))
    assert meta.settings.unit_suite == "ML-DSA-44" and meta.settings.rounds is not None
    assert meta.machine.hostname and meta.cpus[0].model_name
    times = next(iter(env.snapshot.cpu_times.values()))
    assert isinstance(times, CpuTimes) and times.total > 0 and times.steal >= 0
    assert env.snapshot.load is not None and env.snapshot.load.one is not None


def _meta_dict(**parts: Any) -> dict[str, Any]:
    return {"type": "meta", "run_id": "r", "started_at": 1000.0, "qprof_version": "t",
            "command": [], **parts}


@pytest.mark.parametrize(("parts", "named"), [
    ({"cpus": [{"cpu": 0, "cap_factor": "2x"}]}, "cpus[0].cap_factor"),
    ({"cpus": [{"cpu": 0}, 7]}, "cpus[1]"),
    ({"cpus": {"cpu": 0}}, "cpus"),
    ({"machine": {"online_cpus": [0, "one"]}}, "machine.online_cpus"),
    ({"machine": ["host"]}, "machine"),
    ({"settings": {"rounds": 5.5}}, "settings.rounds"),
    ({"settings": {"adaptive": "yes"}}, "settings.adaptive"),
    ({"settings": {"backend_versions": {"liboqs": 16}}}, "settings.backend_versions"),
])
def test_a_bad_nested_meta_shape_is_a_value_error_naming_the_field(
        parts: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=r"^meta record: " + named.replace("[", r"\[")
                       .replace("]", r"\]")):
        record_from_dict(_meta_dict(**parts))


@pytest.mark.parametrize(("snapshot", "named"), [
    ({"cpu_times": {"0": {"steal": "many"}}}, r"snapshot\.cpu_times\[0\]\.steal"),
    ({"cpu_times": {"zero": {"steal": 1}}}, r"snapshot\.cpu_times key 'zero'"),
    ({"cpu_times": {"0": {"user": 1e300}}}, r"snapshot\.cpu_times\[0\]\.user"),
    ({"load": {"1m": "high"}}, r"snapshot\.load\.1m"),
    ("busy", "snapshot"),
])
def test_a_bad_snapshot_is_a_value_error_naming_the_field(snapshot: Any, named: str) -> None:
    d = {"type": "env", "run_id": "r", "when": "before", "taken_at": 1000.0,
         "snapshot": snapshot}
    with pytest.raises(RecordError, match=r"^env record: " + named):
        record_from_dict(d)


def test_keys_a_part_does_not_type_are_kept_as_read() -> None:
    d = _meta_dict(machine={"future_key": {"a": [1]}, "hostname": "n"},
                   cpus=[{"cpu": 3, "smt_siblings": [3, 7], "isa": ["avx512f"]}])
    rec = record_from_dict(d)
    assert isinstance(rec, Meta) and rec.machine.hostname == "n" and rec.cpus[0].cpu == 3
    assert rec.to_dict()["machine"] == d["machine"] and rec.to_dict()["cpus"] == d["cpus"]


def test_a_meta_built_here_reads_back_equal() -> None:
    meta = Meta(run_id="r", started_at=1000.0, qprof_version="t", command=["qprof"],
                machine=MachineInfo(hostname="n", online_cpus=(0, 1)),
                cpus=[CpuRow(cpu=1, capped=True, cap_factor=2.24)],
                settings=RunSettings(mode="check", suites=("ML-DSA-44", "ML-DSA-87"),
                                     backend_versions={"liboqs": "0.16.0"}))
    d = json.loads(meta.to_json())
    assert d["machine"]["online_cpus"] == [0, 1] and d["settings"]["suites"][1] == "ML-DSA-87"
    assert record_from_dict(d) == meta


def test_an_env_built_here_reads_back_with_string_cpu_keys() -> None:
    snap = EnvSnapshot(taken_at=1000.0, load=LoadAvg(one=0.5),
                       cpu_times={1: CpuTimes(user=10, steal=2)})
    env = Env("r", "before", 1000.0, snap)
    d = json.loads(env.to_json())
    assert d["snapshot"]["cpu_times"]["1"]["steal"] == 2 and d["snapshot"]["load"]["1m"] == 0.5
    back = record_from_dict(d)
    assert isinstance(back, Env) and back.snapshot == snap


def test_every_part_is_a_frozen_dataclass() -> None:
    for cls in PARTS:
        assert issubclass(cls, Part)
        assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_the_no_profile_unit_is_one_value() -> None:
    assert Unit("ML-DSA-44", 100) == NO_PROFILE_UNIT
    assert profile_unit(None) is NO_PROFILE_UNIT
    hits = [f"{p.relative_to(REPO)}:{n}" for p in sorted((REPO / "qprof").rglob("*.py"))
            for n, line in enumerate(p.read_text().splitlines(), 1)
            if 'Unit("' in line or ("unit" in line and ("else 100" in line
                                                         or 'else "ML-DSA-44"' in line))]
    assert len(hits) == 1 and hits[0].startswith("qprof/measure/units.py:"), hits


def test_an_adversary_runs_settings_read_back_with_its_own_keys() -> None:
    """`qprof adversary` keeps a Meta whose settings say dual as true/false and carry
    minutes and pool: read typed, written back as they were."""
    d = _meta_dict(settings={"mode": "adversary", "suites": ["SLH-DSA-SHAKE-128f"],
                             "minutes": 0.05, "pool": 8, "rounds": 3, "dual": False})
    rec = record_from_dict(d)
    assert isinstance(rec, Meta) and rec.settings.dual is False and rec.settings.rounds == 3
    assert rec.to_dict()["settings"] == d["settings"]
