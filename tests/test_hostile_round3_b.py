"""Hostile inputs, round 3 (issue 31), part B: the writers and the readers of files.

Every test runs the real command in a subprocess (or the real reader) on the input of its
finding: exit 2 (or the documented code), one clear line on stderr, no traceback. The
test names carry the finding's number. Nothing here measures: the runs are "GEN" files
(a meta record, 5 rounds on CPU 0, an end record), judged with ``check --from``.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from qprof.consensus import load_profile

SHIPPED = load_profile("qanum")


def qprof(*args: str, env: dict[str, str] | None = None,
          timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "qprof", *args], capture_output=True,
                          text=True, timeout=timeout, check=False,
                          env={**os.environ, **(env or {})})


def assert_clean(r: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """Exit ``code``, no traceback, and (for an error) one line on stderr; the stderr."""
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == code, (r.returncode, r.stdout[-1000:], r.stderr[-2000:])
    if code == 2:
        lines = [x for x in r.stderr.splitlines() if x.strip()]
        assert len(lines) == 1, r.stderr[-2000:]
        assert len(lines[0]) < 600, lines[0][:600]
    return r.stderr


def gen(path: Path, suites: tuple[tuple[str, float], ...] = (
        ("ML-DSA-44", 17000.0), ("ML-DSA-87", 39000.0)), end: bool = True,
        profile: str | None = None) -> Path:
    """The issue's GEN: a small valid run (samples [t, 1.01t, 0.99t], 5 rounds, CPU 0)."""
    lines: list[dict[str, object]] = [
        {"type": "meta", "run_id": "r1", "started_at": 1.7e9, "qprof_version": "0",
         "command": ["qprof", "check"], "profile": profile, "settings": {"mode": "check"}}]
    for rnd in range(5):
        for suite, t in suites:
            lines.append({"type": "measurement", "run_id": "r1", "cpu": 0, "suite": suite,
                          "backend": "liboqs", "operation": "verify", "round": rnd, "n": 3,
                          "median_ns": t, "p95_ns": 1.01 * t,
                          "samples_ns": [t, 1.01 * t, 0.99 * t]})
    if end:
        lines.append({"type": "end", "run_id": "r1", "finished_at": 1.7e9 + 60,
                      "status": "finished"})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


ALL_SUITES = (("ML-DSA-44", 17000.0), ("ML-DSA-87", 39000.0),
              ("SLH-DSA-SHAKE-128s", 250000.0), ("SLH-DSA-SHAKE-256s", 560000.0))


def huge_qanum(directory: Path) -> Path:
    """A file called qanum.toml whose constants cover anything."""
    directory.mkdir(parents=True, exist_ok=True)
    text = SHIPPED.path.read_text()
    for suite, vu in SHIPPED.verify_units.items():
        if suite != SHIPPED.unit_suite:
            text = text.replace(f"= {vu}\n", "= 99999\n")
    path = directory / "qanum.toml"
    path.write_text(text)
    assert load_profile(path).verify_units["ML-DSA-87"] == 99999
    return path


# -- 3. a recorded run's profile is a name, never a path --------------------------------

def test_3_check_from_never_opens_the_profile_path_a_run_names(tmp_path: Path) -> None:
    evil = huge_qanum(tmp_path / "x")
    run = gen(tmp_path / "run.jsonl", ALL_SUITES, profile=str(evil))
    r = qprof("check", "--from", str(run), "--json")
    doc = json.loads(r.stdout)
    assert doc["profile_path"] == str(SHIPPED.path)  # the name, looked up here
    assert {x["suite"]: x["vu_constant"] for x in doc["results"]}["ML-DSA-87"] == 290
    assert str(SHIPPED.path) in r.stderr and "Traceback" not in r.stderr


def test_3_report_never_opens_the_profile_path_a_run_names(tmp_path: Path) -> None:
    evil = huge_qanum(tmp_path / "x")
    run = gen(tmp_path / "run.jsonl", ALL_SUITES, profile=str(evil))
    r = qprof("report", str(run))
    assert r.returncode == 0, r.stderr
    assert "99999" not in r.stdout and "290" in r.stdout
    assert str(SHIPPED.path) in r.stderr


