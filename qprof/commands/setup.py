"""``qprof setup liboqs``: build the pinned liboqs release into ``~/_oqs``.

The verdict is held to liboqs; without it qprof measures numba for comparison only.
Builds liboqs 0.16.0 (its source checked by content) as a minimal shared library, its
progress on screen. Exit 0: built or already there; 1: the build failed; 2: it cannot
start, with what to do; 128+N: stopped by signal N. Details: docs/FIRST_MINUTES.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import TextIO

from qprof.commands.options import Number
from qprof.commands.output import own_terminal
from qprof.verify import liboqs_build as lb
from qprof.verify.availability import find_liboqs
from qprof.verify.liboqs_build import STEP_LINE
from qprof.verify.liboqs_lib import open_named


def add_parser(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    oqs = sub.add_parser("liboqs", help="build liboqs 0.16.0 (minimal, shared) into ~/_oqs")
    oqs.add_argument("--prefix", type=Path, default=None, metavar="DIR",
                     help="install here (default: ~/_oqs, where qprof looks; elsewhere, "
                     "point OQS_INSTALL_PATH at it)")
    oqs.add_argument("--source", default=None, metavar="PATH",
                     help="the liboqs 0.16.0 source: the release tarball or a git clone at "
                     "its commit (default: $QPROF_LIBOQS_SOURCE, else downloaded)")
    oqs.add_argument("--force", action="store_true",
                     help="build even when a liboqs is found")
    oqs.add_argument("--jobs", type=Number(int, at_least=1, at_most=1024), default=None,
                     metavar="N",
                     help="parallel build jobs (default: ninja's)")


class BuildScreen:
    """What the build shows: one line per stage; ninja's ``[n/N]`` steps rewritten in
    place on a terminal, one per line otherwise."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.in_place = False
        self.started = time.monotonic()

    def _end_in_place(self) -> None:
        if self.in_place:
            print(file=self.out)
            self.in_place = False

    def say(self, text: str) -> None:
        self._end_in_place()
        print(f"qprof setup liboqs: {text} [{time.monotonic() - self.started:.0f} s]",
              file=self.out, flush=True)

    def step(self, line: str) -> None:
        if STEP_LINE.match(line) and self.tty:
            cols = shutil.get_terminal_size((100, 20)).columns
            print(f"\r\033[K  {line[:cols - 3]}", end="", file=self.out, flush=True)
            self.in_place = True
        elif STEP_LINE.match(line) or line.startswith("-- Build files have been written"):
            self._end_in_place()
            print(f"  {line}", file=self.out, flush=True)

    def close(self) -> None:
        self._end_in_place()


def run(args: argparse.Namespace) -> int:
    prefix = (args.prefix or lb.default_prefix()).expanduser()
    if lb.setup_disabled():
        print(f"qprof setup liboqs: not built ({lb.SETUP_ENV}=off)", file=sys.stderr)
        return 2
    env = dict(os.environ)
    if args.prefix is not None:
        env["OQS_INSTALL_PATH"] = str(prefix)
    where = find_liboqs(env)
    in_prefix = lb.lib_in(prefix)
    held = open_named(str(in_prefix)) if in_prefix is not None else None
    if args.prefix is not None and (held is None or isinstance(held, str)):
        where = "no working liboqs in the prefix"
    if not isinstance(where, str) and not isinstance(open_named(where.library), str) \
            and not args.force:
        print(f"qprof setup liboqs: liboqs is already there ({where.library}); nothing to "
              "do (--force builds it again)")
        return 0
    if held is not None and not isinstance(held, str) and not args.force:
        print(f"qprof setup liboqs: {prefix} already holds a liboqs ({held.version}); "
              "--force replaces it", file=sys.stderr)
        return 2
    screen = BuildScreen(own_terminal())  # its [n/N] line is rewritten in place
    if isinstance(held, str):
        screen.say(f"{held}: it is built again")
    source = args.source or os.environ.get(lb.SOURCE_ENV) or None
    screen.say(f"building liboqs {lb.VERSION} into {prefix}")
    try:
        # Replaces liboqs's own files in the prefix (nothing else) once the build works.
        with lb.stopping():
            built = lb.build(prefix, source, screen.say, screen.step, args.jobs)
    except lb.BuildError as exc:
        screen.close()
        text = str(exc).replace("~/_oqs", str(prefix))
        print(f"qprof setup liboqs: {text}", file=sys.stderr)
        return 1 if isinstance(exc, lb.BuildFailed) else 2
    except lb.Stopped as stop:
        screen.close()
        what = (f"liboqs was installed ({lb.lib_in(prefix)})" if stop.installed
                else "nothing was installed")
        print(f"qprof setup liboqs: stopped ({stop}); {what}; its build tree is removed",
              file=sys.stderr)
        return 128 + stop.signum
    screen.say(f"liboqs {built.version} installed: {built.library}")
    if prefix != lb.default_prefix():
        print(f"qprof finds it with OQS_INSTALL_PATH={prefix}")
    return 0
