"""`qprof daemon` as a real subprocess: cycles through the real engine, signals, kill -9,
faults and bad input, sd_notify, alert sinks, history and export.

Every wait is bounded and every daemon is killed at the end of its test. Cycles use the
test-friendly settings (one CPU, ML-DSA-44, numba, --quick) so each test stays short.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from faults import closed_by_peer, metrics_port, one_line, tmpfs
from hostile_exit import clean_exit
from test_service_watch import _w, cap, make_root, set_online

from qprof.measure.jsonl import read_run
from qprof.measure.records import Measurement
from qprof.service.alerts import Alert
from qprof.service.run_locks import CUT_SHORT
from qprof.service.store import Store

QPROF = [sys.executable, "-m", "qprof"]
FAST_CYCLE = ["--cpus", "0", "--suites", "ML-DSA-44", "--backend", "numba", "--quick",
              "--max-load", "1000", "--max-busy", "100", "--first-cycle-delay", "0"]
NO_CYCLE = ["--first-cycle-delay", "3600", "--interval", "3600"]


def alerts_of(store: Store, kind: str) -> list[Alert]:
    """The stored alerts of one kind: a test asserts the alerts it is about, not the whole
    list (a machine without liboqs adds its own `degraded` alert at start)."""
    return [a for a in store.alerts.recent() if a.kind == kind]


def wait_for(what: str, check: Callable[[], object], timeout: float = 45.0,
             every: float = 0.1) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


class DaemonProc:
    """A `qprof daemon` subprocess with its stderr in a file."""

    def __init__(self, tmp: Path, *args: str, env: dict[str, str] | None = None,
                 state_dir: Path | None = None, listen: str = "127.0.0.1:0",
                 wait_started: bool = True, journal: bool = False) -> None:
        self.state_dir = state_dir or tmp / "state"
        self.log_path = tmp / f"daemon-{time.monotonic_ns()}.log"
        full_env = dict(os.environ)
        full_env.pop("NOTIFY_SOCKET", None)
        full_env.pop("JOURNAL_STREAM", None)
        full_env.update(env or {})
        argv = [*QPROF, "daemon", "--state-dir", str(self.state_dir), "--listen", listen,
                *args]
        self.log_file = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        if journal:  # as systemd does: "device:inode" of the stream stderr goes to
            st = os.fstat(self.log_file.fileno())
            full_env["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
        self.proc = subprocess.Popen(argv, stdout=self.log_file, stderr=subprocess.STDOUT,
                                     env=full_env, cwd=tmp)
        if wait_started:
            self.wait_log("qprof daemon started")

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_log(self, text: str, timeout: float = 45.0) -> str:
        def seen() -> str | None:
            if text in self.log:
                return self.log
            if self.proc.poll() is not None:
                raise AssertionError(f"daemon exited {self.proc.returncode} before "
                                     f"{text!r}:\n{self.log}")
            return None

        return str(wait_for(f"{text!r} in the daemon log", seen, timeout))

    @property
    def metrics_url(self) -> str:
        m = re.search(r"metrics: (http://\S+/metrics)", self.wait_log("metrics: http"))
        assert m
        return m.group(1)

    def scrape(self) -> str:
        with urllib.request.urlopen(self.metrics_url, timeout=5) as resp:
            return resp.read().decode()

    def store(self) -> Store:
        return Store(self.state_dir / "qprof.db", readonly=True)

    def runs_with(self, status: str) -> list[str]:
        try:
            return [r.run_id for r in self.store().runs(50) if r.status == status]
        except Exception:  # not created yet
            return []

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait_exit(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"daemon still running {timeout:.0f} s after the signal:\n"
                                 f"{self.log}") from None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.log_file.close()


@pytest.fixture(scope="module", autouse=True)
def numba_kernels_compiled() -> None:
    """Compile (or load from numba's cache) the kernels the cycles use, once, up front:
    a clean checkout's first compile takes tens of seconds, which the bounded waits for a
    cycle should not have to absorb. The engine's workers then load them from the cache."""
    from qprof.verify import warm_up

    for suite in ("ML-DSA-44", "ML-DSA-87"):
        warm_up("numba", suite)


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Callable[..., DaemonProc]]:
    started: list[DaemonProc] = []

    def start(*args: str, **kw: object) -> DaemonProc:
        d = DaemonProc(tmp_path, *args, **kw)  # type: ignore[arg-type]
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