@pytest.mark.parametrize("recorded", ["/proc/kmsg", "/dev/zero", "../../etc/passwd\n"])
def test_3_a_recorded_kernel_file_or_odd_name_is_one_line(tmp_path: Path,
                                                          recorded: str) -> None:
    run = gen(tmp_path / "run.jsonl", profile=recorded)
    err = assert_clean(qprof("check", "--from", str(run), timeout=30))
    assert "give --profile" in err


def test_3_read_toml_refuses_kernel_files_without_reading() -> None:
    from qprof.tomlfile import TomlFileError, read_toml

    for path in ("/proc/self/status", "/proc/kmsg", "/sys/kernel/notes"):
        with pytest.raises(TomlFileError, match="kernel file"):
            read_toml(Path(path))


def test_3_read_toml_does_not_wait_on_a_fifo(tmp_path: Path) -> None:
    from qprof.tomlfile import TomlFileError, read_toml

    fifo = tmp_path / "p.toml"
    os.mkfifo(fifo)
    with pytest.raises(TomlFileError, match="FIFO"):
        read_toml(fifo)


# -- 4. priced suites not measured never pass ---------------------------------------------

def test_4_a_run_of_the_unit_suite_alone_does_not_pass(tmp_path: Path) -> None:
    run = gen(tmp_path / "run.jsonl", (("ML-DSA-44", 17000.0),))
    r = qprof("check", "--from", str(run), "--json")
    assert_clean(r, 3)
    doc = json.loads(r.stdout)
    assert doc["decision"] == "unsure" and doc["exit_code"] == 3
    assert any("not measured: ML-DSA-87" in g for g in doc["gaps"]), doc["gaps"]
    text = qprof("check", "--from", str(run))
    assert text.returncode == 3
    # Its own word (issue 30: one word per meaning; "unsure" is an interval straddling).
    assert "verdict: incomplete: not measured: ML-DSA-87, SLH-DSA-SHAKE-128s" in " ".join(
        text.stdout.split())


def test_4_a_run_cut_short_does_not_pass(tmp_path: Path) -> None:
    every = tmp_path / "every.toml"
    every.write_text(SHIPPED.path.read_text().replace('ratio_binds = "reference"',
                                                      'ratio_binds = "all"'))
    whole = gen(tmp_path / "whole.jsonl", ALL_SUITES)
    cut = gen(tmp_path / "cut.jsonl", ALL_SUITES, end=False)
    done = json.loads(qprof("check", "--from", str(whole), "--profile", str(every),
                            "--json").stdout)
    assert done["decision"] == "covered", done["gaps"]  # all measured, finished: passes
    r = qprof("check", "--from", str(cut), "--profile", str(every), "--json")
    assert r.returncode == 3
    doc = json.loads(r.stdout)
    assert doc["decision"] == "unsure" and any("partial" in g for g in doc["gaps"])


# -- 9, 11, 14. one atomic writer; the output path checked before any work ---------------

def _bad_outputs(tmp_path: Path) -> list[str]:
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    return [str(tmp_path / "dir"), str(tmp_path / "file" / "sub.jsonl"), "/proc/version",
            str(tmp_path / "missing" / "out.jsonl")]


def test_14_check_o_bad_path_is_one_line_before_measuring(tmp_path: Path) -> None:
    for bad in _bad_outputs(tmp_path):
        err = assert_clean(qprof("check", "--cpus", "0", "--time-limit", "0", "-o", bad))
        assert bad in err and "cannot write" in err


