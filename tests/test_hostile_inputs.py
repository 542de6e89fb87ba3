"""Hostile but fair inputs (issue 14, "Seen" 1-8): each gets a clear one-line error or a
clean degraded state, and nothing recorded is lost."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from qprof.consensus import ProfileError, load_profile
from qprof.measure.jsonl import read_run
from qprof.measure.records import Measurement, Meta
from qprof.measure.records_parts import CpuRow
from qprof.service.config import ConfigError, load_config_file

QPROF = [sys.executable, "-m", "qprof"]


def qprof(*args: str, timeout: float = 60, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*QPROF, *args], capture_output=True, text=True, timeout=timeout,
                          **kw)  # type: ignore[call-overload]


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A small tmpfs mounted at ``where`` for the test (skips when mounting is refused)."""
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text[-2000:]
    assert "Traceback" not in text
    return lines[0]


# -- 1. profiles and --config: not UTF-8, deeply nested, nan/inf -----------------------------

NOT_UTF8 = b'name = "x\xff\xfe"\n'
DEEP = b"x = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"


@pytest.mark.parametrize("content,words", [(NOT_UTF8, "not UTF-8"), (DEEP, "nested")],
                         ids=["not-utf8", "deep"])
def test_profile_not_utf8_or_deep_is_a_profile_error(tmp_path: Path, content: bytes,
                                                     words: str) -> None:
    path = tmp_path / "p.toml"
    path.write_bytes(content)
    with pytest.raises(ProfileError, match=words):
        load_profile(path)
    with pytest.raises(ConfigError, match=words):
        load_config_file(path)


@pytest.mark.parametrize("content", [NOT_UTF8, DEEP], ids=["not-utf8", "deep"])
def test_check_and_daemon_exit_2_on_a_bad_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "p.toml"
    path.write_bytes(content)
    r = qprof("check", "--profile", str(path), "--quiet")
    assert r.returncode == 2
    assert str(path) in one_line(r.stderr)
    r = qprof("daemon", "--config", str(path), "--state-dir", str(tmp_path / "s"))
    assert r.returncode == 2
    assert "config error" in one_line(r.stderr)


def test_profile_nan_inf_directly(tmp_path: Path) -> None:
    base = ('name = "t"\nunit_suite = "ML-DSA-44"\nmax_block_verify_units = 200000\n'
            '[verify_units]\n"ML-DSA-44" = 100\n')
    for extra in ("target_block_interval_s = nan\n", "target_block_interval_s = inf\n"):
        path = tmp_path / "p.toml"
        path.write_text(extra + base)
        with pytest.raises(ProfileError, match="target_block_interval_s"):
            load_profile(path)
    path = tmp_path / "p.toml"
    path.write_text(base + '[[reference_cores]]\nname = "c"\n'
                    '[reference_cores.verify_median_ns]\n"ML-DSA-44" = inf\n')
    with pytest.raises(ProfileError, match="verify_median_ns"):
        load_profile(path)


# -- 2. qprof report on malformed lines --------------------------------------------------------

def _meta() -> Meta:
    return Meta(run_id="r", started_at=1.0, qprof_version="0", command=["qprof", "bench"],
                cpus=[CpuRow(cpu=0)])


def _m(**over: object) -> str:
    d = Measurement(run_id="r", cpu=0, suite="ML-DSA-44", backend="numba",
                    operation="verify", round=0, n=3, median_ns=10.0, p95_ns=12.0,
                    samples_ns=[9.0, 10.0, 11.0]).to_dict()
    d.update(over)
    return json.dumps(d)


BAD_LINES = [
    '{"type": []}',
    '{"type": {}}',
    _m(median_ns=int("9" * 400)),
    "[" * 100_000 + "]" * 100_000,
    _m(cpu="0"),
    _m(n="3"),
    _m(samples_ns="many"),
    _m(samples_ns=[1.0, -2.0, 3.0]),
    _m(cap_factor="2"),
    _m(round=-1),
    json.dumps({**_meta().to_dict(), "cpus": [1, 2]}),
    json.dumps({**_meta().to_dict(), "cpus": "0-3"}),
]


