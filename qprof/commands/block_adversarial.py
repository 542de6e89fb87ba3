"""`qprof block --adversarial`: a block of ground signatures against a block of median ones.

The same number of signatures (the profile's worst case), the same CPUs and verifier
mode, the two blocks verified in turns ``--repeat`` times each (the median run is
shown, and the ratio of the two paired by repeat with its 95 % interval); the signatures
are those of the last ``qprof adversary SUITE`` run.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from qprof.commands.output import emit
from qprof.consensus.vu import block_signatures
from qprof.measure.adversary_block import adversarial_blocks
from qprof.measure.block import (
    BlockError,
    BlockResult,
    median_run,
    node_verifier,
    single_core_median_s,
    verify_block,
)


def run_adversarial(args: argparse.Namespace, profile: Any, suites: list[str],
                    cpus: list[int], backend: str) -> int:
    rows: list[dict[str, Any]] = []
    for suite in suites:
        if not suite.startswith("SLH-DSA"):
            continue  # ML-DSA's cost does not depend on the signature
        n = args.signatures or block_signatures(profile, suite)
        try:
            ground, median = adversarial_blocks(suite, n)
            per_sig = single_core_median_s(
                median, cpus[0], node_verifier(suite, backend, args.mode, args.second))
            runs: dict[str, list[BlockResult]] = {"ground": [], "median": []}
            for _ in range(max(1, args.repeat)):
                for name, block in (("ground", ground), ("median", median)):
                    runs[name].append(verify_block(
                        block, cpus, backend, args.mode, args.second, f"all ({name})",
                        profile.target_block_interval_s, per_sig))
        except (BlockError, ValueError, OSError) as exc:
            print(f"qprof block: {suite}: {exc}", file=sys.stderr)
            return 2
        # Paired by repeat (the two blocks in turns): the ratio's median and its interval.
        g = median_run(runs["ground"], runs["median"])
        m = median_run(runs["median"])
        rows.append({"suite": suite, "ratio": g.vs_single if g.vs_single is not None
                     else g.wall_s / m.wall_s, "ratio_ci": g.vs_single_ci,
                     "ground": g.to_dict(), "median": m.to_dict()})
    if not rows:
        print("qprof block: --adversarial needs an SLH-DSA suite", file=sys.stderr)
        return 2
    if args.json:
        emit(json.dumps({"profile": profile.name, "adversarial": rows}, indent=1))
    else:
        print(f"adversarial blocks of profile {profile.name} ({args.mode}, "
              f"{len(cpus)} CPUs, median of {max(1, args.repeat)} runs)")
        for r in rows:
            g, m = r["ground"], r["median"]
            ci = (f" (95 % CI {r['ratio_ci'][0]:.3f}-{r['ratio_ci'][1]:.3f})"
                  if r["ratio_ci"] else "")
            print(f"{r['suite']:19s} {g['signatures']:4d} sigs  ground {1e3 * g['wall_s']:8.2f} "
                  f"ms  median {1e3 * m['wall_s']:8.2f} ms  ground/median {r['ratio']:.3f}x{ci}")
    ok = all(r["ground"]["all_verified"] and r["median"]["all_verified"] for r in rows)
    return 0 if ok else 1
