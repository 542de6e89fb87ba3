"""The engine in-process: records stream to the sink, stop aborts cleanly, progress."""

from __future__ import annotations

import os
import threading

import pytest

from qprof.measure.config import BenchConfig, ProgressEvent
from qprof.measure.engine import EngineError, choose_timer, run_bench
from qprof.measure.records import End, Measurement, Meta, Note

pytestmark = pytest.mark.slow


def _backend() -> str:
    from qprof.verify import available_backends

    st = available_backends()
    for name in ("liboqs", "rustcrypto"):
        if st[name].available:
            return name
    pytest.skip("neither liboqs nor rustcrypto available: " + st["liboqs"].reason)


@pytest.fixture(autouse=True)
def _fixture_cache(tmp_path_factory, monkeypatch):
    # Keys and signatures are cached between runs; keep the tests' out of ~/.cache.
    monkeypatch.setenv("QPROF_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "qprof-cache"))


def _config(**kw) -> BenchConfig:
    base = dict(cpus=[max(os.sched_getaffinity(0))], suites=["ML-DSA-44", "ML-DSA-87"],
                backends=[_backend()], mode="check", budget_s=0.03, rounds=3, max_rounds=3,
                command=["pytest"], interleave_block_s=0.0)  # the seeds' A/B rounds
    base.update(kw)
    return BenchConfig(**base)


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
    path = tmp_path / ms[0].pyperf_json
    bench = next(b for b in pyperf.BenchmarkSuite.load(str(path)).get_benchmarks()
                 if b.get_name() == f"ML-DSA-44/{_backend()}/verify")
    run0 = next(r for r in bench.get_runs() if r.get_metadata()["qprof_round"] == 0)
    m0 = next(m for m in ms if m.suite == "ML-DSA-44" and m.round == 0)
    assert [round(v * 1e9, 1) for v in run0.values] == m0.samples_ns
    assert "turns of 2 ms" in run0.get_metadata()["qprof_interleaved"]
    out = subprocess.run([sys.executable, "-m", "pyperf", "stats", str(path)],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    meta = records[0]
    assert isinstance(meta, Meta) and "turns of 2 ms" in meta.settings["interleaving"]


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
    import qprof.verify
    from qprof.measure import worker
    from qprof.measure.fixtures import MESSAGE, Fixture, flip_one_byte

    class Always:
        def __init__(self, answer: bool) -> None:
            self.answer = answer

        def verify(self, pk, msg, sig, ctx=b"") -> bool:
            return self.answer

    answers = {"liboqs": True, "numba": False}
    monkeypatch.setattr(qprof.verify, "get_verifier", lambda b, s: Always(answers[b]))
    fx = Fixture("ML-DSA-44", b"p", MESSAGE, b"sig", flip_one_byte(b"sig"), b"", "test")
    for op, calls, checks in (("dual_shadow", 4, 4), ("dual_enforce", 4, 4)):
        state = worker.TaskState()
        task = {"suite": "ML-DSA-44", "backend": "liboqs+numba", "operation": op,
                "dual": ["liboqs", "numba"]}
        func = worker.make_time_func(task, {"ML-DSA-44": fx}, state)
        state.checks = state.disagreements = 0
        state.examples.clear()
        assert func(calls) > 0
        assert state.checks == checks and state.disagreements == checks
        ex = state.examples[0]
        assert ex["backends"] == {"liboqs": True, "numba": False}
        assert ex["signature_hex"] == b"sig".hex() and ex["message_hex"] == MESSAGE.hex()
    # enforce on an invalid signature: the first verifier rejects, the second is skipped.
    answers["liboqs"] = False
    state = worker.TaskState()
    task = {"suite": "ML-DSA-44", "backend": "liboqs+numba",
            "operation": "dual_enforce_invalid", "dual": ["liboqs", "numba"]}
    func = worker.make_time_func(task, {"ML-DSA-44": fx}, state)
    state.checks = 0
    func(5)
    assert state.checks == 0 and state.disagreements == 0 and state.wrong_verdicts == 0