def test_read_run_reports_each_malformed_line_and_keeps_the_good(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    good = _m()
    path.write_text("\n".join([_meta().to_json(), good, *BAD_LINES, good]) + "\n")
    run = read_run(path)
    assert run.bad_lines == len(BAD_LINES)
    where = {p.split(": ", 1)[0] for p in run.problems}
    for i in range(len(BAD_LINES)):
        assert f"{path}:{i + 3}" in where
    assert len(run.measurements) == 2
    assert all(len(p) < 400 for p in run.problems)


def test_report_cli_skips_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join([_meta().to_json(), _m(), *BAD_LINES]) + "\n")
    r = qprof("report", str(path))
    assert "Traceback" not in r.stderr
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stderr.count(f"{path}:") >= len(BAD_LINES)
    assert "ML-DSA-44" in r.stdout


def test_report_on_dev_zero_is_bounded() -> None:
    r = qprof("report", "/dev/zero", timeout=120)
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr
    assert "is a device, not a JSONL run" in r.stderr  # never read (issue 49)
    assert r.returncode == 2


# -- found by the real systemd (scripts/test-systemd) ------------------------------------------

@pytest.mark.fresh
def test_liboqs_search_without_a_home_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    """A DynamicUser= service has no $HOME and no passwd entry: Path.home() raises."""
    from qprof.verify.availability import find_liboqs

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    found = find_liboqs({"OQS_INSTALL_PATH": "/nonexistent"})
    assert isinstance(found, str) or found.source == "system"


# -- 6. untrusted --root snapshots -----------------------------------------------------------

SEEDS_HW = Path(__file__).resolve().parent / "fixtures" / "hw" / "seeds-arm"
CPU_DIR = "sys/devices/system/cpu"


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


