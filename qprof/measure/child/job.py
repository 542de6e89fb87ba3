"""A helper process's job: a frozen dataclass whose fields travel as ``--field value``.

Fields are str, int, float, bool or tuples of str/int (comma-joined, so an element may
not hold a comma). The kind is the module that runs the job (its ``CHILD`` entry).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar, get_type_hints

ENTRY_MODULE = "qprof.measure.child"


class JobError(ValueError):
    """A job's argv does not decode to its dataclass (message: one line, why)."""


J = TypeVar("J", bound="ChildJob")


@dataclass(frozen=True)
class ChildJob:
    """Base of every job; ``KIND`` is the module whose ``CHILD`` runs it."""

    KIND: ClassVar[str] = ""

    def to_argv(self, python: str | None = None) -> list[str]:
        """The command line that runs this job in a new interpreter (``python``)."""
        argv = [python or sys.executable, "-m", ENTRY_MODULE, self.KIND]
        for f in dataclasses.fields(self):
            argv += [f"--{f.name}", _encode(f.name, getattr(self, f.name))]
        return argv

    @classmethod
    def from_argv(cls: type[J], args: list[str]) -> J:
        """The job from ``--field value`` pairs (what :meth:`to_argv` wrote after KIND)."""
        hints = get_type_hints(cls)
        names = {f.name: f for f in dataclasses.fields(cls)}
        if len(args) % 2:
            raise JobError(f"{args[-1]!r} has no value")
        values: dict[str, Any] = {}
        for flag, text in zip(args[::2], args[1::2], strict=True):
            name = flag[2:] if flag.startswith("--") else ""
            if name not in names or name in values:
                raise JobError(f"unexpected argument {flag!r}")
            values[name] = _decode(name, text, hints[name])
        missing = [n for n, f in names.items() if n not in values
                   and f.default is dataclasses.MISSING]
        if missing:
            raise JobError(f"missing --{missing[0]}")
        return cls(**values)


def _encode(name: str, value: object) -> str:
    if isinstance(value, tuple):
        items = [str(v) for v in value]
        if any("," in v for v in items):
            raise JobError(f"--{name}: an element holds a comma")
        return ",".join(items)
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _decode(name: str, text: str, hint: Any) -> Any:
    try:
        if hint in (tuple[str, ...], tuple[int, ...]):
            item = int if hint == tuple[int, ...] else str
            return tuple(item(v) for v in text.split(",")) if text else ()
        if hint is bool:
            if text not in ("0", "1"):
                raise ValueError(f"not 0 or 1: {text!r}")
            return text == "1"
        if hint in (int, float, str):
            return hint(text)
    except ValueError as exc:
        raise JobError(f"--{name}: {exc}") from None
    raise JobError(f"--{name}: a field of type {hint} cannot travel")


@dataclass(frozen=True)
class Entry(Generic[J]):
    """What a module registers as ``CHILD``: its job type and the function running it
    (its exit code)."""

    job: type[J]
    main: Callable[[J], int]
