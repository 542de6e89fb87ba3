"""One adversary run: random, costliest, ground and crafted signatures, timed together.

For an SLH-DSA suite: fresh random signatures (the baseline), the pool's costliest,
valid ones ground by the key owner (:mod:`qprof.verify.adversary.ground`) and an invalid
one crafted layer by layer (:mod:`qprof.verify.adversary.crafted`); for ML-DSA the
rejections that fail last. All are timed in one pinned worker, round by round
(:mod:`qprof.measure.sigtime`), and each ratio is paired per round against the random
signatures' median, so contention falls on both. The cost model is fitted on each
signature's quickest round (contention only adds time; why: docs/ADVERSARY.md).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from qprof.atomicfile import write_private
from qprof.hw.sysfs import kernel_text
from qprof.measure.adversary_progress import Bar, ClockBar
from qprof.measure.costmodel import Distribution, PermutationModel
from qprof.measure.fixtures import CONTEXT, MESSAGE, cache_dir
from qprof.measure.sigpool import (
    DEFAULT_SIZE,
    PoolSignature,
    SigCounts,
    sig_counts,
    signature_pool,
)
from qprof.measure.sigtime import DEFAULT_ROUNDS, SigItem, SigTiming, time_signatures
from qprof.verify import backend_status, get_signer, get_verifier
from qprof.verify.adversary.crafted import craft_invalid
from qprof.verify.adversary.ground import ValidGrinder, sign_candidate
from qprof.verify.adversary.keys import SlhSecret
from qprof.verify.adversary.mldsa import rejections
from qprof.verify.slhdsa_calls import walk

KINDS = ("random", "costliest", "ground", "crafted_invalid")
RANDOM_SIGNATURES = 16
MIN_RANDOM = 5  # the baseline's median needs a few, whatever the budget
MIN_POOL = 4  # the pool's costliest and the cost model's fit
GROUND_KEPT = 2  # ground signatures kept (each signed after the grinding)
MIN_GRIND_S = 3.0  # grinding finds a ground and a crafted signature, whatever the budget
# Of a suite's budget (--minutes bounds the whole command): signing the random ones and
# the pool's top-up at most this share (a cached pool costs nothing), the timing kept
# this one; grinding has the rest, the valid search this share of it.
SIGNING_SHARE = 0.35
TIMING_SHARE = 0.2
ROUND_ITEM_S = 0.012  # one signature's turn in a timing round (4 ms of calls, overhead)
MIN_ROUNDS = 9  # the ratios' intervals need a few rounds, whatever the budget
VALID_SHARE = 0.75  # the crafted search saturates sooner
BOOTSTRAP = 2000


class AdversaryError(RuntimeError):
    """The run cannot be done here (message says why)."""


@dataclass(frozen=True)
class AdversarySignature:
    kind: str
    item: SigItem
    valid: bool  # liboqs's verdict
    hash_calls: int | None
    verify_ns: float  # liboqs, median of the rounds
    values_ns: tuple[float, ...]  # liboqs, per round
    numba_ns: float | None = None
    label: str = ""
    permutations: int | None = None  # Keccak-f[1600] permutations (SLH-DSA)

    @property
    def quickest_ns(self) -> float:
        """liboqs, the quickest round: what the cost model predicts."""
        return min(self.values_ns)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "kind": self.kind, "suite": self.item.suite, "pk": self.item.public_key.hex(),
            "msg": self.item.message.hex(), "ctx": self.item.context.hex(),
            "sig": self.item.signature.hex(), "valid": self.valid,
            "hash_calls": self.hash_calls, "keccak_permutations": self.permutations,
            "verify_ns": round(self.verify_ns, 1), "quickest_ns": round(self.quickest_ns, 1),
        }
        if self.label:
            d["label"] = self.label
        if self.numba_ns is not None:
            d["numba_verify_ns"] = round(self.numba_ns, 1)
        return d


@dataclass(frozen=True)
class Ratio:
    """A signature's liboqs time over the random median, with its 95 % interval
    (bootstrap over rounds of the per-round ratios)."""

    value: float
    low: float
    high: float


@dataclass
class AdversaryRun:
    suite: str
    cpu: int
    cpu_model: str
    minutes: float
    rounds: int
    signatures: list[AdversarySignature]
    grind: dict[str, Any] = field(default_factory=dict)
    pool: dict[str, Any] = field(default_factory=dict)

    def of_kind(self, kind: str) -> list[AdversarySignature]:
        return [s for s in self.signatures if s.kind == kind]

    @property
    def baseline_ns(self) -> float:
        return statistics.median(s.verify_ns for s in self.of_kind("random"))

    @property
    def numba_baseline_ns(self) -> float | None:
        values = [s.numba_ns for s in self.of_kind("random") if s.numba_ns is not None]
        return statistics.median(values) if values else None

    def ratio(self, sig: AdversarySignature, seed: int = 20) -> Ratio:
        randoms = self.of_kind("random")
        per_round = [v / statistics.median(r.values_ns[i] for r in randoms)
                     for i, v in enumerate(sig.values_ns)]
        rng = random.Random(seed)
        boots = sorted(statistics.median(rng.choices(per_round, k=len(per_round)))
                       for _ in range(BOOTSTRAP))
        # The median of the round-paired ratios, the figure its interval is of: the ratio
        # of the two medians mixed contended rounds of one with quiet ones of the other
        # (AMD EPYC guest: a crafted 128s signature read 1.63x so, 1.46x by quickest
        # rounds, outside its own round-paired interval 1.43-1.63 but for the clamp).
        value = statistics.median(per_round)
        low, high = boots[int(0.025 * BOOTSTRAP)], boots[int(0.975 * BOOTSTRAP) - 1]
        return Ratio(value, min(low, value), max(high, value))

    def worst(self, kind: str) -> tuple[AdversarySignature, Ratio] | None:
        sigs = self.of_kind(kind)
        if not sigs:
            return None
        top = max(sigs, key=lambda s: s.verify_ns)
        return top, self.ratio(top)

    def to_json_list(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in self.signatures]

    def summary(self) -> dict[str, Any]:
        """What the verdict's worst-signature figure needs (no signature bytes)."""
        worst = {}
        for kind in KINDS[1:]:
            w = self.worst(kind)
            if w:
                worst[kind] = {"ratio": w[1].value, "low": w[1].low, "high": w[1].high,
                               "hash_calls": w[0].hash_calls,
                               "permutations": w[0].permutations, "label": w[0].label}
        return {"suite": self.suite, "cpu": self.cpu, "cpu_model": self.cpu_model,
                "minutes": self.minutes, "rounds": self.rounds,
                "baseline_ns": self.baseline_ns, "worst": worst, "grind": self.grind,
                "pool": self.pool, "measured_at": time.time()}