def test_env_json_stays_small_on_a_huge_token(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "root"
    shutil.copytree(SEEDS_HW, root)
    (root / CPU_DIR / "online").write_text("0-" + "7" * 3_000_000 + "\n")
    r = qprof("env", "--root", str(root))
    assert "Traceback" not in r.stderr
    assert len(r.stdout) < 200_000


# -- the daemon: 3 state-dir lock, 4 locked store / full disk, 5 alert command group, 7 signals

def _daemon_helpers():  # type: ignore[no-untyped-def]
    from test_service_daemon import FAST_CYCLE, NO_CYCLE, DaemonProc, wait_for
    from test_service_watch import cap, make_root

    return FAST_CYCLE, NO_CYCLE, DaemonProc, wait_for, cap, make_root


@pytest.fixture
def daemon_procs(tmp_path: Path):  # type: ignore[no-untyped-def]
    _f, _n, DaemonProc, *_ = _daemon_helpers()
    started: list = []

    def start(*args: str, **kw: object):  # type: ignore[no-untyped-def]
        d = DaemonProc(tmp_path, *args, **kw)
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


@pytest.fixture(scope="module")
def kernels() -> None:
    from qprof.verify import warm_up

    warm_up("numba", "ML-DSA-44")


def test_second_daemon_on_the_same_state_dir_exits_2_naming_the_holder(
        tmp_path: Path, daemon_procs, kernels) -> None:  # type: ignore[no-untyped-def]
    FAST_CYCLE, _n, _D, wait_for, _c, _m = _daemon_helpers()
    first = daemon_procs(*FAST_CYCLE)
    running = wait_for("a running run", lambda: first.runs_with("running"), timeout=120)
    second = daemon_procs(*FAST_CYCLE, wait_started=False)
    assert second.wait_exit(30) == 2
    line = one_line(second.log)
    assert f"pid {first.proc.pid}" in line and str(first.state_dir) in line
    assert first.proc.poll() is None
    assert not first.runs_with("aborted")
    assert running[0] in first.runs_with("running") + first.runs_with("finished")
    assert "cycle_aborted" not in [a.kind for a in first.store().alerts.recent()]


def _lock_store(path: Path):  # type: ignore[no-untyped-def]
    import sqlite3

    from qprof.service.store import Store

    Store(path).close()
    con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    con.execute("BEGIN EXCLUSIVE")
    return con


def test_store_locked_at_start_waits_then_uses_the_real_store(
        tmp_path: Path, daemon_procs) -> None:  # type: ignore[no-untyped-def]
    import threading

    _f, NO_CYCLE, _D, _w, _c, make_root = _daemon_helpers()
    state = tmp_path / "state"
    con = _lock_store(state / "qprof.db")
    threading.Timer(8.0, con.rollback).start()  # a backup that takes 8 s
    d = daemon_procs("--root", str(make_root(tmp_path)), *NO_CYCLE, "--store-wait", "60",
                     state_dir=state, wait_started=False)
    d.wait_log("qprof daemon started", timeout=60)
    assert "in memory" not in d.log
    assert "locked" in d.log
    assert 'qprof_degraded{' not in d.scrape() or 'what="store"' not in d.scrape()


def test_store_locked_for_good_exits_for_a_retry(tmp_path: Path,
                                                 daemon_procs) -> None:  # type: ignore[no-untyped-def]
    _f, NO_CYCLE, _D, _w, _c, make_root = _daemon_helpers()
    state = tmp_path / "state"
    con = _lock_store(state / "qprof.db")
    try:
        d = daemon_procs("--root", str(make_root(tmp_path)), *NO_CYCLE, "--store-wait", "3",
                         state_dir=state, wait_started=False)
        rc = d.wait_exit(40)
    finally:
        con.rollback()
    assert rc not in (0, 2)  # systemd restarts it (Restart=on-failure), not a config error
    assert "locked" in d.log and "in memory" not in d.log


def test_disk_filling_later_sets_qprof_degraded(tmp_path: Path) -> None:
    """Alert writes failing (the disk filled after start) mark the store degraded."""
    from prometheus_client import CollectorRegistry, generate_latest

    from qprof.service.alerts import Alert
    from qprof.service.config import DaemonConfig
    from qprof.service.daemon import Daemon
    from qprof.service.metrics import QprofCollector
    from qprof.service.store import Store
    from qprof.service.store_held import HeldWrites

    with tmpfs(tmp_path / "small", "1m") as mnt:
        daemon = Daemon(DaemonConfig(state_dir=mnt))
        daemon.store = Store(mnt / "qprof.db")
        daemon.held = HeldWrites(daemon.store)
        try:
            with open(mnt / "filler", "wb") as fh, contextlib.suppress(OSError):
                fh.write(b"\0" * 4 * 1024 * 1024)
            for i in range(20):
                daemon._alert_to_store(Alert(ts=float(i), kind="cap_started",
                                             severity="warning", message="x" * 20_000))
        finally:
            daemon.store.close()
    assert "store" in daemon.state.degraded
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QprofCollector(daemon.state, {}))
    assert 'what="store"' in generate_latest(registry).decode()


