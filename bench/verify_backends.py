#!/usr/bin/env python3
"""Median verify time of every available backend on one pinned core (not a test).

Same code and options as `qprof verify-bench`:

    .venv/bin/python bench/verify_backends.py --cpu 1 --rounds 21
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The checkout this script is in, not whichever qprof the venv has installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qprof.commands import verify_bench


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verify_bench.add_parser(parser)
    return verify_bench.run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
