"""Exact hash calls of one SLH-DSA-SHAKE verification, counted with qprof's kernels.

FIPS 205 verification makes, per signature:
  H_msg once; F: k FORS leaves + every WOTS+ chain step; H: k * a FORS nodes and
  d * h' XMSS nodes; T: one T_k (FORS roots) and d T_len (WOTS+ public keys); no PRF.
Only the chain steps depend on the signature: at each layer they are sum(15 - digit)
over the digits of the message node that layer signs, which ``walk_kernel`` computes
exactly as verification does (valid or not).  Mean and spread of a random layer follow
from the digits being uniform (``random_layer_steps``).  Calls are not all the same
work: ``Walk.permutations`` prices each in Keccak-f permutations (``slhdsa_keccak``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qprof.verify.slhdsa_keccak import HashCalls, KeccakPermutations, permutations_for_calls

W = 16


@dataclass(frozen=True)
class Walk:
    """What verifying one signature walked."""

    params: str
    valid: bool
    idx_tree: int
    idx_leaf: int
    layer_steps: tuple[int, ...]  # WOTS+ chain steps (F calls) per layer, layer 0 first
    layer_messages: tuple[bytes, ...]  # the node each layer's WOTS+ signature signs
    message_bytes: int = 0  # M and ctx: what H_msg absorbs beside R and the public key
    context_bytes: int = 0

    @property
    def calls(self) -> HashCalls:
        return calls_for_steps(_params()[self.params], sum(self.layer_steps))

    @property
    def permutations(self) -> KeccakPermutations:
        return permutations_for_calls(_params()[self.params], self.calls,
                                      self.message_bytes, self.context_bytes)


def nb_module(name: str) -> Any:
    """A kernel module of ``qprof.verify.nb``, imported by name (as the numba backend
    does): its functions take numba's types, which mypy does not check."""
    return importlib.import_module(f"qprof.verify.nb.{name}")


# nb.slhdsa_params.SlhParams: a plain dataclass, reached through nb_module like the kernels
SlhParams = Any


def _params() -> dict[str, SlhParams]:
    params: dict[str, SlhParams] = nb_module("slhdsa_params").PARAMS
    return params


def calls_for_steps(p: SlhParams, chain_steps: int) -> HashCalls:
    return HashCalls(f=p.k + chain_steps, h=p.k * p.a + p.d * p.hp, t=1 + p.d, hmsg=1)


def params_of(suite: str) -> SlhParams:
    """ValueError for a suite that is not SLH-DSA-SHAKE."""
    known = _params()
    p = known.get(suite)
    if p is None:
        raise ValueError(f"{suite} is not an SLH-DSA-SHAKE parameter set; known: "
                         f"{', '.join(known)}")
    return p


def walk(suite: str, public_key: bytes, message: bytes, signature: bytes,
         context: bytes = b"") -> Walk:
    """The walk of one verification; ValueError for wrong lengths or an unknown suite."""
    import numpy as np  # heavy: only where a count is computed

    walk_kernel = nb_module("slhdsa_walk").walk_kernel
    p = params_of(suite)
    if len(public_key) != p.public_key_bytes or len(signature) != p.signature_bytes:
        raise ValueError(f"{suite}: public key must be {p.public_key_bytes} bytes and the "
                         f"signature {p.signature_bytes}")
    if len(context) > 255:
        raise ValueError("context longer than 255 bytes")
    nw = p.n // 8
    steps = np.zeros(p.d, dtype=np.int64)
    messages = np.zeros(p.d * nw, dtype=np.uint64)
    where = np.zeros(2, dtype=np.int64)
    valid = walk_kernel(
        p.n, p.h, p.d, p.hp, p.a, p.k, p.m,
        np.frombuffer(bytes(public_key), dtype=np.uint8),
        np.frombuffer(bytes(message), dtype=np.uint8),
        np.frombuffer(bytes(signature), dtype=np.uint8),
        np.frombuffer(bytes(context), dtype=np.uint8),
        steps, messages, where,
    )  # fmt: skip
    raw = messages.astype("<u8").tobytes()
    return Walk(
        params=suite, valid=bool(valid), idx_tree=int(where[0]), idx_leaf=int(where[1]),
        layer_steps=tuple(int(s) for s in steps),
        layer_messages=tuple(raw[i * p.n:(i + 1) * p.n] for i in range(p.d)),
        message_bytes=len(message), context_bytes=len(context),
    )


