"""qprof pool grow: sign the SLH-DSA signature pools up to full, in the foreground.

Otherwise they grow only while the monitor is open or the daemon runs (between its
cycles). The signing runs in a child process that ends with this command and yields at
once to any qprof measurement on the machine (then this command says so and exits 3).
"""

from __future__ import annotations

import argparse
import sys
import time

from qprof.commands.options import add_backends, add_suites
from qprof.consensus.profiles import ProfileError, load_profile
from qprof.measure import poolgrow
from qprof.measure.child.launch import launch
from qprof.measure.fixtures import cache_dir, pool_size, read_cached
from qprof.measure.machine_lock import holder
from qprof.untrusted import one_line

POLL_S = 0.5
BAR = 30


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["grow"], help="grow: sign the pools up to full")
    parser.add_argument("--profile", default="qanum",
                        help="the suites of this profile (default: qanum)")
    add_suites(parser, "the profile's SLH-DSA suites")
    add_backends(parser, "the first that can sign")


def _line(suites: list[str], started: float, first: int) -> str:
    have = sum(len(read_cached(s)) for s in suites)
    full = sum(pool_size(s) for s in suites)
    done = int(BAR * have / full) if full else BAR
    elapsed = time.monotonic() - started
    rate = (have - first) / elapsed if elapsed > 0 else 0.0
    eta = f", about {(full - have) / rate:.0f} s left" if rate > 0 else ""
    return f"\rpools [{'#' * done}{' ' * (BAR - done)}] {have}/{full} signatures{eta}   "


def run(args: argparse.Namespace) -> int:
    try:
        suites = args.suites or load_profile(args.profile).suites
    except (ProfileError, OSError) as exc:
        print(f"qprof pool: {one_line(exc)}", file=sys.stderr)
        return 2
    short = poolgrow.short_suites(suites, cache_dir())
    if not short:
        print("the pools are full: nothing to sign")
        return 0
    if poolgrow.grower_pid(cache_dir()) is not None:
        print("qprof pool: another grower signs these pools now", file=sys.stderr)
        return 3
    job = poolgrow.grower_job(short, args.backends or (), cache_dir())
    started = time.monotonic()
    first = sum(len(read_cached(s)) for s in short)
    proc = launch(job, stdout=None, stderr=None)
    try:
        while proc.poll() is None:
            print(_line(short, started, first), end="", file=sys.stderr, flush=True)
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait()
        print("\nstopped: what was signed is kept", file=sys.stderr)
        return 130
    print(_line(short, started, first), file=sys.stderr)
    left = poolgrow.short_suites(short, cache_dir())
    if not left:
        print("the pools are full")
        return 0
    who = holder()
    why = (f"a measurement started (pid {who.pid}, {who.user}: {who.command})" if who
           else "the pool files could not be written, or signing failed")
    print(f"qprof pool: stopped, {why}; what was signed is kept", file=sys.stderr)
    return 3