def test_cycle_history_export_and_restart_serves_stored_results(
        tmp_path: Path, daemons: Callable[..., DaemonProc]) -> None:
    root = make_root(tmp_path)
    d = daemons("--root", str(root), *FAST_CYCLE)
    [run_id] = wait_for("a finished run", lambda: d.runs_with("finished"), timeout=50)
    d.wait_log("cycle finished")
    # The numba kernels were loaded/compiled before the first measurement started.
    assert d.log.index("numba kernels ready") < d.log.index("measuring cpu 0")
    metrics = d.scrape()
    assert re.search(r'qprof_verify_seconds\{backend="numba",cpu="0",suite="ML-DSA-44"\} '
                     r'[0-9.e-]+', metrics)
    assert 'qprof_cpu_max_frequency_hertz{cpu="2"} 2.4192e+09' in metrics
    assert 'qprof_cpu_online{cpu="0"} 1.0' in metrics
    assert "qprof_last_cycle_timestamp_seconds " in metrics
    d.signal(signal.SIGTERM)
    assert d.wait_exit(5) == 0

    # history --json and export read the store back.
    out = subprocess.run([*QPROF, "history", "--json", "--state-dir", str(d.state_dir)],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    hist = json.loads(out)
    assert hist["runs"][0]["run_id"] == run_id and hist["runs"][0]["status"] == "finished"
    assert [(r["cpu"], r["suite"], r["backend"]) for r in hist["results"]] == [
        (0, "ML-DSA-44", "numba")]
    text = subprocess.run([*QPROF, "history", "--state-dir", str(d.state_dir)],
                          capture_output=True, text=True, timeout=30, check=True).stdout
    assert run_id in text and "ML-DSA-44" in text
    jsonl = tmp_path / "run.jsonl"
    subprocess.run([*QPROF, "export", run_id, "-o", str(jsonl), "--state-dir",
                    str(d.state_dir)], check=True, timeout=30, capture_output=True)
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert lines[0]["type"] == "meta" and lines[-1]["type"] == "end"
    assert lines == [r.to_dict() for r in d.store().run_records(run_id)]
    run = read_run(jsonl)
    assert any(m.suite == "ML-DSA-44" for m in run.measurements)
    bad = subprocess.run([*QPROF, "export", "no-such-run", "--state-dir", str(d.state_dir)],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "no run 'no-such-run'" in bad.stderr

    # After a restart the stored result is served at once (no cycle runs).
    d2 = daemons("--root", str(root), *NO_CYCLE, state_dir=d.state_dir)
    assert re.search(r'qprof_verify_seconds\{backend="numba",cpu="0",suite="ML-DSA-44"\}',
                     d2.scrape())
    d2.signal(signal.SIGINT)
    assert d2.wait_exit(5) == 0


def _slow_cycle(root: Path) -> list[str]:
    # Not --quick: the check mode's rounds take several seconds, long enough to interrupt.
    return ["--root", str(root), "--cpus", "0", "--suites", "ML-DSA-44,ML-DSA-87",
            "--backend", "numba", "--max-load", "1000", "--max-busy", "100",
            "--first-cycle-delay", "0"]


def _measurements(store: Store, run_id: str) -> list[dict[str, object]]:
    return [r.to_dict() for r in store.run_records(run_id) if isinstance(r, Measurement)]


def _measuring(d: DaemonProc) -> bool:
    try:
        with sqlite3.connect(f"file:{d.state_dir / 'qprof.db'}?mode=ro", uri=True) as con:
            n = con.execute("SELECT COUNT(*) FROM measurements m JOIN runs r ON "
                            "r.run_id=m.run_id WHERE r.status='running'").fetchone()[0]
        return n >= 1
    except sqlite3.Error:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_mid_cycle_stops_within_5s_and_marks_the_run(
        tmp_path: Path, daemons: Callable[..., DaemonProc], sig: int) -> None:
    root = make_root(tmp_path)
    d = daemons(*_slow_cycle(root))
    wait_for("a measurement committed mid-run", lambda: _measuring(d), timeout=50)
    d.signal(sig)
    assert d.wait_exit(5) == 0
    [run] = d.store().runs(5)
    # Either the engine stopped in time (its End says aborted) or the daemon closed it.
    assert run.status == "aborted", d.log
    assert run.measurements >= 1  # what finished before the signal is kept
    assert d.store().integrity_check() == "ok"


def test_kill9_mid_cycle_then_restart(tmp_path: Path,
                                     daemons: Callable[..., DaemonProc]) -> None:
    root = make_root(tmp_path)
    d = daemons(*_slow_cycle(root))
    wait_for("a measurement committed mid-run", lambda: _measuring(d), timeout=50)
    d.signal(signal.SIGKILL)
    d.wait_exit(5)
    # (The pyperf worker it had started finishes its round on its own, then exits.)
    store = d.store()
    assert store.integrity_check() == "ok"
    [run] = store.runs(5)
    # Read before the daemon is back: cut short, as its lock says (still 'running' in
    # the store until the daemon closes it, with its alert).
    assert (run.status, run.reason) == ("aborted", CUT_SHORT)
    assert store.run_status(run.run_id) == "running"
    finished = _measurements(store, run.run_id)
    kept = run.measurements
    assert kept >= 1
    d2 = daemons("--root", str(root), *NO_CYCLE, state_dir=d.state_dir)
    d2.wait_log("cut short by a crash or kill")
    store = d2.store()
    assert store.integrity_check() == "ok"
    [run2] = store.runs(5)
    assert (run2.run_id, run2.status, run2.measurements) == (run.run_id, "aborted", kept)
    assert _measurements(store, run.run_id) == finished
    assert len(alerts_of(store, "cycle_aborted")) == 1
    d2.signal(signal.SIGTERM)
    assert d2.wait_exit(5) == 0


def test_unparsable_config_exits_2_with_one_line(tmp_path: Path) -> None:
    conf = tmp_path / "qprof.toml"
    conf.write_text("[daemon\ninterval = 5\n")
    r = subprocess.run([*QPROF, "daemon", "--config", str(conf)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "config error" in lines[0] and str(conf) in lines[0]
    r = subprocess.run([*QPROF, "daemon", "--root", str(tmp_path / "nothing"),
                        "--state-dir", str(tmp_path / "s")], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and "not a Linux root" in r.stderr
    r = subprocess.run([*QPROF, "daemon", "--profile", "no-such-chain", "--state-dir",
                        str(tmp_path / "s")], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "no-such-chain" in r.stderr


def test_read_only_state_dir_degrades_to_memory(tmp_path: Path,
                                                daemons: Callable[..., DaemonProc]) -> None:
    if os.geteuid() == 0:
        # root ignores directory permissions; a file in the way is just as unwritable.
        state = tmp_path / "state-is-a-file"
        state.write_text("")
        ro = state / "sub"
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
    d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE, state_dir=ro)
    assert "degraded: store:" in d.log and "kept in memory only" in d.log
    # One of a fixed set of reasons (the message, with its path, is in the log).
    assert 'qprof_degraded{reason="store_unusable",what="store"} 1.0' in d.scrape()
    assert d.proc.poll() is None


def test_full_state_dir_degrades(tmp_path: Path, daemons: Callable[..., DaemonProc]) -> None:
    mnt = tmp_path / "full"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill: {r.stderr.strip()}")
    try:
        with open(mnt / "filler", "wb") as fh, contextlib.suppress(OSError):
            fh.write(b"\0" * 1024 * 1024)  # fills the 64 KiB tmpfs
        d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE, state_dir=mnt)
        assert "degraded: store:" in d.log
        assert d.proc.poll() is None
        d.stop()
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_port_in_use_degrades_metrics(tmp_path: Path,
                                      daemons: Callable[..., DaemonProc]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE,
                    listen=f"127.0.0.1:{port}")
        assert f"degraded: metrics: cannot listen on 127.0.0.1:{port}" in d.log
        assert d.proc.poll() is None
        # Also an alert (store, command), so a degraded start is not only a log line.
        d.wait_log("alert degraded: started degraded: metrics")
        [alert] = [a for a in alerts_of(d.store(), "degraded")
                   if a.details.get("what") == "metrics"]
        assert f"127.0.0.1:{port}" in alert.message


@pytest.mark.fresh
def test_liboqs_missing_degrades_to_numba(tmp_path: Path,
                                          daemons: Callable[..., DaemonProc]) -> None:
    empty = tmp_path / "no-oqs"
    empty.mkdir()
    d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE,
                env={"OQS_INSTALL_PATH": str(empty), "HOME": str(tmp_path)})
    assert "degraded: liboqs: liboqs unavailable" in d.log
    assert "measuring with numba instead" in d.log


def test_only_the_metrics_socket_listens(tmp_path: Path,
                                         daemons: Callable[..., DaemonProc]) -> None:
    d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE)
    url = d.metrics_url
    assert url.startswith("http://127.0.0.1:")
    inodes = set()
    for fd in Path(f"/proc/{d.proc.pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    listening = []
    for table in ("tcp", "tcp6", "udp", "udp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            parts = line.split()
            if parts[9] in inodes and (parts[3] == "0A" or table.startswith("udp")):
                listening.append((table, parts[1]))
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    assert listening == [("tcp", f"0100007F:{port:04X}")]


def test_sd_notify_ready_watchdog_stopping(tmp_path: Path,
                                           daemons: Callable[..., DaemonProc]) -> None:
    sock_path = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as rx:
        rx.bind(sock_path)
        rx.settimeout(30)
        d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE, wait_started=False,
                    env={"NOTIFY_SOCKET": sock_path, "WATCHDOG_USEC": "1000000"})
        got: list[bytes] = []
        while not any(b"WATCHDOG=1" in m for m in got):
            got.append(rx.recv(4096))
        assert got[0].startswith(b"READY=1\nSTATUS=watching")
        d.signal(signal.SIGTERM)
        while not any(b"STOPPING=1" in m for m in got):
            got.append(rx.recv(4096))
        assert d.wait_exit(5) == 0


def test_cap_alert_reaches_log_store_and_command(tmp_path: Path,
                                                 daemons: Callable[..., DaemonProc]) -> None:
    root = make_root(tmp_path)
    out = tmp_path / "alerts.jsonl"
    hook = tmp_path / "hook.py"
    hook.write_text(f"import sys\nopen({str(out)!r}, 'a').write(sys.stdin.read() + '\\n')\n")
    d = daemons("--root", str(root), *NO_CYCLE, "--watch-interval", "0.2",
                "--cap-hold-samples", "3", "--cap-hold-seconds", "1",
                "--alert-command", f"{sys.executable} {hook}",
                journal=True)
    cap(root, 1, 1075200)
    d.wait_log("<4>alert cap_started: cluster 1")
    assert "<6>qprof daemon started" in d.log

    def cap_started_sent() -> list[dict] | None:
        # The command runs per alert in turn: a degraded alert (no liboqs) may come first.
        try:
            sent = [json.loads(line) for line in out.read_text().splitlines()]
        except (OSError, ValueError):  # not written yet, or a line still being written
            return None
        return [a for a in sent if a["kind"] == "cap_started"] or None

    [alert] = wait_for("cap_started from the alert command", cap_started_sent)  # type: ignore[misc]
    assert alert["details"]["factor"] == 2.25
    assert len(alerts_of(d.store(), "cap_started")) == 1
    assert 'qprof_alerts_total{kind="cap_started"} 1.0' in d.scrape()
    assert 'qprof_cpu_capped{cpu="2"} 1.0' in d.scrape()
    # A failing alert command is logged, the daemon carries on.
    hook.write_text("import sys\nsys.exit(7)\n")
    cap(root, 1, None)
    d.wait_log("exited 7")
    assert d.proc.poll() is None


def test_cpu_offline_mid_cycle(tmp_path: Path, daemons: Callable[..., DaemonProc]) -> None:
    root = make_root(tmp_path)
    # --quick keeps it short; a fast watch loop sees the CPU go before cpu 0 is done.
    args = [*_slow_cycle(root), "--quick", "--watch-interval", "0.2"]
    args[args.index("--cpus") + 1] = "0,1"
    d = daemons(*args)
    d.wait_log("measuring cpu 0")  # the cycle is under way; cpu 1 is next
    set_online(root, 1, False)
    d.wait_log("alert cpu_offline: cpu 1 went offline")
    d.wait_log("cpu 1 is offline: not measured this cycle", timeout=50)
    d.wait_log("cycle partial")
    assert d.proc.poll() is None
    assert d.runs_with("finished")


def test_busy_machine_skips_the_cycle_and_says_why(
        tmp_path: Path, daemons: Callable[..., DaemonProc]) -> None:
    root = make_root(tmp_path)
    _w(root / "proc/loadavg", "7.50 7.00 6.00 5/300 999")
    args = [a if a != "1000" else "0.5" for a in FAST_CYCLE]
    d = daemons("--root", str(root), *args)
    d.wait_log("alert cycle_skipped: measurement cycle skipped: load 7.50 over 4 CPUs")
    [alert] = alerts_of(d.store(), "cycle_skipped")
    assert "above --max-load 0.5" in alert.details["reason"]
    assert d.store().runs(5) == []


def test_result_measured_under_a_cap_raises_result_skewed(
        tmp_path: Path, daemons: Callable[..., DaemonProc]) -> None:
    root = make_root(tmp_path)
    cap(root, 0, 902400)  # cpu 0's cluster held at half speed for the whole cycle
    d = daemons("--root", str(root), *FAST_CYCLE)
    d.wait_log("cycle finished", timeout=50)
    assert alerts_of(d.store(), "cap_started"), d.log
    [skew] = alerts_of(d.store(), "result_skewed")
    assert skew.cpu == 0 and skew.details["factor"] == 2.0
    assert skew.details["run_id"] == d.runs_with("finished")[0]


@pytest.mark.fresh
def test_liboqs_cycle_runs_the_shadow_pair_that_finds_disagreements(
        tmp_path: Path, daemons: Callable[..., DaemonProc]) -> None:
    from qprof.verify import availability

    st = availability.available_backends()
    if not st["liboqs"].available or not st["numba"].available:
        pytest.skip(f"needs liboqs and numba: {st['liboqs'].reason or st['numba'].reason}")
    args = [a if a != "numba" else "liboqs" for a in FAST_CYCLE]
    d = daemons("--root", str(make_root(tmp_path)), *args)
    [run_id] = wait_for("a finished run", lambda: d.runs_with("finished"), timeout=60)
    [run] = [r for r in d.store().runs(5) if r.run_id == run_id]
    ops = {(m.operation, m.backend) for m in d.store().run_records(run_id)
           if isinstance(m, Measurement)}
    assert ("verify", "liboqs") in ops and ("dual_shadow", "liboqs+numba") in ops
    assert run.checks > 0 and run.disagreements == 0  # both verifiers saw every sample
    d.wait_log("cycle finished")  # the results reach the metrics after the run's points
    assert re.search(r'qprof_verify_statistic_info\{backend="liboqs",cpu="0",'
                     r'statistic="\w+",suite="ML-DSA-44"\} 1.0', d.scrape())


# -- issue 49, findings 8 and 13: the state dir's lock and store are never followed ---------

def test_finding_8_a_symlink_as_the_lock_is_refused_and_its_target_kept(
        tmp_path: Path, daemons: Callable[..., DaemonProc]) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    victim = tmp_path / "victim.conf"
    victim.write_text("keep me\n")
    (state / "qprof.lock").symlink_to(victim)
    d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE, state_dir=state,
                wait_started=False)
    assert d.wait_exit(60) == 2
    errors = [line for line in d.log.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "Traceback" not in d.log, d.log
    assert str(state / "qprof.lock") in errors[0] and "symbolic link" in errors[0]
    assert victim.read_text() == "keep me\n" and (state / "qprof.lock").is_symlink()


def test_finding_13_a_fifo_as_the_store_is_one_line_for_every_reader(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    os.mkfifo(state / "qprof.db")
    for cmd in (["trend"], ["history"], ["export", "latest"]):
        r = subprocess.run([*QPROF, *cmd, "--state-dir", str(state)], capture_output=True,
                           text=True, timeout=60)
        clean_exit(r.returncode, r.stdout, r.stderr)
        assert r.returncode == 2, (cmd, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "is a FIFO, not a store" in lines[0], (cmd, r.stderr)


# -- the daemon: 3 state-dir lock, 4 locked store / full disk, 5 alert command group, 7 signals

def _daemon_helpers():  # type: ignore[no-untyped-def]
    from test_service_daemon import FAST_CYCLE, NO_CYCLE, DaemonProc, wait_for
    from test_service_watch import cap, make_root

    return FAST_CYCLE, NO_CYCLE, DaemonProc, wait_for, cap, make_root


def test_second_daemon_on_the_same_state_dir_exits_2_naming_the_holder(
        tmp_path: Path, daemons, numba_kernels_compiled) -> None:  # type: ignore[no-untyped-def]
    FAST_CYCLE, _n, _D, wait_for, _c, _m = _daemon_helpers()
    first = daemons(*FAST_CYCLE)
    running = wait_for("a running run", lambda: first.runs_with("running"), timeout=120)
    second = daemons(*FAST_CYCLE, wait_started=False)
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
        tmp_path: Path, daemons) -> None:  # type: ignore[no-untyped-def]
    import threading

    _f, NO_CYCLE, _D, _w, _c, make_root = _daemon_helpers()
    state = tmp_path / "state"
    con = _lock_store(state / "qprof.db")
    threading.Timer(8.0, con.rollback).start()  # a backup that takes 8 s
    d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE, "--store-wait", "60",
                     state_dir=state, wait_started=False)
    d.wait_log("qprof daemon started", timeout=60)
    assert "in memory" not in d.log
    assert "locked" in d.log
    assert 'qprof_degraded{' not in d.scrape() or 'what="store"' not in d.scrape()


def test_store_locked_for_good_exits_for_a_retry(tmp_path: Path,
                                                 daemons) -> None:  # type: ignore[no-untyped-def]
    _f, NO_CYCLE, _D, _w, _c, make_root = _daemon_helpers()
    state = tmp_path / "state"
    con = _lock_store(state / "qprof.db")
    try:
        d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE, "--store-wait", "3",
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


@pytest.mark.parametrize("signame", ["SIGHUP", "SIGUSR1", "SIGUSR2"])
def test_hup_usr1_usr2_never_kill_the_daemon_uncleanly(
        tmp_path: Path, daemons, numba_kernels_compiled, signame: str) -> None:  # type: ignore[no-untyped-def]
    import signal

    FAST_CYCLE, _n, _D, wait_for, _c, _m = _daemon_helpers()
    d = daemons(*FAST_CYCLE)
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


@contextlib.contextmanager
def pids_cgroup(name: str) -> Iterator[Path]:
    """A cgroup of the pids controller (what systemd's TasksMax= sets), v1 or v2."""
    for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
        if (base / "cgroup.procs").exists() and not (base / "pids.max").exists():
            group = base / name
            try:
                group.mkdir()
            except OSError:
                continue
            if (group / "pids.max").exists():
                break
            group.rmdir()
    else:
        pytest.skip("no pids cgroup can be made here (needs root and the pids controller)")
    try:
        yield group
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def test_a_thread_that_cannot_start_costs_a_request_or_a_cycle_not_the_daemon(
        tmp_path: Path, daemons: Callable[..., DaemonProc], numba_kernels_compiled: None) -> None:
    with pids_cgroup(f"qprof-test-{os.getpid()}-{time.monotonic_ns()}") as group:
        d = daemons("--root", str(make_root(tmp_path)), *FAST_CYCLE, "--first-cycle-delay",
                    "4", "--retry", "1")
        port = metrics_port(d)
        (group / "cgroup.procs").write_text(str(d.proc.pid))
        try:
            (group / "pids.max").write_text((group / "pids.current").read_text().strip())
            # No thread can start: a scrape is dropped (one line), the cycle is skipped.
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
                assert closed_by_peer(s, 10)
            d.wait_log("cannot start a thread for it")
            d.wait_log("cannot start the measurement thread")
            time.sleep(2.5)  # two more watch ticks and a retried cycle
            assert d.proc.poll() is None, d.log
            assert "Traceback" not in d.log
        finally:
            (group / "pids.max").write_text("max")
        # Room again: the next retry runs the cycle, and scrapes work.
        d.wait_log("cycle finished", timeout=90)
        assert "qprof_cpu_online" in d.scrape()
        [run] = [r for r in d.store().runs(5) if r.status == "finished"]
        assert run.measurements >= 1
        skipped = [a for a in d.store().alerts.recent() if a.kind == "cycle_skipped"]
        assert len(skipped) == 1 and "TasksMax" in skipped[0].message
        d.signal(signal.SIGTERM)
        assert d.wait_exit(10) == 0


# -- 2. the store replaced under a running daemon --------------------------------------------

def _integrity(path: Path) -> str:
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
            return str(con.execute("PRAGMA integrity_check").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        return str(exc)


def test_store_replaced_under_the_daemon_is_noticed_and_put_back(
        tmp_path: Path, daemons: Callable[..., DaemonProc], numba_kernels_compiled: None) -> None:
    from qprof.service.alerts import Alert
    from qprof.service.store import Store

    state = tmp_path / "state"
    store = Store(state / "qprof.db")  # a store with history, as after weeks of running
    for i in range(3000):
        store.alerts.add(Alert(ts=time.time(), kind="cap_started", severity="info",
                               message=f"old alert {i}"))
    store.close()
    d = daemons("--root", str(make_root(tmp_path)), *FAST_CYCLE, "--first-cycle-delay", "4",
                state_dir=state)
    db = state / "qprof.db"
    copy = state / "t"
    copy.write_bytes(db.read_bytes())  # cp qprof.db t; truncate -s 1000 t; mv t qprof.db
    os.truncate(copy, 1000)
    os.rename(copy, db)
    d.wait_log("was replaced by another file while the daemon had it open")
    d.wait_log("cycle finished", timeout=90)
    assert _integrity(db) == "ok"
    [aside] = state.glob("qprof.db.replaced-*")
    assert aside.stat().st_size == 1000  # the file found there, kept as it was
    s = d.store()
    assert len([a for a in s.alerts.recent(5000) if a.kind == "cap_started"]) == 3000
    [run] = s.runs(5)
    assert run.status == "finished" and run.measurements >= 1  # written after the swap
    [alert] = [a for a in s.alerts.recent() if a.kind == "degraded"
               and a.details.get("what") == "store"]
    assert str(aside) in alert.message
    d.signal(signal.SIGTERM)
    assert d.wait_exit(10) == 0
    assert _integrity(db) == "ok"
    assert "Traceback" not in d.log


# -- 4. a full disk, then space again -------------------------------------------------------

def _fill(directory: Path) -> Path:
    filler = directory / "filler"
    with open(filler, "wb") as fh, contextlib.suppress(OSError):
        while True:
            fh.write(b"\0" * 65536)
            fh.flush()
    return filler


def test_full_disk_then_space_again_alerts_holds_and_writes_the_results(
        tmp_path: Path, daemons: Callable[..., DaemonProc], numba_kernels_compiled: None) -> None:
    with tmpfs(tmp_path / "state", "2m") as state:
        d = daemons("--root", str(make_root(tmp_path)), *FAST_CYCLE, "--first-cycle-delay",
                    "3", state_dir=state)
        filler = _fill(state)
        d.wait_log("alert degraded: degraded: store: writing failed", timeout=90)
        d.wait_log("cycle finished", timeout=90)
        scraped = d.scrape()
        assert 'qprof_degraded{reason="store_write_failed",what="store"} 1.0' in scraped, \
            (scraped, d.log)
        assert not [r for r in d.runs_with("finished")]  # nothing of it on disk yet
        filler.unlink()
        d.wait_log("store: writing works again; no longer degraded", timeout=30)
        assert 'what="store"' not in d.scrape()
        s = d.store()
        [run] = s.runs(5)
        assert run.status == "finished" and run.measurements >= 1  # closed, results in
        assert [a for a in s.alerts.recent() if a.kind == "degraded"
                and a.details.get("what") == "store"]  # the alert too, once it fitted
        assert re.search(r'qprof_verify_seconds\{backend="numba",cpu="0",'
                         r'suite="ML-DSA-44"\}', d.scrape())
        d.signal(signal.SIGTERM)
        assert d.wait_exit(10) == 0
        assert _integrity(state / "qprof.db") == "ok"
        assert "Traceback" not in d.log


# -- 5. two daemons on one store through a symlink ------------------------------------------

def test_second_daemon_on_a_symlinked_store_exits_2_and_aborts_nothing(
        tmp_path: Path, daemons: Callable[..., DaemonProc], numba_kernels_compiled: None) -> None:
    root = make_root(tmp_path)
    first = daemons(*_slow_cycle(root), state_dir=tmp_path / "one")
    running = wait_for("a running run", lambda: first.runs_with("running"), timeout=120)
    other = tmp_path / "two"
    other.mkdir()
    (other / "qprof.db").symlink_to(tmp_path / "one" / "qprof.db")
    second = daemons(*_slow_cycle(root), state_dir=other, wait_started=False)
    assert second.wait_exit(30) == 2
    lines = second.log.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in second.log, second.log
    assert f"pid {first.proc.pid}" in lines[0] and "is in use by another qprof daemon" \
        in lines[0] and str(other / "qprof.db") in lines[0]
    assert first.proc.poll() is None
    assert running[0] in first.runs_with("running") + first.runs_with("finished")
    assert not first.runs_with("aborted")
    assert "cycle_aborted" not in [a.kind for a in first.store().alerts.recent()]


# -- 13. messages: an IPv6 metrics URL, --interval 0 and -5 ---------------------------------

def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
def test_ipv6_listen_logs_a_url_that_works(tmp_path: Path,
                                          daemons: Callable[..., DaemonProc]) -> None:
    d = daemons("--root", str(make_root(tmp_path)), *NO_CYCLE, listen="[::1]:0")
    assert d.metrics_url.startswith("http://[::1]:")
    assert "qprof_cpu_online" in d.scrape()
