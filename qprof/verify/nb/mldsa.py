"""qprof's own ML-DSA (FIPS 204) verifier as numba kernels: the "second verifier".

``mldsa_verify`` is FIPS 204 Algorithm 3 over Algorithm 8; ``mldsa_verify_mu`` starts
from a given mu (external mu). Neither raises for bytes input: wrong lengths, long
contexts and bad encodings return False. The wrappers check types and call one
``@njit`` kernel with the ``bytes`` themselves; the heavy parts are ``mldsa_poly``
(NTT, decoders, UseHint), ``mldsa_expand`` (ExpandA fused with A * z, SampleInBall) and
``keccak_xn`` / ``keccak``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from qprof.verify.nb.keccak import (
    SHAKE256_RATE,
    absorb,
    absorb_final,
    absorb_init,
    absorb_range,
    absorb_update,
    squeeze_into,
)
from qprof.verify.nb.keccak_xn import WAYS
from qprof.verify.nb.mldsa_expand import (
    WS_WORDS,
    expand_a_times_z,
    sample_in_ball_absorbed,
)
from qprof.verify.nb.mldsa_poly import (
    INVNTT_F,
    INVNTT_F_QINV,
    N,
    Q,
    caddq,
    decode_t1_shifted,
    decode_z_checked,
    highbits,
    hints_valid,
    invntt_stages,
    mont_mul32,
    montgomery_reduce,
    ntt,
    use_hint,
    w1_encode,
)

MAX_CONTEXT_BYTES = 255
MU_BYTES = 64
TR_BYTES = 64
RHO_BYTES = 32


@dataclass(frozen=True)
class MldsaParams:
    """One ML-DSA parameter set (FIPS 204 Table 1) and its encoded sizes."""

    level: int
    k: int
    l: int  # noqa: E741 - FIPS 204 calls it l
    eta: int
    tau: int
    lam: int
    gamma1_bits: int
    gamma2: int
    omega: int

    @property
    def beta(self) -> int:
        return self.tau * self.eta

    @property
    def c_tilde_bytes(self) -> int:
        return self.lam // 4

    @property
    def z_poly_bytes(self) -> int:
        return 32 * (self.gamma1_bits + 1)

    @property
    def public_key_bytes(self) -> int:
        return RHO_BYTES + 320 * self.k

    @property
    def signature_bytes(self) -> int:
        return self.c_tilde_bytes + self.l * self.z_poly_bytes + self.omega + self.k


PARAMS: dict[int, MldsaParams] = {
    44: MldsaParams(
        44, k=4, l=4, eta=2, tau=39, lam=128, gamma1_bits=17, gamma2=(Q - 1) // 88, omega=80
    ),
    65: MldsaParams(
        65, k=6, l=5, eta=4, tau=49, lam=192, gamma1_bits=19, gamma2=(Q - 1) // 32, omega=55
    ),
    87: MldsaParams(
        87, k=8, l=7, eta=2, tau=60, lam=256, gamma1_bits=19, gamma2=(Q - 1) // 32, omega=75
    ),
}


@njit(cache=True, nogil=True)
def _hash_mu(
    tr: np.ndarray, ctx_msg: bytes, ctx_len: int, state: np.ndarray, mu: np.ndarray,
    prefix: np.ndarray,
) -> None:
    """mu = H(tr || 0x00 || len(ctx) || ctx || msg, 64) (FIPS 204 Algorithms 3 and 8);
    ``ctx_msg`` is ctx || msg, ``prefix``: uint8[2] scratch."""
    prefix[0] = 0  # pure ML-DSA domain separator
    prefix[1] = ctx_len
    pos = absorb_init(state)
    pos = absorb_update(state, SHAKE256_RATE, pos, tr)
    pos = absorb_update(state, SHAKE256_RATE, pos, prefix)
    pos = absorb_range(state, SHAKE256_RATE, pos, ctx_msg, 0, len(ctx_msg))
    absorb_final(state, SHAKE256_RATE, pos)
    squeeze_into(state, mu, 0, MU_BYTES)


@njit(cache=True, nogil=True, inline="always")
def _line_offset(buf: np.ndarray) -> int:
    """Elements of ``buf`` to skip to reach a 64-byte boundary (a cache line)."""
    return ((64 - buf.ctypes.data % 64) % 64) // buf.itemsize


# One row per level, in PARAMS order: the kernel takes a row index instead of eight
# integers (each argument costs numba's dispatcher a type check on every call, about
# 0.1 us for a bytes object: the kernel therefore takes one integer and three bytes).
_KERNEL_PARAMS = np.array(
    [
        [p.k, p.l, p.tau, p.c_tilde_bytes, p.gamma1_bits, p.gamma2, p.omega, p.beta]
        for p in PARAMS.values()
    ],
    dtype=np.int64,
)
_KERNEL_ROW = {level: row for row, level in enumerate(PARAMS)}


@njit(cache=True, nogil=True)
def _verify_kernel(code: int, pk: bytes, sig: bytes, data: bytes) -> bool:
    """ML-DSA.Verify (Alg. 3 + 8) with the parameters of ``_KERNEL_PARAMS[row]``.

    ``code`` is ``_kernel_code(row, use_mu, len(ctx))``; ``data`` is ctx || message,
    or with ``use_mu`` mu itself."""
    row = code & 3
    use_mu = (code >> 2) & 1 == 1
    ctx_len = code >> 3
    k = _KERNEL_PARAMS[row, 0]
    l = _KERNEL_PARAMS[row, 1]  # noqa: E741 - FIPS 204 calls it l
    tau = _KERNEL_PARAMS[row, 2]
    c_tilde_bytes = _KERNEL_PARAMS[row, 3]
    gamma1_bits = _KERNEL_PARAMS[row, 4]
    gamma2 = _KERNEL_PARAMS[row, 5]
    omega = _KERNEL_PARAMS[row, 6]
    beta = _KERNEL_PARAMS[row, 7]
    z_poly_bytes = 32 * (gamma1_bits + 1)
    if len(pk) != 32 + 320 * k:
        return False
    if len(sig) != c_tilde_bytes + l * z_poly_bytes + omega + k:
        return False
    if use_mu:
        if len(data) != MU_BYTES:
            return False
    elif ctx_len > MAX_CONTEXT_BYTES or ctx_len > len(data):
        return False

    # sigDecode: hints first (cheap), then z with the infinity-norm check.
    hint_offset = c_tilde_bytes + l * z_poly_bytes
    if not hints_valid(sig, hint_offset, k, omega):
        return False
    # Five allocations for the whole verification (each costs numba's allocator about
    # as much as a 256-coefficient loop); the buffers are views into them.
    w1_len = N // 2 if gamma2 == (Q - 1) // 32 else (N * 3) // 4
    # Every vector buffer starts on a 64-byte line (numba aligns to 32 bytes only): a
    # zmm load at an unaligned offset splits two cache lines.
    rows = l + 5 + WAYS
    flat32 = np.empty(rows * N + 16, dtype=np.int32)
    at = _line_offset(flat32)
    polys = flat32[at : at + rows * N].reshape((rows, N))
    zhat = polys[:l]
    chat = polys[l]
    scratch = polys[l + 1]
    t1 = polys[l + 2]
    w = polys[l + 3]
    w1 = polys[l + 4]
    sampled = polys[l + 5 :]  # rows for blocks with a rejected candidate
    small = np.empty(64 + SHAKE256_RATE + RHO_BYTES + TR_BYTES + MU_BYTES + 2 + k * w1_len,
                     dtype=np.uint8)  # fmt: skip
    c_tilde = small[:c_tilde_bytes]
    block = small[64 : 64 + SHAKE256_RATE]
    at = 64 + SHAKE256_RATE
    rho = small[at : at + RHO_BYTES]
    at += RHO_BYTES
    tr = small[at : at + TR_BYTES]
    at += TR_BYTES
    mu = small[at : at + MU_BYTES]
    at += MU_BYTES
    prefix = small[at : at + 2]
    w1_packed = small[at + 2 :]
    words = np.empty(WS_WORDS + 25 + 8, dtype=np.uint64)
    at = _line_offset(words)
    state_xn = words[at : at + WS_WORDS]
    state = words[at + WS_WORDS : at + WS_WORDS + 25]
    flat64 = np.empty((k + 1) * N + 8, dtype=np.int64)
    at = _line_offset(flat64)
    wide = flat64[at : at + (k + 1) * N].reshape((k + 1, N))
    acc = wide[:k]
    counts = wide[k, :WAYS]
    bound = (1 << gamma1_bits) - beta
    for s in range(l):
        if not decode_z_checked(sig, c_tilde_bytes + s * z_poly_bytes, gamma1_bits, bound, zhat[s]):
            return False

    for i in range(c_tilde_bytes):
        c_tilde[i] = sig[i]
    for s in range(l):
        ntt(zhat[s], scratch)

    # w'_approx = NTT^-1(A_hat * z_hat - c_hat * t1_hat * 2^d), accumulated lazily.
    for i in range(RHO_BYTES):
        rho[i] = pk[i]
    # tr = H(pk, 64) is computed inside, in a spare way of the multi-way permutation.
    # SampleInBall's hash and mu ride in spare ways too when a batch has them.
    rode = expand_a_times_z(rho, k, l, zhat, acc, state_xn, sampled, counts, pk, tr,
                            not use_mu, c_tilde, state, data, ctx_len, mu)  # fmt: skip
    if not rode & 1:
        absorb(state, SHAKE256_RATE, c_tilde)
    sample_in_ball_absorbed(tau, state, block, chat)
    ntt(chat, scratch)
    if use_mu:
        for i in range(MU_BYTES):
            mu[i] = data[i]
    elif not rode & 2:
        _hash_mu(tr, data, ctx_len, state, mu, prefix)

    hint_start = 0
    for r in range(k):
        decode_t1_shifted(pk, 32 + 320 * r, t1)
        ntt(t1, scratch)
        row = acc[r]
        # One reduction of the difference: |A*z| < 7 * 9q^2 and |c * t1| < 81q^2 (both
        # NTT outputs < 9q), so |difference| < 144q^2 < 2^31 q, Montgomery's input
        # range, and the result is in (-q, q) as the inverse NTT wants.
        for j in range(N):
            w[j] = montgomery_reduce(row[j] - np.int64(chat[j]) * np.int64(t1[j]))
        invntt_stages(w, scratch)
        for j in range(N):
            # invntt_tomont's final scaling, fused with the mapping to [0, q).
            v = caddq(np.int64(mont_mul32(w[j], INVNTT_F, INVNTT_F_QINV)))
            w[j] = v
            w1[j] = highbits(v, gamma2)
        # UseHint: positions listed in the hint move to the neighbouring high part.
        hint_end = np.int64(sig[hint_offset + omega + r])
        for h in range(hint_start, hint_end):
            pos = np.int64(sig[hint_offset + h])
            w1[pos] = use_hint(np.int64(w[pos]), gamma2)
        hint_start = hint_end
        w1_encode(w1, gamma2, w1_packed, r * w1_len)

    # c_tilde' = H(mu || w1Encode(w1), lambda / 4) must equal c_tilde.
    pos = absorb_init(state)
    pos = absorb_update(state, SHAKE256_RATE, pos, mu)
    pos = absorb_update(state, SHAKE256_RATE, pos, w1_packed)
    absorb_final(state, SHAKE256_RATE, pos)
    squeeze_into(state, block, 0, c_tilde_bytes)
    same = True
    for i in range(c_tilde_bytes):
        if block[i] != c_tilde[i]:
            same = False
    return same


def _kernel_code(row: int, use_mu: bool, ctx_len: int) -> int:
    """The kernel's first argument: the parameter row, the mu flag, the context length."""
    return row | (use_mu << 2) | (ctx_len << 3)