def test_9_report_and_export_check_their_paths_before_any_work(tmp_path: Path) -> None:
    from qprof.service.store import Store

    run = gen(tmp_path / "run.jsonl")
    with run.open("a") as fh:
        fh.write("not json\n")  # reading the run would say so: it is never read
    state = tmp_path / "state"
    Store(state / "qprof.db").close()  # no runs: opening it would say so
    for bad in _bad_outputs(tmp_path):
        for argv in (["report", str(run), "-o", bad], ["report", str(run), "--html", bad],
                     ["export", "latest", "-o", bad, "--state-dir", str(state)]):
            err = assert_clean(qprof(*argv))
            assert "cannot write" in err and bad in err, (argv, err)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_9_no_permission_is_one_line(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    run = gen(tmp_path / "run.jsonl")
    assert "Permission denied" in assert_clean(qprof("report", str(run), "-o",
                                                     str(ro / "r.md")))


def _limited_write(path: Path, text_len: int) -> subprocess.CompletedProcess[str]:
    """write_file under `ulimit -f 1` (SIGXFSZ ignored: the write fails with EFBIG)."""
    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    code = ("import sys\nfrom qprof.commands.output import OutputError, write_file\n"
            "try:\n    write_file(sys.argv[1], 'y' * int(sys.argv[2]))\n"
            "except OutputError as exc:\n    print(exc, file=sys.stderr); sys.exit(2)\n")
    return subprocess.run([sys.executable, "-c", code, str(path), str(text_len)],
                          capture_output=True, text=True, timeout=60, check=False,
                          preexec_fn=limit)


def test_9_a_write_cut_short_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "profile.toml"
    target.write_text("old = 1\n")
    r = _limited_write(target, 5000)
    assert_clean(r)
    assert target.read_text() == "old = 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.toml"]  # no tmp left


def test_9_check_o_is_written_whole(tmp_path: Path) -> None:
    """check -o goes through the atomic writer: a temporary file beside it while the run
    lasts, renamed over it at the end (the old contents replaced, nothing left beside)."""
    from qprof.atomicfile import AtomicFile

    out = tmp_path / "run.jsonl"
    out.write_text("old\n")
    f = AtomicFile(out)
    f.write("new\n")
    f.flush()
    assert out.read_text() == "old\n"
    assert len(list(tmp_path.iterdir())) == 2  # the run so far is on disk beside it
    f.commit()
    assert out.read_text() == "new\n" and [p.name for p in tmp_path.iterdir()] == [out.name]


def test_11_adversary_out_is_checked_before_grinding(tmp_path: Path) -> None:
    for bad in _bad_outputs(tmp_path):
        r = qprof("adversary", "ML-DSA-44", "--minutes", "0", "--out", bad,
                  env={"QPROF_ADVERSARY_DIR": str(tmp_path / "adv")}, timeout=30)
        assert "--out" in assert_clean(r)
        assert not (tmp_path / "adv").exists()  # nothing ran


def test_11_the_cache_is_kept_when_out_fails(tmp_path: Path, liboqs_available: None) -> None:
    """--out /dev/full passes the check (a writable device) and fails at the write:
    the run is still in the cache, and the line says where."""
    adv = tmp_path / "adv"
    r = qprof("adversary", "ML-DSA-44", "--minutes", "0", "--rounds", "3", "--pool", "1",
              "--no-dual", "--cpu", "0", "--out", "/dev/full",
              env={"QPROF_ADVERSARY_DIR": str(adv)}, timeout=300)
    assert "Traceback" not in r.stderr and r.returncode == 2, r.stderr[-2000:]
    cache = adv / "ML-DSA-44.last.json"
    assert cache.is_file() and f"the run is kept in {cache}" in r.stderr
    assert json.loads(cache.read_text())["summary"]["suite"] == "ML-DSA-44"


# -- 10. a damaged adversary cache ----------------------------------------------------------

CACHE_128S = "SLH-DSA-SHAKE-128s.last.json"
_ROW = {"kind": "ground", "suite": "SLH-DSA-SHAKE-128s", "pk": "00", "msg": "00",
        "sig": "00", "ctx": "", "valid": True, "verify_ns": 1000.0}
_SUMMARY = {"suite": "SLH-DSA-SHAKE-128s", "cpu_model": "x", "measured_at": 1.7e9,
            "worst": {"ground": {"ratio": 1.1, "low": 1.05, "high": 1.2}}}
DAMAGED_CACHES = {
    "summary_list": ('{"summary": []}', "summary"),
    "nan_ratio": ('{"summary": {"suite": "SLH-DSA-SHAKE-128s", "cpu_model": "x", '
                  '"measured_at": 1, "worst": {"ground": {"ratio": NaN, "low": 1, '
                  '"high": 1}}}, "signatures": []}', "NaN"),
    "string_ratio": (json.dumps({"summary": {**_SUMMARY, "worst": {"ground": {
        "ratio": "big", "low": 1.0, "high": 1.2}}}, "signatures": []}),
        "summary.worst.ground.ratio"),
    "zero_ratio": (json.dumps({"summary": {**_SUMMARY, "worst": {"ground": {
        "ratio": 0, "low": 0, "high": 1.2}}}, "signatures": []}),
        "summary.worst.ground.ratio"),
    "deep": ("[" * 100000 + "]" * 100000, "nested"),
}
# The signatures are read by block --adversarial alone (the verdict needs the summary).
ROW_WITHOUT_KIND = json.dumps({"summary": _SUMMARY, "signatures": [
    {k: v for k, v in _ROW.items() if k != "kind"}]})


