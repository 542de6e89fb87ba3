"""Differential tests: signatures from each signing backend, verified by every backend.

Fresh keys and messages (with contexts) are signed by liboqs / rustcrypto / openssl /
reference, whichever are available, then verified by every available backend incl.
numba, together with broken variants (flipped bytes, truncated/extended signatures and
keys, wrong/256-byte contexts). Every answer must match the signer's library: True for
the original, False for every broken input. SLH-DSA "s" sets sign slowly (seconds), so
they get one signature each from the fastest signer.
"""

from __future__ import annotations

import random

import pytest

from qprof.verify import (
    BACKEND_NAMES,
    SIGNING_BACKENDS,
    SUITES,
    Verifier,
    available_backends,
    get_signer,
    get_verifier,
)
from qprof.verify.differential import Case, Tally, check_cases, mutations, random_context

SLOW_VERIFY_SAMPLE = {"reference": 3}  # pure Python: every 3rd case is plenty in CI


def _backends_for(suite: str, can_sign: bool = False) -> list[str]:
    statuses = available_backends()
    names = SIGNING_BACKENDS if can_sign else BACKEND_NAMES
    return [n for n in names if statuses[n].available and suite in statuses[n].suites]


def _signers_for(suite: str) -> list[str]:
    signers = _backends_for(suite, can_sign=True)
    info = SUITES[suite]
    if info.family == "SLH-DSA":
        if info.name.endswith("s"):  # seconds per signature: one fast signer only
            fast = [b for b in ("rustcrypto", "liboqs") if b in signers]
            return fast[:1]
        if info.name != "SLH-DSA-SHAKE-128f":
            signers = [b for b in signers if b != "reference"]
    return signers


@pytest.fixture(scope="module")
def verifiers_cache() -> dict[tuple[str, str], Verifier]:
    return {}


def _verifiers(cache: dict[tuple[str, str], Verifier], suite: str) -> dict[str, Verifier]:
    out = {}
    for backend in _backends_for(suite):
        key = (backend, suite)
        if key not in cache:
            cache[key] = get_verifier(backend, suite)
            cache[key].warm_up()
        out[backend] = cache[key]
    return out


@pytest.mark.fresh
@pytest.mark.parametrize("suite", list(SUITES))
def test_backends_agree(suite: str, verifiers_cache: dict[tuple[str, str], Verifier]) -> None:
    verifiers = _verifiers(verifiers_cache, suite)
    signers = _signers_for(suite)
    if len(verifiers) < 2 or not signers:
        pytest.skip(f"{suite}: needs a signer and two verifiers; have {list(verifiers)}")
    rng = random.Random(f"qprof-differential-{suite}")
    slh = SUITES[suite].family == "SLH-DSA"
    total = Tally()
    for signer_name in signers:
        signer = get_signer(signer_name, suite)
        pk, sk = signer.keypair()
        contexts = [random_context(rng, signer.max_context_len)]
        if not slh:
            contexts.append(rng.randbytes(signer.max_context_len))  # the longest allowed
        for ctx in contexts:
            msg = rng.randbytes(rng.choice([0, 1, 32, 200]))
            sig = signer.sign(sk, msg, ctx)
            assert len(sig) == SUITES[suite].sig_size
            cases = mutations(pk, msg, sig, ctx, rng, sig_flips=6 if slh else 10)
            total.merge(check_cases(suite, signer_name, verifiers, cases, SLOW_VERIFY_SAMPLE))
    assert not total.disagreements, "\n".join(d.describe()[:600] for d in total.disagreements)
    assert set(total.by_backend) == set(verifiers)
    assert total.checks >= 10 * len(verifiers)


@pytest.mark.fresh
def test_longest_context_is_valid_everywhere_but_documented_limits(
    verifiers_cache: dict[tuple[str, str], Verifier],
) -> None:
    suite = "ML-DSA-44"
    verifiers = _verifiers(verifiers_cache, suite)
    signers = [s for s in _signers_for(suite) if get_signer(s, suite).max_context_len == 255]
    if not signers or len(verifiers) < 2:
        pytest.skip("needs a FIPS-conformant ML-DSA signer and two verifiers")
    signer = get_signer(signers[0], suite)
    pk, sk = signer.keypair()
    ctx = bytes(range(255))
    sig = signer.sign(sk, b"m", ctx)
    for name, verifier in verifiers.items():
        expected = len(ctx) <= verifier.max_context_len
        assert verifier.verify(pk, b"m", sig, ctx) is expected, name
        assert verifier.verify(pk, b"m", sig, ctx + b"\x00") is False, name


def test_checker_reports_a_lying_verifier() -> None:
    class AlwaysTrue(Verifier):
        backend = "always-true"

        def _verify(self, public_key: bytes, message: bytes, signature: bytes,
                    context: bytes) -> bool:
            return True

    info = SUITES["ML-DSA-44"]
    pk, sig = bytes(info.pk_size), bytes(info.sig_size)
    cases = mutations(pk, b"msg", sig, b"ctx", random.Random(1))
    tally = check_cases(info.name, "none", {"liar": AlwaysTrue(info)}, cases)
    # every wrong-content case is accepted by the liar; wrong lengths are stopped up front
    assert tally.disagreements
    assert all(d.expected is False and d.got is True for d in tally.disagreements)
    labels = {d.label for d in tally.disagreements}
    assert "sig truncated" not in labels and "ctx 256 bytes" not in labels
    assert isinstance(cases[0], Case) and cases[0].expected is True
