"""What an SLH-DSA key owner or a forger can make a verifier pay: numba kernels.

Signer side: each layer's WOTS+ message depends only on the hypertree address, so
``xmss_root`` and ``fors_pk`` compute them from the secret seed (``WAYS`` leaves at a
time) and ``land_kernel`` grinds opt_rand until H_msg lands under a chosen prefix.
Forger side: every layer's message comes from signature bytes, so ``grind_h_kernel``
and ``grind_fors_kernel`` try candidates for one node and keep the one making the next
layer's chains longest. Lanes as in ``slhdsa_kernels``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from qprof.verify.nb.keccak_xn import WAYS, keccak_f1600_xn, keccak_p1600_xn
from qprof.verify.nb.slhdsa_kernels import (
    FORS_ROOTS,
    FORS_TREE,
    TREE,
    WOTS_HASH,
    WOTS_PK,
    _adrs_pair,
    _bswap32,
    _bswap64,
    _climb,
    _hash_f,
    _hash_t,
    _make_template,
    _make_template_xn,
    _set_lane_xn,
    _set_layer_tree,
    _wots_pk_from_sig,
)

WOTS_PRF = 5
FORS_PRF = 6
_RATE_WORDS = 17
_PAD_END = np.uint64(0x80) << np.uint64(56)
_PAD_START = np.uint64(0x1F)
_W_MASK = 15


@njit(cache=True, nogil=True)
def _hash_t_xn(sx, seed, nw, lane0, lane1, lane2x, lane3, datax, nwords, out, first):
    """T_l for WAYS inputs at once: SHAKE256(PK.seed || ADRS || data_j), ADRS lane 2 per
    way (``lane2x[j]``), data interleaved (word w of way j at ``datax[WAYS * w + j]``);
    results to ``out[(first + j) * nw:]``."""
    for i in range(25 * WAYS):
        sx[i] = np.uint64(0)
    pos = 0
    total = nw + 4 + nwords
    for w in range(total):
        for j in range(WAYS):
            if w < nw:
                v = seed[w]
            elif w == nw:
                v = lane0
            elif w == nw + 1:
                v = lane1
            elif w == nw + 2:
                v = lane2x[j]
            elif w == nw + 3:
                v = lane3
            else:
                v = datax[WAYS * (w - nw - 4) + j]
            sx[WAYS * pos + j] ^= v
        pos += 1
        if pos == _RATE_WORDS:
            keccak_f1600_xn(sx)
            pos = 0
    for j in range(WAYS):
        sx[WAYS * pos + j] ^= _PAD_START
        sx[WAYS * (_RATE_WORDS - 1) + j] ^= _PAD_END
    keccak_f1600_xn(sx)
    for j in range(WAYS):
        for i in range(nw):
            out[(first + j) * nw + i] = sx[WAYS * i + j]


@njit(cache=True, nogil=True)
def _tree_up(thx, outx, nw, nodes, count, height0, index0, lane2):
    """Hash ``count`` nodes (a power of two) at height ``height0`` up to their root, in
    place (``nodes[0:nw]`` ends as the root); node i of a level has tree index
    ``(index0 >> height) + i``."""
    _set_lane_xn(thx, nw + 2, lane2)
    height = height0
    while count > 1:
        count >>= 1
        height += 1
        base_index = index0 >> height
        for first in range(0, count, WAYS):
            cnt = min(WAYS, count - first)
            for j in range(cnt):
                p = first + j
                thx[WAYS * (nw + 3) + j] = _adrs_pair(height, base_index + p)
                for i in range(nw):
                    thx[WAYS * (nw + 4 + i) + j] = nodes[(2 * p) * nw + i]
                    thx[WAYS * (2 * nw + 4 + i) + j] = nodes[(2 * p + 1) * nw + i]
            keccak_p1600_xn(thx, outx)
            for j in range(cnt):
                for i in range(nw):
                    nodes[(first + j) * nw + i] = outx[WAYS * i + j]


@njit(cache=True, nogil=True)
def xmss_root(seed, skseed, n, hp, layer, tree, out):
    """Root of the XMSS tree ``tree`` of hypertree layer ``layer`` (Algorithm 9 from the
    top, leaves by Algorithm 6) into ``out[0:n/8]``."""
    nw = n // 8
    length = 2 * n + 3
    lane0 = _bswap32(layer)
    lane1 = _bswap64(np.uint64(tree))
    tfx = _make_template_xn(seed, nw, nw)
    thx = _make_template_xn(seed, nw, 2 * nw)
    for t in (tfx, thx):
        _set_lane_xn(t, nw, lane0)
        _set_lane_xn(t, nw + 1, lane1)
    outx = np.empty(25 * WAYS, dtype=np.uint64)
    sx = np.empty(25 * WAYS, dtype=np.uint64)
    leaves = 1 << hp
    nodes = np.empty(max(leaves, WAYS) * nw, dtype=np.uint64)
    ends = np.empty(WAYS * length * nw, dtype=np.uint64)
    lane2x = np.empty(WAYS, dtype=np.uint64)
    for base in range(0, leaves, WAYS):
        for c in range(length):
            for j in range(WAYS):
                tfx[WAYS * (nw + 2) + j] = _adrs_pair(WOTS_PRF, base + j)
                tfx[WAYS * (nw + 3) + j] = _adrs_pair(c, 0)
                for i in range(nw):
                    tfx[WAYS * (nw + 4 + i) + j] = skseed[i]
            keccak_p1600_xn(tfx, outx)
            for j in range(WAYS):
                tfx[WAYS * (nw + 2) + j] = _adrs_pair(WOTS_HASH, base + j)
            for s in range(_W_MASK):
                for j in range(WAYS):
                    tfx[WAYS * (nw + 3) + j] = _adrs_pair(c, s)
                    for i in range(nw):
                        tfx[WAYS * (nw + 4 + i) + j] = outx[WAYS * i + j]
                keccak_p1600_xn(tfx, outx)
            for j in range(WAYS):
                for i in range(nw):
                    ends[WAYS * (c * nw + i) + j] = outx[WAYS * i + j]
        for j in range(WAYS):
            lane2x[j] = _adrs_pair(WOTS_PK, base + j)
        _hash_t_xn(sx, seed, nw, lane0, lane1, lane2x, np.uint64(0), ends, length * nw, nodes,
                   base)  # fmt: skip
    _tree_up(thx, outx, nw, nodes, leaves, 0, 0, _adrs_pair(TREE, 0))
    for i in range(nw):
        out[i] = nodes[i]


@njit(cache=True, nogil=True)
def fors_pk(seed, skseed, n, a, k, tree, keypair, out):
    """FORS public key of keypair (``tree``, ``keypair``) (Algorithms 14-16 and the T_k of
    Algorithm 17) into ``out[0:n/8]``: it does not depend on the message."""
    nw = n // 8
    lane0 = np.uint64(0)
    lane1 = _bswap64(np.uint64(tree))
    tfx = _make_template_xn(seed, nw, nw)
    thx = _make_template_xn(seed, nw, 2 * nw)
    for t in (tfx, thx):
        _set_lane_xn(t, nw, lane0)
        _set_lane_xn(t, nw + 1, lane1)
    outx = np.empty(25 * WAYS, dtype=np.uint64)
    leaves = 1 << a
    nodes = np.empty(max(leaves, WAYS) * nw, dtype=np.uint64)
    roots = np.empty(k * nw, dtype=np.uint64)
    prf_lane = _adrs_pair(FORS_PRF, keypair)
    tree_lane = _adrs_pair(FORS_TREE, keypair)
    for t in range(k):
        for base in range(0, leaves, WAYS):
            cnt = min(WAYS, leaves - base)
            _set_lane_xn(tfx, nw + 2, prf_lane)
            for j in range(WAYS):
                tfx[WAYS * (nw + 3) + j] = _adrs_pair(0, (t << a) + base + j)
                for i in range(nw):
                    tfx[WAYS * (nw + 4 + i) + j] = skseed[i]
            keccak_p1600_xn(tfx, outx)
            _set_lane_xn(tfx, nw + 2, tree_lane)
            for j in range(WAYS):
                for i in range(nw):
                    tfx[WAYS * (nw + 4 + i) + j] = outx[WAYS * i + j]
            keccak_p1600_xn(tfx, outx)
            for j in range(cnt):
                for i in range(nw):
                    nodes[(base + j) * nw + i] = outx[WAYS * i + j]
        _tree_up(thx, outx, nw, nodes, leaves, 0, t << a, tree_lane)
        for i in range(nw):
            roots[t * nw + i] = nodes[i]
    state = np.zeros(25, dtype=np.uint64)
    _hash_t(state, seed, nw, lane0, lane1, _adrs_pair(FORS_ROOTS, keypair), np.uint64(0),
            roots, k * nw, out, 0)  # fmt: skip


@njit(cache=True, nogil=True)
def land_kernel(prf_tmpl, hmsg_tmpl, nw, h, hp, a, k, start, count, shift, allowed, hits, trees,
                leaves):  # fmt: skip
    """Try opt_rand counters ``start .. start + count``: R = PRF_msg(SK.prf, opt_rand, M')
    from the one-block template ``prf_tmpl`` (25 lanes; opt_rand's first word, lane
    ``nw``, is the counter), then H_msg from ``hmsg_tmpl`` (R in lanes 0 .. nw-1).  A
    counter whose address A = idx_tree << hp | idx_leaf has ``allowed[A >> shift]`` set
    (``shift`` >= hp: whole layers; A may not fit 64 bits, so idx_tree is shifted) goes
    to ``hits``, its idx_tree and idx_leaf to ``trees`` and ``leaves``; returns how many
    were found (at most ``hits.size``).
    """
    px = np.empty(25 * WAYS, dtype=np.uint64)
    hx = np.empty(25 * WAYS, dtype=np.uint64)
    outx = np.empty(25 * WAYS, dtype=np.uint64)
    dx = np.empty(25 * WAYS, dtype=np.uint64)
    for lane in range(25):
        for j in range(WAYS):
            px[WAYS * lane + j] = prf_tmpl[lane]
            hx[WAYS * lane + j] = hmsg_tmpl[lane]
    md_bytes = (k * a + 7) // 8
    tree_bits = h - hp
    tree_bytes = (tree_bits + 7) // 8
    leaf_bytes = (hp + 7) // 8
    tree_mask = np.uint64(0xFFFFFFFFFFFFFFFF)
    if tree_bits < 64:
        tree_mask = (np.uint64(1) << np.uint64(tree_bits)) - np.uint64(1)
    leaf_mask = np.uint64((1 << hp) - 1)
    ushift = np.uint64(shift - hp)
    found = 0
    for base in range(start, start + count, WAYS):
        for j in range(WAYS):
            px[WAYS * nw + j] = np.uint64(base + j)
        keccak_p1600_xn(px, outx)
        for j in range(WAYS):
            for i in range(nw):
                hx[WAYS * i + j] = outx[WAYS * i + j]
        keccak_p1600_xn(hx, dx)
        for j in range(WAYS):
            idx_tree = np.uint64(0)
            for b in range(md_bytes, md_bytes + tree_bytes):
                byte = (dx[WAYS * (b >> 3) + j] >> np.uint64(8 * (b & 7))) & np.uint64(0xFF)
                idx_tree = (idx_tree << np.uint64(8)) | byte
            idx_tree &= tree_mask
            idx_leaf = np.uint64(0)
            for b in range(md_bytes + tree_bytes, md_bytes + tree_bytes + leaf_bytes):
                byte = (dx[WAYS * (b >> 3) + j] >> np.uint64(8 * (b & 7))) & np.uint64(0xFF)
                idx_leaf = (idx_leaf << np.uint64(8)) | byte
            idx_leaf &= leaf_mask
            if allowed[idx_tree >> ushift] != 0 and found < hits.shape[0]:
                hits[found] = base + j
                trees[found] = idx_tree
                leaves[found] = idx_leaf
                found += 1
        if found >= hits.shape[0]:
            return found
    return found


@njit(cache=True, nogil=True)
def _steps_x(outx, j, n):
    """``node_steps`` of the node in way ``j`` of an interleaved permutation output."""
    csum = 0
    for i in range(2 * n):
        b = i >> 1
        word = outx[WAYS * (b >> 3) + j]
        byte = np.int64((word >> np.uint64(8 * (b & 7))) & np.uint64(0xFF))
        digit = (byte >> 4) if (i & 1) == 0 else (byte & _W_MASK)
        csum += _W_MASK - digit
    steps = csum
    for c in range(3):
        steps += _W_MASK - ((csum >> (4 * (2 - c))) & _W_MASK)
    return steps


@njit(cache=True, nogil=True)
def grind_h_kernel(seed, n, lane0, lane1, lane2, lane3, node, node_right, salt, start, count,
                   best):  # fmt: skip
    """H(PK.seed, ADRS, node || cand) (``cand || node`` when ``node_right``) for the
    candidates ``salt`` with word 0 = counter, counters ``start .. start + count``;
    ``best`` = [counter, steps] of the one whose output has the most chain steps,
    updated only when a candidate beats ``best[1]``."""
    nw = n // 8
    thx = _make_template_xn(seed, nw, 2 * nw)
    _set_lane_xn(thx, nw, lane0)
    _set_lane_xn(thx, nw + 1, lane1)
    _set_lane_xn(thx, nw + 2, lane2)
    _set_lane_xn(thx, nw + 3, lane3)
    node_lane = 2 * nw + 4 if node_right else nw + 4
    cand_lane = nw + 4 if node_right else 2 * nw + 4
    for i in range(nw):
        _set_lane_xn(thx, node_lane + i, node[i])
        _set_lane_xn(thx, cand_lane + i, salt[i])
    outx = np.empty(25 * WAYS, dtype=np.uint64)
    for base in range(start, start + count, WAYS):
        for j in range(WAYS):
            thx[WAYS * cand_lane + j] = np.uint64(base + j)
        keccak_p1600_xn(thx, outx)
        for j in range(WAYS):
            s = _steps_x(outx, j, n)
            if s > best[1]:
                best[0] = base + j
                best[1] = s


@njit(cache=True, nogil=True)
def grind_fors_kernel(seed, n, k, lane1, keypair, roots, t, lane3, node, node_right, salt,
                      start, count, best):  # fmt: skip
    """As ``grind_h_kernel`` for the top node of FORS tree ``t``: the candidate root
    replaces ``roots[t]`` and the try is scored on T_k(roots) = the FORS public key."""
    nw = n // 8
    lane0 = np.uint64(0)
    thx = _make_template_xn(seed, nw, 2 * nw)
    _set_lane_xn(thx, nw, lane0)
    _set_lane_xn(thx, nw + 1, lane1)
    _set_lane_xn(thx, nw + 2, _adrs_pair(FORS_TREE, keypair))
    _set_lane_xn(thx, nw + 3, lane3)
    node_lane = 2 * nw + 4 if node_right else nw + 4
    cand_lane = nw + 4 if node_right else 2 * nw + 4
    for i in range(nw):
        _set_lane_xn(thx, node_lane + i, node[i])
        _set_lane_xn(thx, cand_lane + i, salt[i])
    rootsx = np.empty(WAYS * k * nw, dtype=np.uint64)
    for w in range(k * nw):
        for j in range(WAYS):
            rootsx[WAYS * w + j] = roots[w]
    lane2x = np.empty(WAYS, dtype=np.uint64)
    for j in range(WAYS):
        lane2x[j] = _adrs_pair(FORS_ROOTS, keypair)
    outx = np.empty(25 * WAYS, dtype=np.uint64)
    sx = np.empty(25 * WAYS, dtype=np.uint64)
    pks = np.empty(WAYS * nw, dtype=np.uint64)
    pkx = np.empty(25 * WAYS, dtype=np.uint64)
    for base in range(start, start + count, WAYS):
        for j in range(WAYS):
            thx[WAYS * cand_lane + j] = np.uint64(base + j)
        keccak_p1600_xn(thx, outx)
        for j in range(WAYS):
            for i in range(nw):
                rootsx[WAYS * (t * nw + i) + j] = outx[WAYS * i + j]
        _hash_t_xn(sx, seed, nw, lane0, lane1, lane2x, np.uint64(0), rootsx, k * nw, pks, 0)
        for j in range(WAYS):
            for i in range(nw):
                pkx[WAYS * i + j] = pks[j * nw + i]
        for j in range(WAYS):
            s = _steps_x(pkx, j, n)
            if s > best[1]:
                best[0] = base + j
                best[1] = s


@njit(cache=True, nogil=True)
def fors_below_top(seed, n, a, k, lane1, keypair, indices, sigw, soff, t, roots, below):
    """Every FORS root from the signature (``roots[k * n/8]``) and, for tree ``t``, the
    node one below its root (``below``): what ``grind_fors_kernel`` starts from."""
    nw = n // 8
    tf = _make_template(seed, nw, nw)
    th = _make_template(seed, nw, 2 * nw)
    _set_layer_tree(tf, nw, np.uint64(0), lane1)
    _set_layer_tree(th, nw, np.uint64(0), lane1)
    lane2 = _adrs_pair(FORS_TREE, keypair)
    tmp = np.empty(4, dtype=np.uint64)
    for i in range(k):
        idx = indices[i]
        leaf_index = (i << a) + idx
        base = soff + i * (a + 1) * nw
        _hash_f(tf, nw, lane2, _adrs_pair(0, leaf_index), sigw, base, roots, i * nw)
        height = a - 1 if i == t else a
        _climb(th, nw, lane2, leaf_index, roots, i * nw, idx, sigw, base + nw, height, tmp)
        if i == t:
            for w in range(nw):
                below[w] = roots[i * nw + w]


@njit(cache=True, nogil=True)
def xmss_below_top(seed, n, hp, layer, tree, leaf, message, sigw, soff, below):
    """The node one below the root of layer ``layer``'s XMSS tree as verification
    computes it from the signature's WOTS+ part at ``sigw[soff:]`` (its auth path
    follows) for the message node ``message``: what ``grind_h_kernel`` starts from."""
    nw = n // 8
    length = 2 * n + 3
    lane0 = _bswap32(layer)
    lane1 = _bswap64(np.uint64(tree))
    tf = _make_template(seed, nw, nw)
    th = _make_template(seed, nw, 2 * nw)
    _set_layer_tree(tf, nw, lane0, lane1)
    _set_layer_tree(th, nw, lane0, lane1)
    state = np.zeros(25, dtype=np.uint64)
    buf = np.empty(length * nw, dtype=np.uint64)
    _wots_pk_from_sig(tf, state, seed, nw, n, lane0, lane1, leaf, sigw, soff, message, 0, buf,
                      below, 0)  # fmt: skip
    tmp = np.empty(4, dtype=np.uint64)
    _climb(th, nw, _adrs_pair(TREE, 0), leaf, below, 0, leaf, sigw, soff + length * nw, hp - 1,
           tmp)  # fmt: skip