def count_calls(suite: str, public_key: bytes, message: bytes, signature: bytes,
                context: bytes = b"") -> HashCalls:
    return walk(suite, public_key, message, signature, context).calls


def node_steps(node: bytes) -> int:
    """Chain steps WOTS+ verification walks for the message node ``node``."""
    csum = 0
    for byte in node:
        csum += (W - 1 - (byte >> 4)) + (W - 1 - (byte & 15))
    return csum + sum(W - 1 - ((csum >> (4 * (2 - c))) & 15) for c in range(3))


@dataclass(frozen=True)
class LayerDistribution:
    """Chain steps of one layer whose message node is uniformly random."""

    mean: float
    sd: float
    most: int  # every message digit 0: the most the structure allows


@functools.cache
def _layer_steps_pmf(n: int) -> tuple[float, ...]:
    """P(one layer walks k chain steps), k = 0..most, its message digits uniform: the
    digit sum's distribution by convolution, then each sum's checksum chains."""
    import numpy as np  # heavy: only where a count is computed

    dist = np.zeros(1, dtype=np.float64)
    dist[0] = 1.0
    one = np.full(W, 1.0 / W)
    for _ in range(2 * n):
        dist = np.convolve(dist, one)
    csums = np.arange(dist.size)  # sum of (15 - digit) has the same distribution
    steps = np.array([c + sum(W - 1 - ((c >> (4 * (2 - i))) & 15) for i in range(3))
                      for c in csums], dtype=np.int64)
    pmf = np.zeros(int(steps.max()) + 1, dtype=np.float64)
    np.add.at(pmf, steps, dist)
    return tuple(float(x) for x in pmf)


@functools.cache
def random_layer_steps(n: int) -> LayerDistribution:
    """Exact mean and spread of one layer's chain steps (message digits uniform)."""
    import numpy as np  # heavy: only where a count is computed

    pmf = np.array(_layer_steps_pmf(n))
    k = np.arange(pmf.size)
    mean = float((pmf * k).sum())
    sd = float(np.sqrt((pmf * (k - mean) ** 2).sum()))
    return LayerDistribution(mean, sd, int(np.flatnonzero(pmf)[-1]))


@functools.cache
def signature_steps_cdf(suite: str) -> tuple[float, ...]:
    """P(verifying a random signature of ``suite`` walks at most k chain steps), k = 0..:
    the d layers' messages are independent hash outputs, so the layers' distribution
    convolved d times. What a pool of signatures is held against (its mix of costs
    against every signature's: ``qprof.consensus.estimate.poolmix``)."""
    import numpy as np  # heavy: only where a count is computed

    p = params_of(suite)
    layer = np.array(_layer_steps_pmf(p.n))
    total = np.ones(1, dtype=np.float64)
    for _ in range(p.d):
        total = np.convolve(total, layer)
    return tuple(float(x) for x in np.minimum(np.cumsum(total), 1.0))


@functools.cache
def most_chain_steps(suite: str) -> int:
    """The most chain steps one verification of ``suite`` can walk: every layer's
    message digits 0. ValueError for a suite that is not SLH-DSA-SHAKE."""
    p = params_of(suite)
    return p.d * node_steps(bytes(p.n))


@functools.cache
def median_chain_steps(suite: str) -> int:
    """The median signature's chain steps (``signature_steps_cdf`` reaches 1/2)."""
    import numpy as np  # heavy: only where a count is computed

    return int(np.searchsorted(np.asarray(signature_steps_cdf(suite)), 0.5))


def fixed_permutations(suite: str, message_bytes: int, context_bytes: int) -> int:
    """Permutations every verification of ``suite`` makes whatever its signature: all
    but the chain steps (F is one permutation, so each step adds one)."""
    p = params_of(suite)
    return permutations_for_calls(p, calls_for_steps(p, 0), message_bytes,
                                  context_bytes).total


def impossible_counts(suite: str, permutations: Sequence[int], fixed: int) -> str | None:
    """Why ``permutations`` (per signature, ``fixed`` of them made by every one) cannot
    be verifications of ``suite``; None when each is possible (or the suite is not one
    qprof counts). What a cache or record of counts is checked against."""
    try:
        least, most = fixed_permutations(suite, 0, 0), most_chain_steps(suite)
    except ValueError:
        return None
    if fixed < least:
        return f"{suite} makes at least {least} permutations besides its chain steps"
    worst = max(permutations, default=fixed) - fixed
    if worst > most:
        return (f"{suite}: {worst} chain steps in one signature, at most {most} are "
                "possible")
    return None
