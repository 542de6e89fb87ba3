"""Typed parts of the ``meta`` and ``env`` records, and the check of JSON values.

On disk the parts stay the JSON objects earlier versions wrote: a part reads the keys
it types, keeps the others as read (``extra``) and writes the keys it read in their
order, so old files read unchanged and new files read in old readers.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

# Larger magnitudes are not a time, count or frequency (and a 400-digit integer would
# overflow every float conversion downstream).
MAX_MAGNITUDE = 1e18


class PartError(ValueError):
    """A JSON value of the wrong shape; the message starts with the field's name."""


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def describe(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint)


def _scalar(value: Any, hint: Any) -> bool:
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if hint is int and not isinstance(value, int):
        return False
    return abs(value) <= MAX_MAGNITUDE and (isinstance(value, int) or math.isfinite(value))


def _fail(value: Any, hint: Any, name: str) -> PartError:
    return PartError(f"{name} must be {describe(hint)}, got {short(value)}")


def read_value(value: Any, hint: Any, name: str) -> Any:
    """``value`` as ``hint`` says (lists become tuples where a part types a tuple, objects
    become parts), else PartError naming ``name`` (``cpus[0].cap_factor``)."""
    if hint is Any:
        return value
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if value is not None and len(rest) == 1 and rest[0] not in (bool, str, int, float):
            return read_value(value, rest[0], name)  # a part or list: its own field named
        for arg in args:
            try:
                return read_value(value, arg, name)
            except PartError:
                pass
        raise _fail(value, hint, name)
    if hint in (type(None), bool, str, int, float):
        if not _scalar(value, hint):
            raise _fail(value, hint, name)
        return value
    if isinstance(hint, type) and issubclass(hint, Part):
        return hint.from_dict(value, name)
    if origin in (list, tuple) and isinstance(value, list):
        if args[0] in (int, float) and all(_scalar(v, args[0]) for v in value):
            return value if origin is list else tuple(value)  # samples: one pass
        items = [read_value(v, args[0], f"{name}[{i}]") for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    if origin in (dict, Mapping) and isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = int(k) if args[0] is int and isinstance(k, str) and k.isdigit() else k
            if not _scalar(key, args[0]) or (args[0] is int and not 0 <= key <= 65535):
                raise PartError(f"{name} key {short(k)} must be {describe(args[0])}")
            out[key] = read_value(v, args[1], f"{name}[{k}]")
        return out
    if origin in (list, tuple, dict, Mapping):
        raise _fail(value, hint, name)
    raise TypeError(f"record field type {hint!r} has no check")


def plain(value: Any) -> Any:
    """``value`` as JSON-able data: parts as their objects, tuples as lists."""
    if isinstance(value, Part):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    return value


P = TypeVar("P", bound="Part")
_HINTS: dict[type, dict[str, Any]] = {}


def hints_of(cls: type) -> dict[str, Any]:
    """``cls``'s resolved field annotations (cached)."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


@dataclass(frozen=True, kw_only=True)
class Part:
    """A JSON object with typed fields; ``KEYS`` maps a field to its key when they
    differ. ``extra``: keys this version does not type; ``keys``: the order read."""

    KEYS: ClassVar[dict[str, str]] = {}
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def _typed(cls) -> dict[str, str]:
        """Field name -> JSON key, for the typed fields."""
        return {f.name: cls.KEYS.get(f.name, f.name) for f in fields(cls)
                if f.name not in ("extra", "keys")}

    @classmethod
    def from_dict(cls: type[P], value: Any, where: str) -> P:
        if not isinstance(value, dict):
            raise PartError(f"{where} must be an object, got {short(value)}")
        typed, hints = cls._typed(), hints_of(cls)
        by_key = {key: name for name, key in typed.items()}
        kwargs = {by_key[k]: read_value(v, hints[by_key[k]], f"{where}.{k}")
                  for k, v in value.items() if k in by_key}
        extra = {k: v for k, v in value.items() if k not in by_key}
        return cls(**kwargs, extra=extra, keys=tuple(value))

    @classmethod
    def every_key(cls) -> tuple[str, ...]:
        """The typed keys in field order: ``keys=`` for a part written whole."""
        return tuple(cls._typed().values())

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: the keys read, in their order; built here, the fields not at
        their default (a reader takes a missing key as the default) and ``extra``."""
        typed = self._typed()
        values = {key: plain(getattr(self, name)) for name, key in typed.items()}
        values.update(plain(self.extra))
        if self.keys:
            return {k: values[k] for k in self.keys if k in values}
        blank = type(self)()
        kept = {key for name, key in typed.items() if getattr(self, name) != getattr(blank, name)}
        return {k: v for k, v in values.items() if k in kept or k in self.extra}


@dataclass(frozen=True, kw_only=True)
class CpuRow(Part):
    """One measured CPU in a run's ``Meta.cpus``: its topology row and frequency state."""

    cpu: int | None = None
    online: bool | None = None
    cluster: int | None = None
    vendor: str | None = None
    part_name: str | None = None
    uarch: str | None = None
    implementer: str | None = None
    part: str | None = None
    model_name: str | None = None
    family: int | None = None
    model: int | None = None
    governor: str | None = None
    cur_khz: int | None = None
    scaling_max_khz: int | None = None
    hw_max_khz: int | None = None
    capped: bool | None = None
    cap_factor: float | None = None
    cap_cause: str | None = None


@dataclass(frozen=True, kw_only=True)
class MachineInfo(Part):
    """Where a run measured (``Meta.machine``)."""

    hostname: str | None = None
    kernel: str | None = None
    arch: str | None = None
    cpu_model: str | None = None
    microcode: str | None = None
    online_cpus: tuple[int, ...] = ()
    clusters: tuple[Mapping[str, Any], ...] = ()  # qprof.hw ClusterTopo.to_dict() rows
    topology_problems: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class RunSettings(Part):
    """How a run measured (``Meta.settings``)."""

    mode: str | None = None
    suites: tuple[str, ...] = ()
    unit_suite: str | None = None
    backends: tuple[str, ...] = ()
    operations: tuple[str, ...] = ()
    dual: tuple[str, ...] | bool | None = None  # the dual pairs; adversary: dual or not
    rounds: int | None = None
    max_rounds: int | None = None
    adaptive: bool | None = None
    budget_s: float | None = None
    min_n: int | None = None
    max_n: int | None = None
    nice: int | None = None
    interleaving: str | None = None
    interleave_block_s: float | None = None
    timer: str | None = None
    timer_clock: str | None = None
    values: str | None = None
    backend_versions: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class CpuTimes(Part):
    """One CPU's cumulative /proc/stat times, USER_HZ ticks."""

    user: int = 0
    nice: int = 0
    system: int = 0
    idle: int = 0
    iowait: int = 0
    irq: int = 0
    softirq: int = 0
    steal: int = 0

    @property
    def total(self) -> int:
        return (self.user + self.nice + self.system + self.idle + self.iowait + self.irq
                + self.softirq + self.steal)


@dataclass(frozen=True, kw_only=True)
class LoadAvg(Part):
    """/proc/loadavg as a snapshot holds it."""

    KEYS: ClassVar[dict[str, str]] = {"one": "1m", "five": "5m", "fifteen": "15m"}
    one: float | None = None
    five: float | None = None
    fifteen: float | None = None
    running: int | None = None
    tasks: int | None = None


@dataclass(frozen=True, kw_only=True)
class EnvSnapshot(Part):
    """The machine before or after a run (``Env.snapshot``; qprof.hw.take_env_snapshot)."""

    taken_at: float | None = None
    kernel: str | None = None
    arch: str | None = None
    model_name: str | None = None
    uptime_s: float | None = None
    load: LoadAvg | None = None
    cpu_times: Mapping[int, CpuTimes] | None = None
    problems: tuple[str, ...] = ()
