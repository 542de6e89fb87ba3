"""`qprof block`: a small real block, every verdict checked, threads that overlap.

Signatures come from whichever backend can sign here (liboqs, else pqcrypto or the
pure-Python reference), verification uses numba (always there) unless a test needs
liboqs. No wall-time asserts: overlap is checked from the threads' own timestamps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gen_run_json import (
    _SUMMARY,
    BAD_BLOCK_FILES,
    CACHE_128S,
    _block_file,
    _block_row,
    assert_clean,
    qprof_env,
)

from qprof.hw.sysfs import format_cpulist
from qprof.measure.block import BlockError, build_block, verify_block

SUITE = "ML-DSA-44"
INVALID = (3, 17, 250, 399)


def _cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))[:2]


@pytest.fixture(scope="module")
def block():  # noqa: ANN201
    return build_block(SUITE, 400, distinct=16, invalid=INVALID)


def test_block_items_are_fresh_signatures_with_the_tampered_ones_marked(block) -> None:  # noqa: ANN001
    assert len(block.items) == 400 and block.distinct == 16
    assert len({it.public_key for it in block.items}) == 16
    assert [i for i, it in enumerate(block.items) if not it.valid] == list(INVALID)


@pytest.mark.parametrize("mode", ["single", "enforce", "shadow"])
def test_every_verdict_is_right_and_invalid_ones_are_reported(block, mode: str) -> None:  # noqa: ANN001
    result = verify_block(block, _cpus(), "numba", mode, second="numba")
    assert result.verdicts == [i not in INVALID for i in range(400)]
    assert result.all_verified and result.wrong_verdicts == []
    assert result.rejected == len(INVALID) and result.accepted == 400 - len(INVALID)
    assert result.disagreements == 0
    assert sum(t.signatures for t in result.threads) == 400
    assert result.single_core_estimate_s > 0 and result.wall_s > 0


def test_a_wrong_verdict_is_reported(block) -> None:  # noqa: ANN001
    # Mark a valid item as "should be rejected": the verifier accepts it -> reported.
    from dataclasses import replace

    items = list(block.items)
    items[5] = replace(items[5], valid=False)
    result = verify_block(replace(block, items=tuple(items)), _cpus()[:1], "numba")
    assert not result.all_verified and result.wrong_verdicts == [5]


def _overlapped(result) -> bool:  # noqa: ANN001
    first, second = result.threads
    return first.start_s < second.end_s and second.start_s < first.end_s


@pytest.fixture(scope="module")
def big_block():  # noqa: ANN201
    return build_block(SUITE, 2000, distinct=16)


def _overlap_in_three_tries(block, backend: str, mode: str = "single") -> None:  # noqa: ANN001
    # Each thread gets ~1,000 verifications (tens of ms): on a loaded host a pinned
    # thread can wait a few scheduler slices for its CPU, so allow three tries.
    results = [verify_block(block, _cpus(), backend, mode, second="numba") for _ in range(3)]
    for result in results:
        assert sorted(t.cpu for t in result.threads) == _cpus()
        assert result.all_verified
    assert any(_overlapped(r) and r.overlap_s > 0 for r in results)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_threads_run_at_the_same_time_on_their_own_cpus(big_block) -> None:  # noqa: ANN001
    _overlap_in_three_tries(big_block, "numba")  # numba's kernels release the GIL


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_liboqs_threads_overlap_too(big_block, liboqs_available) -> None:  # noqa: ANN001
    _overlap_in_three_tries(big_block, "liboqs", "enforce")  # ctypes releases the GIL


def test_liboqs_enforce_reports_the_invalid_ones(block, liboqs_available) -> None:  # noqa: ANN001
    result = verify_block(block, _cpus(), "liboqs", "enforce", second="numba")
    assert result.verdicts == [i not in INVALID for i in range(400)]


def test_bad_arguments_raise_block_error(block) -> None:  # noqa: ANN001
    with pytest.raises(BlockError):
        verify_block(block, [], "numba")
    with pytest.raises(BlockError):
        verify_block(block, _cpus(), "numba", mode="paranoid")
    with pytest.raises(BlockError):
        build_block(SUITE, 0)


def test_cli_json_contract_and_report_section(tmp_path) -> None:  # noqa: ANN001
    cpus = ",".join(map(str, _cpus()))
    out = subprocess.run(
        [sys.executable, "-m", "qprof", "block", "--json", "--suites", SUITE, "--signatures",
         "60", "--invalid", "2", "--backend", "numba", "--cpus", cpus],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    rows = data["results"]
    assert rows[0]["scope"] == "all" and rows[0]["cpus"] == _cpus()
    for row in rows:
        assert row["suite"] == SUITE and row["backend"] == "numba" and row["mode"] == "single"
        assert row["signatures"] == 60 and row["all_verified"] is True
        assert row["rejected"] == 2
        assert row["wall_s"] > 0 and row["single_core_estimate_s"] > 0
    if len(_cpus()) > 1:
        assert rows[-1]["scope"] == f"cpu {_cpus()[0]}" and rows[-1]["cpus"] == _cpus()[:1]
    # The same figures in `qprof report --block`.
    saved = tmp_path / "block.json"
    saved.write_text(out.stdout)
    report = subprocess.run(
        [sys.executable, "-m", "qprof", "report", "--block", str(saved)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "## Measured worst-case blocks" in report.stdout
    listed = format_cpulist(_cpus())
    assert f"| {SUITE} (60) | single (numba) | all ({listed})" in report.stdout


def test_daemon_exports_the_blocks_it_verified(tmp_path) -> None:  # noqa: ANN001
    # A tiny profile (30 ML-DSA-44 signatures a block) through the daemon's cycle
    # runner, then the Prometheus exposition.
    import threading
    from pathlib import Path

    from prometheus_client import CollectorRegistry, generate_latest

    from qprof.consensus.profiles import profile_from_dict
    from qprof.service.config import DaemonConfig
    from qprof.service.cycle import CycleRunner
    from qprof.service.metrics import MetricsState, QprofCollector

    state = MetricsState()
    state.profile = profile_from_dict(
        {"name": "tiny", "unit_suite": SUITE, "verify_units": {SUITE: 100},
         "max_block_verify_units": 3000, "target_block_interval_s": 75},
        Path(tmp_path / "tiny.toml"),
    )  # fmt: skip
    runner = CycleRunner(DaemonConfig(block=True, dual=False), None, None, state, "numba",
                         dict, lambda cpu: True)  # type: ignore[arg-type]  # fmt: skip
    runner.measure_blocks(threading.Event())
    [result] = state.blocks
    assert result.signatures == 30 and result.all_verified and result.scope == "all"
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QprofCollector(state, {"qprof": "test"}))
    text = generate_latest(registry).decode()
    assert f'qprof_block_verify_seconds{{mode="single",scope="all",suite="{SUITE}"}}' in text
    assert f'qprof_block_single_core_estimate_seconds{{mode="single",suite="{SUITE}"}}' in text


def test_cli_bad_input_is_a_clear_error(capsys) -> None:  # noqa: ANN001
    from qprof.cli import main

    assert main(["block", "--suites", "ML-DSA-99"]) == 2
    assert "unknown suite ML-DSA-99" in capsys.readouterr().err
    assert main(["block", "--profile", "/nonexistent.toml"]) == 2
    assert main(["block", "--cpus", "zero"]) == 2
    assert "--cpus" in capsys.readouterr().err


def test_median_run_keeps_every_wall_time_and_any_wrong_verdict(block) -> None:  # noqa: ANN001
    from dataclasses import replace

    from qprof.measure.block import median_run

    runs = [verify_block(block, _cpus()[:1], "numba") for _ in range(3)]
    runs[2] = replace(runs[2], all_verified=False, wrong_verdicts=[7])
    chosen = median_run(runs)
    assert chosen.wall_s == sorted(r.wall_s for r in runs)[1]
    assert chosen.wall_runs_s == [r.wall_s for r in runs]
    assert not chosen.all_verified and chosen.wrong_verdicts == [7]


def test_median_interval_is_distribution_free() -> None:
    from qprof.measure.block import median_interval

    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None  # (min, max) covers 93.75 %
    assert median_interval([float(i) for i in range(6)]) == (0.0, 5.0)  # 96.9 %
    assert median_interval([float(i) for i in range(9)]) == (1.0, 7.0)  # 96.1 %
    assert median_interval([float(i) for i in range(20)]) == (5.0, 14.0)  # 95.9 %


def test_median_run_pairs_with_the_single_cpu_runs(block) -> None:  # noqa: ANN001
    from dataclasses import replace

    from qprof.measure.block import median_run

    one = verify_block(block, _cpus()[:1], "numba")
    runs = [replace(one, wall_s=w) for w in (1.0, 1.2, 0.9, 1.1, 1.0, 1.3)]
    single = [replace(one, wall_s=2 * w) for w in (1.0, 1.2, 0.9, 1.1, 1.0, 1.3)]
    chosen = median_run(runs, single)
    assert chosen.wall_median_s == pytest.approx(1.05)
    assert chosen.wall_ci_s == [0.9, 1.3]
    assert chosen.vs_single == pytest.approx(0.5) and chosen.vs_single_ci == [0.5, 0.5]


def test_a_mixed_block_verifies_each_item_with_its_suite() -> None:
    from qprof.measure.block import build_mixed_block

    mixed = build_mixed_block([("ML-DSA-44", 30), ("ML-DSA-87", 10)], distinct=4)
    assert mixed.composition == (("ML-DSA-44", 30), ("ML-DSA-87", 10))
    assert mixed.suites == ["ML-DSA-44", "ML-DSA-87"]
    suites = [it.suite for it in mixed.items]
    assert suites.count("ML-DSA-87") == 10 and len(suites) == 40
    # Interleaved: each half of the block holds half of each suite.
    assert suites[:20].count("ML-DSA-87") == 5
    result = verify_block(mixed, _cpus(), "numba", per_signature_s=1e-4)
    assert result.all_verified and result.accepted == 40
    assert result.composition == [("ML-DSA-44", 30), ("ML-DSA-87", 10)]


def test_cli_worst_measures_the_costliest_mixture(tmp_path) -> None:  # noqa: ANN001
    # A small profile whose worst block mixes both suites: ML-DSA-44 has the most time
    # per VU, but the byte limit keeps it to a few, the rest is ML-DSA-87.
    profile = tmp_path / "mix.toml"
    profile.write_text(
        'name = "mix"\nunit_suite = "ML-DSA-44"\nmax_block_verify_units = 6000\n'
        "max_block_auth_bytes = 150000\ntarget_block_interval_s = 75\n"
        '[verify_units]\n"ML-DSA-44" = 100\n"ML-DSA-87" = 100\n'
        '[auth_bytes_per_spend]\n"ML-DSA-44" = 3739\n"ML-DSA-87" = 7226\n')
    out = subprocess.run(
        [sys.executable, "-m", "qprof", "block", "--json", "--worst", "--profile",
         str(profile), "--backend", "numba", "--cpus", ",".join(map(str, _cpus())),
         "--repeat", "6"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    worst = data["worst_block"]
    # With equal constants ML-DSA-87 (slower) gives more time per VU: bytes bind.
    assert worst["auth_bytes"] <= 150_000 and worst["verify_units"] <= 6000
    assert "auth_bytes" in worst["binding"]
    from qprof.consensus import load_profile
    from qprof.consensus.worst_block import BlockLimits, worst_block

    expect = worst_block(BlockLimits.of(load_profile(profile)), worst["per_signature_ns"])
    assert worst["composition"] == dict(expect.composition)
    for row in data["results"]:
        assert row["signatures"] == sum(worst["composition"].values())
        assert row["all_verified"] and len(row["wall_runs_s"]) == 6
        assert row["wall_ci_s"][0] <= row["wall_median_s"] <= row["wall_ci_s"][1]
    if len(_cpus()) > 1:
        assert data["results"][0]["vs_single"] is not None


def test_daemon_verifies_the_worst_mixture_too(tmp_path) -> None:  # noqa: ANN001
    """A profile whose worst-case block mixes suites (the auth bytes bind: 13 ML-DSA-87 +
    1 ML-DSA-44 take longest): the daemon's block cycle verifies that mixture as well."""
    import threading
    from pathlib import Path

    from prometheus_client import CollectorRegistry, generate_latest

    from qprof.consensus.profiles import profile_from_dict
    from qprof.consensus.verdict import evaluate
    from qprof.measure.records import Measurement
    from qprof.service.config import DaemonConfig
    from qprof.service.cycle import CycleRunner
    from qprof.service.metrics import MetricsState, QprofCollector

    profile = profile_from_dict(
        {"name": "mix", "unit_suite": SUITE, "verify_units": {SUITE: 100, "ML-DSA-87": 100},
         "max_block_verify_units": 4000, "max_block_auth_bytes": 100_000,
         "auth_bytes_per_spend": {SUITE: 3739, "ML-DSA-87": 7226},
         "target_block_interval_s": 75}, Path(tmp_path / "mix.toml"))  # fmt: skip
    ms = [Measurement(run_id="r", cpu=0, suite=s, backend="numba", operation="verify",
                      round=k, n=1, median_ns=t, p95_ns=t)
          for k in range(3) for s, t in ((SUITE, 100_000.0), ("ML-DSA-87", 200_000.0))]
    state = MetricsState(profile=profile)
    state.profile = profile
    # The verdict of a numba run is a comparison figure: judge a copy as the node's.
    from dataclasses import replace

    state.coverage = [replace(c, basis="node") for c in evaluate(profile, ms)]
    bt = state.coverage[0].block_time
    assert bt is not None and bt.worst.composition == ((SUITE, 1), ("ML-DSA-87", 13))
    runner = CycleRunner(DaemonConfig(block=True, dual=False), None, None, state, "numba",
                         dict, lambda cpu: True)  # type: ignore[arg-type]  # fmt: skip
    runner.measure_blocks(threading.Event())
    worst = [b for b in state.blocks if b.suite == "worst"]
    assert len(worst) == 1 and worst[0].signatures == 14 and worst[0].all_verified
    assert worst[0].composition == [(SUITE, 1), ("ML-DSA-87", 13)]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QprofCollector(state, {"qprof": "test"}))
    text = generate_latest(registry).decode()
    assert 'qprof_block_composition_info{block="1 x ML-DSA-44 + 13 x ML-DSA-87",suite="worst"}' \
        in text


