"""Hostile inputs and faults, round 2 (issue 22): the CLI, hardware readers and reports.

Each test names its finding. Real files, devices (/dev/full), FIFOs and processes."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from backends import compiled_backend
from test_hostile_inputs import tmpfs

from qprof.measure.jsonl import JsonlSink, read_run
from qprof.measure.records import End, Measurement, Meta, Note
from qprof.measure.records_parts import CpuRow, MachineInfo, RunSettings

QPROF = [sys.executable, "-m", "qprof"]


def qprof(*args: str, timeout: float = 60, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*QPROF, *args], capture_output=True, text=True, timeout=timeout,
                          **kw)  # type: ignore[call-overload]


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text[-2000:]
    assert "Traceback" not in text
    return lines[0]


# -- 3. kill -9 of a worker keeps the tasks it finished ---------------------------------------

def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


@pytest.mark.fresh
@pytest.mark.slow
def test_3_worker_killed_keeps_its_finished_tasks(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGKILL of the worker after its first task (as the OOM killer or `kill -9` would):
    that task's measurement is kept, in the JSONL and the summary; the CPU is aborted with
    the worker's exit code; every task in the pyperf file is among the measurements."""
    import pyperf

    from qprof.measure.config import BenchConfig, ProgressEvent
    from qprof.measure.engine import run_bench

    monkeypatch.setenv("QPROF_CACHE_DIR", str(tmp_path / "cache"))
    killed: list[int] = []

    def progress(ev: ProgressEvent) -> None:
        if ev.message == "done" and not killed:  # on the engine's thread: the worker waits
            for pid in _children(os.getpid()):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    cfg = BenchConfig(cpus=[max(os.sched_getaffinity(0))], suites=["ML-DSA-44", "ML-DSA-87"],
                      backends=[compiled_backend()], mode="default", budget_s=0.5, rounds=3,
                      max_rounds=3, adaptive=False, command=["pytest"], interleave_block_s=0.0,
                      pyperf_dir=tmp_path / "k9.pyperf", record_base=tmp_path)
    out = tmp_path / "k9.jsonl"
    with JsonlSink(out) as sink:
        summary = run_bench(cfg, sink, progress)
    assert killed
    run = read_run(out)
    kept = {(m.suite, m.round) for m in run.measurements}
    assert ("ML-DSA-44", 0) in kept
    assert len(summary.measurements) == len(run.measurements) >= 1
    assert summary.status == "aborted"
    assert "exit code -9" in " ".join(summary.aborted_cpus.values())
    [pyperf_file] = (tmp_path / "k9.pyperf").glob("*.json")
    suite = pyperf.BenchmarkSuite.load(str(pyperf_file))
    in_pyperf = {(r.get_metadata()["qprof_suite"], r.get_metadata()["qprof_round"])
                 for b in suite.get_benchmarks() for r in b.get_runs()}
    assert in_pyperf and in_pyperf <= kept


# -- 6. Markdown injection -------------------------------------------------------------------

EVIL = "<script>alert(1)</script> | x\n## forged <img src=x onerror=alert(2)> [l](javascript:3)"


def _evil_run(path: Path) -> Path:
    suite = "ML-DSA-44|<b>evil</b>"
    meta = Meta(run_id="r1", started_at=1000.0, qprof_version="0.1.0",
                command=["qprof", "bench", EVIL],
                machine=MachineInfo(cpu_model=EVIL, arch="x86_64", kernel=EVIL, hostname=EVIL),
                cpus=[CpuRow(cpu=0, part_name=EVIL, uarch=EVIL, part="`|0x1`", governor=EVIL)],
                settings=RunSettings(mode="default", rounds=1, unit_suite=suite))
    with JsonlSink(path) as sink:
        sink(meta)
        for s in (suite, "ML-DSA-87\n| forged | row |"):
            sink(Measurement(run_id="r1", cpu=0, suite=s, backend="numba<i>", operation="verify",
                             round=0, n=3, median_ns=1e5, p95_ns=1e5,
                             samples_ns=[1e5, 1e5, 1e5]))
        sink(Note(run_id="r1", level="warning", text=EVIL, kind="x"))
        sink(End(run_id="r1", finished_at=1010.0, status="finished", reason=EVIL))
    return path


def _assert_inert(md: str) -> None:
    """No raw HTML, link or forged line; every table row has its header's cell count."""
    text = re.sub(r"(`+).+?(?<!`)\1(?!`)", "CODE", md)  # code spans show HTML as text
    assert re.search(r"(?<!\\)[<>]", text) is None, text
    assert re.search(r"(?<!\\)\[", text) is None, text
    assert "\x1b" not in md
    for line in md.splitlines():
        assert not line.startswith(("## forged", "| forged")), line
    cells = None
    for line in md.splitlines():
        if not line.startswith("|"):
            cells = None
            continue
        n = len(re.findall(r"(?<!\\)\|", line))
        cells = n if cells is None else cells
        assert n == cells, line


