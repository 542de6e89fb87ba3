"""`qprof report --html`: one self-contained page with SVG charts, rendered for real in
headless Chromium (Debian package 'chromium'; scripts/test installs it as root)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from test_report_tables import records

from qprof.consensus import load_profile
from qprof.measure.jsonl import JsonlSink, read_run
from qprof.measure.records import FreqSample, Meta
from qprof.report.html import render_html
from qprof.report.html_svg import nice_ticks

WINDOW = (900, 2400)


def write_run(path: Path, scale: float, capped: bool) -> Path:
    """The pinned test run of test_report_tables (scaled), with a frequency trace that
    is capped at 1.08 GHz for part of the run when ``capped``."""
    with JsonlSink(path) as sink:
        for rec in records(scale):
            sink(rec)
            if isinstance(rec, Meta):
                for i in range(40):
                    cap = capped and 15 <= i < 30
                    sink(FreqSample(run_id=rec.run_id, taken_at=rec.started_at + 3 * i, cpu=2,
                                    cur_khz=1080000 if cap else 2419200,
                                    max_khz=1080000 if cap else 2419200,
                                    hw_max_khz=2419200, capped=cap))
    return path


@pytest.fixture
def two_runs(tmp_path: Path) -> list[Path]:
    return [write_run(tmp_path / "gold.jsonl", 1.0, capped=True),
            write_run(tmp_path / "silver.jsonl", 1.6, capped=False)]


def test_page_is_self_contained_with_every_chart(two_runs: list[Path]) -> None:
    page = render_html([read_run(p) for p in two_runs], load_profile("qanum"))
    # Charts: 3 suites' estimates, 2 drift, 2 frequency, 4 worst-case blocks.
    assert page.count("<svg ") == 11
    assert "<script" not in page and not re.search(r"(src|href)=", page)
    # The Markdown's figures, in the verdict's words: the test SoC's cores are no
    # reference cores of qanum, its ratio does not bind there (the layout test has the
    # decided and unsure verdicts).
    assert "not binding here: 1614 (1583-1640) constant 1600" in page
    assert "not binding here: 283 (277-287) constant 290" in page
    assert "block interval 75 s" in page and "round under a frequency cap" in page
    assert page.count('fill-opacity="0.15"') == 2 + 1  # capped rounds x 2 runs, cap span


def test_nice_ticks() -> None:
    assert nice_ticks(0, 100) == [0, 20, 40, 60, 80, 100]
    assert nice_ticks(277, 291) == [280, 285, 290]
    assert nice_ticks(-0.01, 0.03) == [-0.01, 0, 0.01, 0.02, 0.03]


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def chromium(tmp_path: Path, page: Path, *action: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("chromium not installed (Debian package 'chromium'; scripts/test "
                    "installs it when run as root)")
    profile = tmp_path / f"chromium-profile-{len(list(tmp_path.iterdir()))}"
    argv = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--hide-scrollbars",
            f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
            f"--window-size={WINDOW[0]},{WINDOW[1]}", *action, page.as_uri()]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_two_runs_render_in_chromium(tmp_path: Path, two_runs: list[Path]) -> None:
    page = tmp_path / "report.html"
    md = subprocess.run([sys.executable, "-m", "qprof", "report", *map(str, two_runs),
                         "--html", str(page)], capture_output=True, text=True, timeout=60)
    assert md.returncode == 0, md.stderr
    assert md.stdout == ""  # the page was asked for; the Markdown needs -o
    dom = chromium(tmp_path, page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<svg ") == 11 and "Worst-case block" in dom.stdout
    shot = tmp_path / "report.png"
    run = chromium(tmp_path, page, f"--screenshot={shot}")
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    # No JavaScript runs, so the console must stay silent: no errors, no messages.
    assert "CONSOLE" not in run.stderr + dom.stderr, run.stderr[-2000:]
    assert png_size(shot) == WINDOW
    # The same window over an empty page compresses to a few kB; charts do not.
    blank_page = tmp_path / "blank.html"
    blank_page.write_text("<!DOCTYPE html><html><body></body></html>")
    blank = tmp_path / "blank.png"
    assert chromium(tmp_path, blank_page, f"--screenshot={blank}").returncode == 0
    assert shot.stat().st_size > 10 * blank.stat().st_size, (shot.stat().st_size,
                                                             blank.stat().st_size)
    print(f"screenshot {shot}: {png_size(shot)}, {shot.stat().st_size} bytes "
          f"(blank page: {blank.stat().st_size} bytes)")
