"""Issue 52: check's progress line shows the first µs figure as soon as a worker measured
it, and keeps it; its round counter is the stopping rule's total, with the ETA."""

from __future__ import annotations

import io

from qprof.commands.bench import ProgressLine
from qprof.measure.config import ProgressEvent


def test_the_first_figure_at_once_and_kept() -> None:
    out = io.StringIO()  # not a terminal: a line per event worth one
    line = ProgressLine(out)
    line(ProgressEvent(0.0, None, 0.0, cpu=1, round=0, rounds=5, message="starting"))
    line(ProgressEvent(0.1, 40.0, 3.0, cpu=1, round=0, rounds=17, message="measured",
                       medians={"ML-DSA-44": 17_100.0, "ML-DSA-87": 38_800.0}))
    line(ProgressEvent(0.2, 35.0, 5.0, cpu=1, round=1, rounds=17, message="starting"))
    line.close()
    first, measured, later = out.getvalue().splitlines()[:3]
    assert "µs" not in first
    assert "ML-DSA-44 17.1 µs" in measured and "round 1/17" in measured
    assert "ML-DSA-44 17.1 µs" in later and "ETA 35s" in later and "round 2/17" in later
