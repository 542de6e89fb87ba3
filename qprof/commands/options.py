"""One shape for the options several commands share: ``--cpus``, ``--suites``,
``--backends`` (lists) and ``--backend`` (one name); and :class:`Number`, the type of
every numeric option.

Lists take commas, spaces or both (``--suites ML-DSA-44,ML-DSA-87`` and ``--suites
ML-DSA-44 ML-DSA-87`` are the same), so a command line written for one command works
for another.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from qprof.verify import BACKEND_NAMES, SUITES

N = TypeVar("N", int, float)

# An option without its own upper bound has this one: 10^7 (seconds: 115 days; rounds,
# counts) is more than any option means, and far from what overflows a sleep or a list
# (``freq --watch 1e300``, ``--rounds 10**12``).
DEFAULT_AT_MOST = 10_000_000


class Number(Generic[N]):
    """argparse ``type=`` of a numeric option: a finite ``int`` or ``float`` within its
    bounds, else exit 2 naming the option and the rule (``--rounds -3`` ran one round and
    recorded -3, ``--rounds 0`` became the default, ``--interleave nan`` passed; without
    its own upper bound one of DEFAULT_AT_MOST). Every
    numeric option of every command uses it; the daemon's are checked with its TOML file
    (``qprof.service.config``)."""

    def __init__(self, kind: type[N], *, at_least: N | None = None, above: N | None = None,
                 at_most: N | None = None, odd: bool = False) -> None:
        self.kind: type[N] = kind
        self.at_least: N | None = at_least
        self.above: N | None = above
        self.at_most: N = at_most if at_most is not None else kind(DEFAULT_AT_MOST)
        self.odd = odd
        self.__name__ = kind.__name__  # argparse names the type in its messages

    def rule(self) -> str:
        what = ("an odd integer" if self.odd else "an integer") if self.kind is int \
            else "a number"
        bounds: list[str] = []
        if self.at_least is not None:
            bounds.append(f"at least {self.at_least:g}")
        if self.above is not None:
            bounds.append(f"above {self.above:g}")
        bounds.append(f"at most {self.at_most:g}")
        return f"{what} {' and '.join(bounds)}" if bounds else what

    def __call__(self, text: str) -> N:
        try:
            value = self.kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {self.rule()}, got {_shown(text)}") from None
        if not ((self.kind is int or math.isfinite(value))  # a 400-digit int: no float
                and (self.at_least is None or value >= self.at_least)
                and (self.above is None or value > self.above)
                and value <= self.at_most
                and (not self.odd or value % 2 == 1)):
            raise argparse.ArgumentTypeError(f"must be {self.rule()}, got {_shown(text)}")
        return value


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:37] + "...")


def split_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


class ListAction(argparse.Action):
    """``nargs="+"`` values, each split at commas, as one flat list."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        items = [values] if isinstance(values, str) else list(values or ())
        setattr(namespace, self.dest, [x for item in items for x in split_list(str(item))])


def add_cpus(parser: argparse.ArgumentParser, default: str, clusters: bool = False) -> None:
    words = "clusters (one CPU per cluster) or all" if clusters else "all"
    parser.add_argument("--cpus", metavar="LIST|clusters|all" if clusters else "LIST|all",
                        help=f"CPUs to measure: a list such as 0,4-5, or {words} "
                        f"(default: {default})")


def add_suites(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--suites", nargs="+", action=ListAction, metavar="SUITE",
                        help=f"suites, comma- or space-separated (default: {default}); "
                        f"known: {', '.join(SUITES)}")


def add_backends(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--backends", nargs="+", action=ListAction, metavar="BACKEND",
                        help=f"verifier backends, comma- or space-separated (default: "
                        f"{default}); known: {', '.join(BACKEND_NAMES)}")


def add_backend(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--backend", metavar="BACKEND",
                        help=f"verifier backend (default: {default}); known: "
                        f"{', '.join(BACKEND_NAMES)}")


def add_node_cgroup(parser: argparse.ArgumentParser) -> None:
    """``--node-cgroup PATH`` / ``--node-unit NAME.service``: a node's cgroup CPU limit."""
    parser.add_argument("--node-cgroup", metavar="PATH",
                        help="the node's cgroup directory, e.g. /sys/fs/cgroup/system.slice/"
                             "node.service (v1 or v2): its CPU quota is shown and bounds "
                             "its worst-case block")
    parser.add_argument("--node-unit", metavar="NAME.service",
                        help="the node's systemd unit (its cgroup: system.slice/NAME.service)")
