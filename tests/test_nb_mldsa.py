"""qprof's numba ML-DSA verifier (qprof/verify/nb/mldsa*.py) against FIPS 204 references.

References: Wycheproof verify vectors (from ../shared, skipped if absent), dilithium-py
(pure Python), and when installed pqcrypto (RustCrypto) and cryptography (OpenSSL).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from qprof.verify.nb.keccak import absorb, keccak_f1600
from qprof.verify.nb.keccak_xn import WAYS, keccak_f1600_xn
from qprof.verify.nb.mldsa import PARAMS, mldsa_verify, mldsa_verify_mu, warm_up
from qprof.verify.nb.mldsa_expand import (
    SAMPLE_SLACK,
    WS_STAGE,
    WS_WORDS,
    absorb_seeds_xn,
    expand_a_times_z,
    mac_staged,
    mac_staged_rejecting,
    sample_in_ball,
    stage_block_xn,
)
from qprof.verify.nb.mldsa_poly import (
    INVNTT_F,
    ZETAS,
    Q,
    decode_t1_shifted,
    decode_z_checked,
    invntt_tomont,
    mont_mul32,
    montgomery_reduce,
    ntt,
)
from qprof.verify.vectors import wycheproof_mldsa

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
WYCHEPROOF = SHARED / "testvectors" / "wycheproof"
LEVELS = (44, 65, 87)


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    warm_up()


def _dilithium(level: int):  # noqa: ANN202 - dilithium-py has no type stubs
    ml_dsa = pytest.importorskip("dilithium_py.ml_dsa")
    return {44: ml_dsa.ML_DSA_44, 65: ml_dsa.ML_DSA_65, 87: ml_dsa.ML_DSA_87}[level]


@pytest.fixture(scope="module")
def signed() -> dict[int, tuple[bytes, bytes, bytes, bytes]]:
    """One (pk, message, signature, context) per level from dilithium-py."""
    out = {}
    for level in LEVELS:
        impl = _dilithium(level)
        pk, sk = impl.keygen()
        msg = b"qprof second verifier " + bytes([level])
        ctx = b"chain-id"
        out[level] = (pk, msg, impl.sign(sk, msg, ctx=ctx), ctx)
    return out


# --- building blocks ------------------------------------------------------------------


def test_multi_way_permutation_matches_single() -> None:
    rng = np.random.default_rng(7)
    states = rng.integers(0, 2**63, size=(WAYS, 25), dtype=np.uint64)
    interleaved = np.ascontiguousarray(states.T).reshape(25 * WAYS)
    keccak_f1600_xn(interleaved)
    for way in range(WAYS):
        single = states[way].copy()
        keccak_f1600(single)
        assert np.array_equal(single, interleaved.reshape(25, WAYS)[:, way])


def _rej_ntt_poly_reference(seed: bytes) -> list[int]:
    stream = hashlib.shake_128(seed).digest(168 * 8)
    coeffs: list[int] = []
    for i in range(0, len(stream), 3):
        v = stream[i] | stream[i + 1] << 8 | (stream[i + 2] & 0x7F) << 16
        if v < Q:
            coeffs.append(v)
        if len(coeffs) == 256:
            return coeffs
    raise AssertionError("reference stream too short")


def _staged(ws: np.ndarray, way: int) -> list[int]:
    return [int(ws[WS_STAGE + c * WAYS + way]) for c in range(SAMPLE_SLACK)]


def test_expand_a_streams_match_hashlib() -> None:
    rho = bytes(range(32))
    nonces = np.array([0x0000, 0x0102, 0x0301, 0x0706, 0x0004, 0x0605, 0x0203, 0x0107])
    nonces = nonces[:WAYS].astype(np.int64)
    ws = np.empty(WS_WORDS, dtype=np.uint64)
    absorb_seeds_xn(ws, np.frombuffer(rho, dtype=np.uint8), nonces, WAYS)
    sampled: list[list[int]] = [[] for _ in range(WAYS)]
    while min(len(x) for x in sampled) < 256:
        keccak_f1600_xn(ws)
        stage_block_xn(ws)
        for way in range(WAYS):
            sampled[way] += [v for v in _staged(ws, way) if v < Q]
    for way in range(WAYS):
        n = int(nonces[way])
        expected = _rej_ntt_poly_reference(rho + bytes([n & 0xFF, n >> 8]))
        assert sampled[way][:256] == expected


@pytest.mark.parametrize("level", LEVELS)
def test_tr_rides_along_expand_a(level: int) -> None:
    # tr = SHAKE256(pk, 64) computed in the last way of the ExpandA batches; the matrix
    # product must not depend on whether tr is computed.
    params = PARAMS[level]
    rng = np.random.default_rng(level)
    pk = rng.integers(0, 256, size=params.public_key_bytes, dtype=np.uint8).tobytes()
    rho = np.frombuffer(pk[:32], dtype=np.uint8)
    zhat = rng.integers(-(Q - 1), Q - 1, size=(params.l, 256)).astype(np.int32)
    results = []
    c_tilde = rng.integers(0, 256, size=params.c_tilde_bytes, dtype=np.uint8)
    scalar_ball = np.zeros(25, dtype=np.uint64)
    absorb(scalar_ball, 136, c_tilde)
    for want_tr in (True, False):
        acc = np.empty((params.k, 256), dtype=np.int64)
        tr = np.zeros(64, dtype=np.uint8)
        ball = np.zeros(25, dtype=np.uint64)
        mu = np.zeros(64, dtype=np.uint8)
        rode = expand_a_times_z(
            rho,
            params.k,
            params.l,
            zhat,
            acc,
            np.empty(WS_WORDS, dtype=np.uint64),
            np.empty((WAYS, 256 + SAMPLE_SLACK), dtype=np.int32),
            np.empty(WAYS, dtype=np.int64),
            pk,
            tr,
            want_tr,
            c_tilde,
            ball,
            b"ctx" + b"message",
            3,
            mu,
        )
        # SampleInBall's sponge rides in a spare way when a batch has one (with tr and
        # eight ways, every level's last batch has two; four-way ML-DSA-87 has none);
        # then it is the scalar sponge's state. So does mu = H(tr || 0 || len(ctx) ||
        # ctx || msg) when it is one block.
        assert rode == 3 or not want_tr or WAYS == 4
        if rode & 1:
            assert np.array_equal(ball, scalar_ball)
        if rode & 2:
            mu_input = hashlib.shake_256(pk).digest(64) + bytes([0, 3]) + b"ctxmessage"
            assert mu.tobytes() == hashlib.shake_256(mu_input).digest(64)
        results.append(acc)
        if want_tr:
            assert tr.tobytes() == hashlib.shake_256(pk).digest(64)
    assert np.array_equal(results[0], results[1])
    # Entry (r, s) of A * z for one row, from the hashlib reference sampler.
    expected = np.zeros(256, dtype=np.int64)
    for col in range(params.l):
        a = np.array(_rej_ntt_poly_reference(pk[:32] + bytes([col, 1])), dtype=np.int64)
        expected += a * zhat[col].astype(np.int64)
    assert np.array_equal(results[0][1], expected)


def test_staged_candidates_and_rejections() -> None:
    # Random states hit the rare path (some 23-bit candidate >= q) in about one block
    # in twenty per way; compare with a straightforward per-way rejection, and the
    # rare path's products with the plain ones.
    rng = np.random.default_rng(11)
    hit_rare_path = False
    for _ in range(100):
        ws = np.zeros(WS_WORDS, dtype=np.uint64)
        ws[: 25 * WAYS] = rng.integers(0, 2**64, size=25 * WAYS, dtype=np.uint64)
        bits = stage_block_xn(ws)
        lanes = ws[: 25 * WAYS].reshape(25, WAYS)
        for way in range(WAYS):
            block = b"".join(int(lanes[i, way]).to_bytes(8, "little") for i in range(21))
            values = [
                block[i] | block[i + 1] << 8 | (block[i + 2] & 0x7F) << 16 for i in range(0, 168, 3)
            ]
            assert _staged(ws, way) == values
            kept = [v for v in values if v < Q]
            assert bool((bits >> way) & 1) == (len(kept) < len(values))
            hit_rare_path |= len(kept) < len(values)
            start = int(rng.integers(200, 256))
            zs = rng.integers(-9 * Q, 9 * Q, size=(2, 256)).astype(np.int32)
            acc = np.zeros((2, 256), dtype=np.int64)
            tmp = np.empty((2, 64), dtype=np.int32)
            end = mac_staged_rejecting(ws, way, acc, 1, zs, 1, start, tmp, 1)
            take = min(len(kept), 256 - start)
            assert end == start + take
            expected = np.zeros((2, 256), dtype=np.int64)
            expected[1, start:end] = np.array(kept[:take], dtype=np.int64) * zs[1, start:end]
            assert np.array_equal(acc, expected)
            if len(kept) == len(values):
                plain = np.zeros((2, 256), dtype=np.int64)
                mac_staged(ws, way, plain, 1, zs, 1, start, take)
                assert np.array_equal(plain, expected)
    assert hit_rare_path


def _sample_in_ball_reference(seed: bytes, tau: int) -> list[int]:
    stream = hashlib.shake_256(seed).digest(4096)
    signs = int.from_bytes(stream[:8], "little")
    pos = 8
    c = [0] * 256
    for i in range(256 - tau, 256):
        while stream[pos] > i:
            pos += 1
        j = stream[pos]
        pos += 1
        c[i] = c[j]
        c[j] = -1 if signs & 1 else 1
        signs >>= 1
    return c


@pytest.mark.parametrize("tau", [39, 49, 60, 200])
def test_sample_in_ball_matches_reference(tau: int) -> None:
    # tau = 200 needs several SHAKE256 blocks, exercising the refill path.
    state = np.empty(25, dtype=np.uint64)
    block = np.empty(136, dtype=np.uint8)
    c = np.empty(256, dtype=np.int32)
    for n in range(20):
        seed = hashlib.sha512(bytes([tau, n])).digest()[: 32 + n]
        sample_in_ball(np.frombuffer(seed, dtype=np.uint8), tau, state, block, c)
        assert c.tolist() == _sample_in_ball_reference(seed, tau)


def test_ntt_product_is_negacyclic_product() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(-(Q - 1) // 2, (Q - 1) // 2, size=256)
    b = rng.integers(-(1 << 19), 1 << 19, size=256)
    expected = [0] * 256
    for i in range(256):
        for j in range(256):
            if i + j < 256:
                expected[i + j] += int(a[i]) * int(b[j])
            else:
                expected[i + j - 256] -= int(a[i]) * int(b[j])
    fa = a.astype(np.int32)
    fb = b.astype(np.int32)
    scratch = np.empty(256, dtype=np.int32)
    ntt(fa, scratch)
    ntt(fb, scratch)
    prod = np.array(
        [montgomery_reduce(np.int64(x) * np.int64(y)) for x, y in zip(fa, fb, strict=True)],
        dtype=np.int32,
    )
    invntt_tomont(prod, scratch)
    assert [int(x) % Q for x in prod] == [x % Q for x in expected]


def test_mont_mul32_is_montgomery_reduce_bit_for_bit() -> None:
    # |a| < 2^31 (the NTTs' int32 bound) times a twiddle in (-q/2, q/2].
    rng = np.random.default_rng(8)
    values = [*rng.integers(-(2**31) + 1, 2**31, 300).tolist(), -(2**31) + 1, -1, 0, 2**31 - 1]
    twiddles = [*rng.integers(-(Q // 2), Q // 2 + 1, 20).tolist(), -(Q // 2), Q // 2, 1, -1]
    for z in twiddles:
        zq = np.uint32(z * 58728449 % 2**32).view(np.int32)
        for a in values:
            got = int(mont_mul32(np.int32(a), np.int32(z), zq))
            assert got == int(montgomery_reduce(np.int64(a) * np.int64(z)))


def _bit_unpack(data: bytes, bits: int, count: int) -> list[int]:
    value = int.from_bytes(data, "little")
    return [(value >> (bits * i)) & ((1 << bits) - 1) for i in range(count)]


@pytest.mark.parametrize("gamma1_bits", [17, 19])
def test_decoders_match_bit_unpacking(gamma1_bits: int) -> None:
    # Offsets that are not multiples of 8 too: the vector loops must not assume lanes.
    rng = np.random.default_rng(gamma1_bits)
    blob = rng.integers(0, 256, 3000, dtype=np.uint8).tobytes()
    out = np.empty(256, dtype=np.int32)
    for offset in (0, 5, 32, 333):
        decode_t1_shifted(blob, offset, out)
        assert out.tolist() == [v << 13 for v in _bit_unpack(blob[offset : offset + 320], 10, 256)]
        size = 32 * (gamma1_bits + 1)
        expected = [(1 << gamma1_bits) - v for v in
                    _bit_unpack(blob[offset : offset + size], gamma1_bits + 1, 256)]  # fmt: skip
        worst = max(abs(v) for v in expected)
        assert decode_z_checked(blob, offset, gamma1_bits, worst + 1, out)
        assert out.tolist() == expected
        assert not decode_z_checked(blob, offset, gamma1_bits, worst, out)


def _mont(a: int) -> int:
    """The reference's montgomery_reduce on Python ints (signed 32-bit t)."""
    t = (a * 58728449) & 0xFFFFFFFF
    t -= (t >> 31) << 32
    return (a - t * Q) >> 32


