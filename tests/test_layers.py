"""The layers (docs/ARCHITECTURE.md): a package imports only the layers below it.

``measure`` produces records and is handed the stopping rule; it imports nothing from
``consensus`` (nor anything above it; tests/test_imports.py checks every layer). One
package holds the estimator.
"""

from __future__ import annotations

import ast
from pathlib import Path

import qprof

ROOT = Path(qprof.__file__).parent


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