def _row(level: object) -> int | None:
    """Kernel parameter row for 44 / 65 / 87 (also numpy integers); None otherwise."""
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)):
        return None
    return _KERNEL_ROW.get(int(level))


def _as_bytes(data: object) -> bytes | None:
    """bytes for bytes-like input, None for anything else.

    The kernels take ``bytes`` directly: numba types them as read-only uint8 buffers
    and dispatches them faster than ``np.frombuffer`` views.
    """
    if type(data) is bytes:
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    return None


def mldsa_verify(
    level: int, public_key: bytes, message: bytes, signature: bytes, context: bytes = b""
) -> bool:
    """Pure ML-DSA verification (FIPS 204 Algorithm 3) for level 44, 65 or 87.

    Returns False (never raises) for unknown levels, non-bytes input, wrong key or
    signature lengths, contexts over 255 bytes and malformed encodings.
    """
    # The usual call (bytes, an int level) skips the conversions: they cost about a
    # tenth of a verification's time outside the kernel.
    if (type(public_key) is bytes and type(message) is bytes and type(signature) is bytes
            and type(context) is bytes and type(level) is int):  # fmt: skip
        row = _KERNEL_ROW.get(level)
        if row is None or len(context) > MAX_CONTEXT_BYTES:
            return False
        return _verify_kernel(row | (len(context) << 3), public_key, signature,  # type: ignore[no-any-return]
                              context + message)  # fmt: skip
    row = _row(level)
    pk = _as_bytes(public_key)
    msg = _as_bytes(message)
    sig = _as_bytes(signature)
    ctx = _as_bytes(context)
    if row is None or pk is None or msg is None or sig is None or ctx is None:
        return False
    if len(ctx) > MAX_CONTEXT_BYTES:
        return False
    # ctx || msg as one argument (b"" + msg is msg itself: no copy without a context).
    return bool(_verify_kernel(_kernel_code(row, False, len(ctx)), pk, sig, ctx + msg))