def test_6_report_markdown_escapes_every_string(tmp_path: Path) -> None:
    run = _evil_run(tmp_path / "a|b`c.jsonl")
    assert read_run(run).measurements
    out = tmp_path / "F.md"
    r = qprof("report", str(run), "-o", str(out))
    assert r.returncode == 0, r.stderr
    md = out.read_text()
    _assert_inert(md)
    assert r"\<script\>alert(1)\</script\> \| x ## forged" in md  # the text, as text


def test_6_monitor_export_escapes_every_string(tmp_path: Path) -> None:
    from qprof.tui.model import (
        AlertView,
        ClusterHistory,
        CoreView,
        CoverageView,
        Frame,
        MachineView,
    )
    from qprof.tui.report import write_report

    frame = Frame(
        taken_at=1e9,
        machine=MachineView(model=EVIL, designs=EVIL, arch=EVIL, profile=EVIL, backend=EVIL,
                            source=EVIL, measurable=False, problems=(EVIL,)),
        cores=(CoreView(cpu=0, online=True, cluster=0, design=EVIL, part=EVIL, core_class=EVIL,
                        governor=EVIL, cur_khz=None, max_khz=None, hw_max_khz=None,
                        capped=None, cap_factor=None, cap_cause=EVIL,
                        times_ns={EVIL: 1e5}, statistic=EVIL),),
        coverage=(CoverageView(suite=EVIL, where=EVIL, cluster=0, cpu=0, backend=EVIL,
                               time_ns=1e5, vu_estimate=100, vu_constant=100, margin=0,
                               covered=True, note=EVIL, statistic="paired",
                               statistic_why=EVIL, basis="comparison", basis_label=EVIL),),
        history=(ClusterHistory(cluster=0, label=EVIL, samples_khz=(), max_khz=None),),
        alerts=(AlertView(ts=1e9, kind=EVIL, severity="warning", where=EVIL, message=EVIL),),
        coverage_note=EVIL,
    )
    path = write_report(frame, tmp_path, EVIL)
    _assert_inert(path.read_text())


# -- 7, 8. governor names from /sys: first token, no control characters, bounded ------------

FORGED = "performance\nCRITICAL alert disagreement: forged\x1b[2J\x1b[H\r\x9b31m\n"


def _governors(root: Path) -> list[Path]:
    files = sorted((root / "sys/devices/system/cpu").glob("cpu*/cpufreq/scaling_governor"))
    assert files
    return files


def test_7_governor_with_newline_and_escapes_is_one_clean_word(seeds: Path) -> None:
    from qprof.hw.freq import read_frequencies
    from qprof.hw.sysfs import SysRoot

    for f in _governors(seeds):
        f.write_text(FORGED)
    freq = read_frequencies(seeds)
    assert {c.governor for c in freq.cpus} == {"performance"}
    assert SysRoot(seeds).line(
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")[0] == "performance"
    for cmd in (["topology"], ["freq"], ["freq", "--json"], ["env"]):
        r = qprof(*cmd, "--root", str(seeds))
        assert r.returncode == 0, (cmd, r.stderr)
        out = r.stdout + r.stderr
        assert "forged" not in out and "CRITICAL" not in out, cmd
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", out), (cmd, out)
        assert "performance" in out, cmd


def test_8_dev_zero_as_governor_is_not_read_whole(seeds: Path) -> None:
    from qprof.hw.freq import read_frequencies

    gov = _governors(seeds)
    gov[0].unlink()
    gov[0].symlink_to("/dev/zero")
    gov[1].write_text("p" * 100 + "\n")  # a word no kernel writes: over CPUFREQ_NAME_LEN
    freq = read_frequencies(seeds)
    assert freq.cpus[0].governor is None and freq.cpus[1].governor is None
    text = " ".join(freq.problems)
    assert "longer than 65536 bytes" in text and "not a name" in text  # and why
    for cmd in (["env"], ["freq", "--json"], ["topology", "--json"]):
        r = qprof(*cmd, "--root", str(seeds))
        assert r.returncode == 0, (cmd, r.stderr)
        assert len(r.stdout) + len(r.stderr) < 100_000, cmd


# -- 9. the topology of N CPUs is read in time linear in N -----------------------------------

def _many_cpus(root: Path, n: int, own_siblings: bool) -> Path:
    """A root with ``n`` identical x86 CPUs, no cpufreq; ``own_siblings``: each CPU's
    topology names itself alone (per-core domains, merged by the clustering rule)."""
    cpu_dir = root / "sys/devices/system/cpu"
    cpu_dir.mkdir(parents=True)
    (cpu_dir / "online").write_text(f"0-{n - 1}\n")
    (root / "proc").mkdir()
    (root / "proc/cpuinfo").write_text("".join(
        f"processor\t: {i}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 167\n"
        "model name\t: Test\nflags\t\t: fpu avx2\n\n" for i in range(n)))
    for i in range(n):
        (cpu_dir / f"cpu{i}").mkdir()
        if own_siblings:
            (cpu_dir / f"cpu{i}/topology").mkdir()
            (cpu_dir / f"cpu{i}/topology/core_siblings_list").write_text(f"{i}\n")
    return root


@pytest.mark.parametrize("own_siblings", [False, True], ids=["bare", "per-core"])
def test_9_topology_work_grows_linearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       own_siblings: bool) -> None:
    """The clustering rule's reads of CPU details, counted for 2,500 and 20,000 CPUs: 8
    times the CPUs, about 8 times the reads (the sequential scan and the merge of per-core
    domains compared each CPU with every member of its group: 64 times)."""
    from qprof.hw import cpudir
    from qprof.hw.topology import read_topology

    class Counted(cpudir.CpuDirFacts):
        reads = 0

        def __getattribute__(self, name: str) -> object:
            if name in ("max_khz", "min_khz", "midr", "package"):
                Counted.reads += 1
            return object.__getattribute__(self, name)

    monkeypatch.setattr(cpudir, "CpuDirFacts", Counted)
    reads = {}
    for n in (2_500, 20_000):
        Counted.reads = 0
        topo = read_topology(_many_cpus(tmp_path / str(n), n, own_siblings))
        reads[n] = Counted.reads
        assert [len(c.cpus) for c in topo.clusters] == [n]
    assert reads[20_000] < 10 * reads[2_500], reads


