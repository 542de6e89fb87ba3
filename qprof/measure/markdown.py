"""Markdown from strings qprof did not write: the one place they are escaped.

Hostnames, CPU models, notes and file names come from runs, stores and ``/sys``; a
report's reader must see them as text. :func:`md_text` makes any value one bounded line
(:func:`qprof.untrusted.one_line`) with every character Markdown or HTML gives a meaning
backslash-escaped; :func:`md_code` does the same as a code span. Both return :class:`Md`,
already safe text that :func:`md_text` and :func:`md_table` leave as it is, so a cell
built from escaped pieces is not escaped twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from qprof.untrusted import one_line as _one_line

# A cell or sentence holds qprof's words around values from outside (a note, a
# statistic's reason for several suites): longer than a name, still bounded.
MAX_TEXT = 4000
# A table cell: a name, a figure, a short reason; a row of many cells stays readable.
MAX_CELL = 1000
# What starts markup inside a line: HTML (< > &), links and images ([ ]), code (`),
# emphasis (* ~, and _ but not inside a word, where it never is: verify_invalid stays
# readable), table cells (|) and the escape itself (\). Line-start markers (#, -, +,
# digits) cannot occur: the text never begins a line of the report.
_SPECIAL = re.compile(r"([\\`*\[\]<>|~&]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")


class Md(str):
    """Markdown that is safe as it is (escaped text, or qprof's own markup)."""


def one_line(value: object, limit: int = MAX_TEXT) -> str:
    """``value`` as text on one bounded line (``qprof.untrusted.one_line``)."""
    return _one_line(value, limit)


def md_text(value: object, limit: int = MAX_TEXT) -> Md:
    """``value`` as literal Markdown text (see the module's docstring)."""
    if isinstance(value, Md):
        return value
    return Md(_SPECIAL.sub(r"\\\1", one_line(value, limit)))


def md_joined(parts: Iterable[object], sep: str = " / ", prefix: str = "") -> Md:
    """``prefix`` and ``parts`` joined by ``sep``, each escaped and bounded on its own: a
    cell holding one figure per CPU of a 2,000-CPU run is long, its pieces are not."""
    return Md(md_text(prefix) + md_text(sep).join(md_text(p, MAX_CELL) for p in parts))


def md_code(value: object) -> Md:
    """``value`` as an inline code span: a fence longer than any run of backticks in it;
    ``|`` escaped, which GitHub's tables need even inside code."""
    text = one_line(value).replace("|", "\\|")
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return Md(f"{fence}{pad}{text}{pad}{fence}")


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A GitHub table; every header and cell is :func:`md_text` (an ``Md`` is kept)."""
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(md_text(c, MAX_CELL) for c in cells) + " |"

    return [line(header), "|" + "|".join("---" for _ in header) + "|",
            *(line(r) for r in rows)]