def mldsa_verify_mu(level: int, public_key: bytes, mu: bytes, signature: bytes) -> bool:
    """ML-DSA.Verify_internal from a given 64-byte mu (the external-mu interface)."""
    row = _row(level)
    pk = _as_bytes(public_key)
    mu_bytes = _as_bytes(mu)
    sig = _as_bytes(signature)
    if row is None or pk is None or mu_bytes is None or sig is None:
        return False
    return bool(_verify_kernel(_kernel_code(row, True, 0), pk, sig, mu_bytes))


def warm_up(suite: str | None = None) -> None:
    """Compile (first run) or load from the numba cache every kernel verification uses.

    All levels share one kernel specialisation, so ``suite`` ("ML-DSA-44", ...) only
    narrows which level is exercised. Zero inputs of the right sizes go all the way to
    the final hash (a zero signature decodes to valid, empty hints), so every callee
    is compiled with the argument types real calls use.
    """
    levels = list(PARAMS)
    if suite is not None:
        levels = [lvl for lvl in PARAMS if suite == f"ML-DSA-{lvl}"] or levels
    for level in levels:
        params = PARAMS[level]
        pk = bytes(params.public_key_bytes)
        sig = bytes(params.signature_bytes)
        mldsa_verify(level, pk, b"warm-up", sig, b"ctx")
        mldsa_verify_mu(level, pk, bytes(MU_BYTES), sig)
