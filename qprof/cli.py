"""Command-line entry point.

Each subcommand lives in its own module under ``qprof.commands`` and exposes
``add_parser(subparsers)`` and ``run(args) -> int``. Modules are imported only when
their command runs (the parser is built from the light ``COMMANDS`` table), so
``qprof monitor`` does not pay for numba or pyperf imports it does not need.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys

from qprof import __version__
from qprof.commands.output import OutputError, guarded_stdout
from qprof.measure.machine_lock import Holder, machine_lock

# name -> (module under qprof.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "monitor": ("monitor", "live terminal UI: per-core costs, caps, Verify-Unit coverage"),
    "topology": ("topology", "cores, core designs, clusters, frequency ranges and caps"),
    "freq": ("freq", "per-CPU current/max frequency and cap flags (optionally live)"),
    "snapshot": ("snapshot", "copy this machine's /proc and /sys CPU files into a directory"),
    "env": ("env", "environment snapshot (load, frequencies, governors, temperatures) as JSON"),
    "backends": ("backends", "which verifier backends work here, and why not"),
    "setup": ("setup", "build what qprof needs: `setup liboqs` builds liboqs 0.16.0 into "
              "~/_oqs"),
    "verify-bench": ("verify_bench", "median verify time of every backend on one pinned core"),
    "bench": ("bench", "measure suites per core through pyperf, write a JSONL run"),
    "report": ("report", "Markdown (and HTML) report of JSONL runs, or of the newest stored run"),
    "block": ("block", "verify a real worst-case block over the node's cores (wall vs estimate)"),
    "adversary": ("adversary", "costliest signatures an adversary can bring: ground valid, "
                  "crafted invalid, timed against random ones"),
    "check": ("check", "does a profile's Verify-Unit constants cover this machine? (exit 0-4)"),
    "calibrate": ("calibrate", "propose Verify-Unit constants from a fleet's runs (JSONL, "
                  "Prometheus) as a profile TOML"),
    "daemon": ("daemon", "background service: watch, measure on a schedule, alert, export metrics"),
    "history": ("history", "runs and results the daemon and the monitor recorded"),
    "trend": ("trend", "the verdict over time: segment estimates and every change of a "
              "ratio, from runs, a store or a fleet's Prometheus"),
    "export": ("export", "export a run the daemon or the monitor recorded as JSONL"),
    "pool": ("pool", "pool grow: sign the signature pools up to full now (else they grow "
             "while the monitor or the daemon runs)"),
    "completion": ("completion", "print a bash or zsh completion script"),
}


# The exit codes, as README.md's table gives them (`qprof --help`, `qprof check --help`).
EXIT_CODES_HELP = """\
exit codes (qprof check; the other commands exit 0 when done, 2 on an error):
  0  covered: every binding verdict holds
  1  NOT covered: a suite over its constant where its ratio binds, or a worst-case
     block over its time bound (setup: the build failed; calibrate: a time bound fails)
  2  error: bad input, nothing measured, the profile's verifier missing (it says what
     to install)
  3  unsure (an interval straddles a binding constant), no reliable estimate (the host
     was too contended) or incomplete (a priced suite not measured, a run cut short)
  4  comparison only (check --comparison): figures, no verdict
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="qprof",
        description="Per-core cost of post-quantum signature verification and "
        "Verify-Unit coverage.",
        epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"qprof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_module, help_text) in COMMANDS.items():
        # Placeholder parsers so `qprof --help` lists everything without imports;
        # the real parser for the chosen command is built in main().
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def command_module(name: str):
    module_name, _ = COMMANDS[name]
    return importlib.import_module(f"qprof.commands.{module_name}")


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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    top = build_parser()
    if not argv or argv[0] not in COMMANDS:
        if not argv:
            top.print_help()
            return 2
        top.parse_args(argv)  # handles --help/--version/unknown command (exits)
        return 2
    name, rest = argv[0], argv[1:]
    module = command_module(name)
    parser = argparse.ArgumentParser(
        prog=f"qprof {name}", description=COMMANDS[name][1],
        epilog=EXIT_CODES_HELP if name == "check" else None,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_parser(parser)
    args = parser.parse_args(rest)

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
