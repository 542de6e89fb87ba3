"""What the check before timing adds to a run (issue 32): known answers and memory.

Usage:  .venv/bin/python bench/preflight_cost.py [--cpu N] [--backends liboqs,numba]

On one pinned CPU, in the same run, with the run's own fixtures (the cached pools):
  cold   the known answers checked (a fresh known-answer cache; the second
         implementation's SLH-DSA signatures kept from before, as on a machine that has
         checked once) and the memory measured: a run's first on a new library build;
  warm   the known answers from the cache (same build and CPU), the memory measured: what
         every later run pays.
Prints seconds per backend and the ratio to the 60 s of a default `qprof check`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qprof.measure.config import QANUM_SUITES  # noqa: E402
from qprof.measure.fixtures import cache_dir, cached_pool, save_fixtures  # noqa: E402
from qprof.measure.preflight import PreflightPlan, run_preflight  # noqa: E402
from qprof.verify import available_backends  # noqa: E402

CHECK_TIME_LIMIT_S = 60.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu", type=int, default=0)
    parser.add_argument("--backends", default="liboqs,numba")
    args = parser.parse_args()
    statuses = available_backends()
    backends = tuple(b for b in args.backends.split(",") if statuses[b].available)
    work = Path(tempfile.mkdtemp(prefix="qprof-preflight-bench-"))
    fixtures = {s: cached_pool(s, ("liboqs",), checker="liboqs") for s in QANUM_SUITES}
    save_fixtures(fixtures, work / "fixtures.json")
    answers = Path(tempfile.mkdtemp(prefix="qprof-answers-"))
    # The second implementation's kept SLH-DSA signatures, as a machine that checked once.
    for kept in cache_dir().glob("second-*.json"):
        (answers / kept.name).write_bytes(kept.read_bytes())
    suites = {b: tuple(s for s in QANUM_SUITES if s in statuses[b].suites) for b in backends}
    for label in ("cold", "warm"):
        for backend in backends:
            plan = PreflightPlan("bench", args.cpu, 10, sys.executable, work,
                                 work / "fixtures.json", answers, (backend,), suites,
                                 statuses)
            started = time.monotonic()
            found = run_preflight(plan, threading.Event())
            took = time.monotonic() - started
            checks = ", ".join(f"{c.suite} {c.status}" for c in found.checks)
            share = 100 * took / CHECK_TIME_LIMIT_S
            print(f"{label:<4} {backend:<7} {took:6.2f} s = {share:5.1f} % of a "
                  f"{CHECK_TIME_LIMIT_S:.0f} s check  ({checks}; "
                  f"{len(found.resources)} memory rows)")
    print(f"known-answer cache: {sorted(p.name for p in answers.glob('functional-*'))}")


if __name__ == "__main__":
    main()
