"""Issue 52: the monitor's text fits at 80, 120, 160 and 200 columns, in a real terminal
(tmux), on a first run (nothing stored) and on its help screen: no word split across
lines, no column header cut short, the model named once, no header or progress line cut
with an ellipsis; the export notice names each file whole.

One monitor, resized from 80 to 200 columns; bounded waits; the session always killed.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_tui_first_run_tmux import FirstRun
from test_tui_tmux import tmux, wait_for

from qprof.tui.widgets.core_table import BASE_COLUMNS, short_suite
from qprof.tui.widgets.coverage_panel import COLUMNS
from qprof.tui.widgets.help_screen import HELP

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed "
                       "(Debian package tmux)"),
]

WIDTHS = (80, 120, 160, 200)
SUITES = ("ML-DSA-44", "ML-DSA-87", "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s")
LABELS = {*BASE_COLUMNS, *COLUMNS, "Part", *(f"{short_suite(s)} µs (VU)" for s in SUITES)}
BOX = "│╭╮╰╯─▄▅▆▇█▁▂▃"
WORD = re.compile(r"^[(\"'`]*([A-Za-z]+)[)\"'`,;:.]*$")  # a word, its punctuation aside


MODEL = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text(
    errors="replace").splitlines() if ln.startswith("model name")), None)


def _vocabulary() -> set[str]:
    """Every word qprof's sources hold, and this machine's CPU model's."""
    words: set[str] = set()
    for path in (Path(__file__).resolve().parents[1] / "qprof").rglob("*.py"):
        words |= {w.lower() for w in re.findall(r"[A-Za-z]{2,}", path.read_text())}
    return words | {w.lower() for w in re.findall(r"[A-Za-z]{2,}", MODEL or "")}


def _edge_words(line: str) -> tuple[str | None, str | None]:
    """The line's first and last space-separated token, where each is a plain word."""
    tokens = line.strip(BOX + " ").split()
    if not tokens:
        return None, None
    first, last = WORD.match(tokens[0]), WORD.match(tokens[-1])
    return (first.group(1) if first else None), (last.group(1) if last else None)


def _splits(lines: list[str], vocabulary: set[str]) -> list[str]:
    """Words cut across two lines: a line's last word and the next line's first joined
    make a word, where one of them alone is none."""
    found = []
    for above, below in zip(lines, lines[1:], strict=False):
        _, last = _edge_words(above)
        first, _ = _edge_words(below)
        if last is None or first is None or min(len(last), len(first)) < 2:
            continue  # a unit ("53 s") above a key ("b Measure core") is no split word
        whole = (last + first).lower()
        if whole in vocabulary and not {last.lower(), first.lower()} <= vocabulary:
            found.append(f"{last}|{first}")
    return found


def _headers(screen: str) -> list[list[str]]:
    """The tables' header rows (per-core, coverage): their labels."""
    return [re.split(r" {2,}", line.strip()) for line in screen.splitlines()
            if line.strip().startswith(("CPU  ", "Suite  "))]


def _box(screen: str) -> list[str]:
    """The help box's lines, between its own borders' columns (a resize may leave a
    moment's remnants of the old frame beside it)."""
    lines = screen.splitlines()
    top = next((i for i, ln in enumerate(lines) if "╭" in ln and "╮" in ln), None)
    if top is None:
        return []
    left, right = lines[top].index("╭"), lines[top].rindex("╮")
    out = []
    for ln in lines[top + 1:]:
        if len(ln) <= right or ln[left] != "│":
            break
        out.append(ln[left + 1:right])
    return out


REDRAWN_S = 60.0


def _resized(run: FirstRun, width: int, drawn: str,
             part: Callable[[str], object] = lambda s: s) -> str:
    """The screen once redrawn at ``width``: ``drawn`` (a pattern) on it, and ``part`` of
    two captures half a second apart the same but for figures (the help box: the run's
    progress behind it moves on)."""
    tmux("resize-window", "-t", run.name, "-x", str(width), "-y", "40")
    last = ""

    def steady() -> str:
        nonlocal last
        time.sleep(0.5)
        now, last = last, run.screen()
        # Figures (load, clocks, counts) move on every refresh: the layout settles.
        same = re.sub(r"\d", "0", str(part(now))) == re.sub(r"\d", "0", str(part(last)))
        return last if same and re.search(drawn, last, re.M) else ""

    # A liveness bound: mid-first-run the table fills in between captures, and with both
    # CPUs busy (CI's other worker) it took over 20 s to hold still once (a CI failure).
    return wait_for(steady, REDRAWN_S, f"the screen redrawn at {width} columns", run.screen)


def test_first_run_and_help_fit_80_to_200_columns(tmp_path: Path) -> None:
    run = FirstRun(tmp_path)
    vocabulary = _vocabulary()
    help_words = {w.lower() for heading, rows in HELP for text in (heading, *(
        x for row in rows for x in row)) for w in re.findall(r"[A-Za-z]+", text)}
    try:
        wait_for(lambda: ("Verify-Unit coverage" in run.screen()
                          and re.search(r"signing|measuring|first look|No verdict", run.screen())
                          and "yes"), 120, "the first run's screen", run.screen)
        for width in WIDTHS:
            # The progress and footer (the last lines) move on while the run measures.
            screen = _resized(run, width, r"^ qprof · ", lambda s: s.splitlines()[:-4])
            lines = screen.splitlines()
            assert all(len(x) <= width for x in lines)
            for labels in _headers(screen):
                cut = [x for x in labels if x not in LABELS]
                assert not cut, f"{width} columns: headers cut: {cut}\n{screen}"
            assert not _splits(lines, vocabulary), (width, _splits(lines, vocabulary), screen)
            top = lines[:next(i for i, ln in enumerate(lines)
                              if ln.strip().startswith("CPU"))]
            assert "…" not in "\n".join(top), f"{width} columns: the header cut\n{screen}"
            assert "…" not in "\n".join(lines[-3:-1]), f"{width}: the progress cut\n{screen}"
            if MODEL:  # the model once in the header, not beside the designs again
                assert "\n".join(top).count(MODEL) <= 1, screen
        tmux("send-keys", "-t", run.name, "?")
        wait_for(lambda: "Per-core table" in run.screen() and "yes", 10, "the help",
                 run.screen)
        for width in WIDTHS:
            screen = _resized(run, width, r"╭─+╮[\s\S]*╰─+╯", _box)
            box = _box(screen)
            assert box, screen
            assert not _splits(box, vocabulary), (width, _splits(box, vocabulary), screen)
            stray = {w for ln in box for w in re.findall(r"[A-Za-z]+", ln)
                     if w.lower() not in help_words}
            assert not stray, f"{width} columns: words cut in the help: {stray}\n{screen}"
        tmux("send-keys", "-t", run.name, "Escape")
        # The export notice: each written file's name whole on one line at every width
        # (a toast wraps on spaces; a path has none).
        wait_for(lambda: "Per-core table" not in run.screen() and "yes", 10,
                 "the help closed", run.screen)
        tmux("send-keys", "-t", run.name, "e")
        wait_for(lambda: "Report written in" in run.screen() and "yes", 20,
                 "the export notice", run.screen)
        for width in WIDTHS:
            screen = _resized(run, width, r"Report written in")
            names = set(re.findall(r"qprof-monitor-\d{8}-\d{6}(?:-\d+)?\.(?:md|html)",
                                   screen))
            assert {n.rsplit(".", 1)[1] for n in names} == {"md", "html"}, (width, screen)
    finally:
        run.kill()
