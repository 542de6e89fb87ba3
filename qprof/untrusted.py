"""Strings qprof did not write: the one rule for showing them.

Runs, profiles, a Prometheus server and ``/sys`` hand qprof strings anyone may have
written. Wherever one is shown it is first :func:`one_line`: bounded, every run of
control characters (C0/C1, DEL, Unicode separators and bidi overrides, lone surrogates,
non-characters) one space. Then each destination escapes it in its one place: terminal
``qprof.commands.output``, Markdown :mod:`qprof.measure.markdown`, HTML/SVG
``qprof.report.html_svg``, TOML ``qprof.consensus.calibrate``.
"""

from __future__ import annotations

import re

# A name or a sentence from outside is at most this long wherever it is shown; longer is
# not a name (issue 31: a 100 kB hostname) and is cut with its length said.
MAX_SHOWN = 300

# C1 controls, DEL, U+2028/U+2029, the bidirectional embeddings, overrides and isolates
# (text that reads in another order than it is stored), lone surrogates, U+FFFE/U+FFFF;
# with the C0 controls (ESC, CR, BEL, newline...) below.
_OTHERS = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff"
CONTROL = re.compile(f"[\x00-\x1f{_OTHERS}]+")
# The same but newline and tab: what a whole output (many lines) may keep.
_CONTROL_BUT_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHERS}]+")


def one_line(value: object, limit: int = MAX_SHOWN) -> str:
    """``value`` as one line of plain text at most ``limit`` characters (plus a note of
    how long it was): control characters as spaces (see the module's docstring)."""
    text = value if isinstance(value, str) else str(value)
    cut = len(text) > limit
    line = CONTROL.sub(" ", text[:limit + 1] if cut else text)
    if not cut:
        return line
    return f"{line[:limit]}... ({len(text):,} characters)"


def without_controls(text: str) -> str:
    """A whole output (lines qprof wrote, values in it already :func:`one_line`) with
    every control character but newline and tab removed: a last guard, so that no
    terminal escape (ESC, CR, BEL, C1) ever leaves qprof, whatever printed it."""
    return _CONTROL_BUT_LINES.sub("", text)
