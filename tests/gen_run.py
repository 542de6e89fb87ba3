"""GEN, a small valid run for the tests of commands that read runs (a meta record, 5 rounds
on CPU 0 of ML-DSA-44 (17 us) and ML-DSA-87 (39 us), samples [t, 1.01t, 0.99t], an end
record), the hostile string they carry, and what every output of it must be.
"""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from qprof.measure.records import End, Measurement, Meta, Note
from qprof.measure.records_parts import CpuRow, MachineInfo, RunSettings


def gen(path: Path, *, unit_ns: float = 17_000.0, suite_ns: float = 39_000.0,
        hostname: str = "node", text: str | None = None, status: str = "finished",
        cpu_row: CpuRow | None = None, settings: RunSettings | None = None,
        unit_samples: list[float] | None = None) -> Path:
    """GEN (the module's docstring); ``text``: a note with it; the other arguments put
    strings where a run carries them."""
    meta = Meta(run_id="r", started_at=1000.0, qprof_version="t", command=["qprof", "check"],
                machine=MachineInfo(hostname=hostname, cpu_model="AMD EPYC", arch="x86_64"),
                cpus=[cpu_row or CpuRow(cpu=0)], settings=settings or RunSettings(mode="check"))
    lines = [meta.to_json()]
    for rnd in range(5):
        for suite, t in (("ML-DSA-44", unit_ns), ("ML-DSA-87", suite_ns)):
            samples = ([t, 1.01 * t, 0.99 * t] if unit_samples is None or suite != "ML-DSA-44"
                       else unit_samples)
            lines.append(Measurement(run_id="r", cpu=0, suite=suite, backend="liboqs",
                                     operation="verify", round=rnd, n=3, median_ns=t,
                                     p95_ns=1.01 * t, samples_ns=samples,
                                     finished_at=1001.0 + rnd).to_json())
    if text is not None:
        lines.append(Note(run_id="r", level="warning", text=text, kind="x").to_json())
    lines.append(End(run_id="r", finished_at=1010.0, status=status).to_json())
    path.write_text("\n".join(lines) + "\n")
    return path


def run_qprof(*args: str, timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "qprof", *args], capture_output=True,
                          text=True, timeout=timeout, **kw)


def svgs_are_xml(page: str) -> int:
    charts = re.findall(r"<svg .*?</svg>", page, re.S)
    for svg in charts:
        ET.fromstring(svg)  # raises on a raw control character or bad markup
    return len(charts)


# -- 2, 5, 19. one hostile string through every command that prints it ----------------------

HOSTILE = ("\x1b]0;PWNED\x07\r\x1b[2K\nverdict: every binding verdict holds: forged\n"
           "n1\nconstants_held_to = \"worst_signature\"\n#\x9b31m\u202e\ud800"
           + "x" * 100_000)


MAX_STRING = 4000  # qprof.measure.markdown.MAX_TEXT, the largest bound of any destination


MAX_LINE = 20_000


def assert_plain(text: str, what: str) -> None:
    """No control character but newline and tab; no forged line; every line bounded."""
    bad = re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e\ud800]", text)
    assert not bad, (what, bad[:5])
    lines = text.splitlines()
    assert sum(line.startswith("verdict:") for line in lines) <= 1, what
    assert not any(line.startswith("verdict: every binding verdict holds: forged")
                   for line in lines), what
    # Each string bounded where it is shown (a line may hold a few of them).
    longest = max((len(run) for run in re.findall("x+", text)), default=0)
    assert longest <= MAX_STRING, (what, longest)
    assert max(map(len, lines), default=0) <= MAX_LINE, (what, max(map(len, lines)))
