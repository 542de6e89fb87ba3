"""One module per `qprof` subcommand: ``add_parser(parser)`` fills an argparse parser,
``run(args) -> int`` returns the exit status. :data:`COMMANDS` names them all, so the CLI
and the completion list every command without importing its module."""

from __future__ import annotations

import importlib
from types import ModuleType

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


def command_module(name: str) -> ModuleType:
    """The module of command ``name``, imported now (only the chosen one is, by the CLI)."""
    module_name, _ = COMMANDS[name]
    return importlib.import_module(f"qprof.commands.{module_name}")
