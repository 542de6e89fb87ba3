"""Memory per operation, measured off the timing path (the SQIsign report's resource table).

Per backend, in a process of its own (:mod:`qprof.measure.preflight`) pinned to the
measured CPU: the backend's code size, what loading its runtime and each suite's
verifier adds, the RSS before the operations and their high-water mark (reset through
``/proc/self/clear_refs``, else a forked child per measurement), their own native stack
and heap (:mod:`qprof.measure.native_memory`), and in a separate tracemalloc pass their
Python allocations. RSS figures are upper-bound proxies of the whole process, not
isolated algorithm memory (:data:`CAVEAT`; the method: docs/MEMORY.md).
"""

from __future__ import annotations

import ctypes
import functools
import gc
import importlib
import os
import struct
import sys
import threading
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from qprof.measure.native_memory import (
    CLibrary,
    NativeUse,
    StackReading,
    deepest_write,
    native_use,
)
from qprof.verify import backend_status, get_verifier
from qprof.verify.availability import find_liboqs
from qprof.verify.backends.numba_backend import _KERNELS
from qprof.verify.nb_cache import cache_dir
from qprof.verify.suites import SUITES

CAVEAT = ("upper-bound proxies, not isolated algorithm memory: baseline and peak RSS "
          "(VmHWM) are the whole measuring process (interpreter, numpy, every library "
          "loaded), the code size is the backend's loadable image")
PT_LOAD = 1
CALLS = 16  # operations between the baseline and the peak (each SLH-DSA verify: ms)
STACK_BYTES, STACK_STEP = 1 << 20, 16 << 10  # the measuring threads' stacks
_stacks = 0  # measuring threads started in this process


@dataclass(frozen=True)
class OperationMemory:
    """One (backend, suite, operation): ``qprof.measure.records.ResourceUse``'s fields
    past run_id and cpu."""

    backend: str
    suite: str
    operation: str
    calls: int
    baseline_rss_kib: int
    peak_rss_kib: int
    hwm_reset: str
    py_peak_bytes: int | None = None
    py_retained_bytes: int | None = None
    code_bytes: int | None = None
    code_what: str = ""
    load_rss_kib: int | None = None
    runtime_rss_kib: int | None = None
    stack_bytes: int | None = None
    heap_left_bytes: int | None = None
    native_note: str = ""
    stack_bound: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def status_kib(path: str = "/proc/self/status") -> dict[str, int]:
    """VmRSS and VmHWM of this process in KiB ({} without /proc)."""
    out: dict[str, int] = {}
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return {}
    return out


def reset_hwm() -> int | None:
    """Bring VmHWM down to the current RSS (clear_refs "5"): the high-water mark then
    (the RSS, or a little above when pages were freed meanwhile); None where refused."""
    for _ in range(3):
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            return None
        now = status_kib()
        if not now:
            return None
        if now.get("VmHWM") == now.get("VmRSS"):
            break
    return max(now.get("VmHWM", 0), now.get("VmRSS", 0))


