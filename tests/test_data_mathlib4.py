"""``sharedtask data build mathlib4-search/...`` on a fixture in mathlib4's layout.

The fixture (tests/fixtures/mathlib4/checkout, written for these tests, no mathlib text)
holds every syntax the reader keeps and every one it refuses; the expected corpus
(tests/fixtures/mathlib4/expected/corpus.jsonl) was written by hand from reading the
fixture, and the expected known-item queries are listed below with the draw's rule
(sha256 of the name) applied here with hashlib. The checkout is a real git work tree
made in tmp, so the commit check reads a real HEAD.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sharedtask.cli import main
from sharedtask.data import registry, store
from sharedtask.data.mathlib4.lean import read_declarations

FIXTURE = Path(__file__).parent / "fixtures" / "mathlib4"
DATASET = "mathlib4-search/fixture"

#: the eligible docstrings (5+ words, not naming their declaration, used once), by hand
KNOWN_ITEMS = {
    "Fixture.plain": "Addition on `α` is written with a plus sign, as usual.",
    "Fixture.multi_line": "A lemma whose signature spans three lines and has a line comment and a "
                          "/- nested /- block -/ comment -/ inside its doc.",
    "Fixture.attrs_lines": "Multiple attributes, one per line, before a noncomputable declaration.",
    "Fixture.string_args": 'Strings may hold what ends a statement: ":=" and "--" and "where".',
    "Fixture.by_cases_lines": "Match alternatives on their own lines end the statement.",
    "Fixture.opened_in": "Squares are at least as large as their root, for every natural number here.",
    "Outer.Mid.deep": "Inside a dotted namespace and an anonymous section, the name is qualified by both parts.",
}


def expected_files() -> dict[str, bytes]:
    order = sorted(KNOWN_ITEMS, key=lambda name: hashlib.sha256(name.encode()).hexdigest())
    queries = "".join(json.dumps({"id": str(i), "query": KNOWN_ITEMS[n]}, ensure_ascii=False) + "\n"
                      for i, n in enumerate(order, 1))
    qrels = "".join(f"{i} 0 {n} 2\n" for i, n in enumerate(order, 1))
    return {"input/corpus.jsonl": (FIXTURE / "expected" / "corpus.jsonl").read_bytes(),
            "input/queries.jsonl": queries.encode(), "truth/qrels.txt": qrels.encode()}


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> tuple[Path, str]:
    """A git clone-like work tree of the fixture, committed; returns (folder, commit)."""
    root = tmp_path / "mathlib4"
    shutil.copytree(FIXTURE / "checkout", root)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "fixture")
    return root, _git(root, "rev-parse", "HEAD")


@pytest.fixture
def declare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo_root: Path):
    """A copy of tasks/ whose registry gets the fixture's dataset, pinned to a commit."""
    tasks = tmp_path / "tasks"
    shutil.copytree(repo_root / "tasks", tasks)
    monkeypatch.setenv("SHAREDTASK_TASKS", str(tasks))
    monkeypatch.setenv("SHAREDTASK_DATA", str(tmp_path / "store"))

    def write(commit: str) -> None:
        files = "".join(
            f"      - {{path: {target.split('/', 1)[1]}, role: {target.split('/', 1)[0]}, format: {fmt}, build: mathlib4, "
            f"sha256: {hashlib.sha256(data).hexdigest()}}}\n"
            for (target, data), fmt in zip(expected_files().items(), ("statements-jsonl", "queries-jsonl", "trec-qrels")))
        (tasks / "datasets" / "zz-mathlib4-fixture.yml").write_text(
            f"version: 1\ndatasets:\n  {DATASET}:\n    task: mathlib4-search\n    title: the test fixture\n"
            f"    checkout: {{repository: 'https://github.com/leanprover-community/mathlib4', commit: '{commit}'}}\n"
            f"    files:\n{files}", encoding="utf-8")
        registry.all_datasets.cache_clear()

    yield write
    registry.all_datasets.cache_clear()


def test_the_build_writes_the_hand_written_files_and_verify_passes(checkout, declare, tmp_path, capsys) -> None:
    root, commit = checkout
    declare(commit)
    assert main(["data", "build", DATASET, "--from", str(root)]) == 0
    out = capsys.readouterr().out
    folder = tmp_path / "store" / "datasets" / DATASET
    for target, data in expected_files().items():
        assert (folder / target).read_bytes() == data, target
    assert "27 statements" in out and "7 known-item queries" in out
    assert main(["data", "verify", DATASET]) == 0
    assert "verified" in capsys.readouterr().out


