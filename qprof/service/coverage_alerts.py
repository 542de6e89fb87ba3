"""Alerts on a verdict's state, not only on its flips: a NOT covered suite where the
ratio binds (the worst signature's figure where the profile holds its constants to it)
and a worst-case block over its time bound are announced at first sight, again after the
re-notify interval, and once in the first cycle after a restart; their end follows, also
across a restart (the store's alert log says what was last announced). The words are
``consensus.verdict``'s; :func:`verdict_line` is each cycle's log line."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from qprof.consensus.verdict import TIME_WORDS
from qprof.consensus.verdict_types import WORDS, CoverageResult
from qprof.service.alerts import Alert, AlertDispatcher
from qprof.service.store_alerts import AlertLog

_log = logging.getLogger("qprof.daemon")

Why = Literal["new", "after_restart", "reminder", "ended"]


@dataclass(frozen=True)
class AlertPair:
    """The kinds of one state: raised while it holds, and when it ends."""

    raised: str
    ended: str


COVERAGE = AlertPair("coverage_lost", "coverage_regained")
BLOCK_TIME = AlertPair("block_time_exceeded", "block_time_restored")
PAIRS = (COVERAGE, BLOCK_TIME)


@dataclass(frozen=True)
class StateKey:
    """What one state is about: the pair, the CPU, the suite (None: the CPU's time bound)
    and the backend."""

    pair: AlertPair
    cpu: int
    suite: str | None
    backend: str


@dataclass(frozen=True)
class Announced:
    """The state last announced for a key, when, and whether this process said it (else
    the alert log did, before a restart)."""

    raised: bool
    ts: float
    here: bool


def key_of(alert: Alert) -> StateKey | None:
    """The key a stored alert of :data:`PAIRS` was about (None: another kind or an
    alert without its cpu or backend)."""
    pair = next((p for p in PAIRS if alert.kind in (p.raised, p.ended)), None)
    backend = alert.details.get("backend")
    if pair is None or alert.cpu is None or not isinstance(backend, str):
        return None
    suite = alert.details.get("suite") if pair is COVERAGE else None
    if pair is COVERAGE and not isinstance(suite, str):
        return None
    return StateKey(pair, alert.cpu, suite, backend)


def last_announced(alerts: Iterable[Alert]) -> dict[StateKey, Announced]:
    """Each key's newest announcement in ``alerts`` (given newest first, as the log's)."""
    out: dict[StateKey, Announced] = {}
    for a in alerts:
        key = key_of(a)
        if key is not None and key not in out:
            out[key] = Announced(a.kind == key.pair.raised, a.ts, here=False)
    return out


class StateAlerts:
    """Which states to announce now: a raised state at first sight (in this process: after
    a restart too, once), again once ``renotify_s`` passed (0: never again), its end once."""

    def __init__(self, renotify_s: float, before: Mapping[StateKey, Announced]) -> None:
        self.renotify_s = renotify_s
        self._last: dict[StateKey, Announced] = dict(before)

    def decide(self, key: StateKey, raised: bool, now: float) -> Why | None:
        last = self._last.get(key)
        why: Why | None = None
        if not raised:
            why = "ended" if last is not None and last.raised else None
        elif last is None or not last.raised:
            why = "new"
        elif not last.here:
            why = "after_restart"
        elif self.renotify_s > 0 and now - last.ts >= self.renotify_s:
            why = "reminder"
        if why is not None:
            self._last[key] = Announced(raised, now, here=True)
        return why


def announced_before(log: AlertLog) -> list[Alert]:
    """What the store's alert log last announced of each state (read after a restart);
    nothing, with a warning, when it cannot be read."""
    try:
        return log.newest_of(tuple(k for p in PAIRS for k in (p.raised, p.ended)))
    except sqlite3.Error as exc:
        _log.warning("store: the alerts announced before were not read: %s", exc)
        return []


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


class CoverageAlerts:
    """The daemon's coverage and time-bound alerts from each refresh's verdicts."""

    def __init__(self, alerts: AlertDispatcher, renotify_s: float,
                 stored: Callable[[], Iterable[Alert]] = tuple) -> None:
        """``stored``: the alert log before this process, read at the first update that
        announces."""
        self.alerts = alerts
        self.renotify_s = renotify_s
        self.stored = stored
        self.states: StateAlerts | None = None
        self._since: dict[StateKey, float] = {}  # when a raised state was first announced

    def update(self, coverage: list[CoverageResult], profile: str, announce: bool = True,
               now: float | None = None) -> list[Alert]:
        """Emit what the verdicts call for (nothing unless ``announce``: start-up, older
        runs' backfill); returns the alerts emitted."""
        if not announce:
            return []
        if self.states is None:
            self.states = StateAlerts(self.renotify_s, last_announced(self.stored()))
        now = time.time() if now is None else now
        out = []
        for c in coverage:
            if c.covered is not None and c.ratio_binds:
                # Comparison figures (covered None) and ratios that do not bind on this
                # core (the constants follow the reference cores): shown, never alerted.
                out += self._one(StateKey(COVERAGE, c.cpu, c.suite, c.backend),
                                 not c.covered, c, profile, now)
        seen: set[tuple[int, str]] = set()
        for c in coverage:
            if (c.basis != "node" or c.block_time_covered is None or c.block_time is None
                    or (c.cpu, c.backend) in seen):
                continue
            seen.add((c.cpu, c.backend))
            out += self._one(StateKey(BLOCK_TIME, c.cpu, None, c.backend),
                             not c.block_time_covered, c, profile, now)
        return out

    def _one(self, key: StateKey, raised: bool, c: CoverageResult, profile: str,
             now: float) -> list[Alert]:
        assert self.states is not None
        why = self.states.decide(key, raised, now)
        if why is None:
            return []
        if why in ("new", "after_restart"):
            self._since[key] = now
        since = self._since.pop(key, now) if why == "ended" else self._since.get(key, now)
        note = {"new": "", "ended": "",
                "after_restart": "; standing before the daemon restarted",
                "reminder": f"; still so, first announced {_when(since)}"}[why]
        kind = key.pair.raised if raised else key.pair.ended
        severity = "critical" if raised else "info"
        if key.pair is COVERAGE:
            return [self.alerts.emit(
                kind, severity, f"cpu {c.cpu} {c.suite} ({c.backend}), {profile}: "
                f"{c.headline}{_over(c)}{note}", cpu=c.cpu, suite=c.suite,
                backend=c.backend, estimate=c.vu_estimate, constant=c.vu_constant,
                profile=profile, state=WORDS[c.state], held_to=c.held_to,
                worst_signature_vu=c.worst_signature.vu if c.worst_signature else None,
                capped=c.capped, cap_factor=c.cap_factor, runs=c.estimate.runs,
                announced=why)]
        bt = c.block_time
        assert bt is not None
        details: dict[str, Any] = dict(
            backend=c.backend, profile=profile, block=bt.worst.text(),
            binding=list(bt.worst.binding), block_ns=bt.time_ns,
            reference_core=bt.reference_core, reference_ns=bt.reference_ns,
            vs_reference=bt.vs_reference, capped=c.capped, cap_factor=c.cap_factor,
            announced=why)
        return [self.alerts.emit(kind, severity, f"cpu {c.cpu} ({c.backend}): {bt.why}{note}",
                                 cpu=c.cpu, **details)]


def _over(c: CoverageResult) -> str:
    """Which runs a verdict stands on: the segment's count, none said for one run."""
    return f" (over {c.estimate.runs} runs since the last change)" if c.estimate.runs > 1 else ""


def verdict_line(coverage: Iterable[CoverageResult]) -> str:
    """"cpu 0 (liboqs): ML-DSA-87 covered: 226 (95 % CI 225-227), constant 290; ...; time
    bound within": each suite's headline (the unit suite left out), comparison figures in
    one word, the CPU's time bound in :data:`TIME_WORDS`."""
    groups: dict[tuple[int, str], list[CoverageResult]] = {}
    for c in coverage:
        groups.setdefault((c.cpu, c.backend), []).append(c)
    parts = []
    for (cpu, backend), rs in sorted(groups.items()):
        if all(r.state == "comparison" for r in rs):
            parts.append(f"cpu {cpu} ({backend}): {WORDS['comparison']}")
            continue
        words = [f"{r.suite} {r.headline}" for r in rs
                 if r.state not in ("unit", "comparison")]
        bt = next((r.block_time for r in rs if r.block_time is not None), None)
        if bt is not None:
            words.append(f"time bound {TIME_WORDS.get(bt.decision, bt.decision)}")
        if words:
            parts.append(f"cpu {cpu} ({backend}): " + "; ".join(words))
    return " | ".join(parts) if parts else "no verdict"
