"""The engine in-process: records stream to the sink, stop aborts cleanly, progress."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from backends import compiled_backend
from faults import QPROF

from qprof.consensus.estimate.stopping import StoppingRule, rule_for
from qprof.measure.config import BenchConfig, ProgressEvent
from qprof.measure.engine import EngineError, choose_timer, run_bench
from qprof.measure.jsonl import JsonlSink, read_run
from qprof.measure.records import End, Measurement, Meta, Note

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _fixture_cache(tmp_path_factory, monkeypatch):
    # Keys and signatures are cached between runs; keep the tests' out of ~/.cache.
    monkeypatch.setenv("QPROF_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "qprof-cache"))


def _config(**kw) -> BenchConfig:
    base = dict(cpus=[max(os.sched_getaffinity(0))], suites=["ML-DSA-44", "ML-DSA-87"],
                backends=[compiled_backend()], mode="check", budget_s=0.03, rounds=3, max_rounds=3,
                command=["pytest"], interleave_block_s=0.0,  # the seeds' A/B rounds
                min_cpu_s=0.0)  # the rule alone ends the rounds (the floor: its own test)
    base.update(kw)
    return BenchConfig(**base)


def _judged(**kw) -> tuple[BenchConfig, StoppingRule]:
    """An adaptive run's config and the stopping rule its caller hands the engine."""
    return rule_for(_config(adaptive=True, **kw))


@pytest.mark.fresh
def test_stop_aborts_after_the_current_worker():
    stop = threading.Event()
    records = []

    def sink(rec):
        records.append(rec)
        if isinstance(rec, Measurement):
            stop.set()  # as the daemon does on shutdown

    events: list[ProgressEvent] = []
    summary = run_bench(_config(rounds_per_worker=1), sink, progress=events.append, stop=stop)
    assert summary.status == "aborted"
    assert isinstance(records[0], Meta)
    end = records[-1]
    assert isinstance(end, End) and end.status == "aborted"
    measured = [r for r in records if isinstance(r, Measurement)]
    assert {m.round for m in measured} == {0}  # the first worker finished, no other started
    assert events and all(0.0 <= e.fraction <= 1.0 for e in events)
    assert any(e.cpu is not None and e.suite for e in events)