ADVERSARY_DIR_ENV = "QPROF_ADVERSARY_DIR"


def adversary_dir() -> Path:
    """$QPROF_ADVERSARY_DIR, else ``adversary`` beside the fixtures' cache."""
    return Path(os.environ.get(ADVERSARY_DIR_ENV) or cache_dir().parent / "adversary")


def summary_path(suite: str, directory: Path | None = None) -> Path:
    """Where the last run's summary and signatures are kept (``qprof block
    --adversarial`` and the verdict read them)."""
    return (directory or adversary_dir()) / f"{suite}.last.json"


def save_last(run: AdversaryRun, directory: Path | None = None) -> Path:
    """Keep the run as the suite's last (whole or not at all; OutputError says why)."""
    path = summary_path(run.suite, directory)
    return write_private(path.parent, path.name, json.dumps({
        "summary": run.summary(), "signatures": run.to_json_list()}))


def cpu_model_name(root: str = "/") -> str:
    try:
        for line in kernel_text(Path(root, "proc/cpuinfo")).splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


Say = Callable[[str], None]


def _timed(kind: str, items: Sequence[SigItem], timings: Sequence[Sequence[SigTiming]],
           counts: Sequence[SigCounts | None],
           labels: Sequence[str]) -> list[AdversarySignature]:
    out = []
    for item, row, c, label in zip(items, timings, counts, labels, strict=True):
        lib = row[0]
        numba = row[1].median_ns if len(row) > 1 else None
        out.append(AdversarySignature(kind, item, lib.accepted, c.hash_calls if c else None,
                                      lib.median_ns, lib.values_ns, numba, label,
                                      c.permutations if c else None))
    return out


