"""Benchmark qprof's numba SLH-DSA-SHAKE verifier against liboqs on one pinned CPU.

Usage:  .venv/bin/python bench/nb_slhdsa.py [--cpu N] [--rounds R] [--per-round K]
                                            [--params SLH-DSA-SHAKE-128s ...]

Pins itself to one CPU, warms up both verifiers, then runs interleaved rounds
(numba, liboqs, numba, liboqs, ...) on the same signature so frequency drift and
noise from other processes hit both sides alike.  Prints per-set medians and the
ratio numba / liboqs (below 1.0 means numba is faster).  Without liboqs it prints
numba medians only.  ``--scalar`` adds the numba path that hashes one chain at a
time (``ways=1``), to show what the multi-way Keccak is worth.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEFAULT_PARAMS = ["SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s"]


def _load_oqs() -> object | None:
    """liboqs-python, found as qprof finds liboqs ($OQS_INSTALL_PATH, ~/_oqs, system);
    never imported before the shared library is found (it would try to build it)."""
    from qprof.verify.availability import import_oqs
    from qprof.verify.base import BackendUnavailable

    try:
        return import_oqs()
    except BackendUnavailable as exc:
        print(f"{exc}; numba medians only", file=sys.stderr)
        return None


def _oqs_name(params: str) -> str:
    return "SLH_DSA_PURE_SHAKE_" + params.rsplit("-", 1)[1].upper()


def _mean_ns(fn: Callable[[], bool], per_round: int) -> float:
    """Mean time of one call over a round; the report takes the median of rounds."""
    start = time.perf_counter_ns()
    for _ in range(per_round):
        fn()
    return (time.perf_counter_ns() - start) / per_round


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", type=int, default=0, help="CPU to pin to (default 0)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--per-round", type=int, default=20, help="verifies per round")
    parser.add_argument("--params", nargs="+", default=DEFAULT_PARAMS)
    parser.add_argument("--all", action="store_true", help="all six SHAKE parameter sets")
    parser.add_argument("--scalar", action="store_true", help="also time the ways=1 path")
    args = parser.parse_args(argv)

    os.sched_setaffinity(0, {args.cpu})
    t0 = time.perf_counter()
    from qprof.verify.nb.slhdsa import PARAMS, slhdsa_verify, warm_up

    warm_up()
    print(f"pinned to CPU {args.cpu}; numba import + warm_up {time.perf_counter() - t0:.2f} s")
    oqs = _load_oqs()
    params_list = list(PARAMS) if args.all else args.params
    message, context = b"qprof benchmark message", b"qprof"

    for params in params_list:
        if params not in PARAMS:
            print(f"{params}: unknown parameter set; choose from {', '.join(PARAMS)}")
            return 2
        if oqs is not None:
            signer = oqs.Signature(_oqs_name(params))
            public_key = signer.generate_keypair()
            signature = signer.sign_with_ctx_str(message, context)
            verifier = oqs.Signature(_oqs_name(params))

            def run_oqs(
                v: object = verifier, pk: bytes = public_key, sig: bytes = signature
            ) -> bool:
                return v.verify_with_ctx_str(message, sig, context, pk)  # type: ignore[attr-defined]
        else:
            try:
                import slhdsa
            except ImportError:
                print("no SLH-DSA signer: neither liboqs nor the slh-dsa package "
                      "(pip install slh-dsa) is installed")
                return 2
            par = getattr(slhdsa, "shake_" + params.rsplit("-", 1)[1])
            keypair = slhdsa.KeyPair.gen(par)
            public_key = keypair.pub.digest()
            signature = keypair.sign_pure(message, ctx=context)  # slow for "s" sets
            run_oqs = None

        def run_nb(pk: bytes = public_key, sig: bytes = signature, p: str = params) -> bool:
            return slhdsa_verify(p, pk, message, sig, context)

        def run_scalar(pk: bytes = public_key, sig: bytes = signature, p: str = params) -> bool:
            return slhdsa_verify(p, pk, message, sig, context, ways=1)

        if not run_nb():
            print(f"{params}: numba rejected a valid signature")
            return 1
        if run_oqs is not None and not run_oqs():
            print(f"{params}: liboqs rejected its own signature")
            return 1
        nb_rounds: list[float] = []
        oqs_rounds: list[float] = []
        scalar_rounds: list[float] = []
        for _ in range(args.rounds):
            nb_rounds.append(_mean_ns(run_nb, args.per_round))
            if args.scalar:
                scalar_rounds.append(_mean_ns(run_scalar, args.per_round))
            if run_oqs is not None:
                oqs_rounds.append(_mean_ns(run_oqs, args.per_round))
        nb_med = statistics.median(nb_rounds) / 1e6
        line = f"{params:20s} numba {nb_med:7.3f} ms"
        if oqs_rounds:
            oqs_med = statistics.median(oqs_rounds) / 1e6
            line += f"   liboqs {oqs_med:7.3f} ms   ratio numba/liboqs {nb_med / oqs_med:5.2f}"
        if scalar_rounds:
            scalar_med = statistics.median(scalar_rounds) / 1e6
            line += f"   numba ways=1 {scalar_med:7.3f} ms"
            if oqs_rounds:
                line += f" (ratio {scalar_med / oqs_med:5.2f})"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
