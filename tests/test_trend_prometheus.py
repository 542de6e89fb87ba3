"""`qprof trend --prometheus URL` on a two-node fleet: a real Prometheus scraping two
exporters on loopback, each qprof's own metrics server (``metrics_http.serve``) over
qprof's collector (``QprofCollector``: the names a daemon exports), whose state a test
thread moves from run to run as a daemon's cycles would. Each run is shown until
Prometheus has scraped it. From run 10 on SLH-DSA-SHAKE-256s is 3 % costlier on both
nodes (a rollout: one fleet-wide change) and ML-DSA-87 3 % cheaper on node b alone.
Skips where the `prometheus` binary is missing. Every wait is bounded.
"""

from __future__ import annotations

import json
import math
import random
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from test_service_daemon import wait_for
from test_service_prometheus import prometheus_binary, query, running_prometheus

from qprof.cli import main
from qprof.consensus import load_profile
from qprof.consensus.estimate.estimator import SuiteEstimate
from qprof.consensus.judgement import Judgement, SuiteResult
from qprof.service.metrics import MetricsState, QprofCollector
from qprof.service.metrics_http import serve

RUNS = 16
STEP_AT = 10
UNIT_NS = 21_000.0  # ML-DSA-44's verify time
RATIOS = {"ML-DSA-87": 2.25, "SLH-DSA-SHAKE-128s": 37.69, "SLH-DSA-SHAKE-256s": 80.13}
RUN_SD_BP = 40.0  # the runs' scatter around the series' ratio (Zen 5 guest: 40-71 bp)
OWN_HALF_BP = 60.0  # each run's own 95 % half-width
STEPS = {"a": {"SLH-DSA-SHAKE-256s": 0.03},
         "b": {"SLH-DSA-SHAKE-256s": 0.03, "ML-DSA-87": -0.03}}
CPU = 1
UNIT = "ML-DSA-44"


def _estimate(suite: str, ratio: float, unit_ns: float) -> SuiteEstimate:
    """One suite of one run as the estimator gives it (the unit: ratio 1)."""
    h = OWN_HALF_BP / 1e4
    time_ns = unit_ns * ratio
    return SuiteEstimate(
        cpu=CPU, suite=suite, backend="liboqs", operation="verify", unit_suite=UNIT,
        statistic="paired", statistic_asked="auto", statistic_why="interleaved rounds",
        suite_time_ns=time_ns, unit_time_ns=unit_ns, ratio=ratio,
        vu_estimate=math.ceil(100 * ratio),
        ratio_ci=None if suite == UNIT else (ratio * (1 - h), ratio * (1 + h)),
        vu_ci=None, n=400, rounds=20, rounds_used=20, round_spread_bp=50.0,
        median_ns=time_ns, p10_ns=None, spread_bp=80.0, p10_spread_bp=None,
        round_medians_ns=(time_ns,))


def _result(e: SuiteEstimate) -> SuiteResult:
    return SuiteResult(cpu=e.cpu, suite=e.suite, backend=e.backend, time_ns=e.suite_time_ns,
                       statistic=e.statistic, statistic_why=e.statistic_why, run_id="r",
                       rounds=e.rounds, capped=False, cap_factor=None, finished_at=None,
                       median_ns=e.median_ns, p10_ns=None)


