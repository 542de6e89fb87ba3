"""Bad input never raises: missing, empty, truncated, non-numeric and unreadable files,
CPUs vanishing between reads. The field becomes None and the reason is in ``problems``.

Unreadable files are made for real (tests run as root, where chmod 000 does not stop
reads): a directory where a file should be, a FIFO, a dangling symlink.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from faults import CPU_DIR, SEEDS_HW
from hypothesis import given, settings
from hypothesis import strategies as st

from qprof.cli import main
from qprof.hw import CapWatch, read_frequencies, read_topology, take_env_snapshot
from qprof.hw.cpuinfo import parse_cpuinfo
from qprof.hw.sysfs import parse_cpulist, parse_hexmask, parse_int

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hw"
CPU = "sys/devices/system/cpu"


def replace(root: Path, rel: str, how: str, text: str = "") -> Path:
    path = root / rel
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "text":
        path.write_text(text)
    elif how == "dir":
        path.mkdir()
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "dangling":
        path.symlink_to(root / "no-such-file")
    return path


def both(root: Path) -> tuple[dict, dict]:
    topo = read_topology(root)
    freq = read_frequencies(root, topo)
    return topo.to_dict(), freq.to_dict()


def test_missing_hw_max_makes_cap_unknown(seeds: Path) -> None:
    (seeds / CPU / "cpu6/cpufreq/cpuinfo_max_freq").unlink()
    topo, freq = both(seeds)
    cpu6 = freq["cpus"][6]
    assert cpu6["hw_max_khz"] is None and cpu6["capped"] is None and cpu6["cap_factor"] is None
    assert any("cpu6/cpufreq/cpuinfo_max_freq: missing" in p for p in freq["problems"])
    assert topo["clusters"][1]["uarch"] == "Cortex-A77"
    assert freq["cpus"][7]["capped"] is True  # the sibling still says what it knows


@pytest.mark.parametrize(("how", "reason"), [
    ("dir", "is a directory"), ("fifo", "not a regular file"),
    ("dangling", "dangling symlink"), ("text", "empty"),
])
def test_unreadable_scaling_max(seeds: Path, how: str, reason: str) -> None:
    replace(seeds, f"{CPU}/cpu6/cpufreq/scaling_max_freq", how)
    _, freq = both(seeds)
    assert freq["cpus"][6]["max_khz"] is None and freq["cpus"][6]["capped"] is None
    assert any("cpu6/cpufreq/scaling_max_freq" in p and reason in p for p in freq["problems"])
    assert freq["cpus"][7]["capped"] is True  # its sibling's policy files still answer


def test_non_numeric_and_garbage(seeds: Path) -> None:
    replace(seeds, f"{CPU}/cpu6/cpufreq/scaling_max_freq", "text", "fast\n")
    replace(seeds, f"{CPU}/cpu0/cpufreq/related_cpus", "text", "zero one\n")
    replace(seeds, f"{CPU}/online", "text", "\x00\xff garbage")
    topo, freq = both(seeds)
    assert any("not a number ('fast')" in p for p in freq["problems"])
    assert any("related_cpus: not a CPU list" in p for p in topo["problems"])
    assert [c["cpus"] for c in topo["clusters"]] == [[0, 1, 2, 3, 4, 5], [6, 7]]


def test_empty_and_truncated_cpuinfo(seeds: Path) -> None:
    cpuinfo = seeds / "proc/cpuinfo"
    full = cpuinfo.read_text()
    cpuinfo.write_text(full[: full.index("CPU part") + 5])  # cut inside cpu0's block
    topo = read_topology(seeds)
    assert all(c.uarch is None for c in topo.cpus)
    assert any("core design unknown" in p for p in topo.problems)
    cpuinfo.write_text("")
    topo = read_topology(seeds)
    assert len(topo.clusters) == 2  # sysfs still groups the CPUs
    assert any("/proc/cpuinfo: empty" in p for p in topo.problems)
    replace(seeds, "proc/cpuinfo", "dir")
    assert read_topology(seeds).cpus


def test_cpu_vanishes_between_reads(seeds: Path) -> None:
    topo = read_topology(seeds)
    watch = CapWatch(seeds, topology=topo)
    watch.sample(now=1.0)
    shutil.rmtree(seeds / CPU / "cpu7")  # hot-unplugged (and its files gone)
    (seeds / CPU / "online").write_text("0-6\n")
    reading = watch.sample(now=2.0)
    cpu7 = reading.cpu(7)
    assert cpu7 is not None and cpu7.online is False and cpu7.capped is None
    state = watch.summary(7)
    assert state.capped_now is None and state.max_factor == 2.24  # unknown now, not invented
    assert watch.cluster_summary(1).capped_now is True  # cpu6, still online, still capped
    take_env_snapshot(seeds, topology=topo)


def test_cli_json_carries_problems(seeds: Path, capsys: pytest.CaptureFixture[str]) -> None:
    replace(seeds, f"{CPU}/cpu6/cpufreq/scaling_cur_freq", "fifo")
    replace(seeds, f"{CPU}/cpu6/cpufreq/cpuinfo_cur_freq", "dangling")
    assert main(["freq", "--root", str(seeds), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cpus"][6]["cur_khz"] is None
    assert any("cpu6/cpufreq/scaling_cur_freq" in p for p in data["problems"])
    assert main(["topology", "--root", str(seeds), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "problems" in data and data["cpus"][6]["cur_khz"] is None


@pytest.mark.parametrize("command", ["topology", "freq", "env", "snapshot"])
def test_not_linux_root_is_one_line_exit_2(tmp_path: Path, command: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    args = [command, "--root", str(tmp_path)]
    if command == "snapshot":
        args = [command, str(tmp_path / "out"), "--root", str(tmp_path)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a Linux root" in err


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("processor:0123 \t\nCPU partimplementer0x&abc")),
               max_size=400))
def test_cpuinfo_parser_never_raises(text: str) -> None:
    data = parse_cpuinfo(text)
    assert isinstance(data.processors, dict)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_sysfs_parsers_never_raise(text: str) -> None:
    for parse in (parse_cpulist, parse_hexmask, parse_int):
        value, problem = parse(text)
        assert value is None or problem is None


CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "cpuinfo-devices"


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
def test_damaged_real_devices_never_raise(tmp_path: Path) -> None:
    """Every corpus device with every third file deleted and the rest cut in half."""
    for i, path in enumerate(sorted(CORPUS.glob("*.json"))):
        device = json.loads(path.read_text())
        root = tmp_path / str(i)
        for n, (rel, content) in enumerate(sorted(device["files"].items())):
            if n % 3 == 1:
                continue
            target = root / rel.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content[: len(content) // 2])
        topo = read_topology(root)
        reading = read_frequencies(root, topo)
        json.dumps(topo.to_dict())
        json.dumps(reading.to_dict())


def test_many_possible_few_present(tmp_path: Path) -> None:
    root = tmp_path / "vm"
    shutil.copytree(FIXTURES / "vm-this-machine", root)
    (root / CPU / "possible").write_text("0-127\n")
    topo = read_topology(root)
    assert len(topo.cpus) == 128 and [c.cpus for c in topo.clusters] == [[0, 1]]
    assert topo.cpu(100).present is False and topo.cpu(100).cluster is None
    reading = read_frequencies(root, topo)
    assert reading.cpu(100).capped is None


def test_cpulist_bounded() -> None:
    from qprof.hw.sysfs import parse_cpulist

    huge = ",".join(f"{i * 65536}-{i * 65536 + 65535}" for i in range(1500))
    cpus, problem = parse_cpulist(huge, "online")
    assert cpus is None and problem is not None and "65536" in problem
    assert len(problem) < 200
    cpus, problem = parse_cpulist("0-3,99999999", "online")
    assert cpus is None and problem is not None
    assert parse_cpulist("0-3,6", "online") == ({0, 1, 2, 3, 6}, None)


def test_hexmask_linear_and_bounded() -> None:
    from qprof.hw.sysfs import parse_hexmask

    cpus, problem = parse_hexmask("f" * (1 << 20), "core_siblings")  # 4 M bits: too many
    assert cpus is None and problem is not None and len(problem) < 200
    cpus, problem = parse_hexmask("ff," * 2000 + "ff", "core_siblings")  # 16 k bits: linear
    assert problem is None and cpus is not None and len(cpus) == 8 * 2001
    assert parse_hexmask("00000000,000000f0") == ({4, 5, 6, 7}, None)


def test_problem_messages_truncate_the_bad_token() -> None:
    from qprof.hw.sysfs import parse_cpulist, parse_int

    _, problem = parse_cpulist("x" * 20_000_000, "online")
    assert problem is not None and len(problem) < 200
    _, problem = parse_int("9" * 100_000, "scaling_max_freq")
    assert problem is not None and len(problem) < 200


@pytest.mark.parametrize("value", ["-1000", "0", "999999999999"])
def test_bad_frequencies_rejected_with_a_reason(tmp_path: Path, value: str) -> None:
    import shutil

    from qprof.hw import read_frequencies, read_topology

    root = tmp_path / "root"
    shutil.copytree(SEEDS_HW, root)
    (root / CPU_DIR / "cpu6/cpufreq/scaling_max_freq").write_text(value + "\n")
    freq = read_frequencies(root, read_topology(root)).to_dict()
    cpu6 = freq["cpus"][6]
    assert cpu6["max_khz"] is None and cpu6["capped"] is None
    assert any("scaling_max_freq" in p and "kHz" in p for p in freq["problems"])