def _slh_signatures(suite: str, deadline: float, pool_size: int, say: Say,
                    grind: dict[str, Any], stream: TextIO | None
                    ) -> tuple[list[tuple[str, SigItem, str]], list[PoolSignature]]:
    """The random, costliest, ground and crafted signatures and the pool, all done by
    ``deadline`` (time.monotonic) but for the least a figure needs (``MIN_RANDOM``
    random signatures, ``MIN_POOL`` of the pool), the timing's share kept for it."""
    t0 = time.monotonic()
    budget = max(deadline - t0, 0.0)
    signer = get_signer("liboqs", suite)
    verifier = get_verifier("liboqs", suite)
    pk, sk = signer.keypair()
    secret = SlhSecret.parse(suite, sk)
    chosen: list[tuple[str, SigItem, str]] = []
    bar = Bar(f"signing {suite} random", RANDOM_SIGNATURES, stream)
    randoms_until = t0 + SIGNING_SHARE * budget / 2
    while len(chosen) < RANDOM_SIGNATURES and (len(chosen) < MIN_RANDOM
                                               or time.monotonic() < randoms_until):
        chosen.append(("random", SigItem(suite, pk, MESSAGE,
                                         signer.sign(sk, MESSAGE, CONTEXT), CONTEXT), ""))
        bar.step()
    bar.close()
    sign_s = (time.monotonic() - t0) / len(chosen)
    bar = Bar(f"signing {suite} pool", pool_size, stream)
    pool = signature_pool(suite, pool_size, deadline=max(
        t0 + SIGNING_SHARE * budget, time.monotonic() + MIN_POOL * sign_s),
        on_signed=lambda n, _size: bar.set(n))
    bar.set(len(pool))
    bar.close()
    for ps in sorted(pool, key=lambda s: -(s.hash_calls or 0))[:2]:
        chosen.append(("costliest", ps.item, f"costliest of {len(pool)}"))
    grinder = ValidGrinder(secret, MESSAGE, CONTEXT, seed=int.from_bytes(os.urandom(8)))
    grinder.root_steps(0, 0)  # compile / load the kernels before the clock starts
    grinder.fors_steps(0)
    base = chosen[0][1].signature
    craft_invalid(suite, pk, MESSAGE, base, CONTEXT, seconds=0)  # compile / load
    # What is left, less the timing's share and the ground signatures' signing.
    seconds = max(deadline - time.monotonic() - TIMING_SHARE * budget - GROUND_KEPT * sign_s,
                  MIN_GRIND_S)
    with ClockBar(f"grinding {suite} valid", VALID_SHARE * seconds, stream):
        found = grinder.grind(VALID_SHARE * seconds, keep=GROUND_KEPT)
    st = grinder.stats
    grind["valid"] = {
        "cpu_seconds": st.cpu_seconds, "seconds": st.seconds, "trees": st.trees,
        "fors_keys": st.fors_keys, "landing_tries": st.landing_tries, "hits": st.hits,
        "complete": st.complete, "fixed_layers": st.fixed_layers,
        "best_steps": [c.steps for c in found], "random_mean_steps": grinder.p.d * grinder.mean,
        "trajectory": st.best_steps[-50:],
    }
    if found:
        say(f"signing the {len(found)} ground signature(s) ...")
    for cand in found:
        sig = sign_candidate(secret, MESSAGE, CONTEXT, cand)
        w = walk(suite, pk, MESSAGE, sig, CONTEXT)
        if not (verifier.verify(pk, MESSAGE, sig, CONTEXT) and w.valid
                and w.layer_steps == cand.layer_steps):
            raise AdversaryError(f"{suite}: the ground signature at address {cand.address} "
                                 "did not verify as predicted")
        chosen.append(("ground", SigItem(suite, pk, MESSAGE, sig, CONTEXT),
                       f"ground {st.cpu_seconds:.0f} CPU-s"))
    share = max(deadline - time.monotonic() - TIMING_SHARE * budget,
                (1 - VALID_SHARE) * MIN_GRIND_S)
    with ClockBar(f"crafting {suite} invalid", share, stream):
        crafted = craft_invalid(suite, pk, MESSAGE, base, CONTEXT, seconds=share,
                                salt=os.urandom(len(secret.pk_seed)))
    if verifier.verify(pk, MESSAGE, crafted.signature, CONTEXT):
        raise AdversaryError(f"{suite}: liboqs accepted the crafted signature")
    grind["crafted"] = {"cpu_seconds": crafted.cpu_seconds, "seconds": crafted.seconds,
                        "tries_per_layer": list(crafted.tries),
                        "layer_steps": list(crafted.layer_steps)}
    chosen.append(("crafted_invalid", SigItem(suite, pk, MESSAGE, crafted.signature, CONTEXT),
                   "one node per layer ground"))
    return chosen, pool