# -- 12. bad numbers: exit 2 with the option and its rule --------------------------------------

def _numeric_options() -> list[tuple[str, argparse.Action]]:
    from qprof.cli import COMMANDS, command_module

    out = []
    for name in COMMANDS:
        parser = argparse.ArgumentParser(prog=f"qprof {name}")
        command_module(name).add_parser(parser)
        out += [(name, a) for a in parser._actions
                if a.type in (int, float) or type(a.type).__name__ == "Number"]
    return out


def test_12_every_numeric_option_is_checked() -> None:
    """Every numeric option of every command has the validating type, but the daemon's,
    which its config checks (the same rules for flags and its TOML file)."""
    from qprof.service import config

    unchecked = [(name, a.option_strings[0]) for name, a in _numeric_options()
                 if a.type in (int, float) and name != "daemon"]
    assert not unchecked
    daemon = {a.dest for name, a in _numeric_options() if name == "daemon"}
    assert daemon and daemon <= config._NUMBERS | config._INTS


def _bad_values(action: argparse.Action) -> list[str]:
    rule = action.type
    bad = ["nan", "inf", "-inf", "x"]
    for bound in ("at_least", "above"):
        value = getattr(rule, bound, None)
        if value is not None:
            bad.append(str(value - 1) if bound == "at_least" else str(value))
    return bad


@pytest.mark.parametrize("name,option", [
    (name, a.option_strings[0]) for name, a in _numeric_options() if name != "daemon"])
def test_12_a_bad_number_exits_2(name: str, option: str, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from qprof.cli import command_module, main

    def accepted(args: argparse.Namespace) -> int:
        pytest.fail(f"qprof {name} ran with {option}={getattr(args, action.dest)!r}")

    monkeypatch.setattr(command_module(name), "run", accepted)
    [action] = [a for n, a in _numeric_options() if n == name and a.option_strings[0] == option]
    for bad in _bad_values(action):
        with pytest.raises(SystemExit) as exc:
            main([name, f"{option}={bad}"])
        assert exc.value.code == 2, (option, bad)
        err = capsys.readouterr().err
        assert f"argument {option}" in err and "must be" in err, err


@pytest.mark.parametrize("args", [
    ["bench", "--rounds", "-3"], ["bench", "--rounds", "0"], ["check", "--time-limit", "-1"],
    ["check", "--interleave", "-1"], ["check", "--interleave", "nan"]],
    ids=lambda a: " ".join(a))
def test_12_the_issue_s_bad_numbers(args: list[str], tmp_path: Path) -> None:
    r = qprof(*args, "-o", str(tmp_path / "x.jsonl"), cwd=os.getcwd())
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert f"argument {args[1]}: must be" in r.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "x.jsonl").exists()


# -- 11, 13. writing output: devices, FIFOs and symlinks in place; a full disk: one line -----

