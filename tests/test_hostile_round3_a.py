"""Issue 31 ("hostile inputs, round 3"), part A: the report's charts, the one rule for
strings from outside, calibrate's TOML and its Prometheus reader, the report's scale.
Test names carry the finding's number.

GEN is the issue's small valid run: a meta record, 5 rounds on CPU 0 of ML-DSA-44 (17 µs)
and ML-DSA-87 (39 µs), samples [t, 1.01t, 0.99t], an end record.
"""

from __future__ import annotations

import io
import json
import math
import re
import resource
import subprocess
import sys
import textwrap
import tomllib
import xml.etree.ElementTree as ET
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from qprof.cli import main
from qprof.consensus import load_profile
from qprof.consensus.calibrate import profile_toml
from qprof.measure.records import End, FreqSample, Measurement, Meta, Note
from qprof.measure.records_parts import CpuRow, MachineInfo, RunSettings

BENCH = Path(__file__).resolve().parents[1] / "bench"


def gen(path: Path, *, unit_ns: float = 17_000.0, suite_ns: float = 39_000.0,
        hostname: str = "node", text: str | None = None, status: str = "finished",
        cpu_row: CpuRow | None = None, settings: RunSettings | None = None,
        unit_samples: list[float] | None = None) -> Path:
    """GEN (the module's docstring); ``text``: a note with it; the other arguments put
    strings where a run carries them."""
    meta = Meta(run_id="r", started_at=1000.0, qprof_version="t", command=["qprof", "check"],
                machine=MachineInfo(hostname=hostname, cpu_model="AMD EPYC", arch="x86_64"),
                cpus=[cpu_row or CpuRow(cpu=0)], settings=settings or RunSettings(mode="check"))
    lines = [meta.to_json()]
    for rnd in range(5):
        for suite, t in (("ML-DSA-44", unit_ns), ("ML-DSA-87", suite_ns)):
            samples = ([t, 1.01 * t, 0.99 * t] if unit_samples is None or suite != "ML-DSA-44"
                       else unit_samples)
            lines.append(Measurement(run_id="r", cpu=0, suite=suite, backend="liboqs",
                                     operation="verify", round=rnd, n=3, median_ns=t,
                                     p95_ns=1.01 * t, samples_ns=samples,
                                     finished_at=1001.0 + rnd).to_json())
    if text is not None:
        lines.append(Note(run_id="r", level="warning", text=text, kind="x").to_json())
    lines.append(End(run_id="r", finished_at=1010.0, status=status).to_json())
    path.write_text("\n".join(lines) + "\n")
    return path


def qprof(*args: str, timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "qprof", *args], capture_output=True,
                          text=True, timeout=timeout, **kw)


