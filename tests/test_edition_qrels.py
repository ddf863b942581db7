"""Judgments -> official qrels -> registered truth -> scored by `evaluate`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sharedtask.edition.qrels import Judgment, assemble, register_qrels, resolve
from sharedtask.errors import SharedTaskError
from sharedtask.spec import load_task


def test_resolve_rules_by_hand() -> None:
    grades = [("ann", 1), ("bob", 3), ("cid", 2)]
    assert resolve(grades, "max") == 3
    assert resolve(grades, "min") == 1
    assert resolve(grades, "mean") == 2  # 6 / 3
    assert resolve([("a", 2), ("b", 3)], "mean") == 3  # 2.5 rounds half up
    assert resolve([("a", -2), ("b", 1)], "mean") == 0  # -0.5 rounds half up to 0
    assert resolve(grades, "adjudicator", "ann") == 1
    assert resolve([("bob", 0), ("cid", 2)], "adjudicator", "ann") == 2  # ann did not judge: the others' max
    with pytest.raises(SharedTaskError):
        resolve(grades, "median")


def test_assemble_arqmath_layout_and_rule() -> None:
    task = load_task("arqmath-3-task1")
    js = [Judgment("A.310", "17", "ann", 1, when="2026-01-01T10:00:00"),
          Judgment("A.310", "17", "bob", 3, when="2026-01-01T11:00:00"),
          Judgment("A.302", "5", "ann", 0),
          Judgment("A.302", "5", "ann", 2, when="2026-01-02T09:00:00"),  # ann changed her mind: the last counts
          Judgment("A.302", "40", "bob", 2)]
    q = assemble(task, js)  # the spec's rule: max
    assert list(q.rows()) == [("A.302", "0", "5", 2), ("A.302", "0", "40", 2), ("A.310", "0", "17", 3)]
    assert (q.double_judged, q.disagreements) == (1, 1)
    assert q.sep == "\t" and q.files == {"relevance": "qrels.tsv"}
    assert list(assemble(task, js, "min").rows())[-1] == ("A.310", "0", "17", 1)
    assert list(assemble(task, js, "adjudicator:bob").rows())[-1] == ("A.310", "0", "17", 3)
    assert q.first == "2026-01-01T10:00:00" and q.last == "2026-01-02T09:00:00"


def test_touche_relevance_and_quality(tmp_path: Path) -> None:
    task = load_task("touche-2021-task1")
    doc = "S0a1b2c3d-A0a1b2c3d"
    js = [Judgment("51", doc, "ann", 2, quality=1), Judgment("51", doc, "bob", 0, quality=3),
          Judgment("52", doc, "ann", -2, quality=0)]
    q = assemble(task, js, "mean")
    files = q.write(tmp_path)
    assert files["relevance"].read_text() == f"51 0 {doc} 1\n52 0 {doc} -2\n"
    assert files["quality"].name == "qrels-quality.txt"
    assert files["quality"].read_text() == f"51 0 {doc} 2\n52 0 {doc} 0\n"


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sharedtask", *args], capture_output=True, text=True,
                          timeout=300, env=env)


def test_registered_qrels_scored_by_evaluate(tmp_path: Path) -> None:
    """The run ranks 10 posts; the assessors' qrels make 3 of them H+M: P'@10 = 0.3 by hand."""
    env = {**os.environ, "SHAREDTASK_DATA": str(tmp_path / "store")}
    task = load_task("arqmath-3-task1")
    run = tmp_path / "run.tsv"
    run.write_text("".join(f"A.301\t{100 + i}\t{i + 1}\t{10 - i}\tmine\n" for i in range(10)))
    grades = {100: 3, 101: 0, 102: 2, 103: 1, 104: 0, 105: 2, 106: 0, 107: 1, 108: 0, 109: 0}
    js = [Judgment("A.301", str(doc), "ann", g) for doc, g in grades.items()]
    js += [Judgment("A.301", "101", "bob", 1)]  # max(0, 1) = 1: still not H+M
    qrels = assemble(task, js)
    import sharedtask.data.store as store

    old = os.environ.get("SHAREDTASK_DATA")
    os.environ["SHAREDTASK_DATA"] = env["SHAREDTASK_DATA"]
    try:
        dataset = register_qrels(task, qrels, name="edition-test", campaign="c1")
        folder = store.store_root() / "datasets" / dataset
    finally:
        if old is None:
            del os.environ["SHAREDTASK_DATA"]
        else:
            os.environ["SHAREDTASK_DATA"] = old
        from sharedtask.data import registry

        registry.all_datasets.cache_clear()
    assert dataset == "arqmath-3-task1/edition-test"
    prov = json.loads((folder / "provenance.json").read_text())
    assert prov["assessors"] == ["ann", "bob"] and prov["campaign"] == "c1" and prov["rule"] == "max"
    import hashlib

    assert prov["sha256"]["truth/qrels.tsv"] == hashlib.sha256((folder / "truth" / "qrels.tsv").read_bytes()).hexdigest()
    done = _cli("evaluate", str(run), "--task", task.id, "--dataset", dataset, "--json", env=env)
    assert done.returncode == 0, done.stderr
    scores = json.loads(done.stdout)
    text = json.dumps(scores)
    assert "p10_prime" in text
    # find P'@10 in the result, whatever the nesting
    def find(node, key):  # noqa: ANN001, ANN202
        if isinstance(node, dict):
            for k, v in node.items():
                if k == key and isinstance(v, (int, float)):
                    return v
                got = find(v, key)
                if got is not None:
                    return got
        if isinstance(node, list):
            for v in node:
                got = find(v, key)
                if got is not None:
                    return got
        return None

    assert find(scores, "p10_prime") == pytest.approx(0.3)
    # a changed qrels file is refused, not scored
    (folder / "truth" / "qrels.tsv").write_text("A.301\t0\t100\t0\n")
    done = _cli("evaluate", str(run), "--task", task.id, "--dataset", dataset, env=env)
    assert done.returncode == 2 and "changed" in done.stderr