@contextlib.contextmanager
def full_tmpfs(where: Path) -> Iterator[Path]:
    """A 16 KiB tmpfs, filled: every write to it fails with ENOSPC (skips when mounting is
    refused)."""
    with tmpfs(where, "16k"):
        with open(where / "filler", "wb") as fh, contextlib.suppress(OSError):
            fh.write(b"\0" * 65536)
        yield where


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A daemon state dir whose store holds one finished run."""
    from qprof.service.store import Store

    state = tmp_path / "state"
    state.mkdir()
    store = Store(state / "qprof.db")
    store.add(Meta(run_id="r1", started_at=1000.0, qprof_version="t", command=[],
                   cpus=[CpuRow(cpu=0)], profile="qanum"))
    for rnd in range(3):
        store.add(Measurement(run_id="r1", cpu=0, suite="ML-DSA-44", backend="liboqs",
                              operation="verify", round=rnd, n=10, median_ns=1e5, p95_ns=1e5,
                              finished_at=1001.0))
    store.add(End(run_id="r1", finished_at=1005.0, status="finished"))
    store.close()
    return state


def _export(state: Path, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return qprof("export", "latest", "--state-dir", str(state), *args, **kw)


def test_11_export_to_a_device_writes_into_it(state: Path, tmp_path: Path) -> None:
    """A char device like /dev/full (made here: the test must not risk the real one) stays
    a device: written in place, ENOSPC is one line, exit 2, no "wrote"."""
    import stat as st

    dev = tmp_path / "full"
    try:
        os.mknod(dev, st.S_IFCHR | 0o666, os.makedev(1, 7))
    except OSError as exc:
        pytest.skip(f"cannot make a device node: {exc}")
    r = _export(state, "-o", str(dev))
    assert r.returncode == 2
    assert str(dev) in one_line(r.stderr) and "No space left" in r.stderr
    assert st.S_ISCHR(os.lstat(dev).st_mode)
    assert not list(tmp_path.glob("full*.tmp"))


def test_11_export_to_a_fifo_and_a_symlink_keeps_them(state: Path, tmp_path: Path) -> None:
    import stat as st

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    r = _export(state, "-o", str(fifo))
    reader.join(30)
    assert r.returncode == 0, r.stderr
    assert st.S_ISFIFO(os.lstat(fifo).st_mode)
    assert b'"run_id": "r1"' in got[0] or b'"run_id":"r1"' in got[0]
    # A symlink to a regular file: the target is replaced, the link stays.
    target, link = tmp_path / "target.jsonl", tmp_path / "link.jsonl"
    target.write_text("old\n")
    link.symlink_to(target)
    r = _export(state, "-o", str(link))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and "r1" in target.read_text() and "old" not in target.read_text()
    # A symlink to stdout (what /dev/stdout is): written through, not replaced.
    out = tmp_path / "stdout"
    out.symlink_to("/proc/self/fd/1")
    r = _export(state, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.is_symlink() and "r1" in r.stdout


def test_11_a_full_disk_is_one_line_and_no_partial_file(state: Path, tmp_path: Path) -> None:
    with full_tmpfs(tmp_path / "mnt") as mnt:
        r = _export(state, "-o", str(mnt / "run.jsonl"))
        assert r.returncode == 2
        assert str(mnt / "run.jsonl") in one_line(r.stderr)
        assert sorted(p.name for p in mnt.iterdir()) == ["filler"]
        for args in (["export", "latest", "--state-dir", str(state)], ["topology", "--json"],
                     ["freq", "--json"], ["env"]):
            with open(mnt / "stdout", "w") as fh:
                r = subprocess.run([*QPROF, *args], stdout=fh, stderr=subprocess.PIPE,
                                   text=True, timeout=60)
            assert r.returncode == 2, (args, r.stderr)
            assert "cannot write to stdout: No space left" in one_line(r.stderr), args
            assert (mnt / "stdout").stat().st_size == 0, args  # nothing partial


@pytest.mark.parametrize("device", ["/dev/full"])
def test_11_stdout_on_a_full_device_is_one_line(device: str) -> None:
    for args in (["topology", "--json"], ["freq", "--json"], ["env"], ["backends", "--json"]):
        with open(device, "w") as fh:
            r = subprocess.run([*QPROF, *args], stdout=fh, stderr=subprocess.PIPE, text=True,
                               timeout=60)
        assert r.returncode == 2, (args, r.stderr)
        assert "No space left" in one_line(r.stderr), args


def test_13_report_on_a_full_disk_names_the_file(tmp_path: Path) -> None:
    run = _evil_run(tmp_path / "run.jsonl")
    with full_tmpfs(tmp_path / "mnt") as mnt:
        for opt in ("-o", "--html"):
            target = mnt / ("r.md" if opt == "-o" else "r.html")
            r = qprof("report", str(run), opt, str(target))
            assert r.returncode == 2
            line = one_line(r.stderr)
            assert str(target) in line and "No space left" in line, line
            assert sorted(p.name for p in mnt.iterdir()) == ["filler"]  # no 0-byte file
