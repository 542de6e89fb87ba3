"""What a run measures: resolved names, the tasks of each round, and the planned seconds.

A/B/A/B/A rounds: A the unit suite, B the other suites (interleaved rounds time both, in
turns). After the base rounds the stopping rule the engine is handed
(:mod:`qprof.measure.adaptive`) may add B/A pairs, which time only what the verdict
needs (:data:`VERDICT_OPS`).
"""

from __future__ import annotations

from dataclasses import replace

from qprof.measure.config import DUAL_OPS, KEM_OPS, QANUM_SUITES, WALLET_OPS, BenchConfig
from qprof.measure.protocol import Task
from qprof.measure.units import NO_PROFILE_UNIT
from qprof.verify import KEMS, SUITES, BackendStatus, available_backends

SPAWN_COST_S = 1.0  # python + pyperf + backend imports per worker, for the ETA
SECOND_VERIFIERS = ("numba", "rustcrypto", "openssl", "reference")
SLOW_SIGN_FAMILY_SUFFIX = "s"  # SLH-DSA "s" variants sign in ~1 s
# What the adaptive rounds pin down (the Verify-Unit verdict), and all extra rounds time.
VERDICT_OPS = ("verify",)
NoteText = tuple[str, str, str]  # (level, kind, text)


class EngineError(RuntimeError):
    """The run cannot start (no usable backend, bad suite...)."""


