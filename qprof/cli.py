"""Command-line entry point.

Each subcommand lives in its own module under ``qprof.commands`` and exposes
``add_parser(subparsers)`` and ``run(args) -> int``. Modules are imported only when
their command runs (the parser is built from the light ``qprof.commands.COMMANDS``), so
``qprof monitor`` does not pay for numba or pyperf imports it does not need.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from qprof import __version__
from qprof.commands import COMMANDS, command_module

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

    # The runner is imported like the command: `qprof --help` loads neither.
    running = importlib.import_module("qprof.commands.running")
    return int(running.run_command(name, module, args))