def _reference_ntt(a: list[int]) -> list[int]:
    """The reference implementation's in-place forward NTT (FIPS 204 Algorithm 41 with
    lazy Montgomery butterflies)."""
    a = list(a)
    k, length = 0, 128
    while length > 0:
        for start in range(0, 256, 2 * length):
            k += 1
            zeta = int(ZETAS[k])
            for j in range(start, start + length):
                t = _mont(zeta * a[j + length])
                a[j + length] = a[j] - t
                a[j] = a[j] + t
        length >>= 1
    return a


def _reference_invntt(a: list[int]) -> list[int]:
    a = list(a)
    k, length = 256, 1
    while length < 256:
        for start in range(0, 256, 2 * length):
            k -= 1
            zeta = int(ZETAS[k])
            for j in range(start, start + length):
                t, u = a[j], a[j + length]
                a[j] = t + u
                a[j + length] = _mont(zeta * (u - t))
        length <<= 1
    return [_mont(INVNTT_F * x) for x in a]


def test_constant_geometry_transforms_give_the_reference_integers() -> None:
    # Bit-exact, not just equal mod q: same lazy bounds, same representatives.
    rng = np.random.default_rng(17)
    scratch = np.empty(256, dtype=np.int32)
    for _ in range(5):
        a = rng.integers(-(Q - 1), Q, size=256).astype(np.int32)
        fwd = a.copy()
        ntt(fwd, scratch)
        assert fwd.tolist() == _reference_ntt(a.tolist())
        inv = a.copy()
        invntt_tomont(inv, scratch)
        assert inv.tolist() == _reference_invntt(a.tolist())


