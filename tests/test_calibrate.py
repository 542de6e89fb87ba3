"""`qprof calibrate`: constants proposed from the runs of several machines, written as a
profile that judges those same runs covered wherever the ratio binds; the Prometheus
HTTP API path against a stand-in server (the real Prometheus: tests/test_contrib_fleet.py).
"""

from __future__ import annotations

import io
import json
import re
import resource
import subprocess
import sys
import threading
import tomllib
from contextlib import redirect_stderr, redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from gen_run import HOSTILE, assert_plain, gen, run_qprof
from test_consensus_policy import HW, SILVER, X86, run_records

from qprof.cli import main
from qprof.consensus import load_profile
from qprof.consensus.calibrate import profile_toml, propose
from qprof.consensus.policy import cores_from_records
from qprof.consensus.verdict import evaluate
from qprof.measure.jsonl import read_run
from qprof.measure.records import End
from qprof.measure.records_parts import CpuRow, RunSettings

# The seeds' Gold core at full speed (2026-10-14_arm, gold-core6.jsonl).
GOLD = {"ML-DSA-44": 59_000.0, "ML-DSA-87": 166_600.0, "SLH-DSA-SHAKE-128s": 864_600.0,
        "SLH-DSA-SHAKE-256s": 1_887_800.0}


def write_run(path: Path, root: Path, cpu: int, medians: dict[str, float], seed: int) -> Path:
    records = run_records(root, cpu, medians, spread=0.004, seed=seed)
    records[0].machine = {"hostname": path.stem}  # type: ignore[union-attr]
    lines = [r.to_json() for r in records]
    lines.append(End(run_id="r", finished_at=10.0, status="finished").to_json())
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def fleet_runs(tmp_path: Path) -> list[Path]:
    """Two ARM machines of the seeds' kind (a Silver node, a Gold node) and this x86
    guest, where qanum's ratio does not bind."""
    return [write_run(tmp_path / "silver.jsonl", HW / "seeds-arm", 2, SILVER, 1),
            write_run(tmp_path / "gold.jsonl", HW / "seeds-arm", 6, GOLD, 2),
            write_run(tmp_path / "x86.jsonl", HW / "vm-this-machine", 1, X86, 3)]


def judged(profile_path: Path | str, run: Path) -> dict[str, object]:
    data = read_run(run)
    return {r.suite: r for r in evaluate(load_profile(profile_path), data.measurements,
                                         cores=cores_from_records(data.records))}