def elf_image_bytes(path: str) -> int | None:
    """Sum of the PT_LOAD segments' sizes in memory of an ELF file (None: not ELF)."""
    try:
        with open(os.path.realpath(path), "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF":
                return None
            wide, little = head[4] == 2, head[5] == 1
            e = "<" if little else ">"
            if wide:
                phoff, = struct.unpack_from(e + "Q", head, 0x20)
                entsize, count = struct.unpack_from(e + "HH", head, 0x36)
            else:
                phoff, = struct.unpack_from(e + "I", head, 0x1C)
                entsize, count = struct.unpack_from(e + "HH", head, 0x2A)
            f.seek(phoff)
            table = f.read(entsize * count)
    except (OSError, struct.error):
        return None
    total = 0
    for i in range(count):
        entry = table[i * entsize:(i + 1) * entsize]
        try:
            if wide:
                kind, = struct.unpack_from(e + "I", entry, 0)
                memsz, = struct.unpack_from(e + "Q", entry, 0x28)
            else:
                kind, = struct.unpack_from(e + "I", entry, 0)
                memsz, = struct.unpack_from(e + "I", entry, 0x14)
        except struct.error:
            return None
        if kind == PT_LOAD:
            total += memsz
    return total


def kernel_modules(module_name: str) -> list[str]:
    """The qprof.verify.nb modules a kernel module's code comes from: itself and, through
    its globals (modules, njit functions), every nb module it calls into."""
    prefix = "qprof.verify.nb."
    seen: list[str] = []
    todo = [module_name]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        module = importlib.import_module(name)
        for value in vars(module).values():
            where = value.__name__ if isinstance(value, type(sys)) else getattr(
                value, "__module__", None)
            if isinstance(where, str) and where.startswith(prefix) and where not in seen:
                todo.append(where)
    return sorted(seen)


def numba_cache_bytes(suite: str) -> tuple[int | None, str]:
    """The numba cache objects (.nbi/.nbc) of the modules ``suite``'s kernel is built
    from, with what they are."""
    info = SUITES[suite]
    modules = [m.rsplit(".", 1)[1] for m in kernel_modules(_KERNELS[info.family][0])]
    total, files = 0, 0
    try:
        for entry in os.scandir(cache_dir()):
            if entry.is_dir():
                for f in os.scandir(entry.path):
                    if f.name.split(".", 1)[0] in modules and f.name.endswith((".nbi", ".nbc")):
                        total += f.stat().st_size
                        files += 1
    except OSError:
        return None, "numba cache not readable"
    if not files:
        return None, "no numba cache objects (compiled in this process)"
    return total, (f"numba cache: {files} objects of {', '.join(modules)} (every overload "
                   "cached, an upper bound)")


def code_size(backend: str, suite: str) -> tuple[int | None, str]:
    """(bytes, what they are) of the code ``backend`` loads to verify ``suite``."""
    if backend == "liboqs":
        where = find_liboqs()
        if isinstance(where, str):
            return None, "liboqs not found"
        size = elf_image_bytes(where.library)
        return size, f"ELF image (PT_LOAD) of {os.path.basename(os.path.realpath(where.library))}"
    if backend == "numba":
        return numba_cache_bytes(suite)
    return None, "not measured for this backend"


Call = Callable[[], object]


@functools.cache
def _the_libc() -> CLibrary:
    return CLibrary()


def _hwm_fresh_process(call: Call, calls: int) -> tuple[int, int]:
    """(baseline, peak) RSS in KiB around ``calls`` calls in a forked child, whose
    high-water mark starts at the RSS it was forked with (where VmHWM is not reset)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the fresh process: its high-water mark starts at what it inherited
        os.close(read_end)
        code = 0
        try:
            base = status_kib().get("VmRSS", 0)
            for _ in range(calls):
                call()
            os.write(write_end, f"{base} {status_kib().get('VmHWM', 0)}".encode())
        except BaseException:
            code = 1
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as f:
        text = f.read()
    os.waitpid(pid, 0)
    base, peak = (int(x) for x in text.split()) if text else (0, 0)
    return base, peak


def _on_new_stack(call: Call, calls: int, reset: bool, proc: str = "/proc"
                  ) -> tuple[tuple[int, int] | None, NativeUse]:
    """The calls on a thread of their own: (baseline, peak) RSS in KiB, None where the
    kernel does not reset VmHWM (or ``reset`` is off), and the operation's own stack and
    heap. The thread's stack is pages the process has not touched, so the high-water mark
    counts the stack the operation uses (on the main thread's stack, already deep from the
    interpreter's start, it would count nothing), and its untouched bytes are zeros
    (qprof.measure.native_memory). The thread is started first, reads where a C call it
    makes starts and waits: creating it may free older threads' stacks, which must not
    happen between the reset and the calls. It waits again after the calls, until its
    stack is read."""
    libc = _the_libc()
    failed: list[BaseException] = []
    seen: list[tuple[tuple[int, int] | None, int | None]] = []  # (stack range, call entry)
    ready, go, done, release = (threading.Event() for _ in range(4))

    def run() -> None:
        try:
            # The thread's first malloc makes its cache (glibc's tcache, about 1 KiB):
            # here, not in the first operation.
            ctypes.create_string_buffer(1024)
            seen.append((libc.stack_range(), libc.call_entry()))
            ready.set()
            go.wait()
            for _ in range(calls):
                call()
        except BaseException as exc:  # raised again on the measuring thread
            failed.append(exc)
        finally:
            ready.set()
            done.set()
            release.wait()  # its stack stays mapped until read

    # A size larger than any before it: glibc reuses a cached stack of at least the
    # size asked for, and that one's pages may still be resident.
    global _stacks
    _stacks += 1
    old = threading.stack_size(STACK_BYTES + _stacks * STACK_STEP)
    try:
        worker = threading.Thread(target=run, name="qprof-memory")
        worker.start()
    finally:
        threading.stack_size(old)
    try:
        ready.wait()
        where, entry = seen[0] if seen else (None, None)
        # Reading the stack allocates a copy of its touched part: before the reset and
        # after the peak.
        before = deepest_write(where, proc) if where else None
        base = reset_hwm() if reset else None
        heap0 = libc.heap_in_use()
        go.set()
        done.wait()
        heap1 = libc.heap_in_use()
        peak = status_kib().get("VmHWM", 0)
        after = deepest_write(where, proc) if where else None
    finally:
        go.set()
        release.set()
        worker.join()
    if failed:
        raise failed[0]
    native = native_use(StackReading(where, entry, before, after), heap0, heap1, proc)
    return (None if base is None else (base, peak)), native


def _traced(call: Call, calls: int) -> tuple[int, int]:
    """(largest Python allocation during one call, bytes left per call), tracemalloc on."""
    call()
    gc.collect()
    start, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    call()
    _, peak = tracemalloc.get_traced_memory()
    for _ in range(calls - 1):
        call()
    gc.collect()
    end, _ = tracemalloc.get_traced_memory()
    return max(0, peak - start), max(0, (end - start) // calls)


@dataclass(frozen=True)
class Operation:
    """One operation to measure: its name and a call made of the suite's fixtures."""

    suite: str
    name: str
    call: Call


def measure_backend(backend: str, operations: Callable[[str], Sequence[Operation]],
                    suites: Sequence[str], calls: int = CALLS,
                    reset: bool = True, proc: str = "/proc") -> list[OperationMemory]:
    """Every (suite, operation) of ``backend`` in this process: ``operations(suite)``
    makes the suite's verifier (after the runtime is loaded) and its calls; ``proc`` is
    where the operation's stack is read (``proc``/self/mem)."""
    before = status_kib().get("VmRSS", 0)
    backend_status(backend)  # the runtime: numba + LLVM, or the liboqs library
    runtime = status_kib().get("VmRSS", 0) - before
    rows: list[tuple[Operation, int, tuple[int | None, str]]] = []
    for suite in suites:
        ahead = status_kib().get("VmRSS", 0)
        ops = list(operations(suite))
        for op in ops:
            op.call()  # the warm-up call: the baseline is taken after it
        load = status_kib().get("VmRSS", 0) - ahead
        size = code_size(backend, suite)
        rows += [(op, load, size) for op in ops]
    measured = []
    for op, load, (code, what) in rows:
        gc.collect()
        hwm, native = _on_new_stack(op.call, calls, reset, proc)
        how = "clear_refs"
        if hwm is None:
            hwm, how = _hwm_fresh_process(op.call, calls), "fresh_process"
        measured.append(OperationMemory(
            backend, op.suite, op.name, calls, hwm[0], hwm[1], how, code_bytes=code,
            code_what=what, load_rss_kib=load, runtime_rss_kib=runtime,
            stack_bytes=native.stack_bytes, heap_left_bytes=native.heap_left_bytes,
            native_note=native.note, stack_bound=native.stack_bound))
    tracemalloc.start()
    try:
        out = []
        for (op, _load, _code), m in zip(rows, measured, strict=True):
            py_peak, retained = _traced(op.call, max(2, calls // 4))
            out.append(OperationMemory(**{**m.to_dict(), "py_peak_bytes": py_peak,
                                          "py_retained_bytes": retained}))
    finally:
        tracemalloc.stop()
    return out


def verify_operations(backend: str, fixtures: dict[str, Any], operations: Sequence[str]
                      ) -> Callable[[str], list[Operation]]:
    """The verify operations (valid, one byte flipped) of a run's fixtures, as calls."""
    def make(suite: str) -> list[Operation]:
        pool = fixtures.get(suite)
        if not pool:
            return []
        verify = get_verifier(backend, suite).verify
        fx = pool[0]

        def call(signature: bytes) -> Call:
            return lambda: verify(fx.public_key, fx.message, signature, fx.context)

        return [Operation(suite, name, call(fx.invalid_signature if name == "verify_invalid"
                                            else fx.signature))
                for name in operations if name in ("verify", "verify_invalid")]

    return make

