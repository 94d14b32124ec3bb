"""No import cycle anywhere in the project: each package's arrows point one way (DESIGN.md §3).

Every import counts, wherever it is written: at the top of a module, inside a function or a
method, under ``TYPE_CHECKING``. Two graphs are checked: modules, and the project's parts (an
app or pure core, ``spark_ide.<package>``; a module at the root, such as ``spark_ide.api``, is a
part of its own), where an app importing an app that imports it back is a cycle even when no
two modules import each other."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spark_ide", "benchmarks")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The project modules ``name`` imports, anywhere in it (TYPE_CHECKING too: a cycle for the
    type checker is still two modules that cannot be understood apart)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):  # every node at any depth: imports in functions and classes too
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    files = {module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")
             if "migrations" not in path.parts}
    known = set(files)
    return {name: imports_of(path, name, known) for name, path in files.items()}


def part_of(module: str) -> str:
    """The part a module belongs to: ``spark_ide.pairing.views`` -> ``spark_ide.pairing``;
    a root module (``spark_ide.api``) is its own; ``benchmarks.x`` -> ``benchmarks``."""
    parts = module.split(".")
    if parts[0] == "spark_ide" and len(parts) > 1 and (ROOT / "spark_ide" / parts[1]).is_dir():
        return ".".join(parts[:2])
    return module if parts[0] == "spark_ide" else parts[0]


def parts_graph(modules: dict[str, set[str]]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for name, targets in modules.items():
        edges.setdefault(part_of(name), set()).update(part_of(t) for t in targets if part_of(t) != part_of(name))
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_checker_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_itself_through_others() -> None:
    assert cycles(graph()) == []


def test_an_import_inside_a_function_is_an_arrow_too(tmp_path: Path) -> None:
    source = tmp_path / "views.py"
    source.write_text("def page():\n    class Late:\n        from spark_ide.classroom.models import Course\n")
    known = {"spark_ide.classroom.models"}
    assert imports_of(source, "spark_ide.pairing.views", known) == known


def test_no_app_imports_an_app_that_imports_it() -> None:
    """pairing <-> classroom, workspaces <-> replay and the like: the app below is handed what
    it needs at startup (``workspaces/ports.py``, ``pairing/ports.py``) instead."""
    assert cycles(parts_graph(graph())) == []


def test_workspaces_imports_no_app_built_on_it() -> None:
    """DESIGN.md §3: the workspaces app sits under pairing, classroom, replay and ops."""
    above = {"spark_ide.pairing", "spark_ide.classroom", "spark_ide.replay", "spark_ide.ops", "spark_ide.sandbox"}
    assert parts_graph(graph())["spark_ide.workspaces"] & above == set()
