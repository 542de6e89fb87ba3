"""The functional check before timing: does a backend give the known answers?

A broken liboqs build or a numba kernel compiled wrong for a new CPU would otherwise be
timed and judged without a word. Per suite each backend verifies the vectors shipped in
the package (:func:`qprof.verify.vectors.shipped_cases`) and a second implementation's
fresh signatures, valid and tampered (an SLH-DSA one made once per machine and cached).
A wrong answer, or a damaged shipped file, is a MISMATCH naming the case. Nothing here
is timed; the engine caches the result (:mod:`qprof.measure.preflight`).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from qprof.atomicfile import OutputError, write_private
from qprof.userfile import read_json
from qprof.verify import available_backends, get_signer, get_verifier
from qprof.verify.vectors import ShippedVectorsError, VerifyCase, shipped_cases

Status = Literal["PASS", "MISMATCH"]
MAX_FAILED_SHOWN = 20  # failing labels kept per suite
# Who signs the fresh cases for a backend, in order of preference (never the backend
# itself; the pure-Python reference signer is too slow for SLH-DSA).
SECOND_SIGNERS = ("rustcrypto", "liboqs", "openssl", "reference")


@dataclass(frozen=True)
class SuiteCheck:
    """One backend's answers for one suite."""

    backend: str
    suite: str
    status: Status
    cases: int
    failed: tuple[str, ...]
    sources: tuple[str, ...]
    elapsed_s: float


def second_signer(backend: str, suite: str) -> str | None:
    """The signing backend that makes the fresh cases for ``backend`` (None: none here)."""
    statuses = available_backends()
    for name in SECOND_SIGNERS:
        st = statuses.get(name)
        if (name == backend or st is None or not st.available or not st.can_sign
                or suite not in st.suites):
            continue
        if name == "reference" and suite.startswith("SLH-DSA"):
            continue
        return name
    return None


def _tampered(valid: VerifyCase, tag: str) -> list[VerifyCase]:
    sig, msg = bytearray(valid.signature), bytearray(valid.message)
    sig_mid = bytearray(sig)
    sig[0] ^= 1
    sig_mid[len(sig_mid) // 2] ^= 0x10
    msg[-1] ^= 0x80
    return [
        VerifyCase(f"{tag} signature[0] flipped", valid.suite, valid.public_key,
                   valid.message, bytes(sig), valid.context, False),
        VerifyCase(f"{tag} signature[{len(sig) // 2}] flipped", valid.suite,
                   valid.public_key, valid.message, bytes(sig_mid), valid.context, False),
        VerifyCase(f"{tag} message flipped", valid.suite, valid.public_key, bytes(msg),
                   valid.signature, valid.context, False),
        VerifyCase(f"{tag} other context", valid.suite, valid.public_key, valid.message,
                   valid.signature, valid.context + b"!", False),
    ]


def _signed(signer_name: str, suite: str) -> VerifyCase:
    signer = get_signer(signer_name, suite)
    pk, sk = signer.keypair()
    message, context = os.urandom(32), os.urandom(8)
    signature = signer.sign(sk, message, context)
    return VerifyCase(f"{signer_name}-signed valid", suite, pk, message, signature, context,
                      True)


def _kept(signer_name: str, suite: str, cache: Path | None) -> VerifyCase:
    """The second implementation's SLH-DSA signature, made once and kept in ``cache``."""
    path = cache / f"second-{signer_name}-{suite}.json" if cache is not None else None
    if path is not None:
        try:
            d = read_json(path, 1 << 20, "second signature cache")
            return VerifyCase(f"{signer_name}-signed valid", suite,
                              bytes.fromhex(d["public_key"]), bytes.fromhex(d["message"]),
                              bytes.fromhex(d["signature"]), bytes.fromhex(d["context"]), True)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    case = _signed(signer_name, suite)
    if path is not None:
        with contextlib.suppress(OutputError, OSError):  # signed again next time
            write_private(path.parent, path.name, json.dumps({k: getattr(case, k).hex()
                          for k in ("public_key", "message", "signature", "context")}))
    return case


def fresh_cases(backend: str, suite: str, cache: Path | None = None
                ) -> list[tuple[str, VerifyCase]]:
    """(source, case): a second implementation's valid signature and its tampered
    variants ([] when no other backend here can sign ``suite``)."""
    signer = second_signer(backend, suite)
    if signer is None:
        return []
    valid = _kept(signer, suite, cache) if suite.startswith("SLH-DSA") else _signed(
        signer, suite)
    tag = f"second:{signer}"
    return [(tag, c) for c in [valid, *_tampered(valid, valid.label.rsplit(" ", 1)[0])]]


def check_suite(backend: str, suite: str, cache: Path | None = None,
                cases: list[tuple[str, VerifyCase]] | None = None) -> SuiteCheck:
    """Every known answer of ``suite`` (shipped and fresh, unless ``cases`` are given)
    verified with ``backend``. A valid case whose context exceeds the backend's
    documented limit (``Verifier.max_context_len``) is left out, as in the tests."""
    started = time.perf_counter()
    failed: list[str] = []
    if cases is None:
        try:
            shipped = shipped_cases(suite)
        except ShippedVectorsError as exc:
            shipped = []
            failed.append(str(exc))
        cases = shipped + fresh_cases(backend, suite, cache)
    verifier = get_verifier(backend, suite)
    verifier.warm_up()
    counted = 0
    for tag, case in cases:
        if case.mu is not None or (case.expected
                                   and len(case.context) > verifier.max_context_len):
            continue
        counted += 1
        got = verifier.verify(case.public_key, case.message, case.signature, case.context)
        if got is not case.expected:
            failed.append(f"{tag} {case.label.strip()}: expected "
                          f"{'valid' if case.expected else 'invalid'}, got "
                          f"{'valid' if got else 'invalid'}")
    return SuiteCheck(backend, suite, "MISMATCH" if failed else "PASS", counted,
                      tuple(failed[:MAX_FAILED_SHOWN]),
                      tuple(dict.fromkeys(tag.split(":")[0] for tag, _c in cases)),
                      time.perf_counter() - started)
