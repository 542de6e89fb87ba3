"""The import graph of qprof, read from the sources: no circle (``TYPE_CHECKING`` imports
counted), no qprof import inside a function body, and no layer importing one above it
(docs/ARCHITECTURE.md: top-level helpers < hw < verify < measure < consensus < report <
service < tui < commands < cli)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import qprof

ROOT = Path(qprof.__file__).parent
LAYERS = ("top", "hw", "verify", "measure", "consensus", "report", "service", "tui",
          "commands", "cli")
# Packages whose modules are not yet checked as importers (their imports are being moved).
PENDING = {"hw", "verify", "measure", "service", "top"}


@dataclass(frozen=True)
class Import:
    """One import statement's edge: who imports what, where, and whether in a function."""

    importer: str
    imported: str
    line: int
    in_function: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def layer(module: str) -> str:
    """The layer of a qprof module: its package, ``cli`` for the entry points, ``top`` for
    the helpers beside them (untrusted, atomicfile, ...)."""
    if module in ("qprof.cli", "qprof.__main__"):
        return "cli"
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else "top"


def _known(name: str) -> str | None:
    """The qprof module ``name`` names (``qprof.a.b.Thing`` -> ``qprof.a.b``), if any."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in MODULES else None


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            package = package[:len(package) - node.level + 1]
            base = ".".join(package + ([base] if base else []))
        names = [f"{base}.{a.name}" for a in node.names]
    return [t for t in (_known(n) for n in names) if t is not None and t != module]


def _walk(node: ast.AST, in_function: bool = False):
    for child in ast.iter_child_nodes(node):
        yield child, in_function
        yield from _walk(child, in_function or isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))


def imports(module: str) -> list[Import]:
    """Every qprof import in ``module``: module level, ``TYPE_CHECKING`` and function
    bodies alike."""
    path = MODULES[module]
    return [Import(module, target, node.lineno, in_function)
            for node, in_function in _walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for target in _targets(module, path, node)]


def checked() -> list[Import]:
    return [i for m in MODULES if layer(m) not in PENDING for i in imports(m)]


def cycles(edges: list[Import]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.importer, set()).add(e.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_scan_sees_every_kind_of_import():
    kinds = {(i.imported, i.in_function) for i in imports("qprof.cli")}
    assert ("qprof.commands", False) in kinds
    assert layer("qprof.untrusted") == "top" and layer("qprof.hw") == "hw"
    assert layer("qprof.consensus.trend.model") == "consensus"
    cycle = [Import("qprof.a", "qprof.b", 1, False), Import("qprof.b", "qprof.a", 1, False),
             Import("qprof.b", "qprof.c", 1, False)]
    assert cycles(cycle) == [["qprof.a", "qprof.b"]]


def test_no_circle():
    assert not cycles(checked())


def test_no_qprof_import_inside_a_function():
    inside = [f"{i.importer}:{i.line} {i.imported}" for i in checked() if i.in_function]
    assert not inside, inside


def test_no_layer_imports_one_above_it():
    """All of qprof, ``PENDING`` too: ``measure`` is handed the stopping rule and imports
    nothing from ``consensus``; only the entry points import ``cli``."""
    upward = [f"{i.importer}:{i.line} {i.imported}"
              for m in MODULES for i in imports(m)
              if LAYERS.index(layer(i.imported)) > LAYERS.index(layer(m))]
    assert not upward, upward
