"""numba / liboqs ratios of the four consensus suites, interleaved on one pinned CPU.

Usage: .venv/bin/python bench/nb_vs_liboqs.py [--cpu N] [--rounds R] [--batch-ms MS]
                                              [--suites ML-DSA-44 ...] [--clock wall|cpu]
                                              [--no-split]

The issue-21 figure. One process pinned to one CPU; every round times, for every
suite in turn, a batch of liboqs verifications and a batch of numba verifications of
the same valid signature (which of the two goes first alternates by round), so load
phases on a shared machine hit both sides of a ratio alike. Each round gives one ratio
per suite (numba batch / liboqs batch, taken seconds apart at most); the report is the
median ratio over rounds with its 25th-75th percentile spread, and the ratio of the
quickest rounds (quickest numba batch / quickest liboqs batch), the figure least
disturbed by other processes on a shared machine. For the ML-DSA suites the numba
time is then split into its phases (bench/nb_mldsa.py's profile, timed on the numba
kernels themselves), each as a share of the liboqs time: the shares add up to the ratio.

It also prints the dual-mode cost as the seeds compute it: a node in enforce mode
verifies a valid signature with liboqs and then with the second verifier, so its cost
is the sum; VU estimate = ceil(100 * median(suite) / median(ML-DSA-44)), both through
the same path (liboqs alone, and dual enforce with numba as the second verifier),
next to the consensus constants.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SUITES = ("ML-DSA-44", "ML-DSA-87", "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s")
CONSENSUS_VU = {
    "ML-DSA-44": 100,
    "ML-DSA-65": 190,
    "ML-DSA-87": 290,
    "SLH-DSA-SHAKE-128s": 1600,
    "SLH-DSA-SHAKE-256s": 3600,
}
MESSAGE = bytes(range(32))  # a transaction hash
CONTEXT = b""


def _pair(suite: str, oqs: object) -> tuple[Callable[[], bool], Callable[[], bool]]:
    """(liboqs verify, numba verify) of one fresh liboqs signature of ``suite``."""
    if suite.startswith("ML-DSA"):
        from qprof.verify.nb.mldsa import mldsa_verify, warm_up

        level = int(suite.rsplit("-", 1)[1])
        warm_up(suite)
        name = suite

        def nb(pk: bytes, sig: bytes) -> bool:
            return mldsa_verify(level, pk, MESSAGE, sig, CONTEXT)
    else:
        from qprof.verify.nb.slhdsa import slhdsa_verify
        from qprof.verify.nb.slhdsa import warm_up as slh_warm_up

        slh_warm_up(suite)
        name = "SLH_DSA_PURE_SHAKE_" + suite.rsplit("-", 1)[1].upper()

        def nb(pk: bytes, sig: bytes) -> bool:
            return slhdsa_verify(suite, pk, MESSAGE, sig, CONTEXT)

    signer = oqs.Signature(name)  # type: ignore[attr-defined]
    pk = signer.generate_keypair()
    sig = signer.sign_with_ctx_str(MESSAGE, CONTEXT)
    verifier = oqs.Signature(name)  # type: ignore[attr-defined]

    def run_oqs() -> bool:
        return bool(verifier.verify_with_ctx_str(MESSAGE, sig, CONTEXT, pk))

    def run_nb() -> bool:
        return nb(pk, sig)

    if not run_oqs() or not run_nb():
        raise SystemExit(f"{suite}: a verifier rejects a valid liboqs signature")
    return run_oqs, run_nb


def _calls_for(fn: Callable[[], bool], batch_s: float) -> int:
    best = math.inf
    for _ in range(5):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return max(1, round(batch_s / best))


def _batch(fn: Callable[[], bool], calls: int, clock: Callable[[], float]) -> float:
    start = clock()
    for _ in range(calls):
        fn()
    return (clock() - start) / calls


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def _print_split(pairs: dict[str, tuple[Callable[[], bool], Callable[[], bool]]],
                 oqs_t: dict[str, list[float]], clock: Callable[[], float]) -> None:
    """Per-phase split of every ML-DSA suite's numba time, as shares of liboqs's time."""
    from nb_mldsa import profile_level  # bench/ is this script's directory

    for suite, (_run_oqs, run_nb) in pairs.items():
        if not suite.startswith("ML-DSA"):
            continue
        oqs_us = min(oqs_t[suite]) * 1e6
        stages = profile_level(int(suite.rsplit("-", 1)[1]), clock, run_nb)
        print(f"\n{suite}: numba phases, us and share of liboqs's {oqs_us:.1f} us (quickest)")
        for stage, us in stages.items():
            print(f"    {stage:42s} {us:7.1f} us {us / oqs_us:6.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: last)")
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--batch-ms", type=float, default=4.0, help="target time of one batch")
    parser.add_argument("--suites", nargs="+", default=list(SUITES))
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall: perf_counter; cpu: this thread's CPU time")
    parser.add_argument("--no-split", action="store_true",
                        help="skip the per-phase split of the ML-DSA suites")
    args = parser.parse_args(argv)

    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    from qprof.verify.availability import import_oqs
    from qprof.verify.base import BackendUnavailable

    try:
        oqs = import_oqs()
    except BackendUnavailable as exc:
        print(f"{exc}\nthe ratios need liboqs; bench/nb_mldsa.py and bench/nb_slhdsa.py "
              "time numba alone")
        return 2
    from numba.core import config

    from qprof.verify.nb.keccak_xn import WAYS

    model = next((line.split(":", 1)[1].strip() for line in
                  Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    features = config.CPU_FEATURES or "host"  # type: ignore[attr-defined]
    print(f"pinned to CPU {cpu} ({model}); numba CPU name "
          f"{config.CPU_NAME or 'host'}, {WAYS}-way Keccak, "  # type: ignore[attr-defined]
          f"prefer-256-bit {'off' if '-prefer-256-bit' in features else 'default'}; "
          f"clock {args.clock}; load average {os.getloadavg()[0]:.2f}")
    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    pairs = {suite: _pair(suite, oqs) for suite in args.suites}
    calls = {
        suite: (_calls_for(a, args.batch_ms / 1e3), _calls_for(b, args.batch_ms / 1e3))
        for suite, (a, b) in pairs.items()
    }
    oqs_t: dict[str, list[float]] = {s: [] for s in pairs}
    nb_t: dict[str, list[float]] = {s: [] for s in pairs}
    for r in range(args.rounds):
        for suite, (run_oqs, run_nb) in pairs.items():
            n_oqs, n_nb = calls[suite]
            if r % 2 == 0:
                oqs_t[suite].append(_batch(run_oqs, n_oqs, clock))
                nb_t[suite].append(_batch(run_nb, n_nb, clock))
            else:
                nb_t[suite].append(_batch(run_nb, n_nb, clock))
                oqs_t[suite].append(_batch(run_oqs, n_oqs, clock))
    print(f"load average after: {os.getloadavg()[0]:.2f}; {args.rounds} rounds")
    print(f"{'suite':20s} {'liboqs us':>10s} {'numba us':>10s} {'ratio':>6s} {'p25-p75':>11s} "
          f"{'quickest':>8s}")
    for suite in pairs:
        ratios = [b / a for a, b in zip(oqs_t[suite], nb_t[suite], strict=True)]
        lo, mid, hi = _quartiles(ratios)
        quickest = min(nb_t[suite]) / min(oqs_t[suite])
        print(f"{suite:20s} {statistics.median(oqs_t[suite]) * 1e6:10.1f} "
              f"{statistics.median(nb_t[suite]) * 1e6:10.1f} {mid:6.3f} {lo:5.3f}-{hi:5.3f} "
              f"{quickest:8.3f}")
    if not args.no_split:
        _print_split(pairs, oqs_t, clock)
    base = "ML-DSA-44"
    if base in pairs:
        dual = {s: [a + b for a, b in zip(oqs_t[s], nb_t[s], strict=True)] for s in pairs}
        alone = {s: statistics.median(oqs_t[s]) for s in pairs}
        dual_med = {s: statistics.median(v) for s, v in dual.items()}
        print("\nVU estimate, ceil(100 * median(suite) / median(ML-DSA-44)):")
        print(f"{'suite':20s} {'liboqs':>7s} {'dual enforce':>13s} {'dual us':>9s} "
              f"{'consensus':>9s}")
        for suite in pairs:
            vu_alone = math.ceil(100 * alone[suite] / alone[base])
            vu_dual = math.ceil(100 * dual_med[suite] / dual_med[base])
            print(f"{suite:20s} {vu_alone:7d} {vu_dual:13d} {dual_med[suite] * 1e6:9.1f} "
                  f"{CONSENSUS_VU.get(suite, 0):9d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
