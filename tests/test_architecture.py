"""The package's import graph: no cycle anywhere, and the service's layers point one way.

The graph is read from the source with :mod:`ast`, every ``import`` statement wherever it
stands (module level, inside functions, under ``if TYPE_CHECKING``): an import deferred to a
function for start-up time still runs, and a cycle through it is still a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT = "sharedtask"
SERVICE = "sharedtask.service"
WEB = "sharedtask.service.web"


def module_names() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    names = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _target(name: str, modules: dict[str, Path]) -> str | None:
    """The module an imported name lands in: itself, or the nearest enclosing module of ours."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``module`` imports anywhere in its source."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, one level up per extra dot
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from a import b`: b is a module of ours (a.b) or a name defined in a
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for name in names:
            target = _target(name, modules) if name.split(".")[0] == ROOT else None
            if target is not None and target != module:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan's algorithm,
    iterative: the package has hundreds of modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
    return [_a_cycle(component, graph) for component in components]


def _a_cycle(component: set[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest path from the component's first module back to itself (breadth first)."""
    first = min(component)
    came_from: dict[str, str] = {}
    frontier = [first]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == first:
                    path = [node]
                    while path[-1] != first:
                        path.append(came_from[path[-1]])
                    return [first, *reversed(path[:-1]), first] if len(path) > 1 else [first, node, first]
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    return sorted(component)


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    """The checker itself: a two-module cycle whose second edge is an import inside a function."""
    (tmp_path / "a.py").write_text("from sharedtask import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from sharedtask.a import x\n    return x\n")
    modules = {"sharedtask.a": tmp_path / "a.py", "sharedtask.b": tmp_path / "b.py"}
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert graph == {"sharedtask.a": {"sharedtask.b"}, "sharedtask.b": {"sharedtask.a"}}
    assert cycles(graph) == [["sharedtask.a", "sharedtask.b", "sharedtask.a"]]
    assert cycles({"x": {"y"}, "y": {"z"}, "z": set()}) == []


def test_relative_imports_resolve_to_the_package_module(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    init, mod = tmp_path / "pkg" / "__init__.py", tmp_path / "pkg" / "m.py"
    init.write_text("from . import m\n")
    mod.write_text("from .. import top\nfrom . import n\n")
    modules = {"sharedtask.pkg": init, "sharedtask.pkg.m": mod, "sharedtask.pkg.n": mod, "sharedtask.top": mod}
    assert imports_of("sharedtask.pkg", init, modules) == {"sharedtask.pkg.m"}
    assert imports_of("sharedtask.pkg.m", mod, modules) == {"sharedtask.top", "sharedtask.pkg.n"}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_the_package_has_no_import_cycle(graph: dict[str, set[str]]) -> None:
    assert len(graph) > 100  # the whole package was read
    found = cycles(graph)
    assert found == [], "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in found)


def test_no_domain_module_of_the_service_imports_its_web_layer(graph: dict[str, set[str]]) -> None:
    """``service/web/`` imports the domain, never the reverse; only the app (which includes the
    routers) imports it."""
    wrong = {module: sorted(t for t in targets if t == WEB or t.startswith(WEB + "."))
             for module, targets in graph.items()
             if module.startswith(SERVICE + ".") and not module.startswith(WEB) and module != f"{SERVICE}.app"}
    assert {m: t for m, t in wrong.items() if t} == {}
    assert any(t.startswith(WEB) for t in graph[f"{SERVICE}.app"])  # the check looks where imports are


def test_route_modules_do_not_import_each_other(graph: dict[str, set[str]]) -> None:
    """A route module (one that declares a ``router``) shares only ``web.common`` and the HTML
    modules with the others."""
    modules = module_names()
    routes = {m for m in modules if m.startswith(WEB + ".") and "router = APIRouter(" in modules[m].read_text()}
    assert {f"{WEB}.api", f"{WEB}.views"} <= routes
    assert {m: sorted(graph[m] & routes) for m in routes if graph[m] & routes} == {}
