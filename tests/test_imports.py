"""The package's import rules, read from the source (an AST walk of src/sharedtask): a
private name (``_x``) stays inside its package; what another package needs is public."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _module(path: Path) -> list[str]:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _home(module: list[str]) -> tuple[str, ...]:
    """The package that owns a module: ``sharedtask.<package>`` (a root module is its own)."""
    return tuple(module[:2])


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(tree: ast.AST, me: list[str]) -> list[tuple[int, str]]:
    """(line, what) of each private name taken from another package: ``from sharedtask.x import
    _y``, or ``x._y`` on a module or name imported from another package."""
    found = []
    bound: dict[str, list[str]] = {}  # local name -> the dotted path it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "sharedtask":
            target = node.module.split(".")
            for alias in node.names:
                if _private(alias.name) and _home(target) != _home(me):
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
                bound[alias.asname or alias.name] = [*target, alias.name]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "sharedtask":
                    bound[alias.asname or "sharedtask"] = alias.name.split(".") if alias.asname else ["sharedtask"]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name) \
                and node.value.id in bound and _home(bound[node.value.id]) != _home(me):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return found


def test_no_private_name_is_imported_across_packages() -> None:
    offenders = []
    for path in sorted((SRC / "sharedtask").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        offenders += [f"{path.relative_to(SRC)}:{line}: {what}" for line, what in private_imports(tree, _module(path))]
    assert offenders == []


def test_the_finder_tells_a_package_from_another() -> None:
    code = """
from sharedtask.report.html import _css, render_html
from sharedtask.validate.ranking import _tie_story
from sharedtask.executor import remote
from sharedtask.service import db
remote._transient(None)
db._safe("x")
"""
    found = [what for _, what in private_imports(ast.parse(code), ["sharedtask", "service", "pages"])]
    assert found == ["from sharedtask.report.html import _css", "from sharedtask.validate.ranking import _tie_story",
                     "remote._transient"]
