"""qprof daemon: watch frequencies and caps, measure on a schedule, alert, serve metrics."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from qprof.commands.options import add_backend, add_cpus, add_node_cgroup, add_suites
from qprof.service.config import DEFAULT_LISTEN, ConfigError, build_config
from qprof.service.daemon import EXIT_CONFIG, run_daemon
from qprof.service.journal import setup_logging


def add_parser(parser: argparse.ArgumentParser) -> None:
    # Defaults are None so a --config file can set them and given flags still win.
    parser.add_argument("--config", metavar="FILE",
                        help="TOML file with the same settings (flags win); see "
                        "systemd/qprof.toml")
    parser.add_argument("--state-dir", type=Path, metavar="DIR",
                        help="where qprof.db lives (default: $STATE_DIRECTORY under systemd, "
                        "else $XDG_STATE_HOME/qprof or ~/.local/state/qprof)")
    parser.add_argument("--listen", metavar="HOST:PORT",
                        help=f"metrics address (default {DEFAULT_LISTEN}; 'none' disables)")
    parser.add_argument("--metrics-max-connections", type=int, metavar="N",
                        help="metrics connections held at once; past N the longest idle "
                        "is closed for the newcomer (default 512)")
    parser.add_argument("--metrics-deadline", type=float, metavar="SECONDS",
                        help="a metrics client must send its whole request within this, "
                        "and take the whole answer within it again (default 5)")
    parser.add_argument("--interval", type=float, metavar="SECONDS",
                        help="rest between measurement cycles, from the end of one to the "
                        "start of the next (default 3600)")
    parser.add_argument("--retry", type=float, metavar="SECONDS",
                        help="after a skipped cycle, try again this soon (default 300)")
    parser.add_argument("--first-cycle-delay", type=float, metavar="SECONDS",
                        help="wait before the first cycle (default 60)")
    parser.add_argument("--store-wait", type=float, metavar="SECONDS",
                        help="a store locked by another process at start (a backup, a "
                        "VACUUM): wait this long, then exit 75 for the supervisor to "
                        "retry (default 60)")
    add_cpus(parser, default="clusters, one CPU each", clusters=True)
    parser.add_argument("--profile", metavar="NAME",
                        help="chain profile for Verify-Unit coverage (default qanum)")
    add_backend(parser, default="auto: liboqs, else numba")
    add_suites(parser, default="the engine's")
    parser.add_argument("--quick", action="store_true", default=None,
                        help="shorter measurements")
    add_node_cgroup(parser)
    parser.add_argument("--block", action="store_true", default=None,
                        help="after each cycle, verify each profile suite's worst-case block "
                        "on all online CPUs (exported as qprof_block_verify_seconds)")
    parser.add_argument("--no-dual", dest="dual", action="store_false", default=None,
                        help="with liboqs, do not also run the shadow pair (liboqs + a "
                        "second verifier on valid and invalid signatures) that detects "
                        "verifier disagreements: 4 timed tasks per round instead of 12")
    parser.add_argument("--max-load", type=float, metavar="L",
                        help="measure only when the 1-min load per online CPU is at most L "
                        "(default 0.5)")
    parser.add_argument("--max-busy", type=float, metavar="PCT",
                        help="... and the CPUs were at most PCT %% busy over ~10 s (default 30)")
    parser.add_argument("--alert-command", metavar="CMD",
                        help="run CMD for each alert with the alert as JSON on stdin")
    parser.add_argument("--alert-timeout", type=float, metavar="SECONDS",
                        help="kill the alert command after this long (default 10)")
    parser.add_argument("--renotify", type=float, metavar="SECONDS",
                        help="alert a standing NOT covered (or a block over its time bound) "
                        "again this often while it lasts (default 86400; 0: only at first "
                        "sight and once after a restart)")
    parser.add_argument("--cap-hold-samples", type=int, metavar="N",
                        help="a cap must be seen N samples in a row to start or end "
                        "(default 3)")
    parser.add_argument("--cap-hold-seconds", type=float, metavar="S",
                        help="... and hold for S seconds (default 5)")
    parser.add_argument("--watch-interval", type=float, metavar="SECONDS",
                        help="watch loop period (default 1)")
    parser.add_argument("--keep-days", type=float, metavar="DAYS",
                        help="keep runs and alerts this long (default 90; 0: for ever; "
                        "the runs behind the newest results are always kept)")
    parser.add_argument("--keep-samples-days", type=float, metavar="DAYS",
                        help="keep per-sample timings in runs this long, then only round "
                        "statistics (default 2; 0: for ever)")
    parser.add_argument("--keep-freq-days", type=float, metavar="DAYS",
                        help="keep frequency history this long, thinned to 10-minute steps "
                        "after a day (default 30; 0: for ever)")
    parser.add_argument("--root", type=Path, metavar="DIR",
                        help="read /proc and /sys under DIR (a snapshot; for tests)")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"))


def run(args: argparse.Namespace) -> int:
    log = setup_logging()
    try:
        cfg = build_config(args)
    except ConfigError as exc:
        log.error("config error: %s", exc)
        return EXIT_CONFIG
    log.setLevel(getattr(logging, cfg.log_level.upper()))
    return run_daemon(cfg)
