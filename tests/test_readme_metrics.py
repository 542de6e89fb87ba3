"""README's metrics table names every metric the daemon's registry can export, and no
other (issue 52): the collectors' metric families (qprof/service) against the table's
first column. A metric added without a row, or a row left after a rename, fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUFFIX = {"Gauge": "", "Counter": "_total", "Info": "_info"}  # what the exposition names


def registry_names() -> set[str]:
    """Every metric family of the daemon's collectors, as scraped."""
    names = set()
    for path in (ROOT / "qprof" / "service").glob("*.py"):
        for kind, name in re.findall(r'(Gauge|Counter|Info)MetricFamily\(\s*"([a-z_]+)"',
                                     path.read_text()):
            names.add(name + SUFFIX[kind])
    return names


def readme_names() -> set[str]:
    """The metric names in the first column of README's metrics table."""
    names = set()
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith(("| `qprof_", "| `process_")):
            names |= set(re.findall(r"`((?:qprof|process)_[a-z_]*\*?)`", line.split("|")[1]))
    return names


def test_the_readme_lists_every_exported_metric() -> None:
    exported, listed = registry_names(), readme_names()
    assert len(exported) >= 40
    assert "process_*" in listed  # prometheus_client's process collector
    assert {"qprof_vu_worst_signature", "qprof_vu_worst_signature_ci_high",
            "qprof_invalid_block_seconds"} <= listed
    assert exported - listed == set(), "metrics without a README row"
    assert listed - exported - {"process_*"} == set(), "README rows of no metric"