class Node:
    """One node's exporter: qprof's metrics server over a MetricsState set run by run."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self.state = MetricsState(profile=load_profile("qanum"))
        rng = random.Random(seed)
        self.runs = [{s: r * (1 + (STEPS[name].get(s, 0.0) if i >= STEP_AT else 0.0))
                      * math.exp(rng.gauss(0.0, RUN_SD_BP / 1e4)) for s, r in RATIOS.items()}
                     for i in range(RUNS)]
        # The unit's own time wanders from run to run too (the host's speed).
        self.unit_ns = [UNIT_NS * math.exp(rng.gauss(0.0, 50 / 1e4)) for _ in range(RUNS)]
        registry = CollectorRegistry(auto_describe=False)
        registry.register(QprofCollector(self.state, {"version": "0.1.0", "numba": "0.61.2",
                                                      "liboqs": "0.16.0"}))
        self.server, _thread = serve(registry, "127.0.0.1", 0)
        self.target = f"127.0.0.1:{self.server.server_address[1]}"
        self.seen: dict[int, set[float]] = {}

    def show(self, i: int, now: float) -> None:
        """Run ``i`` finished: its estimates, as a daemon's cycle sets them."""
        estimates = [_estimate(UNIT, 1.0, self.unit_ns[i]),
                     *(_estimate(s, r, self.unit_ns[i]) for s, r in self.runs[i].items())]
        self.state.set_judgement(Judgement(profile="qanum", results=tuple(
            _result(e) for e in estimates), run_estimates=tuple(estimates)))
        with self.state.lock:
            self.state.last_cycle_ts = now

    def scraped(self, port: int, i: int) -> set[float]:
        """The times Prometheus scraped run ``i`` at (its newest sample's, seen so far)."""
        series = f'qprof_vu_ratio{{scope="run",suite="ML-DSA-87",instance="{self.target}"}}'
        values = query(port, series)
        stamps = query(port, f"timestamp({series})")
        if values and stamps and math.isclose(
                float(values[0]["value"][1]),  # type: ignore[index]
                100 * self.runs[i]["ML-DSA-87"], rel_tol=1e-12):
            self.seen.setdefault(i, set()).add(float(stamps[0]["value"][1]))  # type: ignore[index]
        return self.seen.get(i, set())

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fleet() -> Iterator[list[Node]]:
    nodes = [Node("a", 1), Node("b", 2)]
    yield nodes
    for n in nodes:
        n.stop()