# --- Wycheproof ------------------------------------------------------------------------


@pytest.mark.parametrize("level", [44, 65])
def test_wycheproof_verify_vectors(level: int) -> None:
    path = WYCHEPROOF / f"mldsa_{level}_verify_test.json"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    cases = wycheproof_mldsa(path)
    failures = []
    for case in cases:
        if case.mu is None:
            got = mldsa_verify(level, case.public_key, case.message, case.signature, case.context)
        else:
            got = mldsa_verify_mu(level, case.public_key, case.mu, case.signature)
        if got != case.expected:
            failures.append(f"{case.label} expected {case.expected} got {got}")
    assert not failures, failures
    assert len(cases) >= 150


# --- interoperability with other implementations ---------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_dilithium_py_signatures_with_context(level: int) -> None:
    impl = _dilithium(level)
    pk, sk = impl.keygen()
    for ctx in (b"", b"c", bytes(range(255))):
        for msg in (b"", b"m", bytes(1000)):
            sig = impl.sign(sk, msg, ctx=ctx)
            assert mldsa_verify(level, pk, msg, sig, ctx)
            assert not mldsa_verify(level, pk, msg + b"!", sig, ctx)
            assert not mldsa_verify(level, pk, msg, sig, ctx + b"!")


@pytest.mark.parametrize("level", LEVELS)
def test_pqcrypto_signatures(level: int) -> None:
    sign = pytest.importorskip("pqcrypto.sign")
    module = getattr(sign, f"ml_dsa_{level}")
    pk, sk = module.keygen()
    for ctx in (b"", b"rust ctx"):
        sig = module.sign(sk, b"hello from RustCrypto", context=ctx)
        assert mldsa_verify(level, pk, b"hello from RustCrypto", sig, ctx)


