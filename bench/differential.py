#!/usr/bin/env python3
"""Long differential run: every available verifier against every signer (not in CI).

    .venv/bin/python bench/differential.py --checks 100000

ML-DSA gets fresh keys and signatures throughout (signing is fast); SLH-DSA signs a
pool once per suite (seconds per "s" signature) and mutates it with new random
positions each pass. A check is one verifier's answer on one case; every answer must
equal the signer's library's (True for the original, False for each broken variant).
Disagreements are printed in full (keys, message, context, signature) and written to
``--out``; the exit status is 1 if there was any.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

# The checkout this script is in, not whichever qprof the venv has installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qprof.verify import (
    BACKEND_NAMES,
    ML_DSA_SUITES,
    SIGNING_BACKENDS,
    SLH_DSA_SUITES,
    SUITES,
    BackendUnavailable,
    Signer,
    Verifier,
    available_backends,
    get_signer,
    get_verifier,
)
from qprof.verify.differential import Tally, check_cases, mutations, random_context


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checks", type=int, default=100_000, help="target number of checks")
    p.add_argument("--suites", nargs="+", default=list(SUITES), choices=list(SUITES))
    p.add_argument("--backends", nargs="+", default=None, choices=list(BACKEND_NAMES),
                   help="verifiers (default: every available one)")
    p.add_argument("--slh-share", type=float, default=0.1,
                   help="share of the checks spent on SLH-DSA (default 0.1)")
    p.add_argument("--reference-every", type=int, default=25,
                   help="run the pure-Python reference verifier on every n-th case")
    p.add_argument("--pool", type=int, default=2,
                   help="SLH-DSA signatures per signer per suite in the pool")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--out", type=Path, default=Path("differential-report.json"),
                   help="JSON report (disagreements with full inputs)")
    return p.parse_args(argv)


def _verifiers(suite: str, wanted: list[str] | None) -> dict[str, Verifier]:
    statuses = available_backends()
    out: dict[str, Verifier] = {}
    for name in wanted or BACKEND_NAMES:
        if statuses[name].available and suite in statuses[name].suites:
            verifier = get_verifier(name, suite)
            verifier.warm_up()
            out[name] = verifier
    return out


def _signers(suite: str) -> dict[str, Signer]:
    out: dict[str, Signer] = {}
    for name in SIGNING_BACKENDS:
        try:
            out[name] = get_signer(name, suite)
        except BackendUnavailable:
            continue
    return out


class Progress:
    def __init__(self, target: int) -> None:
        self.target = target
        self.start = time.monotonic()
        self.last = 0.0

    def __call__(self, tally: Tally, where: str, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last > 10:
            self.last = now
            print(f"  [{now - self.start:6.0f}s] {where}: {tally.checks:,}/{self.target:,} checks,"
                  f" {len(tally.disagreements)} disagreements", flush=True)


def _participants(suite: str, args: argparse.Namespace) -> tuple[dict | None, dict]:
    """(verifiers, signers) of ``suite``; verifiers None (and said) when there is nothing
    to compare: fewer than two verifiers or no signer."""
    verifiers = _verifiers(suite, args.backends)
    signers = _signers(suite)
    if len(verifiers) < 2 or not signers:
        print(f"{suite}: skipped (verifiers {list(verifiers)}, signers {list(signers)})")
        return None, signers
    return verifiers, signers


def run_mldsa(suite: str, budget: int, rng: random.Random, args: argparse.Namespace,
              progress: Progress, grand: Tally) -> Tally:
    verifiers, signers = _participants(suite, args)
    tally = Tally()
    if verifiers is None:
        return tally
    every = {"reference": max(1, args.reference_every)}
    # The reference signer is slow (~0.1 s); use it for one signature in 20.
    rotation = [n for n in signers if n != "reference"] * 19 + (
        ["reference"] if "reference" in signers else []
    )
    keys: dict[str, tuple[bytes, bytes]] = {}
    count = 0
    while tally.checks < budget:
        name = rotation[count % len(rotation)] if rotation else "reference"
        signer = signers[name]
        if name not in keys or count % 8 == 0:  # fresh keys every few signatures
            keys[name] = signer.keypair()
        pk, sk = keys[name]
        ctx = random_context(rng, signer.max_context_len)
        msg = rng.randbytes(rng.choice([0, 1, 32, 32, 64, 1000]))
        sig = signer.sign(sk, msg, ctx)
        cases = mutations(pk, msg, sig, ctx, rng, sig_flips=12, pk_flips=3)
        part = check_cases(suite, name, verifiers, cases, every)
        tally.merge(part)
        for d in part.disagreements:
            print(d.describe(), flush=True)
        count += 1
        progress(_sum(grand, tally), suite)
    return tally


def run_slhdsa(suite: str, budget: int, rng: random.Random, args: argparse.Namespace,
               progress: Progress, grand: Tally) -> Tally:
    verifiers, signers = _participants(suite, args)
    tally = Tally()
    if verifiers is None:
        return tally
    small = suite.endswith("s")
    pool: list[tuple[str, bytes, bytes, bytes, bytes]] = []
    t0 = time.monotonic()
    for name, signer in signers.items():
        # pure-Python signing of an "s" set takes ~10 s: only for the "f" sets
        if name == "reference" and small:
            continue
        pk, sk = signer.keypair()
        for i in range(max(1, args.pool)):
            ctx = random_context(rng, signer.max_context_len) if i else b""
            msg = rng.randbytes(rng.choice([0, 32, 100]))
            pool.append((name, pk, msg, signer.sign(sk, msg, ctx), ctx))
    print(f"{suite}: pool of {len(pool)} signatures from {sorted({p[0] for p in pool})} "
          f"in {time.monotonic() - t0:.1f}s", flush=True)
    every = {"reference": max(1, args.reference_every // 5)}
    index = 0
    while tally.checks < budget:
        name, pk, msg, sig, ctx = pool[index % len(pool)]
        cases = mutations(pk, msg, sig, ctx, rng, sig_flips=16, pk_flips=3)
        part = check_cases(suite, name, verifiers, cases, every)
        tally.merge(part)
        for d in part.disagreements:
            print(d.describe(), flush=True)
        index += 1
        progress(_sum(grand, tally), suite)
    return tally


def _sum(a: Tally, b: Tally) -> Tally:
    out = Tally()
    out.merge(a)
    out.merge(b)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    statuses = available_backends()
    print(f"differential run: target {args.checks:,} checks, seed {seed}")
    for name, status in statuses.items():
        state = f"{status.version} ({len(status.suites)} suites)" if status.available \
            else status.reason
        print(f"  {name:10s} {state}")
    ml = [s for s in args.suites if s in ML_DSA_SUITES]
    slh = [s for s in args.suites if s in SLH_DSA_SUITES]
    slh_total = int(args.checks * args.slh_share) if slh else 0
    if not ml:
        slh_total = args.checks
    ml_total = args.checks - slh_total
    progress = Progress(args.checks)
    grand = Tally()
    per_suite: dict[str, Tally] = {}
    for suite in ml:
        per_suite[suite] = run_mldsa(suite, ml_total // len(ml), rng, args, progress, grand)
        grand.merge(per_suite[suite])
    for suite in slh:
        per_suite[suite] = run_slhdsa(suite, slh_total // len(slh), rng, args, progress, grand)
        grand.merge(per_suite[suite])
    progress(grand, "done", force=True)

    print()
    backends = [b for b in BACKEND_NAMES if b in grand.by_backend]
    header = f"{'SUITE':20s}{'CHECKS':>9s}" + "".join(f"{b:>12s}" for b in backends) + \
        f"{'KNOWN-DEV':>11s}{'DISAGREE':>10s}"
    print(header)
    for suite, t in per_suite.items():
        print(f"{suite:20s}{t.checks:>9,}" + "".join(
            f"{t.by_backend.get(b, 0):>12,}" for b in backends
        ) + f"{t.known_deviations:>11,}{len(t.disagreements):>10,}")
    print(f"{'TOTAL':20s}{grand.checks:>9,}" + "".join(
        f"{grand.by_backend.get(b, 0):>12,}" for b in backends
    ) + f"{grand.known_deviations:>11,}{len(grand.disagreements):>10,}")
    if grand.known_deviations:
        print("known deviations: " + "; ".join(
            f"{n}: {s.details['context_limit']}" for n, s in statuses.items()
            if "context_limit" in s.details
        ))
    report = {
        "seed": seed,
        "checks": grand.checks,
        "known_deviations": grand.known_deviations,
        "by_backend": grand.by_backend,
        "per_suite": {s: {"checks": t.checks, "by_backend": t.by_backend,
                          "known_deviations": t.known_deviations,
                          "disagreements": len(t.disagreements)}
                      for s, t in per_suite.items()},
        "versions": {n: s.version for n, s in statuses.items()},
        "disagreements": [
            {"suite": d.suite, "backend": d.backend, "signer": d.signer, "case": d.label,
             "expected": d.expected, "got": d.got, "pk": d.public_key.hex(),
             "msg": d.message.hex(), "ctx": d.context.hex(), "sig": d.signature.hex()}
            for d in grand.disagreements
        ],
    }
    args.out.write_text(json.dumps(report, indent=1))
    print(f"report: {args.out}")
    if grand.disagreements:
        print(f"!!! {len(grand.disagreements)} DISAGREEMENTS — each is a bug; inputs above "
              f"and in {args.out}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
