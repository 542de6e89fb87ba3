"""The report's sections on a run's preflight: the functional check before timing (the
SQIsign report's "Functional testing (KAT)": PASS or MISMATCH per backend and suite, with
the failing cases) and the resource table (its "Resource consumption": code image,
baseline and peak RSS, with the caveat that they are upper-bound proxies)."""

from __future__ import annotations

from collections.abc import Sequence

from qprof.measure.jsonl import RunData
from qprof.measure.markdown import md_table, md_text
from qprof.measure.native_memory import stack_text
from qprof.measure.records import FunctionalCheck, ResourceUse

CAVEAT = ("Code is the backend's loadable image (liboqs: its shared object's PT_LOAD "
          "segments; numba: the cache objects of the modules the suite's kernel is built "
          "from, every overload). Baseline RSS is the measuring process after the backend, "
          "its fixtures and one warm-up call; peak RSS its high-water mark (VmHWM, reset to "
          "the RSS first) over the operations, which run on a thread of their own so the "
          "stack they use counts. Both include the interpreter, numpy and every library "
          "loaded, so they are upper-bound proxies rather than isolated algorithm memory; "
          "the increment is the pages the operations touched first. Stack is the operation's "
          "own: what its C call wrote below its entry on that thread's fresh stack, "
          "byte-granular (≤: a bound, the call went no deeper than the thread's own waits). "
          "Heap left is malloc's bytes in use after the operations less before them "
          "(mallinfo2), the thread's malloc cache included: not the heap's peak. Python "
          "allocation is tracemalloc's, in a separate pass.")


def _kib(v: int | None) -> str:
    return "-" if v is None else f"{v:,} KiB"


def _int(v: int | None) -> str:
    return "-" if v is None else f"{v:,}"


def functional_section(runs: Sequence[RunData]) -> list[str]:
    checks = [(run, r) for run in runs for r in run.records if isinstance(r, FunctionalCheck)]
    if not checks:
        return []
    rows = [[md_text(c.backend), md_text(c.suite), md_text(c.status), str(c.cases),
             md_text(", ".join(c.sources)),
             "cached (same build and CPU)" if c.cached else f"{c.elapsed_s:.2f} s",
             md_text("; ".join(c.failed[:3]) or "-")] for _run, c in checks]
    lines = ["## Functional testing (known answers, before timing)", "",
             "Each backend verified, per suite, the vectors shipped with qprof (Wycheproof "
             "ML-DSA, qprof's SLH-DSA files) and a second "
             "implementation's fresh signatures, valid and tampered, before anything was "
             "timed. A MISMATCH suite is timed only under `--allow-mismatch`, and its "
             "verdict is never decided.", ""]
    lines += md_table(["Backend", "Suite", "Result", "Cases", "Sources", "Took",
                       "Failing cases"], rows)
    return lines + [""]


def resources_section(runs: Sequence[RunData]) -> list[str]:
    found = [r for run in runs for r in run.records if isinstance(r, ResourceUse)]
    if not found:
        return []
    rows = [[md_text(r.backend), md_text(r.suite), md_text(r.operation),
             _int(r.code_bytes), _kib(r.runtime_rss_kib), _kib(r.load_rss_kib),
             _kib(r.baseline_rss_kib), _kib(r.peak_rss_kib), f"+{r.peak_increment_kib} KiB",
             md_text(stack_text(r.stack_bytes, r.stack_bound)),
             _int(r.heap_left_bytes), _int(r.py_peak_bytes)] for r in found]
    lines = ["## Resource consumption (memory per operation)", "",
             f"Measured once per run before timing, on CPU {found[0].cpu}, {found[0].calls} "
             "operations each. Runtime: what importing the backend added to the RSS (numba "
             "and LLVM, the liboqs library); load: what its verifier for the suite added "
             "(numba: the kernels' JIT code).", ""]
    lines += md_table(["Backend", "Suite", "Operation", "Code (bytes)", "Runtime", "Load",
                       "Baseline RSS", "Peak RSS", "Increment", "Stack", "Heap left (bytes)",
                       "Python peak (bytes)"], rows)
    notes = dict.fromkeys(r.native_note for r in found
                          if r.native_note and r.stack_bound != "at_most")
    return lines + ["", CAVEAT, *[md_text(f"Native figures: {n}.") for n in notes], ""]