_ROW = {"kind": "ground", "suite": "SLH-DSA-SHAKE-128s", "pk": "00", "msg": "00",
        "sig": "00", "ctx": "", "valid": True, "verify_ns": 1000.0}


# The signatures are read by block --adversarial alone (the verdict needs the summary).
ROW_WITHOUT_KIND = json.dumps({"summary": _SUMMARY, "signatures": [
    {k: v for k, v in _ROW.items() if k != "kind"}]})


def test_10_block_adversarial_on_a_row_without_kind_is_one_line(tmp_path: Path) -> None:
    adv = tmp_path / "adv"
    adv.mkdir()
    (adv / CACHE_128S).write_text(ROW_WITHOUT_KIND)
    r = qprof_env("block", "--adversarial", "--suites", "SLH-DSA-SHAKE-128s", "--signatures",
                  "1", "--repeat", "1", "--cpus", "0", env={"QPROF_ADVERSARY_DIR": str(adv)})
    assert "signatures[0].kind" in assert_clean(r)


@pytest.mark.parametrize("name", sorted(BAD_BLOCK_FILES))
def test_13_report_block_checks_its_input(tmp_path: Path, name: str) -> None:
    path = _block_file(tmp_path, name)
    err = assert_clean(qprof_env("report", "--block", str(path)))
    assert str(path) in err and BAD_BLOCK_FILES[name][1] in err


