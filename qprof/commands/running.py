"""How a parsed command runs: stdout guarded, the machine lock for the commands that
measure outside the engine, one line and exit 2 for an output error, 130 for Ctrl-C and
141 when the reader leaves. Imported by ``qprof.cli`` only once a command runs."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from types import ModuleType

from qprof.commands.output import OutputError, guarded_stdout
from qprof.measure.machine_lock import Holder, machine_lock

# Commands that time or sign outside the engine (which takes the machine lock itself).
MEASURING = ("block", "adversary")


def _measuring(name: str) -> contextlib.AbstractContextManager[object]:
    """The machine lock for ``name`` when it measures (qprof.measure.machine_lock)."""
    if name not in MEASURING:
        return contextlib.nullcontext()

    said: list[int] = []

    def waiting(holder: Holder) -> None:
        if not said:
            said.append(1)
            print(f"qprof {name}: {holder.text()}", file=sys.stderr, flush=True)

    return machine_lock(on_wait=waiting)


def run_command(name: str, module: ModuleType, args: argparse.Namespace) -> int:
    """Run command ``name`` (its ``module``) on ``args``; the exit status."""
    try:
        if name == "monitor":  # the terminal UI draws on stdout itself
            return int(module.run(args) or 0)
        with guarded_stdout(), _measuring(name):
            return int(module.run(args) or 0)
    except OutputError as exc:
        print(f"qprof {name}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `qprof topology | head`: the reader left; exit quietly like coreutils do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
