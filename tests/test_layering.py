"""The core's import graph: no circles, one direction between packages, no evaluation code in
production, modules of a readable size. Read from the source (``ast``), not by importing, so
lazy imports inside functions count as much as top-level ones; ``if TYPE_CHECKING:`` blocks
do not (they never run)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "tessera"

LAYERS = ("base", "parsing", "chunking", "config", "embedding", "store", "search")
"""Bottom to top: a module may import its own layer and the layers below, never above.
``base``: document types, offsets, errors and the registry helper. ``config`` is the
``tessera.yaml`` loader, which validates the chunking profile with the chunker registry.
Everything else (sources, the run, the pipeline, CLI, API, evaluation) sits on top."""
BASE = {
    "errors", "offsets", "types", "layout", "serde", "registry",
    "config_values", "config_quality", "config_execution", "config_source", "config_directory",
}  # fmt: skip
EVAL_SURFACE = {"tessera.cli_eval"}
"""The ``tessera eval`` command: the one production module that may reach evaluation code."""
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(CORE.rglob("*.py"))}


def _type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return isinstance(test, ast.Name | ast.Attribute) and ast.unparse(test).endswith("TYPE_CHECKING")


def _parse(source: str) -> ast.Module:
    """``ast.parse``, again when CPython 3.11 raises its spurious "AST constructor recursion
    depth mismatch" (python/cpython#106905 and reports like it, from threaded processes): seen
    once in CI here, while a garbage collection ran another test's finalizers mid-parse. Any
    other error, and the same one three times, is raised."""
    for attempt in range(3):
        try:
            return ast.parse(source)
        except SystemError as e:
            if "recursion depth mismatch" not in str(e) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def imports(path: Path, known: set[str]) -> set[str]:
    """The tessera modules ``path`` imports anywhere (functions included)."""
    out: set[str] = set()
    stack: list[ast.AST] = [_parse(path.read_text("utf-8"))]
    while stack:
        node = stack.pop()
        if _type_checking(node):
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module in known:
                out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in known)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        stack.extend(ast.iter_child_nodes(node))
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    g = {m: imports(p, known) for m, p in mods.items()}
    for m, deps in g.items():  # a package's __init__ importing its own modules is not a circle
        deps.difference_update({d for d in deps if m == d or m.startswith(d + ".") or d == "tessera"})
    return g


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected component (Tarjan), as a path of module names."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> str | None:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    if top in BASE:
        return "base"
    return top if top in LAYERS else None


def climbs(g: dict[str, set[str]]) -> list[str]:
    bad = []
    for m, deps in g.items():
        lm = layer(m)
        if lm is None:
            continue
        for d in sorted(deps):
            ld = layer(d)
            if ld is None or LAYERS.index(ld) > LAYERS.index(lm):
                bad.append(f"{m} ({lm}) imports {d} ({ld or 'application'})")
    return bad


def test_no_import_circles() -> None:
    assert cycles(graph()) == []


def test_core_layers_depend_one_way() -> None:
    assert climbs(graph()) == []


def test_production_never_imports_evaluation() -> None:
    g = graph()
    bad = [
        f"{m} imports {d}"
        for m, deps in g.items()
        if not m.startswith("tessera.evaluation") and m not in EVAL_SURFACE
        for d in deps
        if d.startswith("tessera.evaluation")
    ]
    assert bad == []


def test_modules_stay_readable() -> None:
    long = {m: n for m, p in modules().items() if (n := len(p.read_text("utf-8").splitlines())) > MAX_LINES}
    assert long == {}


@pytest.mark.parametrize(
    ("g", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set(), "c": {"c2"}, "c2": {"c"}}, [["c", "c2"]]),
        ({"a": {"b"}, "b": set()}, []),
    ],
)
def test_cycle_finder_finds_circles(g: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(g) == expected


def test_checks_see_lazy_imports_and_climbs(tmp_path: Path) -> None:
    """The checks are not blind: a lazy import inside a function is an edge, a TYPE_CHECKING
    import is not, and a store module importing search is a climb."""
    src = tmp_path / "m.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from tessera.search.query import SearchHit\n"
        "def f():\n    from tessera.search import principal\n    import tessera.types\n"
    )
    known = {"tessera.search.query", "tessera.search", "tessera.search.principal", "tessera.types"}
    assert imports(src, known) == {"tessera.search", "tessera.search.principal", "tessera.types"}
    assert climbs({"tessera.store.db": {"tessera.search.query"}}) == [
        "tessera.store.db (store) imports tessera.search.query (search)"
    ]
    assert climbs({"tessera.chunking.x": {"tessera.pipeline.run"}}) == [
        "tessera.chunking.x (chunking) imports tessera.pipeline.run (application)"
    ]
    assert (
        climbs({"tessera.pipeline.run": {"tessera.search.query"}, "tessera.search.q": {"tessera.types"}})
        == []
    )