def _trend(capsys: pytest.CaptureFixture[str], port: int, *extra: str) -> tuple[int, str]:
    code = main(["trend", "--prometheus", f"http://127.0.0.1:{port}", "--since", "10m",
                 "--step", "0.25s", *extra])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_a_fleet_wide_change_and_one_node_alone(tmp_path: Path, fleet: list[Node],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    import time

    prometheus_binary()
    for n in fleet:
        n.show(0, time.time())
    with running_prometheus(tmp_path, [n.target for n in fleet]) as port:
        for i in range(RUNS):
            if i:
                for n in fleet:
                    n.show(i, time.time())
            # Each run is held for two scrapes: a run scraped once, late, and the next one
            # scraped right after it could fall into one step of the query.
            wait_for(f"run {i} scraped twice", lambda i=i: all(  # type: ignore[misc]
                len(n.scraped(port, i)) >= 2 for n in fleet), timeout=30, every=0.2)
        code, out = _trend(capsys, port, "--json")
        assert code == 0, out
        data = json.loads(out)
        text_code, text = _trend(capsys, port)
    assert text_code == 0, text
    target = {n.name: n.target for n in fleet}
    series = {s["node"]: s for s in data["series"]}
    assert sorted(series) == sorted(target.values())
    assert data["profile"] == "qanum" and data["source"]["nodes"] == sorted(target.values())
    for node in fleet:
        s = series[node.target]
        assert (s["cpu"], s["backend"], s["runs"]) == (CPU, "liboqs", RUNS), s
        for suite, ratio in RATIOS.items():
            got = s["suites"][suite]
            step = STEPS[node.name].get(suite)
            segments = got["segments"]
            if step is None:  # steady: one segment of every run, holding the ratio
                assert got["changes"] == [] and len(segments) == 1, (node.name, suite, got)
                assert segments[0]["runs"] == RUNS
                lo, hi = segments[0]["ratio_ci_95"]
                assert lo <= ratio <= hi, (node.name, suite, segments[0])
                low, high = segments[0]["ci_95"]  # VU, as check --json: ceil(100 x ratio)
                assert low <= math.ceil(100 * ratio) <= high
                continue
            assert [(g["first_run"], g["last_run"]) for g in segments] == [
                (0, STEP_AT - 1), (STEP_AT, RUNS - 1)], (node.name, suite, segments)
            [change] = got["changes"]
            assert change["run_index"] == STEP_AT and change["cause"] == "detected"
            lo_bp, hi_bp = change["ci_95_bp"]
            assert lo_bp <= 1e4 * step <= hi_bp, (node.name, suite, change)
            moved = sorted(STEPS[node.name])
            assert any(w.startswith(f"moved: {', '.join(moved)};") or
                       w.startswith(f"only SLH-DSA moved ({', '.join(moved)})")
                       for w in change["what_changed"]), change
    # One fleet-wide change (SLH-DSA-SHAKE-256s on both nodes), one on node b alone.
    wide = [f for f in data["fleet"] if f["fleet_wide"]]
    alone = [f for f in data["fleet"] if not f["fleet_wide"]]
    assert [(f["suite"], sorted(f["nodes"])) for f in wide] == [
        ("SLH-DSA-SHAKE-256s", sorted(target.values()))], data["fleet"]
    assert [(f["suite"], f["nodes"]) for f in alone] == [("ML-DSA-87", [target["b"]])]
    # The text: each node's segments and changes, the fleet's two lines, in 100 columns.
    assert text.count("fleet-wide change on 2 nodes: SLH-DSA-SHAKE-256s") == 1, text
    assert f"node {target['b']} alone: ML-DSA-87" in text, text
    assert all(len(line) <= 100 for line in text.splitlines()), text
    for n in fleet:
        assert f"{n.target}  cpu {CPU}  liboqs  check: {RUNS} runs" in text, text
    print(text)


class _Hostile(BaseHTTPRequestHandler):
    """A server answering every query with a result of the wrong shape."""

    body = b"{}"

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("body", [
    b'{"status": "success", "data": {"result": [{"metric": "x", "values": 3}, 7, '
    b'{"metric": {"cpu": "1e9", "suite": "S", "backend": "b"}, "values": [[1, "NaN"]]}]}}',
    b'{"status": "success", "data": {"result": [{"metric": {"cpu": "1", "suite": "S", '
    b'"backend": "b", "instance": "n"}, "values": [["x", "2"], [1, "inf"], [2]]}]}}',
    b'{"status": "error", "error": "bad_data"}',
    b'not json',
])
def test_a_server_answering_nonsense_is_one_line(body: bytes,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    handler = type("H", (_Hostile,), {"body": body})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        code = main(["trend", "--prometheus", f"http://127.0.0.1:{server.server_address[1]}"])
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("qprof trend: http://127.0.0.1:"), err


class _Slow(_Hostile):
    """A server taking its time over every answer (an empty matrix, well formed)."""

    body = b'{"status": "success", "data": {"resultType": "matrix", "result": []}}'

    def do_GET(self) -> None:  # noqa: N802
        import time

        time.sleep(0.4)
        super().do_GET()


def test_the_queries_share_one_deadline(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Each answer comes within fleet.query's own deadline, but not all of them within
    the one `qprof trend --prometheus` gives its queries together."""
    from qprof.service import fleet_trend

    monkeypatch.setattr(fleet_trend, "DEADLINE_S", 1.0)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    server.handle_error = lambda *_args: None  # type: ignore[method-assign]  # cut off
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        code = main(["trend", "--prometheus", f"http://127.0.0.1:{server.server_address[1]}"])
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "no whole answer" in err, err


# -- issue 49, finding 17: a sample from the far future --------------------------------------

def test_finding_17_a_far_future_sample_time_is_left_out(
        capsys: pytest.CaptureFixture[str]) -> None:
    body = (b'{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": '
            b'{"cpu": "1", "suite": "ML-DSA-87", "backend": "liboqs", "instance": "n"}, '
            b'"values": [[1e15, "2.25"]]}]}}')
    handler = type("H", (_Hostile,), {"body": body})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        code = main(["trend", "--prometheus", f"http://127.0.0.1:{server.server_address[1]}"])
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "no runs with estimates" in err, err