@pytest.mark.parametrize("level", LEVELS)
def test_cryptography_signatures(level: int) -> None:
    try:
        from cryptography.hazmat.primitives.asymmetric import mldsa
    except ImportError:
        pytest.skip("cryptography has no ML-DSA (needs cryptography >= 48 with OpenSSL 3.5)")
    key = getattr(mldsa, f"MLDSA{level}PrivateKey").generate()
    pk = key.public_key().public_bytes_raw()
    for ctx in (None, b"openssl ctx"):
        sig = key.sign(b"hello from OpenSSL", ctx)
        assert mldsa_verify(level, pk, b"hello from OpenSSL", sig, ctx or b"")


@pytest.mark.parametrize("level", LEVELS)
def test_external_mu(level: int, signed: dict) -> None:
    pk, msg, sig, ctx = signed[level]
    tr = hashlib.shake_256(pk).digest(64)
    mu = hashlib.shake_256(tr + bytes([0, len(ctx)]) + ctx + msg).digest(64)
    assert mldsa_verify_mu(level, pk, mu, sig)
    assert not mldsa_verify_mu(level, pk, bytes([mu[0] ^ 1]) + mu[1:], sig)
    assert not mldsa_verify_mu(level, pk, mu[:63], sig)
    assert not mldsa_verify_mu(level, pk, mu + b"\0", sig)


