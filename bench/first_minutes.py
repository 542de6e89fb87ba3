"""The first minutes of `./scripts/monitor` as a new user sees them (issue 30).

Usage:  .venv/bin/python bench/first_minutes.py CASE [--tries 3] [--timeout 240]
            [--repo /work/main] [--commit REV] [--columns 200] [--keep]

CASE:
  liboqs   liboqs already in ~/_oqs (the test HOME's ~/_oqs links to --oqs)
  build    no liboqs, QPROF_LIBOQS_SOURCE=--source: `qprof setup liboqs` builds it
  numba    no liboqs and no source (offline): numba measures, for comparison only

Each try: a fresh `git clone` of --repo (at --commit), an empty HOME (pip's cache and
--find-links kept: a warm pip cache), `./scripts/monitor` started in a tmux session of
--columns x 50, its screen polled every 0.2 s. Printed per try, in seconds after the
command: the first measured µs figure, the coverage verdict of the measured CPU (any
decided cell: ✓ yes, ✗ NO, ? unsure, no reliable estimate, not binding here), the "No
verdict" line (numba), and when each step first showed (venv, liboqs build, signing,
known answers, first round); then `q` and how long the monitor took to end.
Wrap it in `flock /root/build/timing.lock` where others measure too.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

POLL_S = 0.2
# A figure ("16.2 µs", "608.0 µs"), not a column header ("ML-DSA-44 µs (VU)").
MICROSECONDS = re.compile(r"(?<![\w-])\d[\d,]*\.\d+ µs")
# The Covered cell of a decided row (qprof.tui.model.fmt_covered), on a row of a CPU.
VERDICT = re.compile(r"@\d+.*(✓ yes|✗ NO|\? unsure|no reliable estimate|not binding here)")
STEPS = {
    "venv": re.compile(r"installing qprof"),
    "venv done": re.compile(r"installed in \d+ s"),
    "liboqs build": re.compile(r"\[\d+/\d+\]"),
    "frame": re.compile(r"Verify-Unit coverage"),
    "signing": re.compile(r"signing \d+ SLH-DSA"),
    "known answers": re.compile(r"checking known answers"),
    "round 1": re.compile(r"CPU \d+ round 1\b"),
    "no verdict line": re.compile(r"No verdict: \w+ alone is comparison only"),
}


@dataclass
class Try:
    case: str
    seen: dict[str, float] = field(default_factory=dict)
    first_us: float | None = None
    verdict: float | None = None
    verdict_text: str = ""
    quit_s: float | None = None
    screen: str = ""


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True,
                          timeout=10).stdout


def end_leftovers(marker: str) -> None:
    """Kill what a try left running (its command line names the try's HOME): the next
    try must not share the CPUs with it, a new user's first run has none."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            with contextlib.suppress(OSError):
                os.kill(int(entry.name), signal.SIGKILL)


def wait_for_quiet(limit: float, wait_s: float) -> float:
    """Up to ``wait_s`` for the 1-minute load to fall below ``limit`` (other people's
    work on a shared host); the load then."""
    deadline = time.monotonic() + wait_s
    while os.getloadavg()[0] >= limit and time.monotonic() < deadline:
        time.sleep(5)
    return os.getloadavg()[0]


def environment(case: str, home: Path, oqs: Path, source: Path) -> dict[str, str]:
    env = {"HOME": str(home), "TERM": "xterm-256color", "LANG": "C.UTF-8",
           "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           # python3 comes from pyenv here; a user's interpreter is not part of the test
           "PYENV_ROOT": os.environ.get("PYENV_ROOT", "/root/.pyenv"),
           "PIP_CACHE_DIR": os.path.expanduser("~/.cache/pip")}
    env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
    if case == "liboqs":
        (home / "_oqs").symlink_to(oqs)
    elif case == "build":
        env["QPROF_LIBOQS_SOURCE"] = str(source)
    return env


def one_try(args: argparse.Namespace, n: int) -> Try:
    clone = Path(tempfile.mkdtemp(prefix=f"fresh-{args.case}-{n}-", dir="/tmp"))
    subprocess.run(["git", "clone", "-q", args.repo, str(clone)], check=True)
    if args.commit:
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", args.commit], check=True)
    home = Path(tempfile.mkdtemp(prefix="home-"))
    env = environment(args.case, home, Path(args.oqs), Path(args.source))
    name = f"qprof-first-{uuid.uuid4().hex[:8]}"
    command = "env -i " + " ".join(f"{k}={v}" for k, v in env.items()) + \
        f" bash -c 'cd {clone} && exec ./scripts/monitor'"
    result = Try(args.case)
    started = time.monotonic()
    tmux("new-session", "-d", "-s", name, "-x", str(args.columns), "-y", "50", command)
    tmux("set-option", "-t", name, "remain-on-exit", "on")
    try:
        while (elapsed := time.monotonic() - started) < args.timeout:
            screen = tmux("capture-pane", "-p", "-t", name)
            for step, pattern in STEPS.items():
                if step not in result.seen and pattern.search(screen):
                    result.seen[step] = elapsed
            if result.first_us is None and MICROSECONDS.search(screen):
                result.first_us = elapsed
            found = VERDICT.search(screen)
            if result.verdict is None and found:
                result.verdict, result.verdict_text = elapsed, found.group(1)
                result.screen = screen
            done = result.verdict is not None or (
                args.case == "numba" and result.first_us is not None
                and "no verdict line" in result.seen and "measured." in screen)
            if done or tmux("list-panes", "-t", name, "-F", "#{pane_dead}").strip() == "1":
                break
            time.sleep(POLL_S)
        if not result.screen:
            result.screen = tmux("capture-pane", "-p", "-t", name)
        pressed = time.monotonic()
        tmux("send-keys", "-t", name, "q")
        while time.monotonic() - pressed < 15:
            if tmux("list-panes", "-t", name, "-F", "#{pane_dead}").strip() == "1":
                result.quit_s = time.monotonic() - pressed
                break
            time.sleep(0.05)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, check=False)
        end_leftovers(str(home))  # the pool grower the run left, detached by design
        if not args.keep:
            shutil.rmtree(clone, ignore_errors=True)
            shutil.rmtree(home, ignore_errors=True)
    return result


