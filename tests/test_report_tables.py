"""A JSONL run built from known samples: every table value of `qprof report` is pinned."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from faults import (
    BAD_LINES,
    EVIL,
    _assert_inert,
    full_tmpfs,
    measurement_line,
    meta_record,
    one_line,
    qprof,
)
from gen_run_json import ALL_SUITES, SHIPPED, gen_lines, huge_qanum, qprof_env

from qprof.cli import main
from qprof.consensus import load_profile
from qprof.consensus.verdict import evaluate
from qprof.measure.jsonl import JsonlSink, read_run
from qprof.measure.records import End, Measurement, Meta, Note
from qprof.measure.records_parts import CpuRow, MachineInfo, RunSettings
from qprof.report.markdown import fmt_ns, render_report

U = "ML-DSA-44"
CPU = 2


def _m(suite, op, rnd, samples, backend="liboqs", **kw):
    from qprof.measure import stats

    s = stats.summarize(samples)
    return Measurement(run_id="r1", cpu=CPU, suite=suite, backend=backend, operation=op,
                       round=rnd, n=s.n, median_ns=s.median_ns, p95_ns=s.p95_ns,
                       samples_ns=list(samples), **kw)


def records(scale: float = 1.0):
    def x(values):
        return [v * scale for v in values]

    meta = Meta(
        run_id="r1", started_at=1000.0, qprof_version="0.1.0", command=["qprof", "bench"],
        versions={"liboqs_linked": "0.16.0", "liboqs_python": "0.16.0.1", "python": "3.11.7",
                  "numba": "0.68.1", "pyperf": "2.11.0"},
        machine=MachineInfo(cpu_model="Test SoC", arch="aarch64", kernel="4.19"),
        cpus=[CpuRow(cpu=CPU, part_name="Kryo 4XX Gold", uarch="Cortex-A76", part="0x804",
                     hw_max_khz=2419200, scaling_max_khz=1080000, governor="schedutil",
                     capped=True)],
        profile="qanum",
        settings=RunSettings(mode="default", rounds=5, max_rounds=9, nice=10, unit_suite=U),
    )
    out = [meta]
    # A rounds (0, 2, 4): the unit. Pooled median 101 us, round medians 101/102/100 us.
    for rnd, samples in ((0, [100e3, 101e3, 102e3]), (2, [101e3, 102e3, 103e3]),
                         (4, [100e3, 100e3, 104e3])):
        out.append(_m(U, "verify", rnd, x(samples)))
        out.append(_m(U, "verify_invalid", rnd, x([99e3 - 500 * rnd] * 3)))
        out.append(_m(U, "dual_enforce", rnd, x([300e3] * 3), backend="liboqs+numba",
                      checks=3))
    # B rounds (1, 3): the other suites.
    b = {
        "ML-DSA-87": ([283e3, 284e3, 285e3], [286e3, 287e3, 288e3]),
        "SLH-DSA-SHAKE-128s": ([1.62e6] * 3, [1.64e6] * 3),
        "SLH-DSA-SHAKE-256s": ([3.50e6] * 3, [3.52e6] * 3),
    }
    for suite, (r1, r3) in b.items():
        out.append(_m(suite, "verify", 1, x(r1)))
        out.append(_m(suite, "verify", 3, x(r3), capped=(suite == "ML-DSA-87"),
                      cap_factor=2.24 if suite == "ML-DSA-87" else None))
        out.append(_m(suite, "dual_enforce", 1, x([3 * v for v in r1]), backend="liboqs+numba"))
        out.append(_m(suite, "dual_enforce", 3, x([3 * v for v in r3]), backend="liboqs+numba"))
    out.append(_m(U, "keygen", 5, x([50e3, 60e3])))
    out.append(_m(U, "sign", 5, x([140e3, 150e3, 400e3])))
    out.append(_m("ML-KEM-1024", "kem_encaps", 5, x([40e3, 41e3, 42e3])))
    out.append(Note(run_id="r1", level="warning", text="something to know", kind="x"))
    out.append(End(run_id="r1", finished_at=1123.0, status="finished", checks=28868))
    return out


def write(path: Path, scale: float = 1.0) -> Path:
    with JsonlSink(path) as sink:
        for rec in records(scale):
            sink(rec)
    return path


@pytest.fixture
def report(tmp_path):
    run = read_run(write(tmp_path / "gold.jsonl"))
    assert run.problems == []
    return render_report([run], load_profile("qanum"))


def row(text: str, first_cell: str) -> list[str]:
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row {first_cell!r} in:\n{text}")


def section(text: str, title: str) -> str:
    start = text.index(title)
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_formatting():
    assert fmt_ns(866) == "866 ns"
    assert fmt_ns(59_000) == "59.0 µs"
    assert fmt_ns(3_004_000) == "3.00 ms"
    assert fmt_ns(18_180_000) == "18.18 ms"
    assert fmt_ns(116_000_000) == "116 ms"
    assert fmt_ns(3_095_000_000) == "3,095 ms"


def test_verify_and_vu_table(report):
    v = section(report, "## Signature verification and Verify Units (liboqs)")
    # suite | median (rounds) | VU estimate (CI) | consensus | covered
    assert row(v, U) == [U, "100.0 µs-102.0 µs", "100", "100", "the unit suite"]
    r87 = row(v, "ML-DSA-87")
    assert r87[1] == "284.0 µs-287.0 µs"
    assert r87[2].split()[0] == "283"  # ceil(100 x 285.5 / 101)
    assert r87[3:] == ["290", "not binding here"]  # as check and the monitor say
    r128 = row(v, "SLH-DSA-SHAKE-128s")
    assert r128[1] == "1.62 ms-1.64 ms"
    assert r128[2].split()[0] == "1614"  # ceil(100 x 1630 / 101) = ceil(1613.86)
    # 1614 over 1600 by the median, but its 95 % interval reaches below 1600: unsure.
    # The run's core (a Cortex-A76 "Kryo 4XX Gold") is none of qanum's reference cores:
    # its ratio does not bind (qprof.consensus.policy), and the cell says so.
    assert r128[3:] == ["1600", "straddles, not binding here (not a reference core)"]
    r256 = row(v, "SLH-DSA-SHAKE-256s")
    assert r256[2].split()[0] == "3476" and r256[3:] == ["3600", "not binding here"]
    assert "- SLH-DSA-SHAKE-128s on CPU 2" in v and ": estimate 1614 (95 % CI" in v
    assert ("not binding here: the constants follow the slowest reference core" in v
            and "constant 1600: the ratio is straddling the constant" in v)


def test_worst_case_block_table(report):
    w = section(report, "## Worst-case block estimate")
    # Under every limit (the auth bytes too): 802 ML-DSA-44 spends, 415 ML-DSA-87.
    # liboqs 802 x 101 us, dual enforce 802 x 300 us, reference Silver 802 x 190.75 us
    assert row(w, "ML-DSA-44 (802)")[1:] == ["81.00 ms", "241 ms", "153 ms"]
    assert row(w, "ML-DSA-87 (415)")[1] == "118 ms"  # 415 x 285.5 us = 118.5 ms
    assert row(w, "SLH-DSA-SHAKE-128s (125)")[1] == "204 ms"  # 125 x 1.63 ms
    assert row(w, "SLH-DSA-SHAKE-256s (55)")[1] == "193 ms"  # 55 x 3.51 ms
    assert row(w, "SLH-DSA-SHAKE-256s (55)")[3] == "366 ms"  # reference: 55 x 6.66 ms
    assert row(w, "SLH-DSA-SHAKE-128s (125)")[2] == "611 ms"  # dual: 125 x 4.89 ms
    assert ("Slowest worst-case block here: 611 ms (SLH-DSA-SHAKE-128s); the same block on "
            "the reference core Silver: 376 ms (1.63×); 0.81 % of the target") in w
    assert "of the target block interval (75 s)" in w


def test_other_tables(report):
    inv = section(report, "## Invalid signatures")
    assert row(inv, U)[1] == "98.0 µs"  # median of round medians 99, 98, 97 us
    dual = section(report, "## Both verifiers")
    r = row(dual, U)
    assert r[1] == "300.0 µs (297 %)"  # vs liboqs 101 us
    assert r[-1] == "100"
    assert row(dual, "ML-DSA-87")[-1] == "286"  # ceil(100 x 856.5 / 300)
    wallet = section(report, "## Key generation and signing")
    assert row(wallet, U)[1:] == ["55.0 µs (59.5 µs)", "150.0 µs (375.0 µs)"]
    kem = section(report, "## ML-KEM-1024")
    assert row(kem, "encapsulate")[1] == "41.0 µs (41.9 µs)"


def test_machine_and_notes(report):
    m = section(report, "## Machine and method")
    assert row(m, "Core (pinned)")[1] == "2, Kryo 4XX Gold / Cortex-A76, CPU part `0x804`"
    assert row(m, "Max frequency at start")[1] == "1.08 GHz (capped by the system)"
    assert row(m, "Run time (whole run)")[1] == "123 s (finished)"
    assert "liboqs 0.16.0 (liboqs-python 0.16.0.1)" in row(m, "Versions")[1]
    n = section(report, "## Notes")
    # invalid rounds 99, 98, 97 us: (99 - 97) / 97 = 206 bp; valid: 100..102 us = 200 bp
    assert "largest spread between rounds 206 bp (ML-DSA-44 liboqs verify_invalid)" in n
    assert "ML-DSA-44 (liboqs) at the end vs the start: -99 bp" in n
    assert ("held at 1.08 GHz instead of 2.42 GHz (×2.24 slower, cause unknown); ratios "
            "measured on the same core at the same time are not affected (rounds 4)") in n
    assert "28,868 checks with two verifiers, they never disagreed" in n
    # ML-DSA spread 200 bp > 100 bp: the 10th-percentile estimates are added (not the rule)
    assert ("Estimates by each statistic (liboqs; for comparison, the verdict uses the one "
            "named above): the median rule (the seeds'): ML-DSA-87 283, SLH-DSA-SHAKE-128s "
            "1614, SLH-DSA-SHAKE-256s 3476; 10th percentiles: ML-DSA-87 284, "
            "SLH-DSA-SHAKE-128s 1620, SLH-DSA-SHAKE-256s 3500") in n
    assert "something to know" in n


def test_two_files_side_by_side(tmp_path):
    a = read_run(write(tmp_path / "fast.jsonl"))
    b = read_run(write(tmp_path / "slow.jsonl", scale=2.0))
    text = render_report([a, b], load_profile("qanum"))
    v = section(text, "## Signature verification and Verify Units (liboqs)")
    header = v.splitlines()[4]
    assert "fast CPU 2" in header and "slow CPU 2" in header
    r = row(v, "ML-DSA-87")
    assert r[1] == "284.0 µs-287.0 µs" and r[2] == "568.0 µs-574.0 µs"
    assert r[3].startswith("283") and "/ 283" in r[3]  # same ratio on both machines


def test_verdict_json_contract(tmp_path):
    run = read_run(write(tmp_path / "gold.jsonl"))
    res = {r.suite: r for r in evaluate(load_profile("qanum"), run.measurements,
                                         statistic="median")}
    r = res["ML-DSA-87"]
    assert (r.cpu, r.backend, r.suite_time_ns, r.vu_estimate, r.vu_constant, r.covered,
            r.margin) == (CPU, "liboqs", 285500.0, 283, 290, True, 7)
    assert r.statistic == "median" and r.estimate.median_ns == 285500.0
    assert r.capped is True and r.cap_factor == 2.24
    assert r.estimate.rounds == 2 and r.estimate.n == 6
    assert r.vu_ci_low <= 283 <= r.vu_ci_high
    slh = res["SLH-DSA-SHAKE-128s"]
    assert (slh.decision, slh.covered, slh.margin, slh.confidence) == (
        "unsure", None, -14, "uncertain")
    assert slh.vu_ci_low <= 1600 < slh.vu_ci_high and "measure longer" in slh.verdict


def test_report_command_reports_bad_lines(tmp_path):
    path = write(tmp_path / "run.jsonl")
    with path.open("a") as fh:
        fh.write('{"type": "measurement", "cpu": 2,\n')
    out = subprocess.run([sys.executable, "-m", "qprof", "report", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert f"{path}:{len(records()) + 1}: not valid JSON" in out.stderr
    assert "input problem" in out.stdout and "| ML-DSA-87 |" in out.stdout
    missing = subprocess.run([sys.executable, "-m", "qprof", "report", str(tmp_path / "no")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2


def test_data_file_with_corrupt_lines_is_read():
    data = Path(__file__).parent / "data" / "measure" / "corrupt.jsonl"
    run = read_run(data)
    assert run.bad_lines == 2
    assert len(run.measurements) == 2
    assert all(":" in p for p in run.problems)
    assert json.loads(data.read_text().splitlines()[0])["type"] == "meta"


def test_verdict_with_tenth_percentiles(tmp_path):
    run = read_run(write(tmp_path / "gold.jsonl"))
    res = {r.suite: r for r in evaluate(load_profile("qanum"), run.measurements,
                                         statistic="p10")}
    r = res["ML-DSA-87"]
    # p10 of 283..288 us (pos 0.5) = 283.5 us; of the unit (pos 0.8 of 100,100,100,...) = 100
    assert r.suite_time_ns == 283_500.0 and r.vu_estimate == 284
    assert r.estimate.median_ns == 285_500.0 and r.estimate.statistic_asked == "p10"
    assert r.statistic == "p10"
    with pytest.raises(ValueError):
        evaluate(load_profile("qanum"), run.measurements, statistic="mode")


def test_report_cli_skips_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join([meta_record().to_json(), measurement_line(), *BAD_LINES]) + "\n")
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


BENCH = Path(__file__).resolve().parents[1] / "bench"


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


def test_3_report_never_opens_the_profile_path_a_run_names(tmp_path: Path) -> None:
    evil = huge_qanum(tmp_path / "x")
    run = gen_lines(tmp_path / "run.jsonl", ALL_SUITES, profile=str(evil))
    r = qprof_env("report", str(run))
    assert r.returncode == 0, r.stderr
    assert "99999" not in r.stdout and "290" in r.stdout
    assert str(SHIPPED.path) in r.stderr


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


def test_6_report_markdown_escapes_every_string(tmp_path: Path) -> None:
    run = _evil_run(tmp_path / "a|b`c.jsonl")
    assert read_run(run).measurements
    out = tmp_path / "F.md"
    r = qprof("report", str(run), "-o", str(out))
    assert r.returncode == 0, r.stderr
    md = out.read_text()
    _assert_inert(md)
    assert r"\<script\>alert(1)\</script\> \| x ## forged" in md  # the text, as text


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
