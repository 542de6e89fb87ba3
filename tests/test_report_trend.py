"""The ratio over time in `qprof report` (issue 29): given several runs of one series, the
Markdown report says each suite's segments and changes, and the HTML report draws the
runs with their intervals, the segments as bands and the changes as marks with their size.
A single run has no such section.

The runs are the three real check runs of tests/data/runs (AMD EPYC guest, liboqs
0.16.0, CPU 1), each cut to its first ROUNDS rounds so that the estimator (run once per
run and report) stays quick; their figures are decided all the same.
"""

from __future__ import annotations

import dataclasses
import lzma
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from qprof.consensus import load_profile
from qprof.measure.jsonl import RunData, read_run
from qprof.measure.records import Measurement
from qprof.report.html import render_html
from qprof.report.html_trend import ChangeMark, RunMark, SegmentBand, trend_chart
from qprof.report.markdown import render_report
from qprof.report.trend import report_trends

pytestmark = pytest.mark.timeout(300)

RUNS = Path(__file__).parent / "data" / "runs"
ROUNDS = 12
SVG = "{http://www.w3.org/2000/svg}"
TITLE = "The ratio over time"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[RunData]:
    out = []
    for xz in sorted(RUNS.glob("*.jsonl.xz"))[:2]:
        path = tmp_path_factory.mktemp("runs") / xz.name.removesuffix(".xz")
        path.write_bytes(lzma.decompress(xz.read_bytes()))
        run = read_run(path)
        out.append(dataclasses.replace(run, records=[
            r for r in run.records if not isinstance(r, Measurement) or r.round < ROUNDS]))
    return out


def _svgs(page: str) -> list[ET.Element]:
    """Every inline SVG of the page, parsed as XML (a malformed one raises)."""
    out, start = [], 0
    while (i := page.find("<svg", start)) >= 0:
        j = page.index("</svg>", i) + len("</svg>")
        out.append(ET.fromstring(page[i:j]))
        start = j
    return out


def test_two_runs_of_a_series_get_the_section(runs: list[RunData]) -> None:
    profile = load_profile("qanum")
    trends = report_trends(runs, profile)
    assert len(trends) == 1 and len(trends[0].runs) == 2
    text = render_report(runs, profile, trends=trends)
    assert f"## {TITLE}" in text
    section = text[text.index(f"## {TITLE}"):]
    assert "CPU 1 (AMD EPYC (Zen 4, VM-reported; family 25 model 17)), liboqs, check: 2 runs" \
        in section
    assert runs[0].path.name in section and runs[1].path.name in section
    for suite in ("ML-DSA-87", "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-256s"):
        row = next(ln for ln in section.splitlines() if ln.startswith(f"| {suite} | 0-1 |"))
        assert "over 2 runs" in row and "(95 % " in row, row
    assert "No change point" in section
    page = render_html(runs, profile, trends)
    assert f"<h2>{TITLE}</h2>" in page
    charts = [s for s in _svgs(page) if "CPU 1" in (s.findtext(f"{SVG}title") or "")
              and "check: 2 runs" in (s.findtext(f"{SVG}title") or "")]
    assert len(charts) == 3  # one per judged suite
    for chart in charts:
        assert len(chart.findall(f"{SVG}circle")) == 2  # each run's estimate
        texts = "".join(chart.itertext())
        assert "2 runs" in texts and "segment: estimate and 95 % interval" in texts


def test_one_run_has_no_section(runs: list[RunData]) -> None:
    profile = load_profile("qanum")
    assert report_trends(runs[:1], profile) == []
    assert f"## {TITLE}" not in render_report(runs[:1], profile)
    page = render_html(runs[:1], profile)
    assert TITLE not in page
    _svgs(page)  # the other charts still parse


def test_chart_draws_runs_segments_changes_and_gaps() -> None:
    runs = [RunMark(i, 100.0 + (3 if i >= 6 else 0) + (i % 2), 99.0 + (3 if i >= 6 else 0),
                    102.0 + (3 if i >= 6 else 0) + (i % 2)) for i in range(10)]
    runs[3] = RunMark(3, None)  # undecided
    segments = [SegmentBand(0, 5, 100.4, 100.0, 100.8, "101 (100-101), 5 runs"),
                SegmentBand(6, 9, 103.5, 103.0, 104.0, "104 (103-104), 4 runs")]
    changes = [ChangeMark(6, "+307 bp (95 % +250 to +360)")]
    svg = ET.fromstring(trend_chart("SLH-DSA-SHAKE-256s <&> \"x\"", runs, segments, changes,
                                    "Verify Units"))
    assert svg.findtext(f"{SVG}title") == "SLH-DSA-SHAKE-256s <&> \"x\""  # escaped, intact
    assert len(svg.findall(f"{SVG}circle")) == 9  # the decided runs
    texts = list(svg.itertext())
    assert "×" in texts and "× undecided run (a gap)" in texts
    assert "+307 bp (95 % +250 to +360)" in texts
    assert "101 (100-101), 5 runs" in texts and "104 (103-104), 4 runs" in texts
    dashed = [ln for ln in svg.findall(f"{SVG}line") if ln.get("stroke-dasharray")
              and ln.get("y2") != ln.get("y1")]
    assert len(dashed) == 1  # the change's vertical mark
    bands = [r for r in svg.findall(f"{SVG}rect") if r.get("fill-opacity")]
    assert len(bands) == 2
    # The step's band sits above the first one (a smaller y is higher on the page).
    assert float(bands[1].get("y", 0)) < float(bands[0].get("y", 0))