def fmt(s: float | None) -> str:
    return "-" if s is None else f"{s:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("case", choices=("liboqs", "build", "numba"))
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--commit", default=None)
    parser.add_argument("--oqs", default=os.path.expanduser("~/_oqs"))
    parser.add_argument("--source", default="/work/shared/vendor/liboqs-0.16.0.tar.gz")
    parser.add_argument("--columns", type=int, default=200)
    parser.add_argument("--quiet-load", type=float, default=1.5,
                        help="wait for the 1-minute load to fall below this (default 1.5)")
    parser.add_argument("--quiet-wait", type=float, default=120.0,
                        help="... for at most this many seconds (default 120)")
    parser.add_argument("--keep", action="store_true", help="keep the clones and HOMEs")
    parser.add_argument("--screens", action="store_true", help="print the last screen")
    args = parser.parse_args()
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown CPU")
    print(f"{args.case}: {os.cpu_count()} CPUs, {cpu}, load {os.getloadavg()[0]:.2f}")
    for n in range(1, args.tries + 1):
        load = wait_for_quiet(args.quiet_load, args.quiet_wait)
        print(f"try {n} starts at {time.strftime('%H:%M:%S')} UTC, load {load:.2f}",
              flush=True)
        t = one_try(args, n)
        steps = ", ".join(f"{k} {v:.1f}" for k, v in t.seen.items())
        print(f"try {n}: first µs {fmt(t.first_us)} s, verdict {fmt(t.verdict)} s "
              f"({t.verdict_text or 'none'}), q {fmt(t.quit_s)} s; steps: {steps}; "
              f"load {os.getloadavg()[0]:.2f}", flush=True)
        if args.screens:
            print(t.screen)


if __name__ == "__main__":
    main()
