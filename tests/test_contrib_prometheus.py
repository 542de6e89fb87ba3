"""contrib/prometheus: the rules parse and pass their unit tests in the real promtool.

Skips only where promtool is missing (Debian package 'prometheus'; scripts/test installs
it when run as root).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

CONTRIB = Path(__file__).resolve().parents[1] / "contrib"
RULES = CONTRIB / "prometheus" / "qprof.rules.yml"
RULES_TESTS = CONTRIB / "prometheus" / "qprof.rules.test.yml"


def promtool() -> str:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.skip("promtool not installed (Debian package 'prometheus'; scripts/test "
                    "installs it when run as root)")
    return binary


def run_promtool(*args: str, cwd: Path | None = None, stdin_path: Path | None = None) -> str:
    with open(stdin_path or "/dev/null", "rb") as stdin:
        proc = subprocess.run([promtool(), *args], capture_output=True, timeout=60, cwd=cwd,
                              stdin=stdin)
    out = (proc.stdout + proc.stderr).decode(errors="replace")
    assert proc.returncode == 0, f"promtool {' '.join(args)} failed:\n{out}"
    return out


def test_rules_parse() -> None:
    assert "SUCCESS" in run_promtool("check", "rules", str(RULES))


def test_rules_unit_tests_pass() -> None:
    out = run_promtool("test", "rules", RULES_TESTS.name, cwd=RULES_TESTS.parent)
    assert "SUCCESS" in out


def test_readme_fleet_config_is_valid(tmp_path: Path) -> None:
    """The README's Fleet scrape config, as an operator would paste it, with the rules."""
    readme = (CONTRIB.parent / "README.md").read_text()
    fleet = readme[readme.index("## Fleet"):]
    m = re.search(r"```yaml\n(rule_files:.*?)```", fleet, flags=re.S)
    assert m, "no prometheus.yml block in the README's Fleet section"
    config = tmp_path / "prometheus.yml"
    config.write_text(m.group(1).replace("/etc/prometheus/qprof.rules.yml", str(RULES)))
    out = run_promtool("check", "config", str(config))
    assert "SUCCESS: 1 rule files found" in out
