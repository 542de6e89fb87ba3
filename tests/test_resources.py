"""Memory per operation (issue 32): the ELF image, the high-water mark around the
operations (clear_refs, or a fresh process), tracemalloc's pass, the records, and a real
run that carries them (qprof.measure.resources, qprof.measure.preflight)."""

from __future__ import annotations

import os
import platform
import sys
import threading
from pathlib import Path

import pytest

from qprof.measure.native_memory import stack_text
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
                    runtime_rss_kib=676, stack_bytes=4592, heap_left_bytes=0,
                    native_note="", stack_bound="")
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
    assert m.stack_bytes is not None and 8 << 10 < m.stack_bytes < 64 << 10, m.native_note
    assert m.heap_left_bytes is not None


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


def _signed(suite: str) -> Operation:
    """A liboqs verify of a fresh liboqs signature, as an operation."""
    from qprof.verify import get_verifier
    from qprof.verify.backends.liboqs_backend import LiboqsSigner
    from qprof.verify.suites import SUITES

    signer = LiboqsSigner(SUITES[suite])
    pk, sk = signer.keypair()
    sig = signer.sign(sk, b"m" * 64)
    verify = get_verifier("liboqs", suite).verify
    return Operation(suite, "verify", lambda: verify(pk, b"m" * 64, sig))


def test_liboqs_verify_stack_and_heap_are_its_own(liboqs_available: None) -> None:
    """ML-DSA verify keeps its matrix A on the stack: K x L polynomials of 1 KiB, 16 for
    ML-DSA-44 and 56 for ML-DSA-87. Measured from the C call's entry (x86-64) the stack
    is tens of KiB, and ML-DSA-87's exceeds ML-DSA-44's by at least those 40 KiB
    (valgrind and a C driver: 29 and 72 KiB, docs/MEMORY.md)."""
    ops = {s: _signed(s) for s in ("ML-DSA-44", "ML-DSA-87")}
    rows = {m.suite: m for m in measure_backend("liboqs", lambda s: [ops[s]], list(ops),
                                                calls=2)}
    small, large = rows["ML-DSA-44"], rows["ML-DSA-87"]
    for m in (small, large):
        assert m.stack_bytes is not None and m.heap_left_bytes is not None, m.native_note
        assert m.heap_left_bytes < 64 << 10  # small SHAKE contexts, none kept per call
    assert 8 << 10 < small.stack_bytes < 64 << 10
    assert large.stack_bytes - small.stack_bytes >= 40 << 10
    if platform.machine() == "x86_64":
        assert small.stack_bound == large.stack_bound == ""


def test_numba_verify_records_its_stack_and_heap() -> None:
    pytest.importorskip("numba")
    from qprof.verify import get_verifier
    from qprof.verify.vectors import shipped_cases

    case = next(c for _tag, c in shipped_cases("ML-DSA-44") if c.expected and c.mu is None)
    verify = get_verifier("numba", "ML-DSA-44").verify
    op = Operation("ML-DSA-44", "verify",
                   lambda: verify(case.public_key, case.message, case.signature, case.context))
    (m,) = measure_backend("numba", lambda s: [op], ["ML-DSA-44"], calls=2)
    assert m.stack_bytes is not None and m.heap_left_bytes is not None, m.native_note
    assert m.stack_bytes < 1 << 20 and m.load_rss_kib is not None


def test_a_call_no_deeper_than_the_threads_waits_is_a_bound() -> None:
    (m,) = measure_backend("liboqs", lambda s: [Operation(s, "verify", lambda: None)],
                           ["ML-DSA-44"], calls=2)
    assert m.stack_bytes is not None and m.stack_bytes < 16 << 10
    if platform.machine() == "x86_64":
        assert m.stack_bound == "at_most" and "no deeper" in m.native_note


def test_without_proc_self_mem_the_stack_is_none_with_a_reason(tmp_path: Path) -> None:
    """A /proc without self/mem (here an empty directory standing for it): no stack
    figure, the reason names the file; the RSS and heap figures are still there."""
    (m,) = measure_backend("liboqs", lambda s: [_allocating(1 << 16)], ["ML-DSA-44"],
                           calls=2, proc=str(tmp_path))
    assert m.stack_bytes is None and m.stack_bound == ""
    assert f"{tmp_path}/self/mem not readable" in m.native_note
    assert m.peak_rss_kib >= m.baseline_rss_kib > 0
    assert m.heap_left_bytes is not None or "mallinfo2" in m.native_note


def test_the_tables_and_metrics_show_stack_and_heap() -> None:
    from qprof.commands.check_preflight import resource_json, resource_table
    from qprof.measure.jsonl import RunData
    from qprof.report.resources import resources_section
    from qprof.service.metrics_resources import resource_metrics

    assert stack_text(4592, "") == "4.5 KiB" and stack_text(3720, "at_most") == "≤3.6 KiB"
    assert stack_text(None, "") == "-"
    rows = [ResourceUse(run_id="r", cpu=0, backend="liboqs", suite=s, operation="verify",
                        calls=16, baseline_rss_kib=62000, peak_rss_kib=62004,
                        hwm_reset="clear_refs", stack_bytes=b, heap_left_bytes=0,
                        native_note=note, stack_bound=bound)
            for s, b, bound, note in [
                ("SLH-DSA-SHAKE-256s", 4592, "", ""),
                ("ML-DSA-44", None, "", "stack: /x/self/mem not readable")]]
    table = resource_table(rows) or ""
    assert "STACK" in table and "HEAP LEFT" in table and "4.5 KiB" in table
    assert "native figures: stack: /x/self/mem not readable" in table
    assert resource_json(rows[0])["stack_bytes"] == 4592
    report = "\n".join(resources_section([RunData(Path("r.jsonl"), records=list(rows))]))
    assert "| Stack |" in report and "4.5 KiB" in report and "not readable" in report
    found = {f.name: f for f in resource_metrics(rows)}
    (sample,) = found["qprof_memory_stack_bytes"].samples
    assert sample.value == 4592 and sample.labels["suite"] == "SLH-DSA-SHAKE-256s"


def test_without_pagemap_the_whole_stack_is_read_alike(
        tmp_path: Path, liboqs_available: None) -> None:
    """pagemap only spares reading the stack's untouched pages: one thread's stack, read
    through a /proc with self/mem but no self/pagemap, gives the same deepest write.
    (Two measurements are not compared: the interpreter's own frames between the call's
    entry and the C call can differ by a few words from one call to the next.)"""
    from qprof.measure.native_memory import CLibrary, deepest_write

    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "mem").symlink_to("/proc/self/mem")
    op = _signed("ML-DSA-44")
    seen: list[tuple[int, int] | None] = []
    called, release = threading.Event(), threading.Event()

    def run() -> None:
        try:
            seen.append(CLibrary().stack_range())
            op.call()
        finally:
            called.set()
            release.wait()  # its stack stays mapped until read

    old = threading.stack_size(3 << 20)  # a size no other thread here has had
    try:
        worker = threading.Thread(target=run)
        worker.start()
    finally:
        threading.stack_size(old)
    try:
        called.wait()
        (where,) = seen
        assert where is not None
        paged, full = deepest_write(where), deepest_write(where, str(tmp_path))
    finally:
        release.set()
        worker.join()
    assert paged is not None and full == paged and paged < where[1] - 4096