def test_the_build_is_byte_identical_twice(checkout, declare, tmp_path, monkeypatch, capsys) -> None:
    root, commit = checkout
    declare(commit)
    assert main(["data", "build", DATASET, "--from", str(root), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    folder = tmp_path / "store" / "datasets" / DATASET
    before = {t: (folder / t).read_bytes() for t in expected_files()}
    monkeypatch.setenv("SHAREDTASK_DATA", str(tmp_path / "store2"))
    assert main(["data", "build", DATASET, "--from", str(root), "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    again = tmp_path / "store2" / "datasets" / DATASET
    assert {t: (again / t).read_bytes() for t in expected_files()} == before
    assert first["sha256"] == second["sha256"] == {t: hashlib.sha256(d).hexdigest() for t, d in before.items()}


def test_every_refusal_is_counted_with_its_reason(checkout, declare, capsys) -> None:
    root, commit = checkout
    declare(commit)
    assert main(["data", "build", DATASET, "--from", str(root), "--json"]) == 0
    refusals = json.loads(capsys.readouterr().out)["refusals"]
    assert refusals == {
        "private": 1,  # hidden_helper
        "no `:=` (or `where`, or `| ... =>`) before the next command": 1,  # no_proof_here
        "not at column 0 (inside `mutual`, a macro's quotation or a term)": 1,  # even_mutual
        "duplicate name": 1,  # Fixture.plain in Scopes.lean
        "`end Other` does not close the scope it names (the open scope is `section Named`)": 1,
        "not UTF-8": 1,  # Latin1.lean
        "a comment opened here is never closed (no matching -/); file skipped": 1,  # Unclosed.lean
    }


def test_the_reader_locates_each_refusal() -> None:
    source = (FIXTURE / "checkout" / "Mathlib" / "Fixture" / "Basic.lean").read_text(encoding="utf-8")
    _, refused = read_declarations(source)
    assert [(r.line, r.column, r.name, r.reason.split(": ")[0]) for r in refused] == [
        (38, 9, "Fixture.hidden_helper", "private"),
        (73, 1, "Fixture.no_proof_here", "no `:=` (or `where`, or `| ... =>`) before the next command"),
        (97, 3, None, "not at column 0 (inside `mutual`, a macro's quotation or a term)"),
    ]
    unclosed = (FIXTURE / "checkout" / "Mathlib" / "Fixture" / "Unclosed.lean").read_text(encoding="utf-8")
    decls, refused = read_declarations(unclosed)
    assert decls == [] and [(r.line, r.column) for r in refused] == [(4, 1)]


def test_docstrings_attributes_and_modifiers_are_read() -> None:
    source = (FIXTURE / "checkout" / "Mathlib" / "Fixture" / "Basic.lean").read_text(encoding="utf-8")
    decls = {d.name: d for d in read_declarations(source)[0]}
    assert decls["Fixture.attrs_lines"].attributes == (
        "@[simp] @[to_additive (attr := simp) ]")  # the doc comment inside the attribute is a comment: dropped
    assert decls["Fixture.attrs_lines"].modifiers == ("noncomputable",)
    assert decls["Fixture.inline_prefix"].modifiers == ("protected",)
    assert decls["Fixture.Nat.protected_one"].attributes == "@[simp, grind =]"
    assert decls["Fixture.char_arg"].docstring is None  # no doc comment right before it
    assert decls["twin_one"].docstring == decls["twin_two"].docstring
    assert "in_a_comment" not in " ".join(decls) and "in_a_module_doc" not in " ".join(decls)


def test_a_checkout_at_another_commit_is_refused_before_reading(checkout, declare, tmp_path, capsys) -> None:
    root, commit = checkout
    declare("0" * 40)
    assert main(["data", "build", DATASET, "--from", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"is at commit {commit}, the registry pins mathlib4 at {'0' * 40}" in err
    assert f"checkout {'0' * 40}" in err and "Traceback" not in err
    assert not (tmp_path / "store" / "datasets" / DATASET / "input" / "corpus.jsonl").exists()


def test_a_changed_file_gives_other_bytes_and_nothing_is_kept(checkout, declare, tmp_path, capsys) -> None:
    root, commit = checkout
    declare(commit)
    basic = root / "Mathlib" / "Fixture" / "Basic.lean"
    basic.write_text(basic.read_text(encoding="utf-8").replace("a + b = a + b", "b + a = b + a"), encoding="utf-8")
    assert main(["data", "build", DATASET, "--from", str(root)]) == 2
    err = capsys.readouterr().err
    assert "gives other files than the registry's: input/corpus.jsonl sha256" in err
    assert "nothing was kept" in err and "git status" in err
    folder = tmp_path / "store" / "datasets" / DATASET
    assert not list(folder.rglob("*.jsonl")) and not list(folder.rglob("*.part"))


def test_an_exported_tree_without_git_is_checked_by_content(checkout, declare, tmp_path, capsys) -> None:
    root, commit = checkout
    declare(commit)
    shutil.rmtree(root / ".git")  # `git archive | tar -x`: no commit to read, the sha256 decide
    assert main(["data", "build", DATASET, "--from", str(root)]) == 0
    assert main(["data", "verify", DATASET]) == 0


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: p, "does not exist"),
    (lambda p: (p.mkdir(), p)[1], "is not a mathlib4 checkout: it has no Mathlib, Mathlib.lean, lean-toolchain"),
    (lambda p: (p.write_text("x"), p)[1], "is not a folder"),
])
def test_a_wrong_folder_is_a_clear_error(declare, tmp_path, capsys, make, message) -> None:
    declare("0" * 40)
    folder = make(tmp_path / "not-mathlib")
    assert main(["data", "build", DATASET, "--from", str(folder)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_dataset_not_built_from_a_checkout_is_refused(declare, tmp_path, capsys) -> None:
    declare("0" * 40)
    assert main(["data", "build", "mathqa-test/test", "--from", str(tmp_path)]) == 2
    assert "is not built from a checkout" in capsys.readouterr().err


def test_the_registry_pins_an_upstream_commit_and_every_built_file() -> None:
    ds = registry.get_dataset("mathlib4-search/known-item")
    assert ds.checkout is not None and ds.checkout.repository == "https://github.com/leanprover-community/mathlib4"
    assert ds.checkout.commit == "93594942ef3b93fae5272d7bf368676ff40f8eb1"
    assert [(f.target, f.source) for f in ds.files] == [
        ("input/corpus.jsonl", "build"), ("input/queries.jsonl", "build"), ("truth/qrels.txt", "build")]
    assert all(f.sha256 and len(f.sha256) == 64 for f in ds.files)
    assert not ds.official  # LeanSearch's own 50 queries stay the task's official test (unpublished)


def test_an_unbuilt_dataset_says_how_to_build_it(declare, capsys) -> None:
    declare("1" * 40)
    assert main(["data", "path", DATASET, "--input"]) == 2
    err = capsys.readouterr().err
    assert f"sharedtask data build {DATASET} --from CHECKOUT" in err and f"at commit {'1' * 40}" in err
    assert main(["run", "--task", "mathlib4-search", "--image", "none:none", "--dataset", DATASET]) == 2
    assert f"sharedtask data build {DATASET} --from CHECKOUT" in capsys.readouterr().err


@pytest.mark.parametrize(("source", "masked"), [
    ('x := r#"a "b" := c"# y', 'x := r#"__________"# y'),  # a raw string may hold quotes and :=
    ("add_comm' a b = f' 'c'", "add_comm' a b = f' '_'"),  # primes of names are not char literals
    ("'\\n' -- c := d\n/- a /- b -/ c -/e", "'__'" + " " * 10 + "\n" + " " * 17 + "e"),  # nested comment
    ("«x := y».z", "«______».z"),
])
def test_the_mask_keeps_positions_and_hides_strings_comments_and_names(source: str, masked: str) -> None:
    from sharedtask.data.mathlib4.mask import mask

    assert mask(source).masked == masked


def test_an_unclosed_string_refuses_the_file_at_its_quote() -> None:
    decls, refused = read_declarations('theorem a : True := trivial\n\ntheorem b (s : String := "oops) : True\n')
    assert decls == [] and [(r.line, r.column, r.reason) for r in refused] == [
        (3, 26, "a string opened here is never closed; file skipped")]