@pytest.mark.parametrize("name", sorted(DAMAGED_CACHES))
def test_10_check_from_ignores_a_damaged_cache_with_one_warning(tmp_path: Path,
                                                                name: str) -> None:
    text, field = DAMAGED_CACHES[name]
    adv = tmp_path / "adv"
    adv.mkdir()
    (adv / CACHE_128S).write_text(text)
    run = gen(tmp_path / "run.jsonl", ALL_SUITES)
    r = qprof("check", "--from", str(run), "--json", env={"QPROF_ADVERSARY_DIR": str(adv)})
    assert "Traceback" not in r.stderr and r.returncode == 0, r.stderr[-2000:]
    warned = [x for x in r.stderr.splitlines() if "adversary cache ignored" in x]
    assert len(warned) == 1 and CACHE_128S in warned[0] and field in warned[0], r.stderr
    assert json.loads(r.stdout)["decision"] == "covered"


def test_10_metrics_go_on_without_the_damaged_cache(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from qprof.service.metrics_adversarial import worst_signature_metrics

    def reference_samples() -> list[object]:
        families = {f.name: f for f in worst_signature_metrics([], SHIPPED)}
        return families["qprof_vu_worst_signature_reference"].samples

    adv = tmp_path / "adv"
    adv.mkdir()
    (adv / CACHE_128S).write_text('{"summary": []}')
    monkeypatch.setenv("QPROF_ADVERSARY_DIR", str(adv))
    assert reference_samples() == []  # /metrics goes on without the figure (was a 500)
    (adv / CACHE_128S).write_text(json.dumps({"summary": _SUMMARY, "signatures": []}))
    assert reference_samples()  # a sound cache is read again


def test_10_block_adversarial_on_a_row_without_kind_is_one_line(tmp_path: Path) -> None:
    adv = tmp_path / "adv"
    adv.mkdir()
    (adv / CACHE_128S).write_text(ROW_WITHOUT_KIND)
    r = qprof("block", "--adversarial", "--suites", "SLH-DSA-SHAKE-128s", "--signatures",
              "1", "--repeat", "1", "--cpus", "0", env={"QPROF_ADVERSARY_DIR": str(adv)})
    assert "signatures[0].kind" in assert_clean(r)


# -- 13. report --block reads what it is given with bounds ---------------------------------

BAD_BLOCK_FILES = {
    "results_int": ('{"results": [1]}', "results[0]"),
    "string_signatures": (None, "results[0].signatures"),
    "string_speedup": (None, "results[0].speedup"),
    "nan_wall": (None, "NaN"),
    "zero_wall": (None, "results[0].wall_s"),
    "deep": ("[" * 100000 + "]" * 100000, "nested"),
    "not_json": ("{", "not a qprof block"),
}


def _block_row() -> dict[str, object]:
    from qprof.measure.block import BlockResult

    return BlockResult("ML-DSA-44", "numba", "single", None, 60, 60, "all", [0], 0.01, 0.01,
                       1.0, 10.0, 0.001, True, 60, 0, [], 0).to_dict()


def _block_file(tmp_path: Path, name: str) -> Path:
    text, _ = BAD_BLOCK_FILES[name]
    if text is None:
        row = _block_row()
        row.update({"string_signatures": {"signatures": "60"},
                    "string_speedup": {"speedup": "fast"},
                    "nan_wall": {"wall_s": float("nan")},
                    "zero_wall": {"wall_s": 0.0}}[name])
        text = json.dumps({"results": [row]})
    path = tmp_path / f"{name}.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", sorted(BAD_BLOCK_FILES))
def test_13_report_block_checks_its_input(tmp_path: Path, name: str) -> None:
    path = _block_file(tmp_path, name)
    err = assert_clean(qprof("report", "--block", str(path)))
    assert str(path) in err and BAD_BLOCK_FILES[name][1] in err


