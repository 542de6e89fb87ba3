"""qprof topology / freq / snapshot / env through the CLI dispatcher."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from faults import CPU_DIR, SEEDS_HW, qprof

from qprof.cli import main
from qprof.hw import read_topology

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hw"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_topology_table_on_seeds(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "topology", "--root", str(FIXTURES / "seeds-arm"), "--cpus")
    lines = out.splitlines()
    silver = next(line for line in lines if line.startswith("0 ") and "0-5" in line)
    gold = next(line for line in lines if line.startswith("1 ") and "6-7" in line)
    assert "Cortex-A55" in silver and "Kryo 4XX Silver" in silver and "efficiency" in silver
    assert "0.30 - 1.80 GHz" in silver and "schedutil" in silver
    assert "Cortex-A77" in gold and "CAPPED 2.42 -> 1.08 GHz by policy: 2.24x" in gold


def test_topology_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(run(capsys, "topology", "--root", str(FIXTURES / "seeds-arm"), "--json"))
    cpu0 = data["cpus"][0]
    assert {k: cpu0[k] for k in ("cpu", "online", "uarch", "cluster", "max_khz")} == {
        "cpu": 0, "online": True, "uarch": "Cortex-A55", "cluster": 0, "max_khz": 1804800}
    assert cpu0["part_name"] == "Kryo 4XX Silver" and cpu0["vendor"] == "Qualcomm"
    cl = data["clusters"][0]
    assert (cl["id"], cl["cpus"], cl["uarch"], cl["max_khz"]) == (
        0, [0, 1, 2, 3, 4, 5], "Cortex-A55", 1804800)
    assert data["clusters"][1]["cap_factor"] == 2.24
    assert isinstance(data["problems"], list)


def test_freq_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "freq", "--root", str(FIXTURES / "seeds-arm"))
    cpu6 = next(line for line in out.splitlines() if line.startswith("6 "))
    assert "1.08 GHz" in cpu6 and "2.42 GHz" in cpu6 and "2.24x" in cpu6
    data = json.loads(run(capsys, "freq", "--root", str(FIXTURES / "x86-hybrid"), "--json"))
    assert data["cpus"][4]["hw_max_khz"] == 3300000 and data["no_turbo"] is False


def test_freq_watch(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "freq", "--root", str(FIXTURES / "seeds-arm"), "--watch", "0.1",
              "--count", "2")
    assert out.count("--- ") == 2 and "since" in out
    lines = run(capsys, "freq", "--root", str(FIXTURES / "seeds-arm"), "--watch", "0.1",
                "--count", "2", "--json").splitlines()
    assert len(lines) == 2
    states = json.loads(lines[-1])["cap_states"]
    assert states["6"]["capped_now"] is True and states["6"]["samples"] == 2


def test_freq_on_vm_fixture_says_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "freq", "--root", str(FIXTURES / "vm-this-machine"))
    assert "unknown" in out and "no CPU frequency" in out


def test_snapshot_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "snapshot", str(tmp_path / "snap"), "--root", str(FIXTURES / "seeds-arm"))
    assert "copied" in out
    copy, orig = read_topology(tmp_path / "snap"), read_topology(FIXTURES / "seeds-arm")
    assert [(c.cpus, c.uarch, c.max_khz) for c in copy.clusters] == [
        (c.cpus, c.uarch, c.max_khz) for c in orig.clusters]
    assert (tmp_path / "snap" / "qprof-snapshot.json").is_file()


def test_snapshot_of_this_machine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "snapshot", str(tmp_path / "live"))
    live, copy = read_topology("/"), read_topology(tmp_path / "live")
    assert [(c.cpus, c.uarch) for c in copy.clusters] == [(c.cpus, c.uarch) for c in live.clusters]


def test_env_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(run(capsys, "env", "--root", str(FIXTURES / "seeds-arm")))
    assert data["load"]["1m"] == 0.41 and data["cpus"][6]["cap_factor"] == 2.24
    live = json.loads(run(capsys, "env", "--no-estimate"))
    assert live["load"] is not None and live["cpus"]


def test_unknown_part_is_shown_as_such(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "odd"
    info = root / "proc" / "cpuinfo"
    info.parent.mkdir(parents=True)
    info.write_text("".join(
        f"processor\t: {c}\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n"
        "CPU part\t: 0x123\nCPU revision\t: 0\n\n" for c in range(2)))
    out = run(capsys, "topology", "--root", str(root))
    assert "unknown part 0x123 (Arm)" in out and "unknown part 0x123 of Arm" in out
    topo = read_topology(root)
    assert topo.cpus[0].uarch is None and topo.cpus[0].part == "0x123"


def test_env_json_stays_small_on_a_huge_token(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "root"
    shutil.copytree(SEEDS_HW, root)
    (root / CPU_DIR / "online").write_text("0-" + "7" * 3_000_000 + "\n")
    r = qprof("env", "--root", str(root))
    assert "Traceback" not in r.stderr
    assert len(r.stdout) < 200_000