@pytest.mark.parametrize("device", ["/dev/zero", "/proc/self/status"])
def test_13_report_block_does_not_read_a_device_or_kernel_file(device: str) -> None:
    assert device in assert_clean(qprof_env("report", "--block", device, timeout=30))


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
    r = qprof_env("block", "--backend", "openssl", "--suites", "SLH-DSA-SHAKE-128s",
                  "--signatures", "1", "--repeat", "1", "--cpus", "0")
    err = assert_clean(r)
    assert "openssl" in err and "signing" not in err


def test_15_block_second_verifier_unknown_is_one_line() -> None:
    r = qprof_env("block", "--mode", "shadow", "--second", "nope", "--suites", "ML-DSA-44",
                  "--signatures", "1", "--repeat", "1", "--cpus", "0")
    assert "nope" in assert_clean(r)


@pytest.mark.parametrize("argv,words", [
    (["--signatures", "1000000000000"], "--signatures"),
    (["--signatures", "5000"], "holds at most"),
    (["--invalid", "1000000000000"], "--invalid"),
    (["--repeat", "1e9"], "--repeat"),
])
def test_16_block_counts_are_bounded(argv: list[str], words: str) -> None:
    r = qprof_env("block", "--suites", "ML-DSA-44", "--cpus", "0", *argv)
    assert "Traceback" not in r.stderr and r.returncode == 2, r.stderr[-2000:]
    assert words in r.stderr


def test_16_block_signatures_parse_bounded_in_process() -> None:
    import argparse

    from qprof.commands import block

    parser = argparse.ArgumentParser()
    block.add_parser(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--signatures", "1000000000000"])