@pytest.mark.parametrize("device", ["/dev/zero", "/proc/self/status"])
def test_13_report_block_does_not_read_a_device_or_kernel_file(device: str) -> None:
    assert device in assert_clean(qprof("report", "--block", device, timeout=30))


def test_13_a_real_block_file_still_reads(tmp_path: Path) -> None:
    from qprof.measure.block_file import read_block_results

    path = tmp_path / "b.json"
    path.write_text(json.dumps({"profile": "qanum", "results": [_block_row()]}))
    [row] = read_block_results(path)
    assert row.signatures == 60 and row.wall_s == 0.01 and row.cpus == [0]


# -- 15, 16. block: verifiers found before any signing; bounded options ---------------------

def test_15_block_with_a_verifier_that_cannot_run_is_one_line_before_signing() -> None:
    # openssl has no SLH-DSA (cryptography exposes ML-DSA only); where openssl is not
    # installed at all it is refused as unavailable: one line either way.
    r = qprof("block", "--backend", "openssl", "--suites", "SLH-DSA-SHAKE-128s",
              "--signatures", "1", "--repeat", "1", "--cpus", "0")
    err = assert_clean(r)
    assert "openssl" in err and "signing" not in err


def test_15_block_second_verifier_unknown_is_one_line() -> None:
    r = qprof("block", "--mode", "shadow", "--second", "nope", "--suites", "ML-DSA-44",
              "--signatures", "1", "--repeat", "1", "--cpus", "0")
    assert "nope" in assert_clean(r)


@pytest.mark.parametrize("argv,words", [
    (["--signatures", "1000000000000"], "--signatures"),
    (["--signatures", "5000"], "holds at most"),
    (["--invalid", "1000000000000"], "--invalid"),
    (["--repeat", "1e9"], "--repeat"),
])
def test_16_block_counts_are_bounded(argv: list[str], words: str) -> None:
    r = qprof("block", "--suites", "ML-DSA-44", "--cpus", "0", *argv)
    assert "Traceback" not in r.stderr and r.returncode == 2, r.stderr[-2000:]
    assert words in r.stderr