class Plan:
    """Resolved names: what to measure with which backends on which CPUs."""

    def __init__(self, config: BenchConfig) -> None:
        self.config = config
        self.mode = config.settings()
        self.statuses: dict[str, BackendStatus] = available_backends()
        self.notes: list[NoteText] = []
        if config.profile and not config.suites:
            # The profile is the consensus layer's: its caller resolves it into suites and
            # unit (qprof.consensus.estimate.stopping.rule_for); here it is a label.
            raise EngineError(f"profile {config.profile!r} given but not resolved into suites")
        self.unit = config.unit_suite or NO_PROFILE_UNIT.suite
        suites = list(config.suites or QANUM_SUITES)
        for name in [*suites, self.unit]:
            if name not in SUITES:
                raise EngineError(f"unknown suite {name!r}; known suites: {', '.join(SUITES)}")
        self.suites = [self.unit] + [s for s in suites if s != self.unit]
        self.others = self.suites[1:]
        self.backends = self._backends()
        self.operations = list(config.operations or self.mode.operations)
        self.dual = self._dual() if any(op in DUAL_OPS for op in self.operations) else None
        liboqs = self.statuses.get("liboqs")
        wants_kem = any(op in KEM_OPS for op in self.operations)
        self.kem = liboqs is not None and liboqs.available and wants_kem
        if wants_kem and not self.kem:
            self.notes.append(("warning", "kem_skipped", "ML-KEM-1024 skipped: liboqs unavailable"))
        self.kem_name = next(iter(KEMS), "ML-KEM-1024")
        s = self.mode
        self.budget = config.budget_s or s.budget_s
        self.wallet_budget = s.wallet_budget_s if config.budget_s is None else config.budget_s
        self.min_n = config.min_n or s.min_n
        self.max_n = config.max_n or s.max_n
        self.rounds = config.rounds or s.rounds
        self.interleave_block_s = (
            s.interleave_block_s if config.interleave_block_s is None
            else max(0.0, config.interleave_block_s)
        )
        self.max_rounds = max(self.rounds, config.max_rounds or s.max_rounds)
        self.min_cpu_s = s.min_cpu_s if config.min_cpu_s is None else config.min_cpu_s
        self.per_worker = max(1, config.rounds_per_worker or s.rounds_per_worker
                              or self.rounds)

    def _backends(self) -> list[str]:
        cfg = self.config.backends
        if cfg:
            for b in cfg:
                st = self.statuses.get(b)
                if st is None:
                    raise EngineError(
                        f"unknown backend {b!r}; known backends: {', '.join(self.statuses)}"
                    )
                if not st.available:
                    raise EngineError(f"backend {b} unavailable: {st.reason}")
            return list(cfg)
        if self.statuses.get("liboqs") and self.statuses["liboqs"].available:
            return ["liboqs"]
        for b in SECOND_VERIFIERS:
            st = self.statuses.get(b)
            if st and st.available and all(s in st.suites for s in self.suites):
                self.notes.append((
                    "warning", "backend_default",
                    f"liboqs unavailable ({self.statuses['liboqs'].reason}); "
                    f"measuring with {b} instead",
                ))
                return [b]
        raise EngineError(
            "no verifier backend implements all of " + ", ".join(self.suites) + " here: "
            + "; ".join(f"{n}: {st.reason}" for n, st in self.statuses.items())
        )

    def _dual(self) -> tuple[str, str] | None:
        if self.config.dual:
            return self.config.dual
        liboqs = self.statuses.get("liboqs")
        if not liboqs or not liboqs.available:
            self.notes.append(("info", "dual_skipped", "dual modes skipped: liboqs unavailable"))
            return None
        for b in SECOND_VERIFIERS:
            st = self.statuses.get(b)
            if st and st.available and all(s in st.suites for s in self.suites):
                if b != "numba":
                    self.notes.append((
                        "info", "dual_pair",
                        f"second verifier is {b}: numba does not implement all of "
                        + ", ".join(self.suites),
                    ))
                return ("liboqs", b)
        self.notes.append(("info", "dual_skipped", "dual modes skipped: no second verifier"))
        return None

    def supports(self, backend: str, suite: str) -> bool:
        st = self.statuses.get(backend)
        return bool(st and st.available and suite in st.suites)

    def verify_tasks(self, suites: list[str]) -> list[Task]:
        tasks = []
        for suite in suites:
            for op in self.operations:
                if op in ("verify", "verify_invalid"):
                    tasks += [self._task(suite, b, op, self.budget)
                              for b in self.backends if self.supports(b, suite)]
                elif (op in DUAL_OPS and self.dual
                      and all(self.supports(b, suite) for b in self.dual)):
                    tasks.append(replace(self._task(suite, "+".join(self.dual), op, self.budget),
                                         dual=self.dual))
        return tasks

    def wallet_tasks(self) -> list[Task]:
        tasks = []
        for op in self.operations:
            if op in WALLET_OPS:
                for suite in self.suites:
                    for b in self.backends:
                        st = self.statuses.get(b)
                        if not (st and st.can_sign and suite in st.suites):
                            continue
                        slow = suite.startswith("SLH-DSA") and suite.endswith(
                            SLOW_SIGN_FAMILY_SUFFIX)
                        if op == "sign" and slow and not self.mode.sign_slow:
                            continue
                        min_n = 3 if slow else self.min_n
                        tasks.append(self._task(suite, b, op, self.wallet_budget, min_n))
            elif op in KEM_OPS and self.kem:
                tasks.append(self._task(self.kem_name, "liboqs", op, self.wallet_budget))
        return tasks

    def _task(self, suite: str, backend: str, op: str, budget: float,
              min_n: int | None = None) -> Task:
        return Task(suite=suite, backend=backend, operation=op, budget_s=budget,
                    min_n=min_n or self.min_n, max_n=self.max_n)

    # -- rounds
    @property
    def a_tasks(self) -> list[Task]:
        return self.verify_tasks([self.unit])

    @property
    def b_tasks(self) -> list[Task]:
        return self.verify_tasks(self.others)

    def round_tasks(self, k: int) -> list[Task]:
        """Round k's tasks: A (even) or B (odd); interleaved, every round has both (in
        turns). Rounds past the base ones are extra: the verdict's tasks only."""
        a, b = self.a_tasks, self.b_tasks
        if k >= self.rounds:
            a, b = extra_tasks(a), extra_tasks(b)
        chosen = a + b if self.interleave_block_s > 0 else (a if k % 2 == 0 else b)
        return [replace(t, round=k) for t in chosen]

    @property
    def serves(self) -> bool:
        """Interleaved adaptive runs whose base rounds shared one worker time their extra
        rounds in it too (each process has its own speed: a new one would be a round of
        another kind); with a process per round, each extra round gets its own."""
        return (self.interleave_block_s > 0 and bool(self.config.adaptive)
                and self.max_rounds >= self.rounds + 2 and self.per_worker > 1)

    @property
    def max_pairs(self) -> int:
        """Extra B/A pairs a CPU may add."""
        return (self.max_rounds - self.rounds) // 2 if self.config.adaptive else 0

    def pair_budget(self) -> float:
        """Planned seconds of one extra B/A pair (verdict tasks only, no worker start)."""
        one = sum(t.budget_s for t in extra_tasks(self.a_tasks) + extra_tasks(self.b_tasks))
        return 2 * one if self.interleave_block_s > 0 else one

    def pair_spawn_s(self) -> float:
        """Planned seconds of the worker starts of one extra pair (its two rounds, in
        blocks of ``per_worker``; none when the base rounds' worker serves them)."""
        return 0.0 if self.serves else -(-2 // self.per_worker) * SPAWN_COST_S

    def pair_work(self) -> float:
        """Planned seconds of one extra pair, worker starts included."""
        return self.pair_budget() + self.pair_spawn_s()

    def cpu_work(self) -> float:
        """Planned seconds of one CPU's base rounds and wallet tasks, workers included."""
        a = sum(t.budget_s for t in self.a_tasks)
        b = sum(t.budget_s for t in self.b_tasks)
        workers = -(-self.rounds // self.per_worker)
        if self.interleave_block_s > 0:
            work = self.rounds * (a + b) + workers * SPAWN_COST_S
        else:
            work = (self.rounds + 1) // 2 * a + self.rounds // 2 * b + workers * SPAWN_COST_S
        wallet = self.wallet_tasks()
        if wallet:
            work += sum(t.budget_s for t in wallet) + SPAWN_COST_S
        return work


def extra_tasks(tasks: list[Task]) -> list[Task]:
    """An extra round's tasks: the verdict's (all of them if the run has none)."""
    return [t for t in tasks if t.operation in VERDICT_OPS] or tasks


def rounds_verify(tasks: list[Task]) -> bool:
    """Verify rounds are interleaved; keygen/sign/KEM (after the rounds) run one by one."""
    return all(t.operation not in WALLET_OPS + KEM_OPS for t in tasks)


def interleaving_text(block_s: float) -> str:
    if block_s > 0:
        return (f"A/B/A/B/A in turns of {block_s * 1e3:.0f} ms inside every round: "
                "A = unit suite, B = the other suites, so each round gives the unit and "
                "every suite timed over the same stretch of time")
    return "A/B/A/B/A: A = unit suite, B = the other suites"
