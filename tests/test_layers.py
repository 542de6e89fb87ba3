"""The layers (docs/ARCHITECTURE.md): a package imports only the layers below it.

``measure`` produces records and is handed the stopping rule; it imports nothing from
``consensus`` (nor anything above it). One package holds the estimator.
"""

from __future__ import annotations

import ast
from pathlib import Path

import qprof

ROOT = Path(qprof.__file__).parent
ABOVE_MEASURE = ("qprof.consensus", "qprof.report", "qprof.service", "qprof.tui",
                 "qprof.commands", "qprof.cli")


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (function-level imports included)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_measure_imports_nothing_from_consensus_or_above():
    bad = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "measure").rglob("*.py"))
        for name in _imports(path)
        if any(name == top or name.startswith(top + ".") for top in ABOVE_MEASURE)
    }
    assert not bad, sorted(bad)


def test_one_package_holds_the_estimator():
    """The steps turns -> quiet turns -> pairs -> statistic -> interval -> estimate live in
    qprof.consensus.estimate, and the old homes are gone (moved, not copied)."""
    pkg = ROOT / "consensus" / "estimate"
    for name in ("reduce", "quiet", "statistic", "stats", "estimator", "clock", "stopping"):
        assert (pkg / f"{name}.py").is_file(), name
    for gone in ("measure/reduce.py", "measure/clock.py", "consensus/estimator.py",
                 "consensus/statistic.py"):
        assert not (ROOT / gone).exists(), gone
    measure_stats = _imports(ROOT / "measure" / "stats.py")
    assert not any("bootstrap" in n for n in measure_stats)
