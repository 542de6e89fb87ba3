"""What `qprof check` and `qprof bench` say of a run's preflight: each backend's known
answers (PASS / MISMATCH, qprof.verify.functional) and its memory per operation, the
SQIsign report's resource table with its caveat (qprof.measure.resources)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence

from qprof.consensus import Profile
from qprof.consensus.verdict_types import Decision
from qprof.hw.format import table
from qprof.measure.native_memory import stack_text
from qprof.measure.records import FunctionalCheck, Record, ResourceUse

MEMORY_CAVEAT = ("upper-bound proxies, not isolated algorithm memory: the RSS is the whole "
                 "measuring process (interpreter, numpy, every library loaded); the "
                 "increment counts the pages the operations touched first, on a stack of "
                 "their own")


NATIVE_WORDS = ("STACK: the stack the operation's C call wrote below its entry, on a fresh "
                "thread stack (≤: a bound, the call went no deeper than the thread's own "
                "waits); HEAP LEFT: malloc's bytes in use after the calls less before, the "
                "thread's malloc cache included (not the heap's peak)")


def checks_of(records: Iterable[Record]) -> list[FunctionalCheck]:
    return [r for r in records if isinstance(r, FunctionalCheck)]


def resources_of(records: Iterable[Record]) -> list[ResourceUse]:
    return [r for r in records if isinstance(r, ResourceUse)]


def mismatched(records: Iterable[Record]) -> list[FunctionalCheck]:
    return [c for c in checks_of(records) if c.status == "MISMATCH"]


def decision_with_checks(decision: Decision, records: Sequence[Record],
                         profile: Profile) -> Decision:
    """A run whose verifier failed a suite's known answers decides nothing for that suite
    (untimed, or timed under --allow-mismatch and undecided): it is never 'covered'."""
    bad = [c for c in mismatched(records)
           if c.backend == profile.verifier and c.suite in profile.verify_units]
    return "no_estimate" if bad and decision == "covered" else decision


def check_json(c: FunctionalCheck) -> dict[str, object]:
    return {"backend": c.backend, "suite": c.suite, "status": c.status, "cases": c.cases,
            "failed": list(c.failed), "sources": list(c.sources), "build": c.build,
            "cpu_model": c.cpu_model, "cached": c.cached, "elapsed_s": c.elapsed_s}


def resource_json(r: ResourceUse) -> dict[str, object]:
    return {"cpu": r.cpu, "backend": r.backend, "suite": r.suite, "operation": r.operation,
            "calls": r.calls, "baseline_rss_kib": r.baseline_rss_kib,
            "peak_rss_kib": r.peak_rss_kib, "peak_increment_kib": r.peak_increment_kib,
            "hwm_reset": r.hwm_reset, "py_peak_bytes": r.py_peak_bytes,
            "py_retained_bytes": r.py_retained_bytes, "code_bytes": r.code_bytes,
            "code_what": r.code_what, "load_rss_kib": r.load_rss_kib,
            "runtime_rss_kib": r.runtime_rss_kib, "stack_bytes": r.stack_bytes,
            "stack_bound": r.stack_bound or None, "heap_left_bytes": r.heap_left_bytes,
            "native_note": r.native_note or None}


def preflight_json(records: Sequence[Record]) -> dict[str, object]:
    """`check --json`'s keys: "functional" (per backend and suite) and "resources"."""
    return {"functional": [check_json(c) for c in checks_of(records)],
            "resources": [resource_json(r) for r in resources_of(records)],
            "resources_caveat": MEMORY_CAVEAT}


def functional_lines(records: Sequence[Record]) -> list[str]:
    """One line per backend: PASS for its suites, each MISMATCH with its failing cases."""
    out = []
    by_backend: dict[str, list[FunctionalCheck]] = {}
    for c in checks_of(records):
        by_backend.setdefault(c.backend, []).append(c)
    for backend, checks in by_backend.items():
        passed = [c for c in checks if c.status == "PASS"]
        cases = sum(c.cases for c in checks)
        took = sum(c.elapsed_s for c in checks)
        how = ("cached for this build and CPU" if all(c.cached for c in checks)
               else f"{took:.1f} s")
        head = (f"known answers {backend}: {cases} cases ({how}): "
                + (f"PASS {', '.join(c.suite for c in passed)}" if passed else "no PASS"))
        out.append(head)
        for c in checks:
            if c.status != "PASS":
                found = f"{len(c.failed)} of {c.cases} wrong" if c.cases else "not checked"
                out.append(f"  MISMATCH {backend} {c.suite}: {found}: "
                           f"{'; '.join(c.failed[:3])}")
    return out


def _kib(value: int | None) -> str:
    return "-" if value is None else f"{value:,} KiB"


def _bytes(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def resource_table(records: Sequence[Record]) -> str | None:
    """The resource table (SQIsign report section 5) with its caveat; None: none."""

    rows = resources_of(records)
    if not rows:
        return None
    body = [[r.backend, r.suite, r.operation, _bytes(r.code_bytes), _kib(r.runtime_rss_kib),
             _kib(r.load_rss_kib), _kib(r.baseline_rss_kib), _kib(r.peak_rss_kib),
             f"+{r.peak_increment_kib} KiB", stack_text(r.stack_bytes, r.stack_bound),
             _bytes(r.heap_left_bytes), _bytes(r.py_peak_bytes),
             _bytes(r.py_retained_bytes)] for r in rows]
    what = sorted({f"{r.backend}: {r.code_what}" for r in rows if r.code_what})

    def wrapped(text: str) -> str:  # the words around the table fit 100 columns
        return textwrap.fill(text, 100, subsequent_indent="    ")

    return "\n".join([
        wrapped(f"memory per operation (CPU {rows[0].cpu}, {rows[0].calls} calls each, "
                "measured before timing; VmHWM reset by "
                f"{', '.join(sorted({r.hwm_reset for r in rows}))}):"),
        table(["BACKEND", "SUITE", "OPERATION", "CODE (B)", "RUNTIME", "LOAD", "BASELINE RSS",
               "PEAK RSS", "PEAK +", "STACK", "HEAP LEFT (B)", "PY PEAK (B)", "PY LEFT (B)"],
              body),
        wrapped("code: " + "; ".join(what)),
        wrapped("RUNTIME: RSS importing the backend added (numba + LLVM, the liboqs library); "
                "LOAD: RSS its verifier for the suite added (numba: the kernels' JIT code); "
                f"{NATIVE_WORDS}; PY: tracemalloc, a separate pass"),
        *[wrapped(f"native figures: {note}") for note in dict.fromkeys(
            r.native_note for r in rows if r.native_note and r.stack_bound != "at_most")],
        wrapped(f"caveat: {MEMORY_CAVEAT}")])


def print_preflight(records: Sequence[Record]) -> None:
    for line in functional_lines(records):
        print(line)
    text = resource_table(records)
    if text:
        print(text)
