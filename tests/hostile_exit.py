"""Issue 49: what every finding's test asserts of the command it ran on the finding's
input: no traceback in its output, and an exit code qprof documents. tests/
test_file_rules.py checks that each of the 17 findings has such a test."""

from __future__ import annotations

# 0 fine / covered, 1 not covered, 2 an error or bad input (one line), 3 unsure
DOCUMENTED = (0, 1, 2, 3)


def clean_exit(code: int | None, *outputs: str | bytes | None,
               codes: tuple[int, ...] = DOCUMENTED) -> None:
    """``code`` is one of ``codes`` and no output holds a traceback."""
    for out in outputs:
        text = out.decode(errors="replace") if isinstance(out, bytes) else (out or "")
        assert "Traceback" not in text, text[-3000:]
    assert code in codes, (code, [o[-2000:] if o else o for o in outputs])
