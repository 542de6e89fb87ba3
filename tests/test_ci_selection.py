"""CI's second pass (scripts/test-fresh: no liboqs, an empty HOME) runs only the tests
marked ``fresh``. An ast scan of tests/ finds every test that consults liboqs or HOME
(itself, or through a helper or fixture) and checks pytest selects it with ``-m fresh``."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# Calls whose answer depends on this machine's liboqs or on HOME.
AMBIENT_CALLS = {"backend_status", "available_backends", "find_liboqs", "import_oqs",
                 "home", "expanduser"}


def _signal(node: ast.AST) -> str | None:
    """Why ``node`` itself depends on liboqs or HOME, or None."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in AMBIENT_CALLS:
                return f"calls {name}"
            args = [*n.args, *(k.value for k in n.keywords)]
            if name in ("skip", "skipif") and any(
                    isinstance(c, ast.Constant) and isinstance(c.value, str)
                    and "liboqs" in c.value for a in args for c in ast.walk(a)):
                return "skips naming liboqs"
        if isinstance(n, ast.Import) and any(a.name == "oqs" for a in n.names):
            return "imports oqs"
        if isinstance(n, ast.ImportFrom) and n.module == "oqs":
            return "imports oqs"
        if isinstance(n, ast.Constant) and n.value == "HOME":
            return "names HOME"
    return None


def _names(node: ast.AST) -> set[str]:
    """Names, argument names (fixtures) and strings (usefixtures) ``node`` uses."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.add(n.value)
    return out


def _defs(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """Top-level functions, classes' methods (``Class::name``) and assigned names."""
    for st in tree.body:
        if isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef):
            yield st.name, st
        elif isinstance(st, ast.ClassDef):
            yield st.name, st
            for m in st.body:
                if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield f"{st.name}::{m.name}", m
        elif isinstance(st, ast.Assign | ast.AnnAssign):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    yield t.id, st


def _dependent(path: Path, shared: set[str]) -> dict[str, str]:
    """Each definition in ``path`` that depends on liboqs or HOME, with why: by itself,
    or by using another such definition (of this module, or ``shared`` helpers)."""
    nodes = dict(_defs(ast.parse(path.read_text())))
    why = {k: r for k, n in nodes.items() if (r := _signal(n))}
    changed = True
    while changed:
        changed = False
        for k, n in nodes.items():
            if k not in why:
                hit = next((u for u in sorted(_names(n)) if u in shared
                            or (u in why and u != k)), None)
                if hit:
                    why[k], changed = f"uses {hit}", True
    return why


def ambient_tests() -> dict[str, str]:
    """``tests/file.py::[Class::]test`` -> why, for every test that depends on liboqs
    or HOME (helpers in conftest.py, backends.py ... count wherever they are used)."""
    shared: set[str] = set()
    for path in sorted(TESTS.glob("*.py")):
        if not path.name.startswith("test_"):
            shared |= {k for k in _dependent(path, set()) if "::" not in k}
    found = {}
    for path in sorted(TESTS.glob("test_*.py")):
        if path.name == Path(__file__).name:
            continue  # its own scanner names what it looks for
        for k, why in _dependent(path, shared).items():
            if k.split("::")[-1].startswith("test_"):
                found[f"tests/{path.name}::{k}"] = why
    return found


def _fresh_selection() -> tuple[set[str], int, int]:
    """Test ids ``-m fresh`` selects (parameters dropped), how many tests it selects and
    how many there are."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "-m", "fresh"], cwd=TESTS.parent,
                          capture_output=True, text=True, check=False,
                          # the listing's own shape, whatever options the outer run was given
                          env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    tail = re.search(r"^(\d+)/(\d+) tests collected", done.stdout, re.MULTILINE)
    assert tail, done.stdout[-2000:]
    ids = {line.split("[")[0] for line in done.stdout.splitlines() if "::" in line}
    return ids, int(tail.group(1)), int(tail.group(2))


def test_the_scan_sees_the_known_kinds() -> None:
    """The scan finds the fixture, a direct status call, a helper and a HOME reader."""
    found = ambient_tests()
    assert found["tests/test_verify_api.py::test_kem_roundtrip"] == "uses liboqs_available"
    assert found["tests/test_nb_cache.py::test_xdg_cache_home_then_home"] == "names HOME"
    assert found["tests/test_measure_engine.py::test_3_worker_killed_keeps_its_finished_tasks"
                 ] == "uses compiled_backend"
    assert "tests/test_layers.py::test_one_package_holds_the_estimator" not in found


def test_the_fresh_pass_selects_every_test_that_depends_on_liboqs_or_home() -> None:
    """Each such test is selected by ``-m fresh``; the selection is neither empty nor
    the whole suite (a pass selecting nothing must not pass unnoticed)."""
    fresh, selected, total = _fresh_selection()
    missing = sorted(f"{t}  ({why})" for t, why in ambient_tests().items()
                     if t not in fresh)
    assert not missing, "mark these @pytest.mark.fresh:\n" + "\n".join(missing)
    assert 0 < selected < total / 2
