"""Frequency caps over time: the one cap tracker (with hysteresis) and the one cap message.

Used by ``qprof freq --watch`` (through :class:`qprof.hw.freq.CapWatch`), the daemon's
watch (alerts per cluster) and the monitor (its own alerts when no daemon runs).

Hysteresis: a change of state counts only when the new state held for ``min_samples``
consecutive samples AND ``hold_s`` seconds; any sample back in the old state resets the
streak. So a cap that flickers on and off every second never starts, and a cap that
holds with one flicker-free gap shorter than ``hold_s`` never ends. The state seen first
is reported once as ``at_startup`` (a cap already on is a fact, not a change).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

RATIOS_UNAFFECTED = "ratios measured on the same core at the same time are not affected"


@dataclass
class _Debounced:
    active: bool = False
    # First time the observed state differed from `active` in the current streak.
    pending_since: float | None = None
    pending_count: int = 0


class Hysteresis:
    """Debounces a boolean per key (see the module's docstring)."""

    def __init__(self, min_samples: int = 3, hold_s: float = 5.0) -> None:
        self.min_samples = max(1, min_samples)
        self.hold_s = max(0.0, hold_s)
        self._state: dict[Hashable, _Debounced] = {}

    def active(self, key: Hashable) -> bool:
        st = self._state.get(key)
        return bool(st and st.active)

    def known(self, key: Hashable) -> bool:
        return key in self._state

    def update(self, key: Hashable, observed: bool, now: float) -> bool | None:
        """Feed one sample; returns True (started), False (ended) or None (no change)."""
        st = self._state.setdefault(key, _Debounced())
        if observed == st.active:
            st.pending_since, st.pending_count = None, 0
            return None
        if st.pending_since is None:
            st.pending_since = now
        st.pending_count += 1
        if st.pending_count >= self.min_samples and now - st.pending_since >= self.hold_s:
            st.active = observed
            st.pending_since, st.pending_count = None, 0
            return observed
        return None

    def set_active(self, key: Hashable, active: bool) -> None:
        """Seed the state without a change (e.g. the state found at start-up)."""
        self._state[key] = _Debounced(active=active)


@dataclass(frozen=True)
class CapSeen:
    """One observation of a CPU's or a cluster's cap (``capped`` None: unknown)."""

    capped: bool | None
    factor: float | None = None  # hardware max / allowed max
    cause: str | None = None  # "policy" | "thermal" | "boost-off" | None
    max_khz: int | None = None
    hw_max_khz: int | None = None


@dataclass(frozen=True)
class CapChange:
    key: Hashable  # a cluster id or a CPU, as the caller keys them
    started: bool  # True: a cap started; False: it ended
    at: float
    seen: CapSeen
    at_startup: bool = False  # the state found on the first sample, not a change

    def message(self) -> str:
        if not self.started:
            return "cap ended, back to full speed"
        text = cap_message(self.seen.max_khz, self.seen.hw_max_khz, self.seen.factor,
                           self.seen.cause)
        return ("capped at start-up: " if self.at_startup else "capped: ") + text


class CapTracker:
    """Cap changes per key, through :class:`Hysteresis`."""

    def __init__(self, min_samples: int = 3, hold_s: float = 5.0) -> None:
        self.hysteresis = Hysteresis(min_samples, hold_s)

    def active(self, key: Hashable) -> bool:
        return self.hysteresis.active(key)

    def update(self, key: Hashable, seen: CapSeen, at: float) -> CapChange | None:
        if seen.capped is None:
            return None  # unknown: say nothing rather than guess
        if not self.hysteresis.known(key):
            self.hysteresis.set_active(key, seen.capped)
            return CapChange(key, True, at, seen, at_startup=True) if seen.capped else None
        change = self.hysteresis.update(key, seen.capped, at)
        return None if change is None else CapChange(key, change, at, seen)


def cap_message(max_khz: int | None, hw_max_khz: int | None, factor: float | None,
                cause: str | None = None) -> str:
    """The one sentence for a capped CPU or cluster (alerts, notes, reports, monitor):
    ``held at 1.08 GHz instead of 2.42 GHz (×2.24 slower, cause policy)``."""
    if max_khz and hw_max_khz:
        head = f"held at {max_khz / 1e6:.2f} GHz instead of {hw_max_khz / 1e6:.2f} GHz"
        factor = factor or round(hw_max_khz / max_khz, 2)
    else:
        head = "ran below its hardware maximum"
    parts = [f"×{factor:.2f} slower"] if factor else []
    parts.append(f"cause {cause or 'unknown'}")
    return f"{head} ({', '.join(parts)})"
