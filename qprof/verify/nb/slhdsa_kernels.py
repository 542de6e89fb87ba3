"""numba kernels for SLH-DSA-SHAKE verification (FIPS 205, Algorithms 8, 11, 13, 17, 20).

Hash nodes stay 64-bit words (an n-byte node is n/8 little-endian words, as in Keccak
lanes). F and H always fit one 136-byte block, so they fill a prepared 25-lane template
and call ``keccak_p1600`` directly: nothing is allocated in the chains or tree climbs.
ADRS (32 bytes, big-endian fields) is four lanes: layer and the tree address's top,
the tree address's low 8 bytes, type | keypair, chain/height | hash/index.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from qprof.verify.nb.keccak import (
    SHAKE256_RATE,
    absorb_final,
    absorb_init,
    absorb_update,
    keccak_f1600,
    keccak_p1600,
    squeeze_into,
)
from qprof.verify.nb.keccak_xn import WAYS, keccak_p1600_xn

# ADRS types (FIPS 205, section 4.2).
WOTS_HASH = 0
WOTS_PK = 1
TREE = 2
FORS_TREE = 3
FORS_ROOTS = 4

_RATE_WORDS = SHAKE256_RATE // 8  # 17 lanes
_PAD_END = np.uint64(0x80) << np.uint64(56)  # 0x80 in the last byte of the rate
_PAD_START = np.uint64(0x1F)
_LG_W = 4  # every SLH-DSA parameter set uses w = 16
_W_MASK = 15


@njit(cache=True, nogil=True)
def _bswap32(x: int) -> np.uint64:
    """Big-endian 4-byte field value -> its little-endian position in a lane half."""
    v = np.uint64(x)
    return (
        ((v & np.uint64(0xFF)) << np.uint64(24))
        | ((v & np.uint64(0xFF00)) << np.uint64(8))
        | ((v >> np.uint64(8)) & np.uint64(0xFF00))
        | ((v >> np.uint64(24)) & np.uint64(0xFF))
    )


@njit(cache=True, nogil=True)
def _bswap64(v: np.uint64) -> np.uint64:
    return _bswap32(v & np.uint64(0xFFFFFFFF)) << np.uint64(32) | _bswap32(v >> np.uint64(32))


@njit(cache=True, nogil=True)
def _adrs_pair(hi: int, lo: int) -> np.uint64:
    """Lane holding two consecutive big-endian 4-byte ADRS fields."""
    return _bswap32(hi) | (_bswap32(lo) << np.uint64(32))


@njit(cache=True, nogil=True)
def _bytes_to_words(src, off, nbytes, dst, doff):
    """Little-endian load of ``nbytes`` (multiple of 8) bytes into uint64 words."""
    for w in range(nbytes // 8):
        v = np.uint64(0)
        base = off + 8 * w
        for b in range(8):
            v |= np.uint64(src[base + b]) << np.uint64(8 * b)
        dst[doff + w] = v


@njit(cache=True, nogil=True)
def _make_template(seed, nw, msg_words):
    """PK.seed, 4 ADRS lanes (zero), message lanes (zero), SHAKE padding: 25 lanes,
    followed by 25 words where ``_permute_template`` puts the permuted state."""
    t = np.zeros(50, dtype=np.uint64)
    for i in range(nw):
        t[i] = seed[i]
    t[nw + 4 + msg_words] ^= _PAD_START
    t[_RATE_WORDS - 1] ^= _PAD_END
    return t


@njit(cache=True, nogil=True)
def _permute_template(t, out, ooff, nw):
    """Permute template ``t`` (left intact); first ``nw`` lanes of the result to ``out``."""
    keccak_p1600(t[:25], t[25:])
    for i in range(nw):
        out[ooff + i] = t[25 + i]


@njit(cache=True, nogil=True)
def _chain(tf, nw, lane2, chain_idx, x, xoff, start, steps):
    """WOTS+ chain (Algorithm 5) in place on the node at ``x[xoff:]``.

    ``tf`` is the F template with the layer/tree lanes already set; ``lane2`` is the
    WOTS_HASH type and keypair lane.
    """
    tf[nw + 2] = lane2
    chain_field = _bswap32(chain_idx)
    for j in range(start, start + steps):
        tf[nw + 3] = chain_field | (_bswap32(j) << np.uint64(32))
        for i in range(nw):
            tf[nw + 4 + i] = x[xoff + i]
        _permute_template(tf, x, xoff, nw)


@njit(cache=True, nogil=True)
def _hash_h(th, nw, lane2, lane3, left, loff, right, roff, out, ooff):
    """H(PK.seed, ADRS, left || right) with the H template ``th``."""
    th[nw + 2] = lane2
    th[nw + 3] = lane3
    for i in range(nw):
        th[nw + 4 + i] = left[loff + i]
        th[nw + 4 + nw + i] = right[roff + i]
    _permute_template(th, out, ooff, nw)


@njit(cache=True, nogil=True)
def _hash_f(tf, nw, lane2, lane3, src, soff, out, ooff):
    tf[nw + 2] = lane2
    tf[nw + 3] = lane3
    for i in range(nw):
        tf[nw + 4 + i] = src[soff + i]
    _permute_template(tf, out, ooff, nw)


@njit(cache=True, nogil=True)
def _absorb_word(state, pos, w):
    state[pos] ^= w
    pos += 1
    if pos == _RATE_WORDS:
        keccak_f1600(state)
        pos = 0
    return pos


@njit(cache=True, nogil=True)
def _hash_t(state, seed, nw, lane0, lane1, lane2, lane3, buf, nwords, out, ooff):
    """T_l(PK.seed, ADRS, buf[:nwords]): a multi-block SHAKE256 sponge over words."""
    for i in range(25):
        state[i] = np.uint64(0)
    pos = 0
    for i in range(nw):
        pos = _absorb_word(state, pos, seed[i])
    pos = _absorb_word(state, pos, lane0)
    pos = _absorb_word(state, pos, lane1)
    pos = _absorb_word(state, pos, lane2)
    pos = _absorb_word(state, pos, lane3)
    for i in range(nwords):
        pos = _absorb_word(state, pos, buf[i])
    state[pos] ^= _PAD_START
    state[_RATE_WORDS - 1] ^= _PAD_END
    keccak_f1600(state)
    for i in range(nw):
        out[ooff + i] = state[i]


@njit(cache=True, nogil=True)
def _node_byte(words, off, b):
    return (words[off + (b >> 3)] >> np.uint64(8 * (b & 7))) & np.uint64(0xFF)


@njit(cache=True, nogil=True)
def _make_template_xn(seed, nw, msg_words):
    """``_make_template`` for WAYS interleaved states (lane l of state j at WAYS*l + j)."""
    t = np.zeros(25 * WAYS, dtype=np.uint64)
    for j in range(WAYS):
        for i in range(nw):
            t[WAYS * i + j] = seed[i]
        t[WAYS * (nw + 4 + msg_words) + j] ^= _PAD_START
        t[WAYS * (_RATE_WORDS - 1) + j] ^= _PAD_END
    return t


@njit(cache=True, nogil=True)
def _set_lane_xn(tx, lane, value):
    for j in range(WAYS):
        tx[WAYS * lane + j] = value


@njit(cache=True, nogil=True)
def _wots_chains_xn(tfx, outx, nw, lane2, digits, order, length, sigw, soff, buf, slots):
    """All ``length`` WOTS+ chains of one signature, WAYS at a time.

    Chain c runs from ``digits[c]`` to w - 1 = 15 starting at signature node c; its
    end goes to ``buf[c * nw:]``.  ``WAYS`` slots each hold one chain in progress; a slot
    that finishes takes the next chain, so the vectors stay full until the tail.
    Chains are handed out longest first (``order``, filled here) so the tail, where
    some slots idle, is made of short chains.
    ``slots`` is int64 scratch of 2 * WAYS: chain index (-1 = free) and position per slot.
    """
    _set_lane_xn(tfx, nw + 2, lane2)
    filled = 0
    for digit in range(_W_MASK + 1):  # counting sort by start digit = longest first
        for c in range(length):
            if digits[c] == digit:
                order[filled] = c
                filled += 1
    next_chain = 0
    for j in range(WAYS):
        slots[j] = -1
    while True:
        active = 0
        for j in range(WAYS):
            while slots[j] < 0 and next_chain < length:
                c = order[next_chain]
                next_chain += 1
                if digits[c] == _W_MASK:  # already at the top: the node is the chain end
                    for i in range(nw):
                        buf[c * nw + i] = sigw[soff + c * nw + i]
                    continue
                slots[j] = c
                slots[WAYS + j] = digits[c]
                for i in range(nw):
                    tfx[WAYS * (nw + 4 + i) + j] = sigw[soff + c * nw + i]
            if slots[j] >= 0:
                active += 1
                tfx[WAYS * (nw + 3) + j] = _adrs_pair(slots[j], slots[WAYS + j])
        if active == 0:
            return
        keccak_p1600_xn(tfx, outx)
        for j in range(WAYS):
            c = slots[j]
            if c < 0:
                continue
            slots[WAYS + j] += 1
            if slots[WAYS + j] == _W_MASK:
                for i in range(nw):
                    buf[c * nw + i] = outx[WAYS * i + j]
                slots[j] = -1
            else:
                for i in range(nw):
                    tfx[WAYS * (nw + 4 + i) + j] = outx[WAYS * i + j]


@njit(cache=True, nogil=True)
def _wots_digits(msgw, moff, n, digits):
    """Base-16 digits of the n-byte message node (high nibble first) and checksum."""
    len1 = 2 * n
    csum = 0
    for i in range(len1):
        byte = np.int64(_node_byte(msgw, moff, i >> 1))
        digit = (byte >> 4) if (i & 1) == 0 else (byte & _W_MASK)
        digits[i] = digit
        csum += _W_MASK - digit
    # len2 = 3 digits of csum << 4 (12 bits in 2 bytes): csum's nibbles, high first.
    for c in range(3):
        digits[len1 + c] = (csum >> (4 * (2 - c))) & _W_MASK


@njit(cache=True, nogil=True)
def _fors_roots_xn(tfx, thx, outx, nw, a, k, lane2, indices, sigw, soff, buf, cur):
    """FORS pkFromSig (Algorithm 17) for WAYS trees at a time; roots to ``buf``.

    ``cur`` is int64 scratch of WAYS: each slot's current node index in the ADRS.
    """
    _set_lane_xn(tfx, nw + 2, lane2)
    _set_lane_xn(thx, nw + 2, lane2)
    tree_words = (a + 1) * nw
    for first in range(0, k, WAYS):
        count = min(WAYS, k - first)
        for j in range(count):
            t = first + j
            cur[j] = (t << a) + indices[t]
            tfx[WAYS * (nw + 3) + j] = _adrs_pair(0, cur[j])
            base = soff + t * tree_words
            for i in range(nw):
                tfx[WAYS * (nw + 4 + i) + j] = sigw[base + i]
        keccak_p1600_xn(tfx, outx)
        for height in range(a):
            for j in range(count):
                t = first + j
                cur[j] >>= 1
                thx[WAYS * (nw + 3) + j] = _adrs_pair(height + 1, cur[j])
                auth = soff + t * tree_words + (1 + height) * nw
                # Node goes left when its bit of the leaf index is 0.
                node_lane = nw + 4 if ((indices[t] >> height) & 1) == 0 else 2 * nw + 4
                auth_lane = 3 * nw + 8 - node_lane
                for i in range(nw):
                    thx[WAYS * (node_lane + i) + j] = outx[WAYS * i + j]
                    thx[WAYS * (auth_lane + i) + j] = sigw[auth + i]
            keccak_p1600_xn(thx, outx)
        for j in range(count):
            for i in range(nw):
                buf[(first + j) * nw + i] = outx[WAYS * i + j]


@njit(cache=True, nogil=True)
def _wots_pk_from_sig(
    tf, state, seed, nw, n, lane0, lane1, keypair, sigw, soff, msgw, moff, buf, out, ooff
):
    """Algorithm 8 (wots_pkFromSig): chains from the signature to the top, then T_len."""
    len1 = 2 * n
    length = len1 + 3
    lane2 = _adrs_pair(WOTS_HASH, keypair)
    csum = 0
    # Chain starts are the base-16 digits of the message node, high nibble first.
    for i in range(len1):
        byte = np.int64(_node_byte(msgw, moff, i >> 1))
        digit = (byte >> 4) if (i & 1) == 0 else (byte & _W_MASK)
        csum += _W_MASK - digit
        for j in range(nw):
            buf[i * nw + j] = sigw[soff + i * nw + j]
        _chain(tf, nw, lane2, i, buf, i * nw, digit, _W_MASK - digit)
    # Checksum: len2 = 3 digits of csum << 4, i.e. csum's three nibbles, high first.
    for c in range(3):
        digit = (csum >> (4 * (2 - c))) & _W_MASK
        i = len1 + c
        for j in range(nw):
            buf[i * nw + j] = sigw[soff + i * nw + j]
        _chain(tf, nw, lane2, i, buf, i * nw, digit, _W_MASK - digit)
    _hash_t(state, seed, nw, lane0, lane1, _adrs_pair(WOTS_PK, keypair), np.uint64(0), buf,
            length * nw, out, ooff)  # fmt: skip


@njit(cache=True, nogil=True)
def _climb(th, nw, lane2, kind_base, node, noff, idx, authw, aoff, height, tmp):
    """Authentication-path climb shared by XMSS (Alg. 11) and FORS (Alg. 17).

    ``node[noff:]`` is replaced by the root; ``kind_base`` is the index of the leaf in
    the ADRS tree-index numbering.  (idx - 1) // 2 == idx // 2 for odd idx, so both
    branches shift the index right.
    """
    index = kind_base
    for j in range(height):
        bit = (idx >> j) & 1
        index >>= 1
        lane3 = _adrs_pair(j + 1, index)
        a = aoff + j * nw
        if bit == 0:
            _hash_h(th, nw, lane2, lane3, node, noff, authw, a, tmp, 0)
        else:
            _hash_h(th, nw, lane2, lane3, authw, a, node, noff, tmp, 0)
        for i in range(nw):
            node[noff + i] = tmp[i]


@njit(cache=True, nogil=True)
def _set_layer_tree(t, nw, lane0, lane1):
    t[nw] = lane0
    t[nw + 1] = lane1


@njit(cache=True, nogil=True)
def verify_kernel(n, h, d, hp, a, k, m, pk, msg, sig, ctx, ways):
    """slh_verify (Algorithm 24 around Algorithm 20); lengths were checked by the caller.

    ``pk``, ``msg``, ``sig``, ``ctx`` are uint8 arrays; returns True when valid.
    ``ways`` = WAYS runs WOTS+ chains and FORS trees WAYS at a time (``keccak_xn``);
    1 runs everything on the scalar permutation (kept for tests and the benchmark).
    """
    nw = n // 8
    length = 2 * n + 3
    seed = np.empty(nw, dtype=np.uint64)
    root = np.empty(nw, dtype=np.uint64)
    _bytes_to_words(pk, 0, n, seed, 0)
    _bytes_to_words(pk, n, n, root, 0)
    sigw = np.empty(sig.shape[0] // 8, dtype=np.uint64)
    _bytes_to_words(sig, 0, sig.shape[0], sigw, 0)

    # H_msg(R, PK.seed, PK.root, M') with M' = 0x00 || len(ctx) || ctx || M.
    state = np.zeros(25, dtype=np.uint64)
    pos = absorb_init(state)
    pos = absorb_update(state, SHAKE256_RATE, pos, sig[0:n])
    pos = absorb_update(state, SHAKE256_RATE, pos, pk)
    prefix = np.zeros(2, dtype=np.uint8)
    prefix[1] = ctx.shape[0]
    pos = absorb_update(state, SHAKE256_RATE, pos, prefix)
    pos = absorb_update(state, SHAKE256_RATE, pos, ctx)
    pos = absorb_update(state, SHAKE256_RATE, pos, msg)
    absorb_final(state, SHAKE256_RATE, pos)
    digest = np.empty(m, dtype=np.uint8)
    squeeze_into(state, digest, 0, m)

    # Split the digest (Algorithm 20, lines 6-11).
    md_bytes = (k * a + 7) // 8
    tree_bits = h - hp
    tree_bytes = (tree_bits + 7) // 8
    leaf_bytes = (hp + 7) // 8
    idx_tree = np.uint64(0)
    for i in range(tree_bytes):
        idx_tree = (idx_tree << np.uint64(8)) | np.uint64(digest[md_bytes + i])
    if tree_bits < 64:
        idx_tree &= (np.uint64(1) << np.uint64(tree_bits)) - np.uint64(1)
    idx_leaf = 0
    for i in range(leaf_bytes):
        idx_leaf = (idx_leaf << 8) | np.int64(digest[md_bytes + tree_bytes + i])
    idx_leaf &= (1 << hp) - 1

    tf = _make_template(seed, nw, nw)
    th = _make_template(seed, nw, 2 * nw)
    tmp = np.empty(4, dtype=np.uint64)
    buf = np.empty(length * nw + k * nw, dtype=np.uint64)
    node = np.empty(nw, dtype=np.uint64)

    # FORS pkFromSig (Algorithm 17) at layer 0, tree idx_tree, keypair idx_leaf.
    lane0 = np.uint64(0)
    lane1 = _bswap64(idx_tree)
    _set_layer_tree(tf, nw, lane0, lane1)
    _set_layer_tree(th, nw, lane0, lane1)
    fors_lane2 = _adrs_pair(FORS_TREE, idx_leaf)
    # base_2^a digits of md, most significant bits first (Algorithm 4).
    indices = np.empty(k, dtype=np.int64)
    bits = 0
    acc = 0
    byte_pos = 0
    for i in range(k):
        while bits < a:
            acc = ((acc << 8) | np.int64(digest[byte_pos])) & 0xFFFFFFFF
            byte_pos += 1
            bits += 8
        bits -= a
        indices[i] = (acc >> bits) & ((1 << a) - 1)
    sig_off = nw  # after R
    tfx = _make_template_xn(seed, nw, nw)
    thx = _make_template_xn(seed, nw, 2 * nw)
    outx = np.empty(25 * WAYS, dtype=np.uint64)
    scratch = np.empty(2 * WAYS, dtype=np.int64)
    digits = np.empty(length, dtype=np.int64)
    order = np.empty(length, dtype=np.int64)
    if ways == WAYS:
        _set_lane_xn(tfx, nw, lane0)
        _set_lane_xn(tfx, nw + 1, lane1)
        _set_lane_xn(thx, nw, lane0)
        _set_lane_xn(thx, nw + 1, lane1)
        _fors_roots_xn(tfx, thx, outx, nw, a, k, fors_lane2, indices, sigw, sig_off, buf,
                       scratch)  # fmt: skip
    else:
        for i in range(k):
            idx = indices[i]
            leaf_index = (i << a) + idx
            base = sig_off + i * (a + 1) * nw
            _hash_f(tf, nw, fors_lane2, _adrs_pair(0, leaf_index), sigw, base, buf, i * nw)
            _climb(th, nw, fors_lane2, leaf_index, buf, i * nw, idx, sigw, base + nw, a, tmp)
    sig_off += k * (a + 1) * nw
    _hash_t(state, seed, nw, lane0, lane1, _adrs_pair(FORS_ROOTS, idx_leaf), np.uint64(0),
            buf, k * nw, node, 0)  # fmt: skip

    # Hypertree (Algorithm 13): node is the message signed at each layer.
    tree = idx_tree
    leaf = idx_leaf
    wots_buf = buf
    for layer in range(d):
        if layer > 0:
            leaf = np.int64(tree & np.uint64((1 << hp) - 1))
            tree = tree >> np.uint64(hp)
        lane0 = _bswap32(layer)
        lane1 = _bswap64(tree)
        _set_layer_tree(tf, nw, lane0, lane1)
        _set_layer_tree(th, nw, lane0, lane1)
        if ways == WAYS:
            _set_lane_xn(tfx, nw, lane0)
            _set_lane_xn(tfx, nw + 1, lane1)
            _wots_digits(node, 0, n, digits)
            _wots_chains_xn(tfx, outx, nw, _adrs_pair(WOTS_HASH, leaf), digits, order, length, sigw,
                            sig_off, wots_buf, scratch)  # fmt: skip
            _hash_t(state, seed, nw, lane0, lane1, _adrs_pair(WOTS_PK, leaf), np.uint64(0),
                    wots_buf, length * nw, node, 0)  # fmt: skip
        else:
            _wots_pk_from_sig(tf, state, seed, nw, n, lane0, lane1, leaf, sigw, sig_off, node, 0,
                              wots_buf, node, 0)  # fmt: skip
        sig_off += length * nw
        _climb(th, nw, _adrs_pair(TREE, 0), leaf, node, 0, leaf, sigw, sig_off, hp, tmp)
        sig_off += hp * nw

    diff = np.uint64(0)
    for i in range(nw):
        diff |= node[i] ^ root[i]
    return diff == np.uint64(0)
