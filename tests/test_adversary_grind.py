"""The adversary's kernels and searches, on SLH-DSA-SHAKE-128f (small trees, fast).

Kernels are checked against signatures of the independent ``slhdsa`` package: the XMSS
roots and FORS keys qprof computes from the secret seed are the messages the layers of
its signatures sign, the top root is PK.root, a landing hit's address is what hashlib's
H_msg gives.  The searches must produce what they claim: crafted signatures are
rejected (by the reference and, when present, liboqs) and walk the chain steps the
search reported; ground ones, signed by liboqs with the chosen randomness, verify and
walk the predicted steps.
"""

from __future__ import annotations

import hashlib
import importlib
import os

import numpy as np
import pytest
import slhdsa

from qprof.measure.costmodel import Distribution, PermutationModel
from qprof.verify.adversary.crafted import craft_invalid
from qprof.verify.adversary.ground import ValidGrinder
from qprof.verify.adversary.keys import SlhSecret, message_prime, words
from qprof.verify.slhdsa_calls import node_steps, random_layer_steps, walk

SUITE = "SLH-DSA-SHAKE-128f"
MSG = b"qprof adversary test message".ljust(32, b".")


@pytest.fixture(scope="module")
def keypair() -> tuple[bytes, bytes, bytes]:
    """(public key, secret key, a valid signature of MSG) from the reference package."""
    kp = slhdsa.KeyPair.gen(slhdsa.shake_128f)
    return kp.pub.digest(), kp.sec.digest(), kp.sign_pure(MSG, ctx=b"")


def _kernels() -> object:
    return importlib.import_module("qprof.verify.nb.slhdsa_grind")


