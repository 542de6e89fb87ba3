"""``qprof monitor``: the live terminal UI (per-core costs, caps, Verify-Unit coverage).

numba, oqs and pyperf are imported only when something is measured (they stay lazy in
the modules below), so the first frame waits for Textual and the data layer only.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

from qprof.commands.options import Number, add_backend
from qprof.hw.sysfs import kernel_text
from qprof.tui.app import MonitorApp
from qprof.tui.collect import Collector, MonitorConfig


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, default=Path("/"), metavar="DIR",
                        help="read topology and frequencies from a snapshot of another "
                        "machine (see `qprof snapshot`); costs are then not measured here")
    parser.add_argument("--state-dir", type=Path, default=None, metavar="DIR",
                        help="attach to the daemon's store DIR/qprof.db when present, else "
                        "keep the monitor's own store DIR/monitor.db, which qprof history, "
                        "report and export read too (default: the daemon's state dir: "
                        "$STATE_DIRECTORY, $XDG_STATE_HOME/qprof, ~/.local/state/qprof)")
    parser.add_argument("--store", type=Path, default=None, metavar="FILE",
                        help="read (and write measurements to) this SQLite store file")
    parser.add_argument("--profile", default="qanum",
                        help="chain profile with the Verify-Unit constants (default: qanum)")
    add_backend(parser, default="liboqs when available, else the first that works")
    parser.add_argument("--refresh", type=Number(float, at_least=0.2), default=1.0,
                        metavar="SECONDS",
                        help="refresh interval (default: 1)")
    parser.add_argument("--measure-every", type=Number(float, at_least=0.0), default=60.0,
                        metavar="MINUTES",
                        help="standalone mode: measure one core per cluster in turn this "
                        "often (default: 60; 0 = only when `b` is pressed)")
    parser.add_argument("--no-auto-measure", action="store_true",
                        help="standalone with nothing stored yet: do not measure one core "
                        "per cluster by itself at start (quick mode, nice 10); `b` still "
                        "measures")
    parser.add_argument("--export-dir", type=Path, default=None, metavar="DIR",
                        help="where `e` writes its report (the Markdown and the HTML page "
                        "beside it, both named on screen; default: exports/ in the state "
                        "dir)")
    # Hidden: append the time to the first frame to FILE on exit (for the ≤ 1.5 s budget;
    # not stderr, which Textual draws on).
    parser.add_argument("--startup-report", type=Path, default=None, metavar="FILE",
                        help=argparse.SUPPRESS)


def _process_age_s() -> float | None:
    """Seconds since this process started (from /proc/self/stat), for --startup-report."""
    try:
        fields = kernel_text("/proc/self/stat").rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])
        uptime = float(kernel_text("/proc/uptime").split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _wait_for_threads() -> None:
    """Wait for the measurement's thread (it ends at its next checkpoint); Ctrl-C meanwhile
    ends the process at once, without a traceback (its workers and signing helpers die
    with it: PR_SET_PDEATHSIG)."""

    try:
        for thread in threading.enumerate():
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
    except KeyboardInterrupt:
        sys.stderr.flush()
        os._exit(130)


def run(args: argparse.Namespace) -> int:
    config = MonitorConfig(
        root=args.root,
        state_dir=args.state_dir,
        store_path=args.store,
        profile=args.profile,
        backend=args.backend,
        refresh_s=max(0.2, args.refresh),
        measure_every_s=max(0.0, args.measure_every) * 60.0,
        auto_measure=not args.no_auto_measure,
        export_dir=args.export_dir,
    )
    collector = Collector(config)
    try:
        collector.sources.hardware.topology()
    except (OSError, ValueError) as exc:  # NotLinuxRoot and unreadable roots
        print(f"qprof monitor: {exc}", file=sys.stderr)
        return 2
    if collector.profile.error:
        print(f"qprof monitor: {collector.profile.error}", file=sys.stderr)
        return 2


    started = time.monotonic()
    age_at_start = _process_age_s() if args.startup_report else None
    app = MonitorApp(config, collector)
    app.run()
    if app.measuring_cpu is not None:
        # The terminal is back; the engine terminates its running pyperf worker (SIGTERM,
        # SIGKILL after 1 s) or its signing helpers and keeps what finished, which takes
        # about a second.
        print(f"qprof monitor: stopping the measurement of CPU {app.measuring_cpu} "
              "(Ctrl-C stops it now)…", file=sys.stderr)
    _wait_for_threads()
    if args.startup_report and app.first_frame_at is not None:
        since_start = app.first_frame_at - started
        total = since_start + (age_at_start or 0.0)
        with open(args.startup_report, "a", encoding="utf-8") as out:
            out.write(f"first frame {total:.2f} s after process start "
                      f"({since_start:.2f} s after the app started)\n")
    return int(app.return_code or 0)
