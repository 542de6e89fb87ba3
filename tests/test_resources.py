"""Memory per operation (issue 32): the ELF image, the high-water mark around the
operations (clear_refs, or a fresh process), tracemalloc's pass, the records, and a real
run that carries them (qprof.measure.resources, qprof.measure.preflight)."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from qprof.measure.records import ResourceUse, record_from_dict
from qprof.measure.resources import (
    Operation,
    elf_image_bytes,
    kernel_modules,
    measure_backend,
    reset_hwm,
    status_kib,
)


def test_elf_image_of_a_real_shared_object_and_not_of_text(tmp_path: Path) -> None:
    size = elf_image_bytes(os.path.realpath(sys.executable))
    assert size is not None and size > 0
    text = tmp_path / "not-elf"
    text.write_text("hello")
    assert elf_image_bytes(str(text)) is None
    assert elf_image_bytes(str(tmp_path / "absent")) is None


def test_clear_refs_brings_the_high_water_mark_down() -> None:
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("no /proc/self/clear_refs")
    block = bytearray(64 << 20)  # 64 MiB touched, then freed: VmHWM stays up
    block[:: 4096] = b"\x01" * len(block[:: 4096])
    del block
    assert status_kib()["VmHWM"] > status_kib()["VmRSS"] + 32 * 1024
    after = reset_hwm()
    if after is None:
        pytest.skip("the kernel refused clear_refs")
    assert after < status_kib()["VmRSS"] + 32 * 1024


def _allocating(size: int) -> Operation:
    def call() -> None:
        block = bytearray(size)
        block[:: 4096] = b"\x01" * len(block[:: 4096])

    return Operation("ML-DSA-44", "verify", call)


@pytest.mark.parametrize("reset", [True, False])
def test_peak_counts_what_an_operation_touches(reset: bool) -> None:
    """An operation that touches 40 MiB shows about 40 MiB over the baseline, with
    clear_refs and in a forked fresh process alike; tracemalloc sees its bytearray. (Above
    glibc's largest mmap threshold, 32 MiB: every call maps fresh pages, none are reused.)"""
    rows = measure_backend("liboqs", lambda s: [_allocating(40 << 20)], ["ML-DSA-44"],
                           calls=2, reset=reset)
    (m,) = rows
    assert m.hwm_reset == ("clear_refs" if reset and reset_hwm() is not None
                           else "fresh_process")
    assert 39 * 1024 <= m.peak_rss_kib - m.baseline_rss_kib <= 128 * 1024
    assert m.py_peak_bytes is not None and m.py_peak_bytes >= 40 << 20
    assert m.py_retained_bytes is not None and m.py_retained_bytes < 1 << 20
    assert threading.stack_size() == 0  # the measuring threads' size is not left set


def test_numba_kernel_modules_are_found_through_the_kernel() -> None:
    pytest.importorskip("numba")
    modules = kernel_modules("qprof.verify.nb.mldsa")
    assert "qprof.verify.nb.mldsa" in modules and "qprof.verify.nb.keccak" in modules


def test_resource_record_round_trip() -> None:
    r = ResourceUse(run_id="r", cpu=0, backend="liboqs", suite="SLH-DSA-SHAKE-256s",
                    operation="verify", calls=16, baseline_rss_kib=62000, peak_rss_kib=62012,
                    hwm_reset="clear_refs", py_peak_bytes=700, py_retained_bytes=16,
                    code_bytes=756573, code_what="ELF image", load_rss_kib=0,
                    runtime_rss_kib=676)
    back = record_from_dict(r.to_dict())
    assert back == r and isinstance(back, ResourceUse) and back.peak_increment_kib == 12


def test_a_run_records_memory_and_known_answers_before_timing(
        tmp_path_factory: pytest.TempPathFactory, liboqs_available: None) -> None:
    """A real run (liboqs, the unit suite alone): ResourceUse rows for verify and
    verify_invalid, with the liboqs image, plausible RSS and a small increment, and a
    FunctionalCheck PASS, all before the first measurement."""
    from qprof.measure.config import BenchConfig
    from qprof.measure.engine import run_bench
    from qprof.measure.records import FunctionalCheck, Measurement, Record

    records: list[Record] = []
    cache = tmp_path_factory.getbasetemp() / "qprof-cache"
    summary = run_bench(BenchConfig(
        cpus=[0], suites=["ML-DSA-44"], backends=["liboqs"], mode="quick", rounds=1,
        max_rounds=1, adaptive=False, budget_s=0.02, fixture_cache=cache, timer="cpu"),
        records.append)
    kinds = [type(r) for r in records]
    first_measurement = kinds.index(Measurement)
    assert kinds.index(FunctionalCheck) < first_measurement
    assert kinds.index(ResourceUse) < first_measurement
    check = next(c for c in summary.functional
                 if (c.backend, c.suite) == ("liboqs", "ML-DSA-44"))
    assert check.status == "PASS" and check.cases > 20 and check.build
    ops = {r.operation: r for r in summary.resources
           if (r.backend, r.suite) == ("liboqs", "ML-DSA-44")}
    assert set(ops) == {"verify", "verify_invalid"}
    m = ops["verify"]
    assert m.code_bytes and m.code_bytes > 100_000 and "ELF" in m.code_what
    assert 10_000 < m.baseline_rss_kib < 2_000_000
    # ML-DSA-44's verify: its stack and heap, tens of KiB, not the interpreter's size.
    assert 0 <= m.peak_increment_kib < 2048


def test_the_monitor_shows_known_answers_memory_and_headroom(tmp_path: Path) -> None:
    """The monitor's evaluation of a store (as its child process makes it) carries the
    newest run's known answers, memory per verify and the constants with headroom."""
    import dataclasses
    import json
    import lzma

    from qprof.measure.records import AdversaryFactors, FunctionalCheck, Meta
    from qprof.service.store import Store
    from qprof.tui.sources.consensus import (
        evaluate_store,
        evaluation_from_json,
        evaluation_to_json,
        load_profile_info,
    )

    runs = Path(__file__).resolve().parent / "data" / "runs"
    lines = lzma.decompress(sorted(runs.glob("*.jsonl.xz"))[0].read_bytes()).splitlines()
    store = Store(tmp_path / "qprof.db")
    recs = [record_from_dict(json.loads(x)) for x in lines]
    run_id = next(r for r in recs if isinstance(r, Meta)).run_id
    extra = [FunctionalCheck(run_id=run_id, backend="liboqs", suite="ML-DSA-87",
                             status="MISMATCH", cases=5, failed=["second:x valid"]),
             ResourceUse(run_id=run_id, cpu=1, backend="liboqs", suite="SLH-DSA-SHAKE-256s",
                         operation="verify", calls=16, baseline_rss_kib=62000,
                         peak_rss_kib=62012, hwm_reset="clear_refs", code_bytes=756573),
             AdversaryFactors(run_id=run_id, suite="SLH-DSA-SHAKE-128s",
                              kind="crafted_invalid", factor=1.44, low=1.38, high=1.5,
                              cpu_model="AMD EPYC", measured_at=1.8e9)]
    for r in recs[:-1] + extra + recs[-1:]:
        store.add(dataclasses.replace(r) if hasattr(r, "run_id") else r)
    store.close()
    found = evaluate_store(tmp_path / "qprof.db", load_profile_info("qanum"), "liboqs")
    found = evaluation_from_json(evaluation_to_json(found))  # as from the child process
    text = "\n".join(found.preflight)
    assert "liboqs MISMATCH ML-DSA-87" in text
    assert "SLH-DSA-SHAKE-256s +12 KiB" in text and "upper-bound" in text
    assert "invalid block on Silver" in text and "0.72 % of 75 s" in text
