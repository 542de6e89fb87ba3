"""How fast qprof's kernels grind what an adversary needs, against plain Python.

Usage:  .venv/bin/python bench/adversary_grind.py [--cpu N] [--params SLH-DSA-SHAKE-128s]
                                                  [--seconds S]

Pinned to one CPU, for each parameter set, in the same run:
  crafted tries  one candidate authentication node -> H -> chain steps of the result:
                 ``grind_h_kernel`` against the same loop on hashlib.shake_256
                 (what the issue's Python probe did);
  landing tries  opt_rand -> PRF_msg -> H_msg -> address (``land_kernel``) against hashlib;
  XMSS roots     ``xmss_root`` per second (a key owner's cost per candidate subtree).
Prints tries per second and the ratio numba / Python.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qprof.verify.adversary.keys import adrs_pair, message_prime, one_block_template, words  # noqa: E402
from qprof.verify.slhdsa_calls import nb_module, node_steps, params_of  # noqa: E402


def _rate(fn: object, seconds: float) -> float:
    """Calls of ``fn(count) -> tries`` per second over about ``seconds``."""
    tries = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        tries += fn()  # type: ignore[operator]
    return tries / (time.perf_counter() - start)


def bench(name: str, seconds: float) -> None:
    grind = nb_module("slhdsa_grind")
    p = params_of(name)
    n = p.n
    seed, node, salt = os.urandom(n), os.urandom(n), os.urandom(n)
    adrs = bytes(16) + (2).to_bytes(4, "big") + bytes(4) + p.hp.to_bytes(4, "big") + bytes(4)
    best = np.array([-1, -1], dtype=np.int64)
    lanes = [np.uint64(v) for v in (0, 0, adrs_pair(2, 0), adrs_pair(p.hp, 0))]
    chunk = 1 << 16

    def nb_crafted() -> int:
        grind.grind_h_kernel(words(seed), n, *lanes, words(node), False, words(salt), 0,
                             chunk, best)
        return chunk

    def py_crafted() -> int:
        for c in range(2000):
            cand = c.to_bytes(8, "little") + salt[8:]
            node_steps(hashlib.shake_256(seed + adrs + node + cand).digest(n))
        return 2000

    mp = message_prime(bytes(32), b"")
    sk_prf, pk = os.urandom(n), os.urandom(2 * n)
    prf_t = one_block_template(sk_prf + bytes(n) + mp)
    hm_t = one_block_template(bytes(n) + pk + mp)
    allowed = np.zeros(1 << p.hp, dtype=np.uint8)
    hits = np.empty(16, dtype=np.int64)
    tl = np.empty(16, dtype=np.uint64)

    def nb_land() -> int:
        grind.land_kernel(prf_t, hm_t, n // 8, p.h, p.hp, p.a, p.k, 0, chunk,
                          p.h - p.hp, allowed, hits, tl, tl)
        return chunk

    def py_land() -> int:
        for c in range(2000):
            r = hashlib.shake_256(sk_prf + c.to_bytes(n, "little") + mp).digest(n)
            hashlib.shake_256(r + pk + mp).digest(p.m)
        return 2000

    out = np.empty(n // 8, dtype=np.uint64)

    def nb_root() -> int:
        grind.xmss_root(words(seed), words(salt), n, p.hp, 1, np.uint64(7), out)
        return 1

    nb_crafted(), nb_land(), nb_root()  # compile / load
    rows = [("crafted tries/s", _rate(nb_crafted, seconds),
             _rate(py_crafted, seconds)),
            ("landing tries/s", _rate(nb_land, seconds), _rate(py_land, seconds)),
            ("XMSS roots/s", _rate(nb_root, seconds), None)]
    print(name)
    for label, nb, py in rows:
        extra = f"   python {py:12.0f}   numba/python {nb / py:6.1f}x" if py else ""
        print(f"  {label:16s} numba {nb:12.0f}{extra}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    parser.add_argument("--params", nargs="+", default=["SLH-DSA-SHAKE-128s",
                                                        "SLH-DSA-SHAKE-256s"])
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.cpu})
    print(f"CPU {args.cpu}; {args.seconds:.0f} s per figure")
    for name in args.params:
        bench(name, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
