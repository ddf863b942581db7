"""The edition's commands end to end: pool, qrels (from a judged pool folder), demo --edition;
bad input is one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sharedtask.spec import load_task

REFERENCE = Path(__file__).resolve().parents[1] / "baselines" / "reference-runs"


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sharedtask", *args], capture_output=True, text=True,
                          timeout=600, env=env, cwd=cwd)


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_pool_command_writes_pool_with_kinds_and_depths(tmp_path: Path) -> None:
    runs = sorted((REFERENCE / "arqmath-3-task1").iterdir())
    out = tmp_path / "pool"
    done = cli("pool", *map(str, runs[:4]), "--alternate", f"alt={runs[4]}", "--task", "arqmath-3-task1",
               "--output", str(out), "--depth", "primary=10", "--seed", "5")
    assert done.returncode == 0, done.stderr
    meta = json.loads((out / "pool.json").read_text())
    assert meta["rule"]["depths"] == {"primary": 10, "alternate": 20}
    assert [r["kind"] for r in meta["runs"]] == ["primary"] * 4 + ["alternate"]
    assert meta["runs"][4]["name"] == "alt" and meta["display_seed"] == 5
    # each primary run contributes at most 10 per topic, the alternate at most 20
    per: dict[tuple[str, str], int] = {}
    for line in (out / "pool.tsv").read_text().splitlines():
        topic, _item, *contribs = line.split("\t")
        for c in contribs:
            run, rank = c.rsplit(":", 1)
            per[(run, topic)] = per.get((run, topic), 0) + 1
            assert int(rank) <= (20 if run == "alt" else 10)
    assert max(v for (r, _), v in per.items() if r != "alt") == 10


def test_pool_bad_input_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("A.301\t1\t1\t0.5\ttag\nA.301\t2\t2\tnot-a-score\ttag\n")
    line = one_line_error(cli("pool", str(bad), "--task", "arqmath-3-task1", "--output", str(tmp_path / "p")))
    assert f"{bad}:2:" in line and "score" in line
    line = one_line_error(cli("pool", str(bad), "--task", "arqmath-3-task1", "--output", str(tmp_path / "p"),
                              "--depth", "primary=zero"))
    assert "--depth" in line
    line = one_line_error(cli("pool", str(tmp_path / "missing.tsv"), "--task", "arqmath-3-task1",
                              "--output", str(tmp_path / "p")))
    assert "missing.tsv" in line
    line = one_line_error(cli("pool", str(bad), "--task", "mathqa-test", "--output", str(tmp_path / "p")))
    assert "not pooled" in line
    assert not (tmp_path / "p" / "pool.tsv").exists()


def test_qrels_command_from_judged_folder(tmp_path: Path) -> None:
    env = {**os.environ, "SHAREDTASK_DATA": str(tmp_path / "store")}
    runs = sorted((REFERENCE / "arqmath-3-task1").iterdir())
    pool = tmp_path / "pool"
    assert cli("pool", *map(str, runs), "--task", "arqmath-3-task1", "--output", str(pool), env=env).returncode == 0
    items = [line.split("\t")[:2] for line in (pool / "pool.tsv").read_text().splitlines()]
    (pool / "judgments").mkdir()
    # ann judges everything 1, bob the first three items 3: max gives 3 there
    (pool / "judgments" / "ann.qrels").write_text("".join(f"{t}\t0\t{i}\t1\n" for t, i in items))
    (pool / "judgments" / "bob.qrels").write_text("".join(f"{t}\t0\t{i}\t3\n" for t, i in items[:3]))
    out = tmp_path / "qrels.tsv"
    done = cli("qrels", str(pool), "--output", str(out), "--register", "ed1", env=env)
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == len(items)
    grades = {tuple(line.split("\t")[::2]): line.split("\t")[3] for line in lines}
    assert sum(1 for g in grades.values() if g == "3") == 3
    assert all(line.split("\t")[1] == "0" for line in lines)
    done = cli("agreement", str(pool / "judgments" / "ann.qrels"), str(pool / "judgments" / "bob.qrels"),
               "--task", "arqmath-3-task1", "--json")
    assert json.loads(done.stdout)["judged_by_both"] == 3
    done = cli("evaluate", str(runs[0]), "--task", "arqmath-3-task1", "--dataset", "arqmath-3-task1/ed1", "--json",
               env=env)
    assert done.returncode == 0, done.stderr
    # a judgment of an item outside the pool is refused with its line
    (pool / "judgments" / "cid.qrels").write_text("A.301\t0\t999999999\t2\n")
    line = one_line_error(cli("qrels", str(pool), "--output", str(out), env=env))
    assert "cid.qrels:1" in line and "not in the pool" in line


def test_task3_answers_judged_in_task1_pool_get_qrels_and_known_answers_of_their_own(tmp_path: Path) -> None:
    """ARQMath-3 Task 3 in Task 1's pool: `qrels --register` registers Task 3's share with the pool's
    answer texts as its known answers, so `evaluate --dataset` scores the Task 3 run (AR and P@1
    computed here by hand from the grades given)."""
    env = {**os.environ, "SHAREDTASK_DATA": str(tmp_path / "store")}
    pool = tmp_path / "pool"
    task3_run = REFERENCE / "arqmath-3-task3" / "extractive-qa.txt"
    done = cli("pool", str(REFERENCE / "arqmath-3-task1" / "lucene-bm25.txt"), "--shared", f"arqmath-3-task3={task3_run}",
               "--task", "arqmath-3-task1", "--output", str(pool), env=env)
    assert done.returncode == 0, done.stderr
    answers = [line.split("\t")[:2] for line in (pool / "answers.tsv").read_text().splitlines()]
    assert len(answers) == 6
    grades = dict(zip(sorted(t for t, _ in answers), (3, 2, 2, 1, 0, 0)))
    (pool / "judgments").mkdir()
    (pool / "judgments" / "ann.qrels").write_text("".join(f"{t}\t0\t{i}\t{grades[t]}\n" for t, i in answers))
    out = tmp_path / "qrels.tsv"
    done = cli("qrels", str(pool), "--output", str(out), "--register", "ed3", env=env)
    assert done.returncode == 0, done.stderr
    done = cli("evaluate", str(task3_run), "--task", "arqmath-3-task3", "--dataset", "arqmath-3-task3/ed3", "--json",
               env=env)
    assert done.returncode == 0, done.stderr
    scores = json.loads(done.stdout)["scores"]
    assert scores["ar"] == pytest.approx(sum(grades.values()) / 6)  # the mean grade of the six answers
    assert scores["p1"] == pytest.approx(3 / 6)  # graded H or M (>= 2)


@pytest.mark.parametrize("task_id", ["arqmath-3-task1", "arqmath-3-task2", "touche-2021-task1"])
def test_demo_edition(tmp_path: Path, task_id: str) -> None:
    env = {**os.environ, "SHAREDTASK_DATA": str(tmp_path / "store")}
    done = cli("demo", "--edition", "--task", task_id, "--runs", str(REFERENCE / task_id),
               "--output", str(tmp_path / "out"), "--error-rate", "0", "--json", env=env)
    assert done.returncode == 0, done.stderr
    start = done.stdout.index("{\n")
    result = json.loads(done.stdout[start:])
    # no errors: the two assessors agree on every item judged twice
    assert result["agreement"]["judged_by_both"] > 0
    assert result["agreement"]["cohen_kappa"] in (1.0, None)  # None: one grade only (undefined)
    assert result["dataset"] == f"{task_id}/demo-edition"
    # with error-free assessors, every pooled item the sample truth judges keeps its grade
    task = load_task(task_id)
    truth_file = task.sample_dir / "truth" / task.truth.file("relevance").path
    truth = {}
    for line in truth_file.read_text().splitlines():
        t, _, d, g = line.split()
        truth[(t, d)] = int(g)
    new = {}
    qrels = tmp_path / "out" / task.truth.file("relevance").path
    for line in qrels.read_text().splitlines():
        t, _, d, g = line.split()
        new[(t, d)] = int(g)
    shared = set(truth) & set(new)
    assert shared and all(truth[k] == new[k] for k in shared)
    if task_id == "touche-2021-task1":  # judged for quality too: those qrels are the sample's as well
        quality_truth = {tuple(l.split()[::2]): l.split()[3] for l in
                         (task.sample_dir / "truth" / "qrels-quality.txt").read_text().splitlines()}
        quality = {tuple(l.split()[::2]): l.split()[3] for l in
                   (tmp_path / "out" / "qrels-quality.txt").read_text().splitlines()}
        both = set(quality_truth) & set(quality)
        assert both and all(quality_truth[k] == quality[k] for k in both)
    with_errors = cli("demo", "--edition", "--task", task_id, "--runs", str(REFERENCE / task_id),
                      "--output", str(tmp_path / "out2"), "--error-rate", "0.5", "--json", env=env)
    assert with_errors.returncode == 0, with_errors.stderr
    kappa = json.loads(with_errors.stdout[with_errors.stdout.index("{\n"):])["agreement"]["cohen_kappa"]
    assert kappa is not None and kappa < 0.9
