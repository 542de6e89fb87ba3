"""Typed fields out of a JSON object qprof did not write itself (a ``qprof block --json``
file, the adversary cache): each value checked for its type and range on the way into a
dataclass, and anything wrong one :class:`FieldError` naming the field (``results[3].
signatures: must be an integer >= 1, got 'many'``). Numbers are finite and bounded; a
value something is divided by is above 0."""

from __future__ import annotations

import math
from typing import Any

# No time, count or ratio qprof reads is larger (and a 400-digit integer would overflow
# every float conversion after it).
MAX_MAGNITUDE = 1e18


class FieldError(ValueError):
    """A field of the wrong type or out of range; the message starts with its name."""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Fields:
    """A JSON object and where it sits (``results[3]``), read field by field."""

    def __init__(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise FieldError(f"{where or 'the file'}: must be an object, got "
                             f"{_short(value)}")
        self.data: dict[str, Any] = value
        self.where = where

    def name(self, key: str) -> str:
        """The full name of ``key`` in this object (``results[3].signatures``)."""
        return f"{self.where}.{key}" if self.where else key

    def _get(self, key: str, what: str) -> Any:
        if key not in self.data:
            raise FieldError(f"{self.name(key)}: missing (expected {what})")
        return self.data[key]

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def number(self, key: str, *, above: float | None = None,
               at_least: float | None = None, at_most: float = MAX_MAGNITUDE) -> float:
        value = self._get(key, "a number")
        return number(value, self.name(key), above=above, at_least=at_least,
                      at_most=at_most)

    def opt_number(self, key: str, **bounds: Any) -> float | None:
        return self.number(key, **bounds) if self.has(key) else None

    def integer(self, key: str, *, at_least: int | None = None,
                at_most: int = int(MAX_MAGNITUDE)) -> int:
        value = self._get(key, "an integer")
        if isinstance(value, bool) or not isinstance(value, int) or not (
                (at_least is None or value >= at_least) and value <= at_most):
            rule = f" >= {at_least}" if at_least is not None else ""
            raise FieldError(f"{self.name(key)}: must be an integer{rule} and at most "
                             f"{at_most}, got {_short(value)}")
        return value

    def opt_integer(self, key: str, **bounds: Any) -> int | None:
        return self.integer(key, **bounds) if self.has(key) else None

    def string(self, key: str, max_chars: int = 1000) -> str:
        value = self._get(key, "a string")
        if not isinstance(value, str) or len(value) > max_chars:
            raise FieldError(f"{self.name(key)}: must be a string of at most {max_chars} "
                             f"characters, got {_short(value)}")
        return value

    def boolean(self, key: str) -> bool:
        value = self._get(key, "true or false")
        if not isinstance(value, bool):
            raise FieldError(f"{self.name(key)}: must be true or false, got "
                             f"{_short(value)}")
        return value

    def hex_bytes(self, key: str, max_bytes: int = 1 << 20) -> bytes:
        value = self.string(key, 2 * max_bytes)
        try:
            return bytes.fromhex(value)
        except ValueError:
            raise FieldError(f"{self.name(key)}: must be hexadecimal bytes, got "
                             f"{_short(value)}") from None

    def array(self, key: str, max_items: int = 1_000_000) -> list[Any]:
        value = self._get(key, "a list")
        if not isinstance(value, list) or len(value) > max_items:
            raise FieldError(f"{self.name(key)}: must be a list of at most {max_items} "
                             f"items, got {_short(value)}")
        return value

    def objects(self, key: str, max_items: int = 1_000_000) -> list[Fields]:
        """The list at ``key``, each item an object."""
        return [Fields(v, f"{self.name(key)}[{i}]")
                for i, v in enumerate(self.array(key, max_items))]

    def numbers(self, key: str, **bounds: Any) -> list[float]:
        return [number(v, f"{self.name(key)}[{i}]", **bounds)
                for i, v in enumerate(self.array(key))]

    def obj(self, key: str) -> Fields:
        return Fields(self._get(key, "an object"), self.name(key))


def number(value: Any, name: str, *, above: float | None = None,
           at_least: float | None = None, at_most: float = MAX_MAGNITUDE) -> float:
    """``value`` as a finite float within the bounds, else FieldError naming ``name``."""
    ok = (not isinstance(value, bool) and isinstance(value, int | float)
          and abs(value) <= MAX_MAGNITUDE and math.isfinite(value)
          and (above is None or value > above) and (at_least is None or value >= at_least)
          and value <= at_most)
    if not ok:
        rule = " and ".join(x for x in (
            f"above {above:g}" if above is not None else "",
            f"at least {at_least:g}" if at_least is not None else "",
            f"at most {at_most:g}") if x)
        raise FieldError(f"{name}: must be a finite number {rule}, got {_short(value)}")
    return float(value)
