"""One line of `qprof check`'s text, wrapped; shared by its text and adversarial parts."""

from __future__ import annotations

import textwrap

from qprof.measure.markdown import one_line

WIDTH = 100
INDENT = "    "  # a wrapped line's continuation


def say(text: str, indent: str = INDENT) -> None:
    """One line of check's text (control characters of recorded strings made spaces),
    wrapped at :data:`WIDTH`."""
    print(textwrap.fill(one_line(text), WIDTH, subsequent_indent=indent,
                        break_on_hyphens=False))