def test_16_block_signatures_parse_bounded_in_process() -> None:
    import argparse

    from qprof.commands import block

    parser = argparse.ArgumentParser()
    block.add_parser(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--signatures", "1000000000000"])


# -- 18. the daemon's numbers are bounded ---------------------------------------------------

@pytest.mark.parametrize("option,value", [
    ("--watch-interval", "1e300"), ("--interval", "1e300"), ("--retry", "inf"),
    ("--alert-timeout", "1e300"), ("--store-wait", "1e300"), ("--keep-days", "1e300"),
    ("--first-cycle-delay", "1e300"), ("--cap-hold-seconds", "1e300"),
    ("--max-busy", "1e300"), ("--cap-hold-samples", str(10 ** 30)),
])
def test_18_daemon_refuses_huge_numbers(tmp_path: Path, option: str, value: str) -> None:
    r = qprof("daemon", option, value, "--state-dir", str(tmp_path / "st"), "--listen",
              "none", timeout=30)
    assert "Traceback" not in r.stderr and r.returncode == 2, r.stderr[-2000:]
    assert option.lstrip("-").replace("-", "_") in r.stderr


def test_18_daemon_config_file_huge_integer(tmp_path: Path) -> None:
    from qprof.service.config import ConfigError, load_config_file

    cfg = tmp_path / "qprof.toml"
    cfg.write_text(f"watch_interval = {10 ** 400}\n")
    with pytest.raises(ConfigError, match="at most"):
        load_config_file(cfg)


# -- done when #4: JSONL numbers -------------------------------------------------------------

@pytest.mark.parametrize("field,value", [
    ("samples_ns", [0.0, 0.0, 0.0]), ("cap_factor", 1e300), ("cpu", 10 ** 9),
    ("finished_at", 6e14), ("pool_size", 0), ("min_ns", -1.0),
])
def test_jsonl_numbers_out_of_range_are_one_problem_naming_the_field(
        tmp_path: Path, field: str, value: object) -> None:
    from qprof.measure.jsonl import read_run

    run = gen(tmp_path / "run.jsonl", ALL_SUITES)
    lines = run.read_text().splitlines()
    row = json.loads(lines[1])
    row[field] = value
    lines[1] = json.dumps(row)
    run.write_text("\n".join(lines) + "\n")
    problems = read_run(run).problems
    assert len(problems) == 1 and f"{run}:2:" in problems[0] and field in problems[0]


def test_freq_record_far_future_is_refused(tmp_path: Path) -> None:
    from qprof.measure.records import RecordError, record_from_dict

    with pytest.raises(RecordError, match="taken_at"):
        record_from_dict({"type": "freq", "run_id": "r", "taken_at": 6e14, "cpu": 0,
                          "cur_khz": None, "max_khz": None, "hw_max_khz": None,
                          "capped": None})


# -- done when #5: no traceback from any command on any input of these findings -------------

def test_no_traceback_on_any_input_of_part_b(tmp_path: Path) -> None:
    adv = tmp_path / "adv"
    adv.mkdir()
    (adv / CACHE_128S).write_text('{"summary": []}')
    run = gen(tmp_path / "run.jsonl")
    block_file = _block_file(tmp_path, "results_int")
    cases: list[tuple[list[str], int]] = [
        (["check", "--from", str(gen(tmp_path / "k.jsonl", profile="/proc/kmsg"))], 2),
        (["check", "--from", str(run)], 3),
        (["report", str(run), "--block", str(block_file)], 2),
        (["report", "--block", "/dev/zero"], 2),
        (["check", "-o", "/proc/version", "--cpus", "0"], 2),
        (["export", "latest", "-o", str(tmp_path), "--state-dir", str(tmp_path)], 2),
        (["adversary", "ML-DSA-44", "--out", str(tmp_path)], 2),
        (["block", "--signatures", "1000000000000"], 2),
        (["daemon", "--watch-interval", "1e300", "--listen", "none", "--state-dir",
          str(tmp_path / "st")], 2),
    ]
    for argv, code in cases:
        r = qprof(*argv, env={"QPROF_ADVERSARY_DIR": str(adv)}, timeout=60)
        assert "Traceback" not in r.stderr, (argv, r.stderr[-2000:])
        assert r.returncode == code, (argv, r.returncode, r.stderr[-2000:])


def test_fixture_and_pool_caches_are_read_bounded(tmp_path: Path) -> None:
    """A damaged signature cache is not used (it is signed again); deep nesting was a
    RecursionError through every command that verifies a pool."""
    from qprof.measure.fixtures import cache_path, read_cached

    path = cache_path("ML-DSA-44", tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for text in ("[" * 100000 + "]" * 100000, "[1, 2]", '[{"suite": NaN}]', "{"):
        path.write_text(text)
        assert read_cached("ML-DSA-44", tmp_path) == []


@pytest.mark.parametrize("argv", [["freq", "--watch", "1e300"],
                                  ["bench", "--rounds", str(10 ** 400)],
                                  ["check", "--time-limit", "1e300"]])
def test_16_every_numeric_option_is_bounded_above(argv: list[str]) -> None:
    """An option without its own upper bound has one (options.DEFAULT_AT_MOST)."""
    r = qprof(*argv, timeout=30)
    assert "Traceback" not in r.stderr and r.returncode == 2, r.stderr[-2000:]
    assert "at most" in r.stderr


def test_9_live_check_o_writes_the_run_whole(tmp_path: Path, liboqs_available: None) -> None:
    """A live check -o: the run is in the file at the end, nothing beside it, and it
    judges as recorded (check --from)."""
    out = tmp_path / "run.jsonl"
    out.write_text("an older file, replaced whole\n")
    r = qprof("check", "--cpus", "0", "--rounds", "3", "--max-rounds", "3", "--budget",
              "0.02", "--time-limit", "0", "-o", str(out), "--json", timeout=600)
    assert "Traceback" not in r.stderr and r.returncode in (0, 1, 3), r.stderr[-2000:]
    assert [p.name for p in tmp_path.iterdir()] == [out.name]
    first = out.read_text().splitlines()[0]
    assert json.loads(first)["type"] == "meta"
    again = qprof("check", "--from", str(out), "--json")
    assert json.loads(again.stdout)["run_id"] == json.loads(r.stdout)["run_id"]
