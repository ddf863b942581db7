"""Task families are declared once (sharedtask.families): every family a task names is
registered, every hook it declares resolves, and no module outside the registry switches
on a family's name."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import yaml

from sharedtask import families
from sharedtask.families import Family, register
from sharedtask.spec import BASE_DIR, all_tasks, tasks_dir

SRC = Path(__file__).resolve().parents[1] / "src" / "sharedtask"


def test_every_family_in_the_task_files_is_registered() -> None:
    named = {t.family for t in all_tasks()}
    assert named  # the task files were found
    assert sorted(named - set(families.REGISTRY)) == []


def test_the_schema_allows_exactly_the_registered_families() -> None:
    schema = json.loads((tasks_dir() / "task.schema.json").read_text(encoding="utf-8"))
    assert sorted(schema["properties"]["family"]["enum"]) == families.names()


def test_every_family_in_a_base_layer_is_registered() -> None:
    """The _base layers hold the family key of most tasks; read them as YAML, not through the loader."""
    named = set()
    for path in (tasks_dir() / BASE_DIR).glob("*.yml"):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if "family" in doc:
            named.add(doc["family"])
    assert named and named <= set(families.REGISTRY)


@pytest.mark.parametrize("name", sorted(families.REGISTRY))
def test_every_hook_of_a_family_resolves_to_a_function(name: str) -> None:
    family = families.get(name)
    hooks = [family.evaluator, *family.known_ids.values()]
    hooks += [h for h in (family.rerank_queries, family.rerank_documents, family.corpus_documents,
                          family.assessment_topics, family.assessment_items) if h is not None]
    for hook in hooks:
        assert callable(families.resolve(hook)), hook


def test_a_family_is_registered_once_and_its_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register(families.get("touche"))
    with pytest.raises(ValueError, match="input must be one of"):
        register(Family(name="x-new", title="x", input="no-such-input", evaluator="m:f", template="t", approach="a"))
    with pytest.raises(ValueError, match="both rerank_queries"):
        register(Family(name="x-new", title="x", input="trec-run", evaluator="m:f", template="t", approach="a",
                        rerank_queries="m:f"))
    assert "x-new" not in families.REGISTRY
    with pytest.raises(KeyError, match="unknown task family 'nope'"):
        families.get("nope")


def _family_switches(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """(line, what) of every switch on a family: a comparison with ``x.family``/``family``, a
    lookup keyed by ``x.family``, a dict literal keyed by family names."""

    def is_family(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "family") or \
            (isinstance(node, ast.Name) and node.id == "family") or \
            (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == "family")

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(is_family(n) for n in (node.left, *node.comparators)):
            found.append((node.lineno, "comparison with a family"))
        elif isinstance(node, ast.Subscript) and is_family(node.slice):
            found.append((node.lineno, "lookup keyed by a family"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and is_family(node.args[0]) \
                and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "families"):
            found.append((node.lineno, "lookup keyed by a family"))
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if sum(k in names for k in keys) >= 2:
                found.append((node.lineno, "table keyed by family names"))
    return found


def test_no_module_outside_the_registry_switches_on_a_family() -> None:
    names = set(families.REGISTRY)
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if (SRC / "families") in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        offenders += [f"{path.relative_to(SRC)}:{line}: {what}" for line, what in _family_switches(tree, names)]
    assert offenders == []


def test_the_switch_finder_finds_each_kind_of_switch() -> None:
    """The check above is only as good as its finder: each form it bans is found."""
    code = '''
if task.family == "touche": pass
if doc["family"] in ("mathqa",): pass
x = TEMPLATES[task.family]
y = FAMILY_INPUT.get(task.family)
z = {"touche": 1, "mathqa": 2}
ok = families.get(task.family)
'''
    kinds = [what for _, what in _family_switches(ast.parse(code), set(families.REGISTRY))]
    assert kinds == ["comparison with a family", "comparison with a family", "lookup keyed by a family",
                     "lookup keyed by a family", "table keyed by family names"]


def test_a_family_module_imports_only_the_registry() -> None:
    """Declarations only: the hooks are strings, so no package that asks the registry is imported
    back from it (no import circle), and the spec loader's import of the registry stays light."""
    imported = {}
    for path in sorted((SRC / "families").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        names |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported[path.name] = sorted(n for n in names if n.startswith("sharedtask") and not n.startswith("sharedtask.families"))
    assert imported.pop("base.py") == ["sharedtask.measures"]
    assert {name: mods for name, mods in imported.items() if mods} == {}
