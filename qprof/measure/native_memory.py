"""What an operation's C call uses of its thread's stack and of malloc's heap.

The stack: the calls run on a thread with a fresh stack mapping (zeros); the deepest
non-zero byte after them, read through ``/proc/self/mem``, against the stack pointer at
the C call's entry, is the stack it used. The heap: malloc's bytes in use
(``mallinfo2``) after the calls less before, i.e. what they left, not the peak.
:mod:`qprof.measure.resources` runs the calls; bounds and method: docs/MEMORY.md.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from dataclasses import dataclass
from typing import Any

# x86-64 glibc: ucontext_t.uc_mcontext.gregs[REG_RSP] (after uc_flags, uc_link and the
# 24-byte stack_t); getcontext stores there the stack pointer its caller had.
_X86_64_RSP_OFFSET = 40 + 15 * 8
_UCONTEXT_BYTES = 4096  # more than glibc's ucontext_t (968 bytes on x86-64)


@dataclass(frozen=True)
class NativeUse:
    """One operation's native stack and heap; None where not readable, ``note`` says
    why, and how the stack's start was found when not from the call's entry."""

    stack_bytes: int | None
    heap_left_bytes: int | None
    note: str = ""
    stack_bound: str = ""  # "" the figure; "at_most" or "at_least" a bound (note says why)


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


_STACK_CALLS = ("pthread_self", "pthread_getattr_np", "pthread_attr_getstack",
                "pthread_attr_getguardsize", "pthread_attr_destroy")


class CLibrary:
    """The C library's calls the figures need; each reading is None where it lacks them."""

    def __init__(self) -> None:
        try:
            lib: Any = ctypes.CDLL(None)
        except OSError:
            lib = None
        self._mallinfo2 = getattr(lib, "mallinfo2", None)
        if self._mallinfo2 is not None:
            self._mallinfo2.restype = _Mallinfo2
            self._mallinfo2.argtypes = []
        self._stack = lib if all(hasattr(lib, n) for n in _STACK_CALLS) else None
        if self._stack is not None:
            lib.pthread_self.restype = ctypes.c_ulong
            lib.pthread_getattr_np.argtypes = [ctypes.c_ulong, ctypes.c_void_p]
            lib.pthread_attr_getstack.argtypes = [ctypes.c_void_p] * 3
            lib.pthread_attr_getguardsize.argtypes = [ctypes.c_void_p] * 2
            lib.pthread_attr_destroy.argtypes = [ctypes.c_void_p]
        self._getcontext = None
        if platform.machine() == "x86_64" and hasattr(lib, "getcontext"):
            self._getcontext = lib.getcontext
            self._getcontext.argtypes = [ctypes.c_void_p]
        self._context = ctypes.create_string_buffer(_UCONTEXT_BYTES)

    def heap_in_use(self) -> int | None:
        """malloc's bytes in use, in its arenas and mapped chunks (None: no mallinfo2)."""
        if self._mallinfo2 is None:
            return None
        info = self._mallinfo2()
        return int(info.uordblks + info.hblkhd)

    def stack_range(self) -> tuple[int, int] | None:
        """The calling thread's stack above its guard: (lowest address, bytes)."""
        lib = self._stack
        if lib is None:
            return None
        attr = ctypes.create_string_buffer(256)  # pthread_attr_t: 56 bytes on x86-64
        if lib.pthread_getattr_np(lib.pthread_self(), attr) != 0:
            return None
        low, size, guard = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t()
        try:
            if (lib.pthread_attr_getstack(attr, ctypes.byref(low), ctypes.byref(size))
                    or lib.pthread_attr_getguardsize(attr, ctypes.byref(guard))
                    or not low.value):
                return None
        finally:
            lib.pthread_attr_destroy(attr)
        return low.value + guard.value, size.value - guard.value

    def call_entry(self) -> int | None:
        """The stack pointer a C function called through ctypes from here starts from
        (None: not x86-64 glibc)."""
        if self._getcontext is None or self._getcontext(self._context) != 0:
            return None
        sp: int = struct.unpack_from("<Q", self._context, _X86_64_RSP_OFFSET)[0]
        return sp


