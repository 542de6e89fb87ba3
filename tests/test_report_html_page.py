"""`qprof report --html` on three recorded runs of one machine (tests/data/runs), opened
in headless Chromium at 1400 px (issue 52 item 6): the page opens with the overall
verdict line, has the trend section in the same SVG style, its charts span the page,
and no label is clipped; the Markdown ends with a newline, and the command writes what
the README says."""

from __future__ import annotations

import json
import lzma
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_report_html import png_size
from test_report_html_layout import MEASURE

RUNS = Path(__file__).resolve().parent / "data" / "runs"
README = Path(__file__).resolve().parent.parent / "README.md"
WINDOW = (1400, 3000)
# After load: the page's first paragraphs, its section titles and each chart's width
# against the body's, into <pre id="page">.
PAGE = """
<script>
window.addEventListener('load', () => {
  const body = document.body.getBoundingClientRect().width;
  const pre = document.createElement('pre');
  pre.id = 'page';
  pre.textContent = JSON.stringify({
    first: [...document.querySelectorAll('body > p')].slice(0, 2).map(p => p.textContent),
    bold: getComputedStyle(document.querySelector('body > p')).fontWeight,
    sections: [...document.querySelectorAll('h2')].map(h => h.textContent),
    widths: [...document.querySelectorAll('svg')].map(s => s.getBoundingClientRect().width / body),
    window: window.innerWidth, body});
  document.body.appendChild(pre);
});
</script>
"""


def _found(dom: str, pre: str) -> dict[str, object]:
    m = re.search(rf'<pre id="{pre}">(.*?)</pre>', dom, re.S)
    assert m, dom[-2000:]
    return json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<")
                      .replace("&gt;", ">").replace("&amp;", "&"))


@pytest.fixture
def recorded(tmp_path: Path) -> list[Path]:
    out = []
    for xz in sorted(RUNS.glob("*.jsonl.xz")):
        path = tmp_path / xz.name.removesuffix(".xz")
        path.write_bytes(lzma.decompress(xz.read_bytes()))
        out.append(path)
    return out


def test_report_writes_what_the_readme_says(tmp_path: Path, recorded: list[Path]) -> None:
    page = tmp_path / "page.html"
    example = next(line for line in README.read_text().splitlines()
                   if line.startswith("qprof report --html page.html"))
    assert "Markdown only with -o" in example, example
    done = subprocess.run([sys.executable, "-m", "qprof", "report", *map(str, recorded),
                           "--profile", "qanum", "--html", str(page)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "", done.stderr[-2000:]
    assert f"qprof report: wrote {page}" in done.stderr
    done = subprocess.run([sys.executable, "-m", "qprof", "report", *map(str, recorded),
                           "--profile", "qanum", "-o", "-"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.endswith("\n")
    assert not done.stdout.endswith("\n\n")


def test_page_in_chromium_opens_with_the_verdict_and_has_the_trend(
        tmp_path: Path, recorded: list[Path]) -> None:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("chromium not installed (Debian package 'chromium'; scripts/test "
                    "installs it when run as root)")
    page = tmp_path / "page.html"
    done = subprocess.run([sys.executable, "-m", "qprof", "report", *map(str, recorded),
                           "--profile", "qanum", "--html", str(page)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    html = page.read_text()
    assert re.search(r"<h1>[^<]*</h1>\s*<p class=\"verdict\">Verdict \(qanum\): ", html)
    measured = tmp_path / "measured.html"
    measured.write_text(html.replace("</body>", MEASURE + PAGE + "</body>"))

    def chromium(*action: str, target: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars",
             f"--user-data-dir={tmp_path / 'chromium-profile'}",
             f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=5000",
             *action, target.as_uri()],
            capture_output=True, text=True, timeout=120, cwd=tmp_path)

    dom = chromium("--dump-dom", target=measured)
    assert dom.returncode == 0, dom.stderr[-2000:]
    layout, shown = _found(dom.stdout, "layout"), _found(dom.stdout, "page")
    assert layout["found"] == [], "\n".join(layout["found"])  # type: ignore[arg-type]
    first = shown["first"]
    assert first[0].startswith("Verdict (qanum): covered")  # type: ignore[index]
    assert first[1].startswith("Runs: ")  # type: ignore[index]
    assert int(shown["bold"]) >= 600  # type: ignore[call-overload]
    assert "The ratio over time" in shown["sections"]  # type: ignore[operator]
    assert html.count('fill-opacity="0.18"') >= 3  # a segment band per suite's chart
    widths = shown["widths"]
    assert widths and min(widths) > 0.9, widths  # type: ignore[type-var, arg-type]
    assert shown["body"] > 0.9 * WINDOW[0]  # type: ignore[operator]
    shot = tmp_path / "page.png"
    run = chromium(f"--screenshot={shot}", target=page)
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    assert png_size(shot) == WINDOW
