"""One shape for the options several commands share: ``--cpus``, ``--suites``,
``--backends`` (lists) and ``--backend`` (one name).

Lists take commas, spaces or both (``--suites ML-DSA-44,ML-DSA-87`` and ``--suites
ML-DSA-44 ML-DSA-87`` are the same), so a command line written for one command works
for another.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from qprof.verify import BACKEND_NAMES, SUITES


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
