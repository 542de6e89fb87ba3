"""End to end on this machine: `qprof check` and `qprof bench --quick` with real backends.

Small sample counts (hidden --budget) keep each test well under a minute. The liboqs
tests skip when the liboqs shared library is missing; the others use rustcrypto (or
numba) as the verifier, as `qprof check` does without liboqs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qprof.hw.cgroup import CAUSE, own_limit
from qprof.hw.sysfs import parse_cpu_arg
from qprof.measure import hwinfo
from qprof.measure.protocol import WorkerRun

pytestmark = pytest.mark.slow


def _status(name: str):
    from qprof.verify import available_backends

    return available_backends().get(name)


def _cpu() -> int:
    return max(os.sched_getaffinity(0))


@pytest.fixture(autouse=True)
def _fixture_cache(tmp_path_factory, monkeypatch):
    # Keys and signatures are cached between runs; keep the tests' out of ~/.cache.
    monkeypatch.setenv("QPROF_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "qprof-cache"))


def _qprof(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qprof", *args], capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ))


def _check_json(backend: str | None) -> dict:
    args = ["check", "--profile", "qanum", "--cpus", f"{_cpu()},99", "--json",
            "--budget", "0.05", "--max-rounds", "5", "--time-limit", "20"]
    if backend:
        args += ["--backend", backend]
    judged = backend in (None, "liboqs")
    if not judged:
        args += ["--comparison"]
    out = _qprof(*args)
    assert out.returncode in ((0, 1, 3) if judged else (4,)), out.stderr
    data = json.loads(out.stdout)
    assert data["exit_code"] == out.returncode
    assert data["covered"] is {0: True, 1: False}.get(out.returncode)
    # Exit 3: unsure (an interval straddles a binding constant), no reliable estimate, or
    # incomplete (run_gaps: here CPU 99 does not exist, so the run is never whole).
    assert bool(data["unsure"] or data["no_estimate"] or data["gaps"]) is (
        out.returncode == 3)
    assert (data["advice"] is not None) is (out.returncode == 3)
    assert data["profile"] == "qanum"
    # CPU 99 does not exist: that CPU is reported, the other one measured.
    assert "99" in data["aborted_cpus"] and "does not exist" in data["aborted_cpus"]["99"]
    assert "CPU 99" in out.stderr
    suites = {r["suite"]: r for r in data["results"]}
    assert set(suites) == {"ML-DSA-44", "ML-DSA-87", "SLH-DSA-SHAKE-128s",
                           "SLH-DSA-SHAKE-256s"}
    for r in data["results"]:
        assert r["cpu"] == _cpu()
        assert r["median_ns"] > 0
        if judged:
            assert r["basis"] == "node"
            if r["decision"] == "no_estimate":  # too contended: no figure is judged
                assert (r["covered"], r["margin"]) == (None, None)
                assert "measure longer" in r["verdict"]
                continue
            assert r["margin"] == r["vu_constant"] - r["vu_estimate"]
            if r["decision"] == "unsure":
                assert r["covered"] is None and "measure longer" in r["verdict"]
            else:
                assert r["covered"] is (r["vu_estimate"] <= r["vu_constant"])
        else:  # a verifier no node runs alone: figures, never a verdict
            assert (r["basis"], r["covered"], r["margin"]) == ("comparison", None, None)
            assert "not what a node runs" in r["basis_label"]
        lo, hi = r["vu_ci_95"]
        assert lo <= r["vu_estimate"] <= hi  # never an estimate outside its interval
    assert suites["ML-DSA-44"]["vu_estimate"] == 100
    assert suites["ML-DSA-87"]["vu_constant"] == 290
    # Which statistic the estimates used, per CPU and per row, and the method.
    used = data["statistic_used"][f"{_cpu()}/{data['results'][0]['backend']}"]
    assert used["statistic"] in ("median", "p10", "paired") and used["why"] and used["means"]
    for r in data["results"]:
        assert r["statistic_used"] in ("median", "p10", "paired") and r["statistic_why"]
        assert r["estimate_ns"] > 0 and r["round_spread_bp"] is not None
    assert "turns of 4 ms" in data["method"]
    return data


@pytest.mark.fresh
@pytest.mark.liboqs
def test_check_with_liboqs():
    st = _status("liboqs")
    if not st or not st.available:
        pytest.skip(f"liboqs unavailable: {st.reason if st else 'unknown'}")
    data = _check_json(None)
    assert {r["backend"] for r in data["results"]} == {"liboqs"}


@pytest.mark.fresh
def test_check_without_liboqs_uses_another_backend():
    st = _status("rustcrypto")
    if not st or not st.available:
        pytest.skip(f"rustcrypto unavailable: {st.reason if st else 'unknown'}")
    data = _check_json("rustcrypto")
    assert {r["backend"] for r in data["results"]} == {"rustcrypto"}


def test_check_refuses_a_verdict_without_the_profiles_verifier(tmp_path: Path):
    # numba alone: refused unless asked for comparison figures (then exit 4, no verdict).
    res = _qprof("check", "--profile", "qanum", "--backend", "numba", "--cpus", str(_cpu()))
    assert res.returncode == 2
    assert "numba alone is not what a node runs" in res.stderr and "--comparison" in res.stderr
    # liboqs hidden, no backend named: the line says what to install.
    env = dict(os.environ, OQS_INSTALL_PATH=str(tmp_path / "none"), HOME=str(tmp_path))
    res = subprocess.run([sys.executable, "-m", "qprof", "check", "--profile", "qanum",
                          "--json", "--cpus", str(_cpu())],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 2
    err = json.loads(res.stdout)["error"]
    assert "no verdict without liboqs" in err and "install liboqs" in err
    assert "--comparison" in err


@pytest.mark.fresh
def test_bench_quick_writes_jsonl_pyperf_and_report(tmp_path: Path):
    liboqs = _status("liboqs")
    backend = "liboqs" if liboqs and liboqs.available else "rustcrypto"
    st = _status(backend)
    if not st or not st.available:
        pytest.skip(f"{backend} unavailable: {st.reason if st else 'unknown'}")
    out = tmp_path / "run.jsonl"
    res = _qprof("bench", "--quick", "--cpus", str(_cpu()), "--suites",
                 "ML-DSA-44,SLH-DSA-SHAKE-128s", "--backends", backend, "--rounds", "3",
                 "--max-rounds", "3", "--budget", "0.03", "-o", str(out))
    assert res.returncode == 0, res.stderr
    from qprof.measure.jsonl import read_run

    run = read_run(out)
    assert run.problems == []
    assert run.meta is not None and run.end is not None and run.end.status == "finished"
    assert run.meta.versions["pyperf"] and run.meta.versions["python"]
    assert run.meta.cpus and run.meta.cpus[0].cpu == _cpu()
    assert [e.when for e in run.envs] == ["before", "after"]
    ops = {(m.suite, m.operation) for m in run.measurements}
    assert ("ML-DSA-44", "verify") in ops and ("SLH-DSA-SHAKE-128s", "verify") in ops
    assert ("ML-DSA-44", "verify_invalid") in ops
    assert ("ML-DSA-44", "keygen") in ops and ("ML-DSA-44", "sign") in ops
    assert ("SLH-DSA-SHAKE-128s", "sign") not in ops  # "s" signing only with --full
    assert {m.round for m in run.measurements if m.operation == "verify"} == {0, 1, 2}
    if backend == "liboqs":
        assert ("ML-KEM-1024", "kem_decaps") in ops
        dual = [m for m in run.measurements if m.operation == "dual_shadow"]
        assert dual and all(m.checks > 0 and m.disagreements == 0 for m in dual)
        assert run.end.checks > 0 and run.end.disagreements == 0
    # pyperf's own JSON, beside the run, readable by pyperf itself.
    m = run.measurements[0]
    assert m.pyperf_json
    pyperf_file = out.parent / m.pyperf_json
    assert pyperf_file.is_file()
    import pyperf

    bench = pyperf.BenchmarkSuite.load(str(pyperf_file)).get_benchmark(
        f"ML-DSA-44/{backend}/verify")
    # Rounds 0 and 2 (A) ran in one process: one pyperf run each, round in its metadata.
    assert sorted(r.get_metadata()["qprof_round"] for r in bench.get_runs()) == [0, 2]
    stats = subprocess.run([sys.executable, "-m", "pyperf", "stats", str(pyperf_file)],
                           capture_output=True, text=True, timeout=60)
    assert stats.returncode == 0 and "Median" in stats.stdout
    report = _qprof("report", str(out))
    assert report.returncode == 0, report.stderr
    assert "## Signature verification and Verify Units" in report.stdout
    # Without a CPU quota (issue 50), no throttling is recorded, said or priced.
    limit = own_limit()
    if limit is None or limit.cpus is None:
        lines = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
        assert not [x for x in lines if x["type"] == "throttled"]
        assert CAUSE not in res.stderr and CAUSE not in out.read_text()
        assert "CPU quota" not in report.stdout


def test_cpu_problems(tmp_path: Path):
    root = tmp_path
    for cpu, online in ((0, "1"), (1, "0")):
        d = root / "sys/devices/system/cpu" / f"cpu{cpu}"
        d.mkdir(parents=True)
        (d / "online").write_text(online + "\n")
    assert "offline" in (hwinfo.cpu_problem(1, root) or "")
    assert "does not exist" in (hwinfo.cpu_problem(7, root) or "")
    assert parse_cpu_arg("0,2-3") == [0, 2, 3]
    with pytest.raises(ValueError):
        parse_cpu_arg("3-1")
    assert hwinfo.format_cpus([0, 1, 2, 5]) == "0-2,5"


def test_bad_cpu_list_is_an_error():
    res = _qprof("check", "--cpus", "x", "--json")
    assert res.returncode == 2
    assert json.loads(res.stdout)["error"].startswith("--cpus")


def test_bench_on_a_missing_cpu_only_writes_a_clear_run(tmp_path: Path):
    out = tmp_path / "none.jsonl"
    res = _qprof("bench", "--cpus", "99", "--quick", "-o", str(out))
    assert res.returncode == 2
    assert "CPU 99" in res.stderr and "does not exist" in res.stderr
    from qprof.measure.jsonl import read_run

    run = read_run(out)
    assert run.problems == []
    assert run.end is not None and run.end.status == "aborted"
    assert any(n.kind == "cpu_aborted" and n.cpu == 99 for n in run.notes)


def test_bad_profile_is_exit_2_with_the_reason(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text('unit_suite = "ML-DSA-44"\nmax_block_verify_units = 1\n'
                   '[verify_units]\n"ML-DSA-44" = "x"\n')
    res = _qprof("check", "--profile", str(bad), "--json")
    assert res.returncode == 2
    err = json.loads(res.stdout)["error"]
    assert str(bad) in err and "verify_units" in err and "integer" in err
    res = _qprof("check", "--profile", "no-such-chain")
    assert res.returncode == 2 and "no-such-chain" in res.stderr


def test_worker_refusing_affinity_exits_3_with_the_reason(tmp_path: Path):
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"cpu": 99, "result": str(tmp_path / "r.json"),
                               "pyperf": str(tmp_path / "p.json"), "tasks": []}))
    res = subprocess.run(WorkerRun(str(job)).to_argv(), capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 3
    assert "cannot pin to CPU 99" in res.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    res = subprocess.run(WorkerRun(str(bad)).to_argv(), capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 4 and "bad job file" in res.stderr
