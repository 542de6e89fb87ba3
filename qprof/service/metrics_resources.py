"""Prometheus: each backend's known answers before timing (PASS / MISMATCH) and its memory
per operation (the SQIsign report's resource table), from the newest run's preflight
(``qprof.measure.preflight``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from prometheus_client.core import GaugeMetricFamily

from qprof.measure.records import FunctionalCheck, ResourceUse

CAVEAT = ("upper-bound proxy, not isolated algorithm memory (the whole measuring process: "
          "interpreter, numpy, every library loaded)")


def functional_metrics(checks: Sequence[FunctionalCheck]) -> Iterator[GaugeMetricFamily]:
    ok = GaugeMetricFamily("qprof_functional_check_pass",
                           "1 when the backend gave every known answer for the suite before "
                           "timing (Wycheproof, qprof's vectors, a second "
                           "implementation's fresh signatures), 0 on a MISMATCH (its figures "
                           "are never decided)", labels=["backend", "suite"])
    wrong = GaugeMetricFamily("qprof_functional_check_failed_cases",
                              "Known answers the backend got wrong for the suite",
                              labels=["backend", "suite"])
    cases = GaugeMetricFamily("qprof_functional_check_cases",
                              "Known answers checked for the suite", labels=["backend", "suite"])
    for c in checks:
        key = [c.backend, c.suite]
        ok.add_metric(key, 1.0 if c.status == "PASS" else 0.0)
        wrong.add_metric(key, float(len(c.failed)))
        cases.add_metric(key, float(c.cases))
    yield from (ok, wrong, cases)


def resource_metrics(rows: Sequence[ResourceUse]) -> Iterator[GaugeMetricFamily]:
    labels = ["cpu", "backend", "suite", "operation"]
    base = GaugeMetricFamily("qprof_memory_baseline_rss_bytes",
                             "RSS before the operations, after the backend, its fixtures and "
                             f"a warm-up call; {CAVEAT}", labels=labels)
    peak = GaugeMetricFamily("qprof_memory_peak_rss_bytes",
                             f"High-water mark (VmHWM) over the operations; {CAVEAT}",
                             labels=labels)
    inc = GaugeMetricFamily("qprof_memory_peak_increment_bytes",
                            "Peak RSS over the baseline: the pages the operations touched "
                            "first (their stack, on a thread of their own, and heap)",
                            labels=labels)
    stack = GaugeMetricFamily("qprof_memory_stack_bytes",
                              "Stack the operation's C call wrote below its entry, on a fresh "
                              "thread stack (the figure, or a bound: see qprof check)",
                              labels=labels)
    heap = GaugeMetricFamily("qprof_memory_heap_left_bytes",
                             "malloc's bytes in use after the operations less before "
                             "(mallinfo2, the thread's malloc cache included; not a peak)",
                             labels=labels)
    py = GaugeMetricFamily("qprof_memory_python_peak_bytes",
                           "Largest Python-level allocation during one operation (tracemalloc)",
                           labels=labels)
    load = GaugeMetricFamily("qprof_memory_load_bytes",
                             "RSS that loading the suite's verifier added (numba: the kernels' "
                             "JIT code)", labels=["cpu", "backend", "suite"])
    code = GaugeMetricFamily("qprof_code_bytes",
                             "The backend's code for the suite: liboqs's loadable ELF image, "
                             "numba's cache objects", labels=["backend", "suite"])
    seen: set[tuple[str, ...]] = set()
    for r in rows:
        key = [str(r.cpu), r.backend, r.suite, r.operation]
        base.add_metric(key, r.baseline_rss_kib * 1024.0)
        peak.add_metric(key, r.peak_rss_kib * 1024.0)
        inc.add_metric(key, r.peak_increment_kib * 1024.0)
        if r.stack_bytes is not None:
            stack.add_metric(key, float(r.stack_bytes))
        if r.heap_left_bytes is not None:
            heap.add_metric(key, float(r.heap_left_bytes))
        if r.py_peak_bytes is not None:
            py.add_metric(key, float(r.py_peak_bytes))
        if (r.backend, r.suite) in seen:
            continue
        seen.add((r.backend, r.suite))
        if r.load_rss_kib is not None:
            load.add_metric([str(r.cpu), r.backend, r.suite], r.load_rss_kib * 1024.0)
        if r.code_bytes is not None:
            code.add_metric([r.backend, r.suite], float(r.code_bytes))
    yield from (base, peak, inc, stack, heap, py, load, code)