def _mldsa_signatures(suite: str, pool_size: int, say: Say) -> list[tuple[str, SigItem, str]]:
    signer = get_signer("liboqs", suite)
    pk, sk = signer.keypair()
    say(f"signing {RANDOM_SIGNATURES} random signatures (liboqs) ...")
    chosen = [("random", SigItem(suite, pk, MESSAGE, signer.sign(sk, MESSAGE, CONTEXT),
                                 CONTEXT), "") for _ in range(RANDOM_SIGNATURES)]
    pool = signature_pool(suite, min(pool_size, 16))
    chosen.append(("costliest", pool[0].item, "a pool signature (ML-DSA: no chain cost)"))
    for rej in rejections(suite, chosen[0][1].signature):
        chosen.append(("crafted_invalid", SigItem(suite, pk, MESSAGE, rej.signature, CONTEXT),
                       f"rejected at the {rej.label}"))
    return chosen


def run_adversary(suite: str, minutes: float, cpu: int, *, pool_size: int = DEFAULT_SIZE,
                  rounds: int = DEFAULT_ROUNDS, dual: bool = True,
                  say: Say = lambda _: None, deadline: float | None = None,
                  stream: TextIO | None = None) -> AdversaryRun:
    """One suite's run, done by ``deadline`` (time.monotonic; default ``minutes`` from
    now) but for the least a figure needs; progress bars on ``stream`` (None: stderr)."""
    status = backend_status("liboqs")
    if not status.available or suite not in status.suites:
        raise AdversaryError(f"{suite}: liboqs is needed to sign and time ({status.reason})")
    grind: dict[str, Any] = {}
    pool: list[PoolSignature] = []
    end = time.monotonic() + 60 * minutes if deadline is None else deadline
    if suite.startswith("SLH-DSA"):
        chosen, pool = _slh_signatures(suite, end, pool_size, say, grind, stream)
    elif suite.startswith("ML-DSA"):
        chosen = _mldsa_signatures(suite, pool_size, say)
    else:
        raise AdversaryError(f"{suite}: only ML-DSA and SLH-DSA suites")
    backends = ["liboqs"]
    numba = backend_status("numba")
    if dual and numba.available and suite in numba.suites:
        backends.append("numba")
    items = [c[1] for c in chosen]
    # The rounds the time left allows (never fewer than MIN_ROUNDS, nor more than asked).
    per_round = (len(items) + len(pool)) * len(backends) * ROUND_ITEM_S
    rounds = min(rounds, max(MIN_ROUNDS, int(max(end - time.monotonic(), 0.0) / per_round)))
    # The pool is timed in the same job, so the fit and the ratios share its phases.
    say(f"timing {len(items)} signatures and the pool of {len(pool)} on CPU {cpu} "
        f"({rounds} rounds, {' and '.join(backends)}) ...")
    timings = time_signatures(items + [p.item for p in pool], cpu, rounds, backends)
    counts = [sig_counts(i) for i in items]
    sigs: list[AdversarySignature] = []
    for kind in KINDS:
        idx = [i for i, c in enumerate(chosen) if c[0] == kind]
        sigs += _timed(kind, [items[i] for i in idx], [timings[i] for i in idx],
                       [counts[i] for i in idx], [chosen[i][2] for i in idx])
    run = AdversaryRun(suite, cpu, cpu_model_name(), minutes, rounds, sigs, grind)
    if pool:
        run.pool = _pool_profile(pool, [t[0] for t in timings[len(items):]], run)
    return run


def _pool_profile(pool: Sequence[PoolSignature], timings: Sequence[SigTiming],
                  run: AdversaryRun) -> dict[str, Any]:
    """The pool's distribution and the time-per-permutation fit on it, with the fit's
    largest error over each kind: the pool it was fitted on, and the signatures outside
    it (random, costliest, ground, crafted).  Errors are signed, predicted over measured
    - 1, on quickest rounds."""
    perms = [p.permutations or 0 for p in pool]
    quickest = [min(t.values_ns) for t in timings]
    model = PermutationModel.fit(perms, quickest)
    errors: dict[str, float] = {
        "pool": max((model.error(x, y) for x, y in zip(perms, quickest, strict=True)),
                    key=abs)}
    for kind in KINDS:
        sigs = [s for s in run.of_kind(kind) if s.permutations]
        if sigs:
            errors[kind] = max((model.error(s.permutations or 0, s.quickest_ns) for s in sigs),
                               key=abs)
    return {"time_ns": asdict(Distribution.of([t.median_ns for t in timings])),
            "quickest_ns": asdict(Distribution.of(quickest)),
            "hash_calls": asdict(Distribution.of([float(p.hash_calls or 0) for p in pool])),
            "permutations": asdict(Distribution.of([float(x) for x in perms])),
            "model": asdict(model), "model_max_error": errors}