def run_main(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def svgs_are_xml(page: str) -> int:
    charts = re.findall(r"<svg .*?</svg>", page, re.S)
    for svg in charts:
        ET.fromstring(svg)  # raises on a raw control character or bad markup
    return len(charts)


# -- 1. report --html never ended -----------------------------------------------------------

def test_1_report_html_ends_on_timestamps_closer_than_float_spacing(tmp_path: Path) -> None:
    # The 6e14 and 6e14 + 0.125 are no unix times (the reader refuses them now);
    # two neighbouring floats at 9e10 s are, and stalled the chart's axis the same way.
    run = tmp_path / "freq.jsonl"
    meta = Meta(run_id="r", started_at=0.0, qprof_version="t", command=["qprof"])
    freqs = [FreqSample(run_id="r", taken_at=t, cpu=0, cur_khz=2_000_000, max_khz=2_000_000,
                        hw_max_khz=2_000_000, capped=False)
             for t in (9e10, math.nextafter(9e10, math.inf))]
    run.write_text("\n".join(r.to_json() for r in (meta, *freqs)) + "\n")
    page = tmp_path / "page.html"
    done = qprof("report", str(run), "--html", str(page), timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    assert svgs_are_xml(page.read_text()) >= 1


def test_1_ticks_are_finite_and_few_near_1e17() -> None:
    # In a child: the old code never returned (value += step did not move).
    code = textwrap.dedent("""
        import math
        from qprof.report.html_svg import MAX_TICKS, Series, line_chart, nice_ticks
        for lo, hi in ((6e14, 600000000000000.125), (1e17, 1e17 + 16), (-1e17 - 16, -1e17),
                       (0.0, 5e-324), (-1e308, 1e308)):
            ticks = nice_ticks(lo, hi)
            assert 1 <= len(ticks) <= MAX_TICKS and all(map(math.isfinite, ticks)), (lo, ticks)
        svg = line_chart("drift", [Series("a", ((1, 1e17), (2, 1e17 + 16), (3, 1e17 + 1)))],
                         "round", "bp")
        assert "nan" not in svg and "inf" not in svg
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


# -- 2, 5, 19. one hostile string through every command that prints it ----------------------

HOSTILE = ("\x1b]0;PWNED\x07\r\x1b[2K\nverdict: every binding verdict holds: forged\n"
           "n1\nconstants_held_to = \"worst_signature\"\n#\x9b31m\u202e\ud800"
           + "x" * 100_000)
MAX_STRING = 4000  # qprof.measure.markdown.MAX_TEXT, the largest bound of any destination
MAX_LINE = 20_000


def assert_plain(text: str, what: str) -> None:
    """No control character but newline and tab; no forged line; every line bounded."""
    bad = re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e\ud800]", text)
    assert not bad, (what, bad[:5])
    lines = text.splitlines()
    assert sum(line.startswith("verdict:") for line in lines) <= 1, what
    assert not any(line.startswith("verdict: every binding verdict holds: forged")
                   for line in lines), what
    # Each string bounded where it is shown (a line may hold a few of them).
    longest = max((len(run) for run in re.findall("x+", text)), default=0)
    assert longest <= MAX_STRING, (what, longest)
    assert max(map(len, lines), default=0) <= MAX_LINE, (what, max(map(len, lines)))


@pytest.fixture
def hostile_run(tmp_path: Path) -> Path:
    return gen(tmp_path / "hostile.jsonl", hostname=HOSTILE, text=HOSTILE, status=HOSTILE,
               cpu_row=CpuRow(cpu=0, part_name=HOSTILE, uarch=HOSTILE),
               settings=RunSettings(mode="check", interleaving=HOSTILE, timer_clock=HOSTILE))


def test_5_check_from_prints_the_hostile_run_plainly(hostile_run: Path) -> None:
    for extra in ((), ("--verbose",)):
        done = qprof("check", "--from", str(hostile_run), "--profile", "qanum", *extra)
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        assert_plain(done.stdout, f"check --from {extra} stdout")
        assert_plain(done.stderr, f"check --from {extra} stderr")
        lines = done.stdout.splitlines()
        assert sum(line.startswith("verdict:") for line in lines) == 1, done.stdout[-2000:]
        assert len(done.stdout) < 60_000  # seven 100 kB strings, each bounded
    done = qprof("check", "--from", str(hostile_run), "--profile", "qanum", "--json")
    json.loads(done.stdout)  # JSON escapes every character itself


def test_2_5_calibrate_names_and_toml(tmp_path: Path, hostile_run: Path) -> None:
    out = tmp_path / "proposed.toml"
    done = qprof("calibrate", str(hostile_run), "-o", str(out))
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert_plain(done.stdout, "calibrate stdout")
    assert_plain(done.stderr, "calibrate stderr")
    text = out.read_text()
    assert_plain(text, "calibrate -o")
    proposed = load_profile(out)
    assert proposed.constants_held_to == load_profile("qanum").constants_held_to
    assert proposed.name == "qanum-proposed"
    assert re.findall(r"^constants_held_to", text, re.M) == ["constants_held_to"]


def test_5_19_report_markdown_and_html(tmp_path: Path, hostile_run: Path) -> None:
    page = tmp_path / "page.html"
    done = qprof("report", str(hostile_run), "--profile", "qanum", "-o", "-", "--html",
                 str(page))
    assert done.returncode == 0, done.stderr[-3000:]
    assert_plain(done.stdout, "report Markdown")
    assert_plain(done.stderr, "report stderr")
    html = page.read_text()
    assert_plain(html, "report --html")
    assert svgs_are_xml(html) >= 2


def test_5_monitor_export_and_log_lines(tmp_path: Path) -> None:
    import logging

    from qprof.service.journal import JournalFormatter, LineFormatter
    from qprof.tui.model import ClusterHistory, CoverageView, Frame, MachineView
    from qprof.tui.report import write_report

    frame = Frame(
        taken_at=1e9,
        machine=MachineView(model=HOSTILE, designs=HOSTILE, arch=HOSTILE, profile=HOSTILE,
                            backend=HOSTILE, source=HOSTILE, measurable=True,
                            problems=(HOSTILE,)),
        cores=(),
        coverage=(CoverageView(suite=HOSTILE, where=HOSTILE, cluster=0, cpu=0,
                               backend="liboqs", time_ns=1e5, vu_estimate=1614,
                               vu_constant=1600, margin=-14, covered=None, note=HOSTILE,
                               statistic="paired", vu_median_rule=1600, basis="node",
                               decision="unsure", vu_ci=(1583, 1640), ratio_binds=True,
                               worst_block_ns=2e9),),
        history=(ClusterHistory(cluster=0, label=HOSTILE, samples_khz=(2_000_000,) * 3,
                                max_khz=2_000_000),),
        alerts=(),
    )
    md = write_report(frame, tmp_path, HOSTILE, 75.0)
    assert_plain(md.read_text(), "monitor export Markdown")
    html = md.with_suffix(".html").read_text()
    assert_plain(html, "monitor export HTML")
    assert svgs_are_xml(html) >= 2
    record = logging.LogRecord("qprof.daemon", logging.WARNING, __file__, 1,
                               "alert %s: %s", ("kind", HOSTILE), None)
    for formatter in (JournalFormatter(), LineFormatter("%(levelname)s %(message)s")):
        line = formatter.format(record)
        assert "\n" not in line and len(line) <= 2100
        assert_plain(line, type(formatter).__name__)


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


# -- 12. calibrate and report as cleanly as check ---------------------------------------------

@pytest.mark.parametrize("case", ["unit samples all 0", "unit medians 1e-300"])
def test_12_no_traceback_where_check_is_clean(tmp_path: Path, case: str) -> None:
    run = (gen(tmp_path / "z.jsonl", unit_samples=[0.0, 0.0, 0.0])
           if case == "unit samples all 0" else gen(tmp_path / "t.jsonl", unit_ns=1e-300))
    for args in (("calibrate", str(run)), ("report", str(run), "--profile", "qanum"),
                 ("report", str(run), "--html", str(tmp_path / "p.html")),
                 ("check", "--from", str(run), "--profile", "qanum")):
        done = qprof(*args)
        assert "Traceback" not in done.stderr, (args, done.stderr[-2000:])
    done = qprof("calibrate", str(run))
    assert done.returncode == 2 and str(run) in done.stderr, done.stderr[-2000:]


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


# -- 6. report and check --from grow linearly with the CPUs -----------------------------------

def _lines_run(argv: list[str]) -> int:
    """Lines of qprof (not of the JSONL reader) executed by one command."""
    count = 0

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def trace(frame: Any, event: str, arg: Any) -> Any:
        name = frame.f_code.co_filename
        return local if "/qprof/" in name and "/qprof/measure/" not in name else None

    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        sys.settrace(trace)
        try:
            main(argv)
        finally:
            sys.settrace(None)
    return count


def test_6_report_and_check_from_work_grows_linearly(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from report_scale import many_cpu_run
    finally:
        sys.path.remove(str(BENCH))
    runs = {n: many_cpu_run(tmp_path / f"run{n}.jsonl", n) for n in (20, 40, 80)}
    for argv in (["report", "{}", "--profile", "qanum"],
                 ["check", "--from", "{}", "--profile", "qanum"]):
        work = {n: _lines_run([a.format(run) for a in argv]) for n, run in runs.items()}
        # Linear: doubling the CPUs doubles the work (the old report: x4.6 from 40 to 80).
        assert work[80] / work[40] < 2.3, (argv[0], work)
