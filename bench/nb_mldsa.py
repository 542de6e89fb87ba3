"""Benchmark qprof's numba ML-DSA verifier against liboqs and RustCrypto (pqcrypto).

Usage: .venv/bin/python bench/nb_mldsa.py [--cpu N] [--rounds R] [--levels 44,87] [--profile]

Pins itself to one CPU, warms every implementation up, then runs interleaved rounds
(each round times a batch of verifications per implementation, in turn) so that
frequency and load changes hit all of them alike. Prints per-verification medians and
the ratios numba / liboqs and numba / RustCrypto; the minimum over rounds is printed
too, as it is the figure least disturbed when other processes share the CPU.
``--profile`` adds the time split of
the numba verifier (ExpandA, NTTs, hashing, decoding) measured on its own kernels.
Times are uncached: every verification expands A from rho again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MESSAGE = b"qprof benchmark message, 32 B.."
CONTEXT = b"bench"


def _load_liboqs() -> tuple[object | None, str | None]:
    """(``oqs`` module, None) when liboqs is found, as qprof finds it ($OQS_INSTALL_PATH,
    then ~/_oqs, then the system library path); else (None, why not)."""
    from qprof.verify.availability import import_oqs
    from qprof.verify.base import BackendUnavailable

    try:
        return import_oqs(), None
    except BackendUnavailable as exc:
        return None, str(exc)


def _signed_sample(level: int, oqs: object | None) -> tuple[bytes, bytes, str]:
    """(pk, signature of MESSAGE with CONTEXT, signer): liboqs, else dilithium-py, else
    RustCrypto (pqcrypto). Exits with what is missing when none of them is installed."""
    name = f"ML-DSA-{level}"
    if oqs is not None:
        signer = oqs.Signature(name)  # type: ignore[attr-defined]
        pk = signer.generate_keypair()
        return pk, signer.sign_with_ctx_str(MESSAGE, CONTEXT), "liboqs"
    missing = ["liboqs"]
    try:
        from dilithium_py.ml_dsa import ML_DSA_44, ML_DSA_65, ML_DSA_87
    except ImportError:
        missing.append("dilithium-py (pip install dilithium-py)")
    else:
        impl = {44: ML_DSA_44, 65: ML_DSA_65, 87: ML_DSA_87}[level]
        pk, sk = impl.keygen()
        return pk, impl.sign(sk, MESSAGE, ctx=CONTEXT), "dilithium-py"
    try:
        from pqcrypto.sign import ml_dsa_44, ml_dsa_65, ml_dsa_87
    except ImportError:
        missing.append("pqcrypto (pip install pqcrypto)")
    else:
        rust = {44: ml_dsa_44, 65: ml_dsa_65, 87: ml_dsa_87}[level]
        pk, sk = rust.keygen()
        return pk, rust.sign(sk, MESSAGE, context=CONTEXT), "rustcrypto"
    raise SystemExit(
        f"no ML-DSA signer for the benchmark signature; missing: {', '.join(missing)}"
    )


def _verifiers(
    level: int, oqs: object | None, sample: tuple[bytes, bytes, str]
) -> dict[str, Callable[[], bool]]:
    """name -> zero-argument verification of one fixed valid signature."""
    from qprof.verify.nb.mldsa import mldsa_verify

    pk, sig, _ = sample
    out: dict[str, Callable[[], bool]] = {}
    if oqs is not None:
        verifier = oqs.Signature(f"ML-DSA-{level}")  # type: ignore[attr-defined]
        out["liboqs"] = lambda: verifier.verify_with_ctx_str(MESSAGE, sig, CONTEXT, pk)
    out["numba"] = lambda: mldsa_verify(level, pk, MESSAGE, sig, CONTEXT)
    try:
        from pqcrypto.sign import ml_dsa_44, ml_dsa_65, ml_dsa_87
    except ImportError:
        return out
    rust = {44: ml_dsa_44, 65: ml_dsa_65, 87: ml_dsa_87}[level]

    def rust_verify() -> bool:
        rust.verify(pk, MESSAGE, sig, context=CONTEXT)  # raises if invalid
        return True

    out["rustcrypto"] = rust_verify
    return out


def _aligned(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """A zeroed array that starts on a 64-byte line."""
    import numpy as np

    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(size + 64, dtype=np.uint8)
    skip = -raw.ctypes.data % 64
    return raw[skip : skip + size].view(dtype).reshape(shape)


def _batch_size(fn: Callable[[], bool], target_s: float = 0.005) -> int:
    start = time.perf_counter()
    n = 0
    while time.perf_counter() - start < target_s / 4:
        fn()
        n += 1
    return max(1, 4 * n)


def _time_batch(fn: Callable[[], bool], n: int, clock: Callable[[], float]) -> float:
    start = clock()
    for _ in range(n):
        fn()
    return (clock() - start) / n


def bench_level(
    verifiers: dict[str, Callable[[], bool]], level: int, rounds: int, clock: Callable[[], float]
) -> dict[str, list[float]]:
    for name, fn in verifiers.items():
        if not fn():
            raise SystemExit(f"{name} rejects the benchmark signature for ML-DSA-{level}")
    sizes = {name: _batch_size(fn) for name, fn in verifiers.items()}
    samples: dict[str, list[float]] = {name: [] for name in verifiers}
    for _ in range(rounds):
        for name, fn in verifiers.items():
            samples[name].append(_time_batch(fn, sizes[name], clock))
    return samples


def profile_level(
    level: int, clock: Callable[[], float], verify: Callable[[], bool], repeats: int = 200
) -> dict[str, float]:
    """Median microseconds of each stage of the numba verifier, from its own kernels."""
    import numpy as np
    from numba import njit

    from qprof.verify.nb import mldsa as m
    from qprof.verify.nb.keccak import absorb_final, absorb_init, absorb_update, squeeze_into
    from qprof.verify.nb.keccak_xn import WAYS
    from qprof.verify.nb.mldsa_expand import (
        SAMPLE_SLACK,
        WS_WORDS,
        expand_a_times_z,
        sample_in_ball,
    )
    from qprof.verify.nb.mldsa_poly import (
        decode_t1_shifted,
        decode_z_checked,
        hints_valid,
        invntt_tomont,
        ntt,
    )

    p = m.PARAMS[level]

    @njit(nogil=True)
    def t_ntt(a: np.ndarray, tmp: np.ndarray, n: int) -> None:
        for _ in range(n):
            ntt(a, tmp)
            for j in range(256):
                a[j] = j

    @njit(nogil=True)
    def t_invntt(a: np.ndarray, tmp: np.ndarray, n: int) -> None:
        for _ in range(n):
            invntt_tomont(a, tmp)
            for j in range(256):
                a[j] = j

    @njit(nogil=True)
    def t_expand(rho, k, l, zhat, acc, st, sm, no, pk, tr, want_tr, n):  # noqa: ANN001, E741
        ball = np.empty(25, np.uint64)
        ball_mu = np.empty(64, np.uint8)
        for _ in range(n):
            expand_a_times_z(rho, k, l, zhat, acc, st, sm, no, pk, tr, want_tr, rho, ball, pk, 0,
                             ball_mu)

    @njit(nogil=True)
    def t_mu(tr, ctx_msg, ctx_len, state, mu, n):  # noqa: ANN001
        prefix = np.empty(2, np.uint8)
        for _ in range(n):
            m._hash_mu(tr, ctx_msg, ctx_len, state, mu, prefix)

    @njit(nogil=True)
    def t_ball(ct, tau, state, block, c, n):  # noqa: ANN001
        for _ in range(n):
            sample_in_ball(ct, tau, state, block, c)

    @njit(nogil=True)
    def t_decode(sig, pk, k, l, cb, g1, omega, zh, t1, n):  # noqa: ANN001, E741
        zbytes = 32 * (g1 + 1)
        for _ in range(n):
            hints_valid(sig, cb + l * zbytes, k, omega)
            for s in range(l):
                decode_z_checked(sig, cb + s * zbytes, g1, 1 << g1, zh[s])
            for r in range(k):
                decode_t1_shifted(pk, 32 + 320 * r, t1)

    @njit(nogil=True)
    def t_c_tilde(mu, w1_packed, cb, state, out, n):  # noqa: ANN001
        for _ in range(n):
            pos = absorb_init(state)
            pos = absorb_update(state, 136, pos, mu)
            pos = absorb_update(state, 136, pos, w1_packed)
            absorb_final(state, 136, pos)
            squeeze_into(state, out, 0, cb)

    # Line-aligned, as the verifier's own buffers (numpy aligns to 16 bytes only).
    a = _aligned((256,), np.int32)
    a[:] = np.arange(256)
    tmp = _aligned((256,), np.int32)
    zhat = _aligned((p.l, 256), np.int32)
    zhat[:] = 1
    acc = _aligned((p.k, 256), np.int64)
    st_xn = _aligned((WS_WORDS,), np.uint64)
    sampled = np.empty((WAYS, 256 + SAMPLE_SLACK), np.int32)
    nonces = np.empty(WAYS, np.int64)
    rho = np.arange(32, dtype=np.uint8)
    state = np.empty(25, np.uint64)
    mu = np.empty(64, np.uint8)
    block = np.empty(136, np.uint8)
    c_poly = np.empty(256, np.int32)
    ct = np.zeros(p.c_tilde_bytes, np.uint8)
    pk = bytes(p.public_key_bytes)

    def per_call(fn: Callable[[int], None], n: int) -> float:
        fn(1)
        best = []
        for _ in range(15):
            start = clock()
            fn(n)
            best.append((clock() - start) / n * 1e6)
        return statistics.median(best)

    def verify_n(n: int) -> None:
        for _ in range(n):
            verify()

    total_us = per_call(verify_n, repeats // 10)
    ntt_us = per_call(lambda n: t_ntt(a, tmp, n), repeats)
    invntt_us = per_call(lambda n: t_invntt(a, tmp, n), repeats)
    tr = np.empty(64, np.uint8)
    expand_tr_us = per_call(
        lambda n: t_expand(rho, p.k, p.l, zhat, acc, st_xn, sampled, nonces, pk, tr, True, n),
        repeats // 10,
    )
    expand_us = per_call(
        lambda n: t_expand(rho, p.k, p.l, zhat, acc, st_xn, sampled, nonces, pk, tr, False, n),
        repeats // 10,
    )
    mu_us = per_call(lambda n: t_mu(tr, CONTEXT + MESSAGE, len(CONTEXT), state, mu, n), repeats)
    ball_us = per_call(lambda n: t_ball(ct, p.tau, state, block, c_poly, n), repeats)
    sig = bytes(p.signature_bytes)
    decode_us = per_call(
        lambda n: t_decode(
            sig, pk, p.k, p.l, p.c_tilde_bytes, p.gamma1_bits, p.omega, zhat, c_poly, n
        ),
        repeats,
    )
    w1_packed = np.zeros(p.k * (128 if p.gamma2 == (8380417 - 1) // 32 else 192), np.uint8)
    c_tilde_us = per_call(
        lambda n: t_c_tilde(mu, w1_packed, p.c_tilde_bytes, state, block, n), repeats
    )
    stages = {
        f"ExpandA (x{WAYS} SHAKE128) + A*z MAC": expand_us,
        "tr = H(pk) in a way of ExpandA's batches": expand_tr_us - expand_us,
        f"NTT x{p.l + 1 + p.k} (z, c, t1)": ntt_us * (p.l + 1 + p.k),
        f"NTT^-1 x{p.k}": invntt_us * p.k,
        "mu (SHAKE256)": mu_us,
        "SampleInBall": ball_us,
        "sigDecode + pkDecode (checks)": decode_us,
        "c~' = H(mu || w1Encode(w1))": c_tilde_us,
    }
    stages["rest (pointwise, UseHint, allocs, call)"] = total_us - sum(stages.values())
    stages["total (mldsa_verify, same conditions)"] = total_us
    return stages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: last)")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--levels", default="44,65,87")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: perf_counter; cpu: this thread's CPU time, which leaves out the time "
        "the scheduler gives to other processes on a shared CPU",
    )
    args = parser.parse_args(argv)

    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    print(f"pinned to CPU {cpu}")

    start = time.perf_counter()
    from qprof.verify.nb.mldsa import warm_up

    imported = time.perf_counter()
    warm_up()
    print(
        f"numba: import {imported - start:.2f} s, warm_up (all levels, cache load or "
        f"compile) {time.perf_counter() - imported:.2f} s"
    )
    oqs, why_not = _load_liboqs()
    if oqs is None:
        print(f"{why_not}: ratios vs liboqs skipped")

    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    print(f"clock: {args.clock}")
    header = f"{'suite':10s} {'impl':11s} {'median us':>10s} {'min us':>8s}"
    print(f"{header} {'med/oqs':>8s} {'min/oqs':>8s} {'med/rust':>8s} {'min/rust':>8s}")
    for level in (int(x) for x in args.levels.split(",")):
        sample = _signed_sample(level, oqs)
        verifiers = _verifiers(level, oqs, sample)
        samples = bench_level(verifiers, level, args.rounds, clock)
        med = {name: statistics.median(values) for name, values in samples.items()}
        low = {name: min(values) for name, values in samples.items()}
        for name in samples:
            cols = [f"ML-DSA-{level:<3d} {name:11s} {med[name] * 1e6:10.1f} {low[name] * 1e6:8.1f}"]
            for ref in ("liboqs", "rustcrypto"):
                if ref in samples:
                    cols.append(f"{med[name] / med[ref]:8.2f} {low[name] / low[ref]:8.2f}")
                else:
                    cols.append(f"{'-':>8s} {'-':>8s}")
            print(" ".join(cols))
        if args.profile:
            stages = profile_level(level, clock, verifiers["numba"])
            for stage, us in stages.items():
                print(f"    {stage:34s} {us:8.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
