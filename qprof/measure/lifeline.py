"""Child processes that die with their parent: timing workers, signing helpers.

A helper that outlived a ``kill -9`` of its parent would go on using a CPU for nothing
(signing, timing) and, pinned, disturb the next measurement of that core.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent() -> None:
    """Linux: SIGTERM to this process when the process that started it dies.

    (The kernel sends it when the parent *thread* exits; the engine waits for its
    children in the thread that started them, so that thread outlives them.)
    """
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


def parent_gone(parent: int | None) -> bool:
    """The parent died before prctl took effect: we were already re-parented."""
    return isinstance(parent, int) and parent > 0 and os.getppid() != parent