@pytest.mark.fresh
def test_interleaved_rounds_time_unit_and_suite_together(tmp_path):
    """check mode's default: every round has the unit and the suite, in turns; pyperf's
    JSON holds the values the worker timed (and pyperf stats reads it)."""
    import subprocess
    import sys

    import pyperf

    records = []
    summary = run_bench(_config(interleave_block_s=0.002, pyperf_dir=tmp_path,
                                record_base=tmp_path), records.append)
    assert summary.status == "finished"
    ms = [r for r in records if isinstance(r, Measurement)]
    assert sorted({(m.suite, m.round) for m in ms}) == [
        (s, r) for s in ("ML-DSA-44", "ML-DSA-87") for r in range(3)]
    for m in ms:
        assert m.turn_size and m.turn_size >= 1 and m.samples_ns
        assert m.n == len(m.samples_ns)
    # The round's ticks of the measured CPU (/proc/stat), shared by its suites.
    for r in range(3):
        (ticks,) = {(m.steal_ticks, m.cpu_ticks) for m in ms if m.round == r}
        assert ticks[0] is not None and ticks[1] is not None and 0 <= ticks[0] <= ticks[1]
    path = tmp_path / ms[0].pyperf_json
    bench = next(b for b in pyperf.BenchmarkSuite.load(str(path)).get_benchmarks()
                 if b.get_name() == f"ML-DSA-44/{compiled_backend()}/verify")
    run0 = next(r for r in bench.get_runs() if r.get_metadata()["qprof_round"] == 0)
    m0 = next(m for m in ms if m.suite == "ML-DSA-44" and m.round == 0)
    assert [round(v * 1e9, 1) for v in run0.values] == m0.samples_ns
    assert "turns of 2 ms" in run0.get_metadata()["qprof_interleaved"]
    out = subprocess.run([sys.executable, "-m", "pyperf", "stats", str(path)],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    meta = records[0]
    assert isinstance(meta, Meta) and "turns of 2 ms" in (meta.settings.interleaving or "")


@pytest.mark.fresh
def test_records_stream_and_unknown_cpu_is_a_note():
    records = []
    summary = run_bench(_config(cpus=[max(os.sched_getaffinity(0)), 99]), records.append)
    assert summary.status == "partial"
    assert 99 in summary.aborted_cpus
    notes = [r for r in records if isinstance(r, Note) and r.kind == "cpu_aborted"]
    assert notes and notes[0].cpu == 99 and notes[0].level == "error"
    rounds = sorted({(m.suite, m.round) for m in records if isinstance(m, Measurement)})
    assert rounds == [("ML-DSA-44", 0), ("ML-DSA-44", 2), ("ML-DSA-87", 1)]
    assert isinstance(records[-1], End) and records[-1].status == "partial"
    # All three rounds ran in one worker process: one pyperf benchmark per round.
    assert all(m.pyperf_json is None for m in records if isinstance(m, Measurement))


@pytest.mark.fresh
def test_bad_names_fail_before_measuring():
    with pytest.raises(EngineError, match="unknown suite"):
        run_bench(_config(suites=["ML-DSA-99"]), lambda r: None)
    with pytest.raises(EngineError, match="unknown backend"):
        run_bench(_config(backends=["nope"]), lambda r: None)
    with pytest.raises(EngineError, match="unknown timer"):
        choose_timer("sundial")


def test_auto_timer_follows_load(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/loadavg").write_text("0.05 0.10 0.10 1/100 5\n")
    assert choose_timer("auto", str(tmp_path)) == ("wall", None)
    (tmp_path / "proc/loadavg").write_text("3.50 2.00 1.00 4/100 5\n")
    timer, note = choose_timer("auto", str(tmp_path))
    assert timer == "cpu" and "busy" in note
    assert choose_timer("wall", str(tmp_path)) == ("wall", None)


def test_worker_counts_disagreements_and_keeps_inputs(monkeypatch):
    """Two verifiers that disagree (a stand-in: real ones never have in our runs)."""
    from qprof.measure.fixtures import MESSAGE, Fixture, flip_one_byte
    from qprof.measure.protocol import Task
    from qprof.measure.timing import Clock, TaskState, make_time_func

    class Always:
        def __init__(self, answer: bool) -> None:
            self.answer = answer

        def verify(self, pk, msg, sig, ctx=b"") -> bool:
            return self.answer

    answers = {"liboqs": True, "numba": False}
    monkeypatch.setattr("qprof.measure.timing.get_verifier", lambda b, s: Always(answers[b]))
    fx = Fixture("ML-DSA-44", b"p", MESSAGE, b"sig", flip_one_byte(b"sig"), b"", "test")
    for op, calls, checks in (("dual_shadow", 4, 4), ("dual_enforce", 4, 4)):
        state = TaskState()
        task = Task("ML-DSA-44", "liboqs+numba", op, 0.1, 1, 10, dual=("liboqs", "numba"))
        func = make_time_func(task, {"ML-DSA-44": (fx,)}, state, Clock.of("wall"))
        state.reset()
        assert func(calls) > 0
        assert state.checks == checks and state.disagreements == checks
        ex = state.examples[0]
        assert ex["backends"] == {"liboqs": True, "numba": False}
        assert ex["signature_hex"] == b"sig".hex() and ex["message_hex"] == MESSAGE.hex()
    # enforce on an invalid signature: the first verifier rejects, the second is skipped.
    answers["liboqs"] = False
    state = TaskState()
    task = Task("ML-DSA-44", "liboqs+numba", "dual_enforce_invalid", 0.1, 1, 10,
                dual=("liboqs", "numba"))
    func = make_time_func(task, {"ML-DSA-44": (fx,)}, state, Clock.of("wall"))
    state.reset()
    func(5)
    assert state.checks == 0 and state.disagreements == 0 and state.wrong_verdicts == 0


# ---------------------------------------------------------------- stop, ETA, extra rounds


def _children(parent: int, marker: str = "qprof.measure.worker") -> list[int]:
    """Live child processes of ``parent`` whose command line holds ``marker`` (/proc)."""
    from pathlib import Path

    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "(comm)": state, ppid, ...
        if int(fields[1]) == parent and fields[0] != "Z" and marker in cmd:
            pids.append(int(d.name))
    return pids


def _alive(pid: int) -> bool:
    """Not gone and not a zombie (a container's init may not reap orphans at once)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.fresh
def test_stop_terminates_the_running_worker(tmp_path, monkeypatch):
    """stop set mid-worker: the worker is killed, not waited for; what it finished is
    kept, the rest is aborted, the run's temp dir is removed."""
    import tempfile
    import time

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the run's dir goes
    budget, rounds = 3.0, 3  # one worker of ~9 s: A, B, A of 3 s each
    stop, first_done = threading.Event(), threading.Event()
    workers: list[int] = []
    records: list = []

    def progress(ev: ProgressEvent) -> None:
        if ev.message == "done" and not first_done.is_set():
            workers.extend(_children(os.getpid()))
            first_done.set()

    cfg = _config(budget_s=budget, rounds=rounds, max_rounds=rounds, max_n=10**6)
    out: dict = {}
    thread = threading.Thread(
        target=lambda: out.update(summary=run_bench(cfg, records.append, progress, stop)))
    thread.start()
    assert first_done.wait(120), "the worker never finished a task"
    stop.set()
    t_stop = time.monotonic()
    thread.join(60)
    waited = time.monotonic() - t_stop
    assert not thread.is_alive()
    # Well before the worker would have ended its remaining ~6 s of rounds.
    assert waited < budget * rounds / 2, waited
    assert workers and not any(_alive(pid) for pid in workers)
    assert out["summary"].status == "aborted"
    end = records[-1]
    assert isinstance(end, End) and end.status == "aborted"
    measured = {(m.suite, m.round) for m in records if isinstance(m, Measurement)}
    assert measured == {("ML-DSA-44", 0)}  # finished before the stop: kept
    assert not list(tmp_path.glob("qprof-run-*"))
    assert not any(isinstance(r, Note) and r.kind == "cpu_aborted" for r in records)


@pytest.mark.fresh
def test_worker_dies_with_its_engine(tmp_path):
    """kill -9 of the process running the engine (a daemon): its worker does not time on."""
    import signal
    import subprocess
    import sys
    import time

    script = (
        "import os\n"
        "from qprof.measure.config import BenchConfig\n"
        "from qprof.measure.engine import run_bench\n"
        f"run_bench(BenchConfig(cpus=[{max(os.sched_getaffinity(0))}], suites=['ML-DSA-44'],"
        f" backends=['{compiled_backend()}'], mode='check', budget_s=30.0, rounds=1, max_rounds=1,"
        " max_n=10**7, interleave_block_s=0.0, command=['pytest']), lambda r: None)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    parent = subprocess.Popen([sys.executable, "-c", script], env=env)
    try:
        deadline = time.monotonic() + 120
        workers: list[int] = []
        while not workers and time.monotonic() < deadline and parent.poll() is None:
            time.sleep(0.2)
            workers = _children(parent.pid)
        assert workers, "no worker started"
        time.sleep(1.0)  # past the worker's start-up (prctl, imports)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 20
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(p) for p in workers)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_worker_notices_an_orphaned_start():
    from qprof.measure import worker

    assert not worker.parent_gone(os.getppid())
    assert not worker.parent_gone(None)  # an older engine's job: no check
    assert worker.parent_gone(os.getppid() + 1 if os.getppid() != 1 else 2)


def _two_verifiers() -> tuple[str, str]:
    from qprof.verify import available_backends

    st = available_backends()
    ok = [b for b in ("liboqs", "rustcrypto", "openssl") if st[b].available]
    if len(ok) < 2:
        pytest.skip("two of liboqs, rustcrypto, openssl are needed for a verifier pair")
    return ok[0], ok[1]


@pytest.mark.fresh
def test_extra_rounds_time_only_the_verdict_and_progress_is_honest():
    """Adaptive extra rounds time verify alone (the dual pairs and invalid signatures only
    in the base rounds); the bar never goes back, ends at 1, and the ETA stays > 0
    while rounds remain, extra ones included."""
    pair = _two_verifiers()
    events: list[ProgressEvent] = []
    records: list = []
    cfg, rule = _judged(backends=[pair[0]], dual=pair, rounds=3, max_rounds=7,
                        target_ci_bp=0.0,  # never sure: every allowed pair is added
                        operations=["verify", "verify_invalid", "dual_shadow", "dual_enforce"])
    summary = run_bench(cfg, records.append, progress=events.append, rule=rule)
    assert summary.status == "finished"
    ms = [r for r in records if isinstance(r, Measurement)]
    assert {m.round for m in ms if m.operation == "verify"} == set(range(7))
    assert {m.round for m in ms if m.operation != "verify"} <= {0, 1, 2}
    assert {m.operation for m in ms if m.round < 3} == {
        "verify", "verify_invalid", "dual_shadow", "dual_enforce"}
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    working = [e for e in events[:-1] if e.eta_s is not None]
    assert working and all(e.eta_s > 0 for e in working)
    # Once an extra pair is added, the plan (and so the ETA) holds it: the bar is short of
    # the end when the pair starts.
    extra = [e for e in events if e.round is not None and e.round >= 3]
    assert extra and all(e.fraction < 1.0 for e in extra)


@pytest.mark.fresh
def test_one_pyperf_file_per_run_and_cpu_compare_to_works(tmp_path):
    """Two runs: one pyperf file each for the CPU; pyperf compare_to reads them, and the
    timer metadata names the clock that timed the values."""
    import subprocess
    import sys

    import pyperf

    files = []
    for timer in ("wall", "cpu"):
        out = tmp_path / timer
        summary = run_bench(_config(pyperf_dir=out, record_base=out, timer=timer), lambda r: None)
        assert summary.status == "finished"
        (path,) = out.iterdir()
        assert path.name == f"{summary.run_id}-cpu{summary.cpus[0]}.json"
        clock = "thread_time" if timer == "cpu" else "perf_counter"
        for bench in pyperf.BenchmarkSuite.load(str(path)).get_benchmarks():
            assert all(clock in r.get_metadata()["timer"] for r in bench.get_runs())
        files.append(str(path))
    res = subprocess.run([sys.executable, "-m", "pyperf", "compare_to", *files],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert "ML-DSA-87" in res.stdout


@pytest.mark.fresh
def test_interleaved_extra_rounds_run_in_the_base_rounds_worker(tmp_path):
    """Interleaved adaptive rounds: the extra rounds are timed by the base rounds' worker
    (each new process has its own quiet speed, which would widen the round spread), so
    one pyperf file holds every round, and pyperf stats reads it."""
    import subprocess
    import sys

    import pyperf

    records: list = []
    events: list[ProgressEvent] = []
    cfg, rule = _judged(interleave_block_s=0.002, rounds=3, max_rounds=7, target_ci_bp=0.0,
                        pyperf_dir=tmp_path, record_base=tmp_path)
    summary = run_bench(cfg, records.append, progress=events.append, rule=rule)
    assert summary.status == "finished"
    ms = [r for r in records if isinstance(r, Measurement)]
    assert sorted({(m.suite, m.round) for m in ms}) == [
        (s, r) for s in ("ML-DSA-44", "ML-DSA-87") for r in range(7)]
    assert len({m.pyperf_json for m in ms}) == 1  # one worker process
    assert len({(m.suite, m.round) for m in ms}) == len(ms)  # each round collected once
    path = tmp_path / ms[0].pyperf_json
    for bench in pyperf.BenchmarkSuite.load(str(path)).get_benchmarks():
        assert sorted(r.get_metadata()["qprof_round"] for r in bench.get_runs()) == list(
            range(7))
    out = subprocess.run([sys.executable, "-m", "pyperf", "stats", str(path)],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert not _children(os.getpid())


@pytest.mark.fresh
def test_stop_ends_a_worker_waiting_for_extra_rounds():
    """stop after an extra pair: the serving worker is terminated, the rounds kept."""
    stop = threading.Event()
    records: list = []

    def sink(rec):
        records.append(rec)
        if isinstance(rec, Measurement) and rec.round == 3:
            stop.set()

    cfg, rule = _judged(interleave_block_s=0.002, rounds=3, max_rounds=9,
                        rounds_per_worker=3,  # base rounds in one worker, which serves the extra
                        target_ci_bp=0.0)
    summary = run_bench(cfg, sink, stop=stop, rule=rule)
    assert summary.status == "aborted"
    assert {m.round for m in records if isinstance(m, Measurement)} == set(range(5))
    assert not any(_alive(p) for p in _children(os.getpid()))


def test_check_times_each_round_in_its_own_worker_process():
    """A process can have its own speed for a suite (where its stack and buffers landed):
    `qprof check` starts one per round, extra pairs included, so the rounds the interval
    resamples hold that too; other modes keep their base rounds in one process."""
    from qprof.measure.plan import SPAWN_COST_S, Plan

    check = Plan(BenchConfig(mode="check", suites=["ML-DSA-44"], command=["pytest"]))
    assert check.per_worker == 1 and not check.serves
    assert check.pair_work() == pytest.approx(check.pair_budget() + 2 * SPAWN_COST_S)
    shared = Plan(BenchConfig(mode="check", suites=["ML-DSA-44"], rounds_per_worker=7,
                              command=["pytest"]))
    assert shared.serves and shared.pair_work() == shared.pair_budget()
    assert Plan(BenchConfig(mode="quick", suites=["ML-DSA-44"], command=["pytest"])
                ).per_worker == 5


@pytest.mark.fresh
def test_the_parent_keeps_off_the_measured_cpu_while_a_worker_runs_there():
    """Every thread of the measuring process (the monitor's screen too) leaves the measured
    CPU for the run and gets its CPUs back afterwards; the worker still runs there."""
    from qprof.measure.processes import parent_off_cpu

    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        pytest.skip("needs two CPUs")
    cpu = max(allowed)
    seen: dict[str, set[int]] = {}
    started = threading.Event()
    release = threading.Event()

    def other() -> None:  # a thread that was there before, as the monitor's UI
        started.set()
        release.wait(10)
        seen["other"] = os.sched_getaffinity(0)

    t = threading.Thread(target=other)
    t.start()
    started.wait(10)
    with parent_off_cpu(cpu):
        seen["engine"] = os.sched_getaffinity(0)
        release.set()
        t.join(10)
    assert seen == {"engine": allowed - {cpu}, "other": allowed - {cpu}}
    assert os.sched_getaffinity(0) == allowed
    summary = run_bench(_config(cpus=[cpu]), lambda r: None)
    assert summary.status == "finished" and os.sched_getaffinity(0) == allowed


def test_each_timed_call_takes_the_next_signature_of_the_pool(monkeypatch):
    """What one signature costs to verify depends on it (SLH-DSA: 10 % between 8 fresh
    ones): a task's values take the pool's keys and signatures in turn."""
    from qprof.measure.fixtures import MESSAGE, Fixture, flip_one_byte
    from qprof.measure.protocol import Task
    from qprof.measure.timing import Clock, TaskState, make_time_func

    seen: list[bytes] = []

    class Recording:
        def verify(self, pk, msg, sig, ctx=b"") -> bool:
            seen.append(pk)
            return True

    monkeypatch.setattr("qprof.measure.timing.get_verifier", lambda b, s: Recording())
    pool = tuple(Fixture("ML-DSA-44", bytes([k]), MESSAGE, b"sig", flip_one_byte(b"sig"),
                         b"", "test") for k in range(3))
    state = TaskState()
    func = make_time_func(Task("ML-DSA-44", "liboqs", "verify", 0.1, 1, 10),
                          {"ML-DSA-44": pool}, state, Clock.of("wall"))
    func(1)  # a warm-up call: not counted once the timing starts
    state.reset()
    seen.clear()  # and the untimed first calls
    for _ in range(6):
        func(2)
    # Timed value j verified signature j % 3: the record says so (pool_size), and the
    # estimator's interval resamples the signatures.
    assert seen == [bytes([k]) for k in (0, 0, 1, 1, 2, 2) * 2]
    assert state.pool_size == 3 and state.calls == 6


@pytest.mark.fresh
def test_base_rounds_stop_at_the_time_limit_after_three():
    """A worker starved by others' load (base rounds of 1.2 s took 5-27 s on the shared
    Xeon guest) must not take `qprof check` past its time limit: past it, no base round
    starts after the third, and a note says why."""
    records: list = []
    summary = run_bench(_config(rounds=7, max_rounds=7, time_limit_s=0.01), records.append)
    assert summary.status == "finished"
    assert {m.round for m in records if isinstance(m, Measurement)} == {0, 1, 2}
    assert any(isinstance(n, Note) and n.kind == "time_limit" for n in records)


class _CountingRule:
    """A stopping rule that always answers ``answer`` pairs and counts the questions."""

    def __init__(self, answer: int) -> None:
        self.answer, self.asked = answer, 0

    def pairs_needed(self, measurements, cpu) -> int:
        self.asked += 1
        return self.answer

    def cpu_notes(self, measurements, cpu) -> list:
        return []


@pytest.mark.fresh
@pytest.mark.parametrize(("answer", "asked", "rounds"), [(0, 1, 3), (1, 4, 11), (100, 1, 11)])
def test_the_rule_is_asked_again_only_after_the_pairs_it_said_it_needs(answer, asked, rounds):
    """Each answer is a bootstrap the measured CPU waits for (0.4-0.65 s on the AMD EPYC
    guest): the engine adds up to MAX_PAIRS_UNASKED of the pairs the rule says it needs
    before asking again, and stops at once on 0."""
    from qprof.measure.adaptive import MAX_PAIRS_UNASKED

    assert MAX_PAIRS_UNASKED == 4  # the parameters below count with it
    rule = _CountingRule(answer)
    records: list = []
    summary = run_bench(_config(adaptive=True, rounds=3, max_rounds=11, budget_s=0.01),
                        records.append, rule=rule)
    assert summary.status == "finished"
    assert {m.round for m in records if isinstance(m, Measurement)} == set(range(rounds))
    assert rule.asked == asked


@pytest.mark.fresh
def test_a_sure_rule_is_first_asked_past_the_cpus_floor():
    """Check mode measures a CPU for min_cpu_s before the rule's "sure" may end it (a
    shared host's ratio wanders from minute to minute; a few seconds' interval misses
    it), within the CPU's share of the time limit."""
    from qprof.measure.adaptive import floor_s

    assert floor_s(50.0, 60.0, 1) == 50.0 and floor_s(50.0, 60.0, 2) == 30.0
    assert floor_s(50.0, None, 3) == 50.0
    # The floor counts from the CPU's start, worker start-up included: a loaded or fresh
    # machine took more than 1.5 s for the three base rounds (the floor was behind them
    # and the rule, asked once, ended the run). The floor is set past the base rounds'
    # time measured here, on this machine, now.
    t0 = time.monotonic()
    run_bench(_config(adaptive=True, rounds=3, max_rounds=3, budget_s=0.01), lambda _r: None,
              rule=_CountingRule(0))
    base_s = time.monotonic() - t0
    rule = _CountingRule(0)
    records: list = []
    summary = run_bench(_config(adaptive=True, rounds=3, max_rounds=401, budget_s=0.01,
                                min_cpu_s=2 * base_s + 1.0, time_limit_s=600.0),
                        records.append, rule=rule)
    assert summary.status == "finished"
    ms = [m for m in records if isinstance(m, Measurement)]
    rounds = {m.round for m in ms}
    assert len(rounds) > 3 and len(rounds) % 2 == 1 and len(rounds) < 401
    # Twice: half-way to the floor for the ETA only (PairCredit.preview), then past the
    # floor, where it said sure.
    assert rule.asked == 2
    first = min(m.finished_at or 0.0 for m in ms if m.round == 0)
    assert max(m.finished_at or 0.0 for m in ms) - first >= 1.0


def test_rounds_start_apart_in_the_pool_and_cover_it():
    """A check round takes 100 of 256 SLH-DSA-SHAKE-256s signatures: rounds that all began
    at signature 0 estimated the pool's first 100 only. Starting at golden-ratio steps,
    a run's rounds verify every signature, about equally often."""
    from collections import Counter

    from qprof.measure.fixtures import pool_start

    assert pool_start(0, 256) == 0 and pool_start(5, 1) == 0
    for rounds in (7, 41, 81):
        seen = Counter((pool_start(r, 256) + j) % 256 for r in range(rounds) for j in range(100))
        assert len(seen) == 256
        assert max(seen.values()) - min(seen.values()) <= 3


def test_the_estimator_reads_which_signature_each_value_verified():
    """The records say where each round started in the pool; the paired operations' ids
    follow it (old records without pool_start: from signature 0)."""
    import simulate

    from qprof.consensus.estimate.quiet import paired_ratios, round_quiet
    from qprof.consensus.estimate.reduce import reduce_measurements

    run = simulate.simulate_run(simulate.SHAPES_BY_NAME["quiet"], 3,
                                simulate.Config(rounds=7))
    ms = [r for r in run.records if isinstance(r, Measurement)]
    assert {m.pool_start for m in ms if m.round == 0} == {0}
    assert len({m.pool_start for m in ms if m.suite == "SLH-DSA-SHAKE-256s"}) == 7
    red = {k[1]: v for k, v in reduce_measurements(ms).items()}
    unit = red["ML-DSA-44"]
    p = paired_ratios(red["SLH-DSA-SHAKE-256s"], unit, round_quiet(unit))
    assert p is not None and p.ops is not None
    assert len(set(p.ops.signature.tolist())) > 200  # of the pool's 256


@pytest.fixture(scope="module")
def numba_kernels_compiled() -> None:
    from qprof.verify import warm_up

    warm_up("numba", "ML-DSA-44")


def test_interrupted_bench_keeps_every_finished_measurement(
        tmp_path: Path, numba_kernels_compiled: None) -> None:
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


# -- 3. kill -9 of a worker keeps the tasks it finished ---------------------------------------

def _child_pids(pid: int) -> list[int]:
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

    from qprof.measure.config import BenchConfig
    from qprof.measure.engine import run_bench

    monkeypatch.setenv("QPROF_CACHE_DIR", str(tmp_path / "cache"))
    killed: list[int] = []

    def progress(ev: ProgressEvent) -> None:
        if ev.message == "done" and not killed:  # on the engine's thread: the worker waits
            for pid in _child_pids(os.getpid()):
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