def test_alert_command_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    import time

    from qprof.service.alerts import Alert, AlertCommand

    pids = tmp_path / "pids"
    script = tmp_path / "hang.sh"
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $! >> {pids}\n"
                      f"(sleep 300; true) &\necho $! >> {pids}\nsleep 300\n")
    script.chmod(0o755)
    cmd = AlertCommand(str(script), timeout_s=1.0)
    try:
        start = time.monotonic()
        assert cmd.run_one(Alert(ts=0.0, kind="test", severity="info", message="m")) is False
        assert time.monotonic() - start < 10
        children = [int(p) for p in pids.read_text().split()]
        assert len(children) == 2
        deadline = time.monotonic() + 5
        alive = children
        while alive and time.monotonic() < deadline:
            alive = [p for p in children if _alive(p)]
            time.sleep(0.1)
        assert not alive, f"orphans left: {alive}"
    finally:
        cmd.close(wait_s=0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie waiting for init is gone for us
        return fh.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("signame", ["SIGHUP", "SIGUSR1", "SIGUSR2"])
def test_hup_usr1_usr2_never_kill_the_daemon_uncleanly(
        tmp_path: Path, daemon_procs, kernels, signame: str) -> None:  # type: ignore[no-untyped-def]
    import signal

    FAST_CYCLE, _n, _D, wait_for, _c, _m = _daemon_helpers()
    d = daemon_procs(*FAST_CYCLE)
    wait_for("a running run", lambda: d.runs_with("running"), timeout=120)
    d.signal(getattr(signal, signame))
    if signame == "SIGHUP":  # stop cleanly (systemd sends no HUP; a terminal closing does)
        assert d.wait_exit(10) == 0
        assert not d.runs_with("running")
        assert "SIGHUP" in d.log
    else:  # a status line in the log, nothing else
        d.wait_log(f"{signame}: ", timeout=10)
        assert d.proc.poll() is None
        assert d.runs_with("running") or d.runs_with("finished")


# -- 8. damaged store, read-only filesystem, odd profile paths, interrupted bench ------------

def _store_with_a_run(path: Path) -> str:
    from qprof.measure.records import End
    from qprof.service.store import Store

    store = Store(path)
    meta = _meta()
    store.add(meta)
    for rnd in range(40):
        store.add(Measurement(run_id="r", cpu=0, suite="ML-DSA-44", backend="numba",
                              operation="verify", round=rnd, n=3, median_ns=10.0 + rnd,
                              p95_ns=12.0 + rnd, samples_ns=[float(i) for i in range(500)]))
    store.add(End(run_id="r", finished_at=2.0, status="finished"))
    store.close()
    return meta.run_id


def test_history_and_export_on_damaged_pages_exit_2_with_one_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _store_with_a_run(state / "qprof.db")
    db = state / "qprof.db"
    data = bytearray(db.read_bytes())
    assert len(data) > 8 * 4096
    for page in range(1, len(data) // 4096):  # keep the header page, damage the rest
        data[page * 4096: page * 4096 + 400] = b"\xa5" * 400  # its b-tree header too
    db.write_bytes(bytes(data))
    for args in (["history"], ["history", "--json"], ["export", "latest"]):
        r = qprof(*args, "--state-dir", str(state))
        assert r.returncode == 2, (args, r.stdout[-500:], r.stderr[-2000:])
        assert "damaged" in one_line(r.stderr) or "malformed" in one_line(r.stderr)
    assert db.read_bytes() == bytes(data)  # left as it was


def test_wal_store_on_a_read_only_filesystem_is_read(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "8m") as mnt:
        _store_with_a_run(mnt / "qprof.db")
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        r = qprof("history", "--json", "--state-dir", str(mnt))
        assert r.returncode == 0, r.stderr
        assert [run["run_id"] for run in json.loads(r.stdout)["runs"]] == ["r"]
        assert "read-only" in r.stderr
        r = qprof("export", "r", "--state-dir", str(mnt))
        assert r.returncode == 0, r.stderr
        assert r.stdout.count('"type": "measurement"') == 40


@pytest.mark.parametrize("kind", ["dir", "fifo"])
def test_profile_path_that_is_a_directory_or_fifo_says_so(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "p.toml"
    if kind == "dir":
        path.mkdir()
    else:
        os.mkfifo(path)
    r = qprof("check", "--profile", str(path), "--quiet", timeout=30)
    assert r.returncode == 2
    assert ("a directory" if kind == "dir" else "a FIFO") in one_line(r.stderr)
    r = qprof("daemon", "--config", str(path), timeout=30)
    assert r.returncode == 2
    assert ("a directory" if kind == "dir" else "a FIFO") in one_line(r.stderr)


def test_interrupted_bench_keeps_every_finished_measurement(tmp_path: Path, kernels) -> None:  # type: ignore[no-untyped-def]
    import signal
    import time

    out = tmp_path / "run.jsonl"
    proc = subprocess.Popen(
        [*QPROF, "bench", "--cpus", "0", "--suites", "ML-DSA-44", "--backends", "numba",
         "--rounds", "15", "--no-adaptive", "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pyperf_dir = tmp_path / "run.pyperf"
        deadline = time.monotonic() + 300
        # Interrupt once the worker has finished a task of its block (its pyperf file
        # exists), long before its 15 rounds end.
        while time.monotonic() < deadline and not any(pyperf_dir.glob("*.json")):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    run = read_run(out)
    assert run.bad_lines == 0, run.problems
    assert run.measurements, "the finished measurements of the block in flight were lost"
    assert run.end is not None and run.end.status == "aborted"
