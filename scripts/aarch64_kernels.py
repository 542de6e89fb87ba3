"""The numba verifiers against known answers; run by scripts/test-aarch64 under qemu.

Needs only numpy and numba (plus pqcrypto for the differential sample, if it imports):
the Wycheproof ML-DSA files in <shared>/testvectors/wycheproof, the committed SLH-DSA
vectors (tests/data/slhdsa/, valid and tampered), and ML-DSA signatures made here by
pqcrypto's PQClean code, intact and tampered, where both verifiers must agree.
Exit status 1 on any wrong verdict.
"""

from __future__ import annotations

import argparse
import platform
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qprof.verify.vectors import VerifyCase, slhdsa_cases, wycheproof_mldsa

REPO = Path(__file__).resolve().parents[1]
SLH_SHAKE_SETS = ("128s", "128f", "192s", "192f", "256s", "256f")


def _mldsa(case: VerifyCase) -> bool:
    from qprof.verify.nb.mldsa import mldsa_verify, mldsa_verify_mu

    level = int(case.suite.rsplit("-", 1)[1])
    if case.mu is not None:
        return mldsa_verify_mu(level, case.public_key, case.mu, case.signature)
    return mldsa_verify(level, case.public_key, case.message, case.signature, case.context)


def _slhdsa(case: VerifyCase) -> bool:
    from qprof.verify.nb.slhdsa import slhdsa_verify

    return slhdsa_verify(case.suite, case.public_key, case.message, case.signature, case.context)


def _pq_verdict(impl: Any, pk: bytes, msg: bytes, sig: bytes) -> bool:
    """pqcrypto's verdict: 0.4 (the aarch64 wheel) returns a bool, 1.x raises."""
    try:
        return impl.verify(pk, msg, sig) is not False
    except Exception:  # noqa: BLE001 - 1.x raises InvalidSignatureError (or ValueError)
        return False


def _pqcrypto_cases(count: int, rng: random.Random) -> list[VerifyCase] | str:
    """ML-DSA signatures from pqcrypto (empty context), each intact and with one bit
    flipped; the verdicts are pqcrypto's own. A string says why there are none."""
    try:
        from pqcrypto.sign import ml_dsa_44, ml_dsa_65, ml_dsa_87
    except ImportError as exc:
        return f"pqcrypto does not import here ({exc})"
    out = []
    for level, impl in ((44, ml_dsa_44), (65, ml_dsa_65), (87, ml_dsa_87)):
        suite = f"ML-DSA-{level}"
        for i in range(count):
            keygen = getattr(impl, "generate_keypair", None) or impl.keygen  # 0.4 / 1.x
            pk, sk = keygen()
            msg = rng.randbytes(rng.randrange(0, 64))
            sig = impl.sign(sk, msg)
            bad = bytearray(sig)
            bad[rng.randrange(len(bad))] ^= 1 << rng.randrange(8)
            for label, signature in (("intact", sig), ("flipped", bytes(bad))):
                expected = _pq_verdict(impl, pk, msg, signature)
                out.append(VerifyCase(f"{suite} #{i} {label}", suite, pk, msg, signature, b"",
                                      expected))  # fmt: skip
    return out


def _run(title: str, cases: list[VerifyCase], verify: Callable[[VerifyCase], bool]) -> int:
    start = time.perf_counter()
    wrong = [case for case in cases if verify(case) is not case.expected]
    valid = sum(case.expected for case in cases)
    print(
        f"  {title}: {len(cases) - len(wrong)}/{len(cases)} right ({valid} valid, "
        f"{len(cases) - valid} invalid) in {time.perf_counter() - start:.1f} s"
    )
    for case in wrong[:20]:
        print(f"    WRONG {case.label}: expected {case.expected}")
    return len(wrong)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--pq-signatures", type=int, default=32, help="per ML-DSA level")
    args = parser.parse_args()

    from qprof.verify.nb.keccak_xn import WAYS
    from qprof.verify.nb.mldsa import warm_up as mldsa_warm_up
    from qprof.verify.nb.slhdsa import warm_up as slhdsa_warm_up

    print(f"machine {platform.machine()}, Python {platform.python_version()}, {WAYS}-way Keccak")
    start = time.perf_counter()
    mldsa_warm_up()
    slhdsa_warm_up()
    print(f"  kernels compiled or loaded from the cache in {time.perf_counter() - start:.1f} s")

    failures = 0
    wycheproof = args.shared / "testvectors" / "wycheproof"
    files = sorted(wycheproof.glob("mldsa_*_verify_test.json"))
    if not files:
        print(f"  FAIL: no Wycheproof ML-DSA files in {wycheproof}")
        failures += 1
    for path in files:
        failures += _run(f"Wycheproof {path.name}", wycheproof_mldsa(path), _mldsa)
    slh_files = sorted((REPO / "tests" / "data" / "slhdsa").glob("SLH-DSA-SHAKE-*.json"))
    if len(slh_files) != len(SLH_SHAKE_SETS):
        print(f"  FAIL: {len(slh_files)} SLH-DSA vector files, want {len(SLH_SHAKE_SETS)}")
        failures += 1
    for path in slh_files:
        failures += _run(f"committed {path.stem}", slhdsa_cases(path), _slhdsa)
    sample = _pqcrypto_cases(args.pq_signatures, random.Random(20240813))
    if isinstance(sample, str):
        print(f"  differential sample skipped: {sample}")
    else:
        failures += _run("differential vs pqcrypto (PQClean ML-DSA)", sample, _mldsa)
    print("OK" if failures == 0 else f"FAILED: {failures} wrong verdicts")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