def test_tree_kernels_give_what_signatures_sign(keypair: tuple[bytes, bytes, bytes]) -> None:
    pk, sk, sig = keypair
    secret = SlhSecret.parse(SUITE, sk)
    grinder = ValidGrinder(secret, MSG)
    p = grinder.p
    kernels = _kernels()
    out = np.empty(p.n // 8, dtype=np.uint64)
    kernels.xmss_root(words(secret.pk_seed), words(secret.sk_seed), p.n, p.hp,  # type: ignore[attr-defined]
                      p.d - 1, 0, out)
    assert out.astype("<u8").tobytes() == secret.pk_root
    w = walk(SUITE, pk, MSG, sig)
    assert w.valid
    address = (w.idx_tree << p.hp) | w.idx_leaf
    assert [grinder.layer_steps(j, address) for j in range(p.d)] == list(w.layer_steps)


def test_landing_hits_are_where_hmsg_puts_them(keypair: tuple[bytes, bytes, bytes]) -> None:
    _, sk, _ = keypair
    secret = SlhSecret.parse(SUITE, sk)
    g = ValidGrinder(secret, MSG, seed=3)
    p = g.p
    shift = p.h - 12
    allowed = np.zeros(1 << 12, dtype=np.uint8)
    allowed[5] = 1
    hits = g._land(shift, allowed, deadline=float("inf"))
    assert hits
    mp = message_prime(MSG, b"")
    for counter, address in hits:
        r = hashlib.shake_256(secret.sk_prf + g.opt_rand(counter) + mp).digest(p.n)
        digest = hashlib.shake_256(r + secret.public_key + mp).digest(p.m)
        md = (p.k * p.a + 7) // 8
        tb, lb = (p.h - p.hp + 7) // 8, (p.hp + 7) // 8
        tree = int.from_bytes(digest[md:md + tb], "big") % (1 << (p.h - p.hp))
        leaf = int.from_bytes(digest[md + tb:md + tb + lb], "big") % (1 << p.hp)
        assert address == (tree << p.hp) | leaf and address >> shift == 5


def test_grinder_finds_costlier_than_random(keypair: tuple[bytes, bytes, bytes]) -> None:
    _, sk, _ = keypair
    g = ValidGrinder(SlhSecret.parse(SUITE, sk), MSG, seed=1)
    found = g.grind(1.5, keep=2)
    assert found and g.stats.complete >= 1
    assert found[0].steps >= found[-1].steps
    assert found[0].steps > g.p.d * g.mean  # the greedy top layers alone give that
    assert len(found[0].layer_steps) == g.p.d


def test_crafted_signature_is_rejected_and_walks_long_chains(
        keypair: tuple[bytes, bytes, bytes]) -> None:
    pk, _, sig = keypair
    crafted = craft_invalid(SUITE, pk, MSG, sig, seconds=0.2, salt=os.urandom(16))
    w = walk(SUITE, pk, MSG, crafted.signature)
    assert not w.valid and w.layer_steps == crafted.layer_steps
    dist = random_layer_steps(16)
    assert min(crafted.layer_steps) > dist.mean + 2 * dist.sd  # every layer, >= 65,536 tries
    assert not slhdsa.PublicKey.from_digest(pk, slhdsa.shake_128f).verify_pure(
        MSG, crafted.signature, b"")
    assert [node_steps(m) for m in w.layer_messages] == list(w.layer_steps)


@pytest.mark.usefixtures("liboqs_available")
def test_ground_signatures_signed_by_liboqs_verify_as_predicted() -> None:
    from qprof.verify import get_signer, get_verifier
    from qprof.verify.adversary.ground import sign_candidate

    signer = get_signer("liboqs", SUITE)
    pk, sk = signer.keypair()
    secret = SlhSecret.parse(SUITE, sk)
    g = ValidGrinder(secret, MSG, seed=2)
    found = g.grind(1.0, keep=1)
    sig = sign_candidate(secret, MSG, b"", found[0])
    assert get_verifier("liboqs", SUITE).verify(pk, MSG, sig, b"")
    assert walk(SUITE, pk, MSG, sig).layer_steps == found[0].layer_steps
    # the system RNG is back: two ordinary signatures differ
    assert signer.sign(sk, MSG, b"") != signer.sign(sk, MSG, b"")


def test_mldsa_rejections_fail_where_they_say() -> None:
    from qprof.verify import get_signer, get_verifier
    from qprof.verify.adversary.mldsa import rejections

    signer = get_signer("reference", "ML-DSA-44")
    pk, sk = signer.keypair()
    sig = signer.sign(sk, MSG, b"")
    verifier = get_verifier("reference", "ML-DSA-44")
    assert verifier.verify(pk, MSG, sig, b"")
    for rejection in rejections("ML-DSA-44", sig):
        assert len(rejection.signature) == len(sig)
        assert not verifier.verify(pk, MSG, rejection.signature, b""), rejection.label
    with pytest.raises(ValueError):
        rejections(SUITE, sig)


def test_permutation_model_and_distribution() -> None:
    perms = [2000, 2100, 2200, 3100]
    model = PermutationModel.fit(perms, [350.0 * x for x in perms])
    assert model.ns_per_permutation == pytest.approx(350) and model.max_error < 1e-9
    assert model.points == 4 and model.predict(1000) == pytest.approx(350_000)
    # +-2 % around 350 ns: the fit sits between, every point within 2 %, the errors signed
    noisy = PermutationModel.fit(perms, [350.0 * x * f for x, f in
                                         zip(perms, (1.02, 0.98, 1.02, 0.98), strict=True)])
    assert 343 < noisy.ns_per_permutation < 357 and noisy.max_error < 0.0205
    assert noisy.error(2000, 350.0 * 2000) == pytest.approx(noisy.ns_per_permutation / 350 - 1)
    for bad in (([], []), ([0, 1], [2.0, 3.0]), ([1, 2], [2.0])):
        with pytest.raises(ValueError):
            PermutationModel.fit(*bad)
    d = Distribution.of([float(v) for v in range(1, 101)])
    assert d.median == 50.5 and d.max == 100 and 90 < d.p90 < 91 and 99 < d.p99 < 100
