#!/usr/bin/env python3
"""The estimator's known error: bias, spread and interval coverage per noise shape.

    .venv/bin/python bench/simulate_verdict.py --runs 40

Simulated check-mode runs (tests/simulate.py: interleaved rounds of the qanum suites on a
host shaped like this one, with a known true ratio) go through the verdict code; for each
shape, statistic and suite it prints the mean error of the estimate (bias, bp), its
standard deviation over runs (spread, bp) and how often the 95 % interval held the true
Verify-Unit count. ``[...]`` says which statistic the estimates actually used. The table
in docs/ESTIMATOR.md is this script's output.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import simulate  # noqa: E402  (tests/simulate.py: the simulator the tests pin)

from qprof.consensus import load_profile  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=40, help="simulated runs per shape")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--shapes", default=",".join(s.name for s in simulate.SHAPES),
                   help="comma-separated shape names")
    p.add_argument("--profile", default="qanum")
    p.add_argument("--rounds", type=int, default=simulate.CHECK.rounds,
                   help="base rounds per run (the pins of the ratio shapes use 15)")
    p.add_argument("--adaptive", action="store_true",
                   help="extra B/A pairs by the engine's stopping rule, as qprof check")
    p.add_argument("--budget", type=float, default=simulate.CHECK.budget_s,
                   help="seconds per suite per round (check mode's default)")
    args = p.parse_args(argv)
    shapes = [simulate.SHAPES_BY_NAME[n] for n in args.shapes.split(",")]
    profile = load_profile(args.profile)
    started = time.monotonic()
    cfg = simulate.Config(adaptive=args.adaptive, rounds=args.rounds, budget_s=args.budget)
    cells = simulate.simulate_table(
        profile, shapes, runs=args.runs, seed=args.seed, cfg=cfg,
        progress=lambda name: print(f"# {name} done, {time.monotonic() - started:.0f} s",
                                    file=sys.stderr))
    print(f"{args.runs} simulated runs per shape, seed {args.seed}, "
          f"{cfg.rounds} rounds of check mode, {cfg.budget_s} s per suite per round"
          + (f" + stopping rule (<= {cfg.max_rounds})" if cfg.adaptive else "")
          + "; truth (VU): " + ", ".join(
              f"{s} {profile.unit_vu * simulate.true_ratio(s):.1f}"
              for s in simulate.QUIET_COST_S if s != profile.unit_suite))
    print()
    for s in shapes:
        print(f"- {s.name}: {s.text}")
    print()
    print(simulate.markdown_table(cells))
    outside = sum(not x for c in cells.values() for x in c.inside)
    total = sum(len(c.inside) for c in cells.values())
    print(f"\nestimates outside their own interval: {outside} of {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