def test_proposed_constants_cover_every_binding_core(tmp_path: Path, fleet_runs: list[Path],
                                                     capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "proposed.toml"
    assert main(["calibrate", *map(str, fleet_runs), "-o", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    suites = {s["suite"]: s for s in result["suites"]}
    # SLH-DSA-128s: the Silver node's upper bound (~1576 + its interval), well under the
    # x86 ratio (~4150), which does not bind.
    slh = suites["SLH-DSA-SHAKE-128s"]
    assert 1576 <= slh["proposed"] <= 1600 and slh["driven_by"].startswith("silver")
    assert slh["binding_cpus"] == 2 and slh["other_cpus"] == 1
    assert slh["largest_elsewhere"] > 4000
    assert suites["ML-DSA-87"]["proposed"] >= 286 and suites["ML-DSA-44"]["proposed"] == 100
    assert all(b["covered"] for b in result["time_bounds"])
    proposed = load_profile(out)
    assert proposed.name == "qanum-proposed"
    assert proposed.verify_units == result["constants"]
    # Judged against the same runs with the proposed profile: covered wherever the ratio
    # binds (the whole interval at or below each constant), and the x86 node still fine.
    for run in fleet_runs:
        for r in judged(out, run).values():
            if r.ratio_binds:  # type: ignore[attr-defined]
                assert r.decision == "covered", (run.name, r.suite, r.verdict)  # type: ignore[attr-defined]
            assert r.policy_decision == "covered", (run.name, r.suite)  # type: ignore[attr-defined]


def test_the_proposal_is_the_smallest_such_constant(fleet_runs: list[Path]):
    from qprof.consensus.calibrate import node_estimates

    profile = load_profile("qanum")
    estimates = []
    for run in fleet_runs:
        data = read_run(run)
        estimates += node_estimates(run.stem, evaluate(
            profile, data.measurements, cores=cores_from_records(data.records)))
    p = propose(profile, estimates)
    for s in p.suites:
        if s.suite == profile.unit_suite:
            continue
        bounds = [e.vu_high for e in estimates if e.suite == s.suite and e.binds]
        assert s.proposed == max(bounds)  # one less would leave that CPU's top uncovered


def test_profile_toml_reads_back_equal():
    from dataclasses import replace

    for name in ("qanum", "qanum-2026-10-14"):
        p = load_profile(name)
        text = profile_toml(p, ["a comment"])
        import tomllib

        from qprof.consensus.profiles import profile_from_dict

        again = profile_from_dict(tomllib.loads(text), p.path)
        assert replace(again, target_block_interval_s=p.target_block_interval_s) == p


def test_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["calibrate"]) == 2
    assert "nothing to calibrate from" in capsys.readouterr().err
    assert main(["calibrate", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    assert main(["calibrate", "--prometheus", "http://127.0.0.1:9"]) == 2
    assert "127.0.0.1:9" in capsys.readouterr().err


class _FakePrometheus(BaseHTTPRequestHandler):
    """Answers /api/v1/query as Prometheus does, from canned vectors per metric."""

    series: dict[str, list[dict[str, object]]] = {}

    def do_GET(self) -> None:  # noqa: N802
        url = urlparse(self.path)
        expr = parse_qs(url.query)["query"][0]
        name = expr.split("{")[0].split(" ")[0]
        body = json.dumps({"status": "success", "data": {
            "resultType": "vector", "result": self.series.get(name, [])}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _sample(metric: str, value: float, **labels: str) -> dict[str, object]:
    return {"metric": {"__name__": metric, **labels}, "value": [0, str(value)]}


def test_prometheus_http_api(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """Two nodes as their daemons export them: a Silver node (binding) and an x86 node
    (binding="false"); the proposal follows the Silver node alone."""
    nodes = {"silver:9464": ("2", SILVER, "true"), "x86:9464": ("1", X86, "false")}
    series: dict[str, list[dict[str, object]]] = {k: [] for k in (
        "qprof_vu_estimate", "qprof_vu_estimate_ci_high", "qprof_verify_seconds",
        "qprof_vu_covered")}
    from qprof.consensus import vu_estimate

    for instance, (cpu, medians, binding) in nodes.items():
        for suite, ns in medians.items():
            key = dict(instance=instance, cpu=cpu, suite=suite, backend="liboqs")
            vu = vu_estimate(ns, medians["ML-DSA-44"])
            series["qprof_vu_estimate"].append(_sample("qprof_vu_estimate", vu, **key))
            series["qprof_vu_estimate_ci_high"].append(
                _sample("qprof_vu_estimate_ci_high", vu + 5, **key))
            series["qprof_verify_seconds"].append(_sample("qprof_verify_seconds", ns / 1e9,
                                                          **key))
            series["qprof_vu_covered"].append(_sample(
                "qprof_vu_covered", 1, instance=instance, cpu=cpu, suite=suite,
                profile="qanum", binding=binding))
    _FakePrometheus.series = series
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakePrometheus)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert main(["calibrate", "--prometheus", url, "--json"]) == 0
    finally:
        server.shutdown()
        server.server_close()
    result = json.loads(capsys.readouterr().out)
    assert result["nodes"] == ["silver:9464", "x86:9464"]
    assert result["constants"] == {"ML-DSA-44": 100, "ML-DSA-87": 291,
                                   "SLH-DSA-SHAKE-128s": 1581, "SLH-DSA-SHAKE-256s": 3497}
    assert all(b["covered"] for b in result["time_bounds"])


def test_check_from_with_the_proposed_profile_is_covered(tmp_path: Path,
                                                         fleet_runs: list[Path],
                                                         capsys: pytest.CaptureFixture[str]):
    """The issue's loop: calibrate on the runs, then `qprof check --from RUN --profile
    proposed.toml` on each: covered wherever the ratio binds (exit 0 on all three)."""
    out = tmp_path / "proposed.toml"
    assert main(["calibrate", *map(str, fleet_runs), "-o", str(out)]) == 0
    capsys.readouterr()
    for run in fleet_runs:
        code = main(["check", "--from", str(run), "--profile", str(out), "--json"])
        doc = json.loads(capsys.readouterr().out)
        assert code == 0, (run.name, doc["decision"])
        for r in doc["results"]:
            if r["ratio_binds"]:
                assert r["decision"] == "covered", (run.name, r["suite"], r["verdict"])
            assert r["block_time_covered"] is True
    # Against today's qanum the Silver run is covered too; against the 2026-10-14
    # constants its SLH-DSA-128s is not (1576 > 1200), as the seeds found.
    assert main(["check", "--from", str(fleet_runs[0]), "--profile", "qanum-2026-10-14",
                 "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    slh = {r["suite"]: r for r in doc["results"]}["SLH-DSA-SHAKE-128s"]
    assert (slh["vu_estimate"], slh["decision"], slh["ratio_binds"]) == (1576, "not_covered",
                                                                         True)


def test_check_text_shows_both_verdicts(fleet_runs: list[Path],
                                        capsys: pytest.CaptureFixture[str]):
    """The x86 run in words: the SLH-DSA ratios above the constants but not binding, the
    time bound with both block times, and the verdict that counts."""
    assert main(["check", "--from", str(fleet_runs[2]), "--profile", "qanum"]) == 0
    out = capsys.readouterr().out
    assert "not binding here: 4148 (95 % CI 4144-4153), constant 1600" in out
    assert "the constants follow the slowest reference core" in out
    assert "time bound: within: worst-case block 105 ms here, 376 ms on Silver" in out
    assert "verdict: every binding verdict holds" in out
    assert main(["check", "--from", str(fleet_runs[0]), "--profile",
                 "qanum-2026-10-14"]) == 1
    assert "verdict: NOT covered: SLH-DSA-SHAKE-128s on CPU 2" in capsys.readouterr().out


def test_a_state_dir_that_keeps_no_run_is_one_line(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--state-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"qprof calibrate: {tmp_path}: no run kept there (qprof check, qprof "
                   "adversary)"]


def run_main(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def hostile_run(tmp_path: Path) -> Path:
    return gen(tmp_path / "hostile.jsonl", hostname=HOSTILE, text=HOSTILE, status=HOSTILE,
               cpu_row=CpuRow(cpu=0, part_name=HOSTILE, uarch=HOSTILE),
               settings=RunSettings(mode="check", interleaving=HOSTILE, timer_clock=HOSTILE))


def test_2_5_calibrate_names_and_toml(tmp_path: Path, hostile_run: Path) -> None:
    out = tmp_path / "proposed.toml"
    done = run_qprof("calibrate", str(hostile_run), "-o", str(out))
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert_plain(done.stdout, "calibrate stdout")
    assert_plain(done.stderr, "calibrate stderr")
    text = out.read_text()
    assert_plain(text, "calibrate -o")
    proposed = load_profile(out)
    assert proposed.constants_held_to == load_profile("qanum").constants_held_to
    assert proposed.name == "qanum-proposed"
    assert re.findall(r"^constants_held_to", text, re.M) == ["constants_held_to"]


# -- 7. calibrate --prometheus trusts the server no more ------------------------------------

def _vector(value: str, **labels: str) -> dict[str, Any]:
    metric = {"instance": "n1:9464", "cpu": "0", "suite": "ML-DSA-87", "backend": "liboqs",
              **labels}
    return {"status": "success", "data": {"resultType": "vector",
                                          "result": [{"metric": metric,
                                                      "value": [1.0, value]}]}}


BAD_ANSWERS = {
    "data []": json.dumps({"status": "success", "data": []}),
    "data null": json.dumps({"status": "success", "data": None}),
    "non-dict items": json.dumps({"status": "success", "data": {"result": [1, "x"]}}),
    "+Inf": json.dumps(_vector("+Inf")),
    "NaN": json.dumps(_vector("NaN")),
    "negative": json.dumps(_vector("-5")),
    "1e300": json.dumps(_vector("1e300")),
    "zero": json.dumps(_vector("0")),
    "deep nesting": "[" * 200_000 + "]" * 200_000,
    "not JSON": "<html>hello</html>",
}


class _Server:
    """A stand-in Prometheus on 127.0.0.1: every query answered with ``body``, sent
    ``drip`` bytes at a time every ``pause`` seconds."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        outer = self
        self.body, self.drip, self.pause = b"", 0, 0.0

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                import time

                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(outer.body)))
                self.end_headers()
                try:
                    if not outer.drip:
                        self.wfile.write(outer.body)
                        return
                    for i in range(0, len(outer.body), outer.drip):
                        self.wfile.write(outer.body[i:i + outer.drip])
                        self.wfile.flush()
                        time.sleep(outer.pause)
                except OSError:
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def server() -> Any:
    s = _Server()
    yield s
    s.httpd.shutdown()


@pytest.mark.parametrize("shape", sorted(BAD_ANSWERS))
def test_7_every_bad_answer_is_one_line_naming_the_url(server: _Server, shape: str) -> None:
    server.body, server.drip = BAD_ANSWERS[shape].encode(), 0
    code, out, err = run_main("calibrate", "--prometheus", server.url)
    assert code == 2, (shape, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and server.url in lines[0], (shape, err[-2000:])
    if shape in ("+Inf", "NaN", "negative", "1e300", "zero"):
        assert "qprof_vu_estimate" in lines[0] and "value" in lines[0], lines[0]


def test_7_a_dripping_server_meets_one_deadline(server: _Server) -> None:
    import time

    from qprof.service.fleet import FleetError, query

    server.body, server.drip, server.pause = json.dumps(_vector("100")).encode(), 1, 0.2
    start = time.monotonic()
    with pytest.raises(FleetError, match="within 2 s"):
        query(server.url, "qprof_vu_estimate", deadline_s=2.0)
    assert time.monotonic() - start < 10  # a per-read timeout would run ~30 s here


def test_7_a_huge_answer_is_cut_at_the_cap(server: _Server,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from qprof.service import fleet

    monkeypatch.setattr(fleet, "MAX_BYTES", 1 << 20)
    server.body, server.drip = b"[" + b"0," * (1 << 20) + b"0]", 0
    with pytest.raises(fleet.FleetError, match="larger than 1 MiB"):
        fleet.query(server.url, "qprof_vu_estimate")


# -- 8. calibrate -o round-trips -------------------------------------------------------------

def test_8_profile_toml_round_trips(tmp_path: Path) -> None:
    from dataclasses import replace

    from qprof.consensus.profiles import BlockTimeBound

    qanum = load_profile("qanum")
    cases = {
        "held to the worst signature": replace(qanum, constants_held_to="worst_signature"),
        "time fraction, no reference cores": replace(
            qanum, reference_cores=(), ratio_binds="all",
            block_time=BlockTimeBound(max_interval_fraction=0.5)),
        "control characters": replace(qanum, name="a\rb\x1b[2K\x07 c",
                                      description='d\n"q"\\ \x7f\t end'),
    }
    for what, profile in cases.items():
        path = tmp_path / f"{len(list(tmp_path.iterdir()))}.toml"
        path.write_text(profile_toml(profile, [HOSTILE[:300], "plain"]))
        back = load_profile(path)
        assert replace(back, path=profile.path) == profile, what
        tomllib.loads(path.read_text())


def test_8_name_with_control_characters_is_refused(tmp_path: Path) -> None:
    run = gen(tmp_path / "gen.jsonl")
    code, out, err = run_main("calibrate", str(run), "--name", "a\rb", "-o",
                              str(tmp_path / "p.toml"))
    assert code == 2 and "--name" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "p.toml").exists()


# -- 9. calibrate -o writes whole or not at all ----------------------------------------------

def test_9_calibrate_o_leaves_the_old_file_on_a_failed_write(tmp_path: Path) -> None:
    run = gen(tmp_path / "gen.jsonl")
    out = tmp_path / "proposed.toml"
    out.write_text("# the old profile\n")

    def small_files() -> None:  # ulimit -f 1: writes past 1024 bytes fail (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    done = subprocess.run([sys.executable, "-m", "qprof", "calibrate", str(run), "-o",
                           str(out)], capture_output=True, text=True, timeout=120,
                          preexec_fn=small_files)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and str(out) in done.stderr
    assert out.read_text() == "# the old profile\n"
    assert not list(tmp_path.glob("proposed.toml.*"))


# -- 20. duplicate node names ------------------------------------------------------------------

def test_20_duplicate_node_names_are_numbered() -> None:
    from qprof.commands.calibrate import _node_name

    seen: dict[str, int] = {}
    names = [_node_name(Path("run.jsonl"), "localhost", seen) for _ in range(1000)]
    assert len(set(names)) == 1000
    assert names[:3] == ["localhost", "localhost #2",
                         "localhost #3"]
    assert names[-1] == "localhost #1000"
    # A hostname that already ends in " #2" does not collide with a numbered one.
    assert _node_name(Path("run.jsonl"), "localhost", {"localhost": 1,
                                                       "localhost #2": 1}) \
        == "localhost #3"
