"""Both HTML pages (`qprof report --html`, the monitor's export) measured in headless
Chromium (issue 30): every text of every chart lies inside its SVG's viewBox (no clipped
label such as "? 1600: unsu"), no two texts of a chart overlap, no text lies on a line
chart's plot (the drift chart's label covered its data), and the verdict is said in its
own words and colours ("not binding here" is never a red or orange ✗)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_report_html import write_run

from qprof.consensus import load_profile
from qprof.measure.jsonl import read_run
from qprof.report.html import STATE_STYLE, render_html
from qprof.report.html_svg import BAD
from qprof.tui.model import ClusterHistory, CoverageView, Frame, MachineView
from qprof.tui.report_html import report_html

# Runs in the page after load: every <text>'s box (through its transform) against its
# SVG's viewBox, each other and the plot rectangle; the findings into <pre id="layout">.
MEASURE = """
<script>
window.addEventListener('load', () => {
  const found = [];
  const box = (svg, el) => {
    const b = el.getBBox();
    const m = svg.getScreenCTM().inverse().multiply(el.getScreenCTM());
    const pts = [[b.x, b.y], [b.x + b.width, b.y], [b.x, b.y + b.height],
                 [b.x + b.width, b.y + b.height]].map(([x, y]) => {
      const p = new DOMPoint(x, y).matrixTransform(m); return [p.x, p.y]; });
    const xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
    return {x0: Math.min(...xs), x1: Math.max(...xs), y0: Math.min(...ys), y1: Math.max(...ys)};
  };
  const meet = (a, b) => a.x0 < b.x1 - 1 && b.x0 < a.x1 - 1 && a.y0 < b.y1 - 1 && b.y0 < a.y1 - 1;
  document.querySelectorAll('svg').forEach((svg, i) => {
    const vb = svg.viewBox.baseVal;
    const texts = [...svg.querySelectorAll(':scope > text')].map(t => [t.textContent, box(svg, t)]);
    const plot = svg.querySelector('rect[fill="none"]');
    const plotBox = plot ? box(svg, plot) : null;
    texts.forEach(([text, b], j) => {
      if (b.x0 < -0.5 || b.y0 < -0.5 || b.x1 > vb.width + 0.5 || b.y1 > vb.height + 0.5)
        found.push(`chart ${i}: clipped: ${text} ${JSON.stringify(b)} in ${vb.width}x${vb.height}`);
      if (plotBox && meet(b, plotBox))
        found.push(`chart ${i}: on the plot: ${text}`);
      texts.slice(j + 1).forEach(([other, c]) => {
        if (meet(b, c)) found.push(`chart ${i}: overlap: ${text} / ${other}`);
      });
    });
  });
  const pre = document.createElement('pre');
  pre.id = 'layout';
  pre.textContent = JSON.stringify({charts: document.querySelectorAll('svg').length, found});
  document.body.appendChild(pre);
});
</script>
"""


def measured(tmp_path: Path, page: str) -> dict[str, object]:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("chromium not installed (Debian package 'chromium'; scripts/test "
                    "installs it when run as root)")
    path = tmp_path / f"page{len(list(tmp_path.glob('page*')))}.html"
    path.write_text(page.replace("</body>", MEASURE + "</body>"))
    dom = subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=900,2400",
         "--virtual-time-budget=5000", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'<pre id="layout">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<")
                      .replace("&gt;", ">").replace("&amp;", "&"))


def report_page(tmp_path: Path) -> str:
    runs = [write_run(tmp_path / "gold.jsonl", 1.0, capped=True),
            write_run(tmp_path / "a-much-longer-run-name-of-a-silver-node.jsonl", 1.6,
                      capped=False)]
    # Where the ratio binds on every core: decided and unsure verdicts.
    shipped = Path(load_profile("qanum").path).read_text()
    everywhere = tmp_path / "everywhere.toml"
    everywhere.write_text(shipped.replace('ratio_binds = "reference"', 'ratio_binds = "all"'))
    page = render_html([read_run(p) for p in runs], load_profile(everywhere))
    assert "? unsure: 1614 (1583-1640) straddles 1600" in page
    assert "✓ covered: 283 (277-287) ≤ 290" in page
    return page


def monitor_page(name: str = "") -> str:
    """The monitor's page; ``name``: put in front of every cluster's name (a long one
    from /sys or a run must be cut to fit, never clipped)."""
    def row(suite: str, where: str, vu: int, ci: tuple[int, int], const: int,
            decision: str, binds: bool) -> CoverageView:
        return CoverageView(suite=suite, where=name + where, cluster=0, cpu=0, backend="liboqs",
                            time_ns=1e5, vu_estimate=vu, vu_constant=const,
                            margin=const - vu, covered=decision == "covered",
                            statistic="paired", vu_median_rule=vu - 30, basis="node",
                            decision=decision, vu_ci=ci, ratio_binds=binds,
                            worst_block_ns=2e9)
    frame = Frame(
        taken_at=1e9,
        machine=MachineView(model="AMD EPYC", designs="Zen 5", arch="x86_64",
                            profile="qanum", backend="liboqs", source="live",
                            measurable=True, problems=()),
        cores=(),
        coverage=(row("SLH-DSA-SHAKE-128s", "cluster 0 (CPUs 0-1)", 3760, (3715, 3804),
                      1600, "not_covered", False),
                  row("SLH-DSA-SHAKE-128s", "cluster 1 (CPUs 2-63)", 1614, (1583, 1640),
                      1600, "unsure", True),
                  row("SLH-DSA-SHAKE-128s", "cluster 2 (CPUs 64-127)", 1500, (1480, 1520),
                      1600, "covered", True),
                  row("SLH-DSA-SHAKE-128s", "cluster 3 (CPUs 128-191)", 1700, (1680, 1720),
                      1600, "not_covered", True)),
        history=(ClusterHistory(cluster=0, label="cluster 0", samples_khz=(2_400_000,) * 30,
                                max_khz=2_400_000),),
        alerts=(),
    )
    return report_html(frame, "qanum", block_interval_s=75.0)


def test_the_monitor_s_page_says_not_binding_in_its_own_colour() -> None:
    page = monitor_page()
    assert "not binding here: 3760 (3715-3804) constant 1600" in page
    line = next(t for t in re.findall(r"<text [^>]*>[^<]*</text>", page) if "3760" in t)
    assert "✗" not in line and BAD not in line and "#E69F00" not in line
    assert f'fill="{STATE_STYLE["not_binding"][0]}"' in line
    colours = {state: re.search(rf'fill="([^"]+)">{re.escape(mark)}', page)
               for state, (_c, mark) in STATE_STYLE.items() if mark}
    assert {s: m.group(1) for s, m in colours.items() if m} == {
        s: STATE_STYLE[s][0] for s in ("covered", "not_covered", "unsure")}
    assert len({c for c, _m in STATE_STYLE.values()} - {"#6E6E6E"}) >= 4


@pytest.mark.parametrize("which", ["report", "monitor", "monitor, long names"])
def test_no_label_is_clipped_in_chromium(tmp_path: Path, which: str) -> None:
    page = (report_page(tmp_path) if which == "report" else
            monitor_page("Ω\x1b[2K" + "W" * 300 if "long" in which else ""))
    result = measured(tmp_path, page)
    assert result["charts"] == page.count("<svg ")
    assert result["found"] == [], "\n".join(result["found"])  # type: ignore[arg-type]