# --- rejections -------------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_every_byte_flip_is_rejected(level: int, signed: dict) -> None:
    pk, msg, sig, ctx = signed[level]
    assert mldsa_verify(level, pk, msg, sig, ctx)
    impl = _dilithium(level)
    accepted = []
    for i in range(len(sig)):
        for mask in (0x01, 0x80):
            bad = sig[:i] + bytes([sig[i] ^ mask]) + sig[i + 1 :]
            # A flip may only pass if the reference implementation accepts it too.
            if mldsa_verify(level, pk, msg, bad, ctx) and not impl.verify(pk, msg, bad, ctx=ctx):
                accepted.append((i, mask))
    assert not accepted


@pytest.mark.parametrize("level", LEVELS)
def test_public_key_flips_are_rejected(level: int, signed: dict) -> None:
    pk, msg, sig, ctx = signed[level]
    for i in range(0, len(pk), 7):
        bad = pk[:i] + bytes([pk[i] ^ 0x04]) + pk[i + 1 :]
        assert not mldsa_verify(level, bad, msg, sig, ctx), i


@pytest.mark.parametrize("level", LEVELS)
def test_wrong_lengths_and_contexts(level: int, signed: dict) -> None:
    pk, msg, sig, ctx = signed[level]
    params = PARAMS[level]
    assert len(pk) == params.public_key_bytes
    assert len(sig) == params.signature_bytes
    for bad_sig in (sig[:-1], sig + b"\0", b"", sig[:1]):
        assert not mldsa_verify(level, pk, msg, bad_sig, ctx)
    for bad_pk in (pk[:-1], pk + b"\0", b""):
        assert not mldsa_verify(level, bad_pk, msg, sig, ctx)
    assert not mldsa_verify(level, pk, msg, sig, bytes(256))
    other = {44: 65, 65: 87, 87: 44}[level]
    assert not mldsa_verify(other, pk, msg, sig, ctx)
    # bytearray and memoryview are accepted like bytes, numpy integers like int.
    assert mldsa_verify(level, bytearray(pk), memoryview(msg), bytearray(sig), ctx)
    assert mldsa_verify(np.int64(level), pk, msg, sig, ctx)


def test_context_of_255_bytes_accepted_256_rejected() -> None:
    impl = _dilithium(44)
    pk, sk = impl.keygen()
    ctx = bytes(range(255))
    sig = impl.sign(sk, b"m", ctx=ctx)
    assert mldsa_verify(44, pk, b"m", sig, ctx)
    assert not mldsa_verify(44, pk, b"m", sig, ctx + b"\0")


@pytest.mark.parametrize(
    "args",
    [
        (43, b"", b"", b""),
        (True, bytes(1312), b"", bytes(2420)),
        ([44], bytes(1312), b"", bytes(2420)),
        ("44", bytes(1312), b"", bytes(2420)),
        (44, None, b"", bytes(2420)),
        (44, bytes(1312), "text", bytes(2420)),
        (44, bytes(1312), b"", [0] * 2420),
    ],
)
def test_bad_arguments_return_false(args: tuple) -> None:
    assert mldsa_verify(*args) is False


def test_hint_encodings_are_checked(signed: dict) -> None:
    pk, msg, sig, ctx = signed[44]
    params = PARAMS[44]
    hints = len(sig) - params.omega - params.k
    counts = list(sig[hints + params.omega :])
    used = counts[-1]
    # A count above omega, decreasing counts, and a non-zero unused index byte.
    cases = []
    cases.append(sig[: hints + params.omega] + bytes(counts[:-1] + [params.omega + 1]))
    if counts[0] > 0:
        cases.append(sig[: hints + params.omega] + bytes([counts[1] + 1] + counts[1:]))
    if used < params.omega:
        cases.append(sig[: hints + used] + b"\x01" + sig[hints + used + 1 :])
    # Unsorted indices inside the first polynomial.
    if counts[0] >= 2:
        body = bytearray(sig)
        body[hints], body[hints + 1] = body[hints + 1], body[hints]
        cases.append(bytes(body))
    assert cases
    for bad in cases:
        assert not mldsa_verify(44, pk, msg, bad, ctx)