def _first_resident(low: int, size: int, proc: str) -> int:
    """Offset from ``low`` of the stack's lowest page in memory or swap (pagemap: a
    stack's untouched pages are neither, and read as zeros); 0 where pagemap is not
    readable (then the whole stack is read)."""
    page = os.sysconf("SC_PAGE_SIZE")
    try:
        fd = os.open(os.path.join(proc, "self", "pagemap"), os.O_RDONLY)
    except OSError:
        return 0
    try:
        data = os.pread(fd, size // page * 8, low // page * 8)
    except (OSError, OverflowError):
        return 0
    finally:
        os.close(fd)
    if len(data) != size // page * 8:
        return 0
    entries = memoryview(data).cast("Q")
    return next((i * page for i, e in enumerate(entries) if e >> 62), size)


def deepest_write(stack: tuple[int, int], proc: str = "/proc") -> int | None:
    """Bytes from the low end of a (fresh) stack to its deepest non-zero byte, read
    through ``proc``/self/mem (a page it cannot read is an error there, never a fault)
    from the lowest page the stack has touched; None where it cannot be read."""
    low, size = stack
    start = _first_resident(low, size, proc)
    try:
        fd = os.open(os.path.join(proc, "self", "mem"), os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.pread(fd, size - start, low + start)
    except (OSError, OverflowError):
        return None
    finally:
        os.close(fd)
    if len(data) != size - start:
        return None
    return size - len(data.lstrip(b"\0"))


@dataclass(frozen=True)
class StackReading:
    """What the measuring thread and the reader saw of its stack: its range, the call
    entry (None: unknown) and the deepest writes before and after the calls."""

    stack: tuple[int, int] | None
    entry: int | None
    before: int | None
    after: int | None


def native_use(stack: StackReading, heap_before: int | None, heap_after: int | None,
               proc: str = "/proc") -> NativeUse:
    """The figures from the readings: the stack from the call's entry where it is known
    (a bound at most when the calls went no deeper than the thread had gone before), else
    from the thread's deepest point before the calls (a bound at least); the heap's
    growth over the calls."""
    notes = []
    used: int | None = None
    bound = ""
    if stack.stack is None:
        notes.append("stack: no pthread_getattr_np in the C library")
    elif stack.before is None or stack.after is None:
        notes.append(f"stack: {os.path.join(proc, 'self', 'mem')} not readable")
    else:
        low = stack.stack[0]
        deeper = stack.after < stack.before
        if stack.entry is not None and low <= stack.entry <= low + stack.stack[1]:
            used = stack.entry - (low + stack.after)
            if not deeper:
                bound = "at_most"
                notes.append("stack: at most (the calls went no deeper than the thread's "
                             "own waits)")
        else:
            used, bound = stack.before - stack.after, "at_least"
            notes.append("stack: from the thread's deepest point before the calls, not "
                         "the call's entry (no getcontext here): a lower bound")
    if heap_before is None or heap_after is None:
        notes.append("heap: no mallinfo2 in the C library (glibc 2.33+)")
    heap = None if heap_before is None or heap_after is None else max(
        0, heap_after - heap_before)
    return NativeUse(None if used is None else max(0, used), heap, "; ".join(notes), bound)


_BOUND_SIGN = {"at_most": "≤", "at_least": "≥"}


def stack_text(stack_bytes: int | None, bound: str) -> str:
    """A stack figure as the tables show it: "4.5 KiB", "≤3.6 KiB" for a bound, "-"."""
    if stack_bytes is None:
        return "-"
    return f"{_BOUND_SIGN.get(bound, '')}{stack_bytes / 1024:.1f} KiB"
