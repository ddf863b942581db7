"""Pools equal the spec's rules on random runs, checked against a naive pooler written here.

trectools (whose pooling would be the natural reference) does not install here, so the
reference is this file's own few lines: every run read with str.split, sorted with numpy's
float32 scores, walked to the depth. They share no code with sharedtask.edition.pooling.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from sharedtask.edition.pooling import PoolRun, build_pool, read_pool
from sharedtask.errors import FormatError, SharedTaskError
from sharedtask.spec import load_task

# ---------------------------------------------------------------- naive reference


def naive_topk(path: Path, doc_col: int, depth: int) -> dict[str, list[tuple[str, int]]]:
    """topic -> [(doc, place)]: the first line of each (topic, doc) in file order, then
    trec_eval order (float32 score desc, docno desc), the first `depth` docs."""
    rows: dict[str, dict[str, np.float32]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if not parts:
            continue
        score_col = 4 if len(parts) == 6 else 3
        rows.setdefault(parts[0], {}).setdefault(parts[doc_col], np.float32(float(parts[score_col])))
    out = {}
    for topic, firsts in rows.items():
        entries = sorted(firsts.items(), key=lambda e: e[0], reverse=True)  # docno descending ...
        entries.sort(key=lambda e: e[1], reverse=True)  # ... within score descending (stable)
        out[topic] = [(doc, place) for place, (doc, _) in enumerate(entries[:depth], 1)]
    return out


def naive_visual(path: Path, visual: dict[str, str], depth: int) -> dict[str, list[tuple[str, int]]]:
    """Task 2: score descending (file order on ties), down the list until `depth` distinct
    visual ids; (visual id, 1-based place of its first instance in that order)."""
    rows: dict[str, list[tuple[float, str]]] = {}
    for line in path.read_text().splitlines():
        topic, formula, _post, _rank, score, _tag = line.split("\t")
        rows.setdefault(topic, []).append((float(score), formula))
    out = {}
    for topic, entries in rows.items():
        ordered = sorted(entries, key=lambda e: -e[0])
        seen_f: set[str] = set()
        taken: list[tuple[str, int]] = []
        for place, (_, formula) in enumerate(ordered, 1):
            if formula in seen_f:
                continue
            seen_f.add(formula)
            vid = visual.get(formula)
            if vid is None or vid in [v for v, _ in taken]:
                continue
            if len(taken) == depth:
                break
            taken.append((vid, place))
        out[topic] = taken
    return out


def expected_pool(per_run: dict[str, dict[str, list[tuple[str, int]]]]) -> dict[tuple[str, str], set[tuple[str, int]]]:
    pool: dict[tuple[str, str], set[tuple[str, int]]] = {}
    for name, topics in per_run.items():
        for topic, taken in topics.items():
            for doc, place in taken:
                pool.setdefault((topic, doc), set()).add((name, place))
    return pool


def actual_pool(pool) -> dict[tuple[str, str], set[tuple[str, int]]]:
    return {(topic, item.item): set(item.contributors)
            for topic in pool.topics for item in pool.items(topic)}


# ---------------------------------------------------------------- random runs


def random_run(rng: random.Random, path: Path, layout: str, topics: list[str], docs: list[str], n: int) -> None:
    lines = []
    for topic in topics:
        chosen = [rng.choice(docs) for _ in range(n)]  # repeats: duplicates within a run
        for rank, doc in enumerate(chosen, 1):
            score = round(rng.uniform(0, 3), 1)  # one decimal: many ties
            if layout == "trec":
                lines.append(f"{topic} Q0 {doc} {rank} {score} tag")
            else:
                lines.append(f"{topic}\t{doc}\t{rank}\t{score}\ttag")
    rng.shuffle(lines)  # file order is not the ranking order
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_task1_depths_equal_naive_pool(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    task = load_task("arqmath-3-task1")
    topics = [f"A.{i}" for i in range(301, 306)]
    docs = [str(rng.randrange(1, 10**7)) for _ in range(300)]
    runs = []
    for i in range(6):
        path = tmp_path / f"run{i}.tsv"
        random_run(rng, path, "arqmath-task1", topics, docs, 120)
        runs.append(PoolRun(path, "primary" if i % 2 == 0 else "alternate", f"r{i}"))
    pool = build_pool(task, runs, seed=7)
    expected = expected_pool({r.name: naive_topk(r.path, 1, 45 if r.kind == "primary" else 20) for r in runs})
    assert actual_pool(pool) == expected
    # the spec's depths are ARQMath-3's: 45 primary, 20 alternate (overview §4.4)
    assert pool.rule["depths"] == {"primary": 45, "alternate": 20}


def test_fast_and_reader_paths_agree(tmp_path: Path) -> None:
    """A run with a non-ASCII tag goes through the project's record reader, the same run
    with an ASCII tag through the column-wise path: the same pool, equal to the naive one."""
    rng = random.Random(9)
    task = load_task("arqmath-3-task1")
    plain = tmp_path / "plain.tsv"
    random_run(rng, plain, "arqmath-task1", ["A.301", "A.302", "A.303"], [str(d) for d in range(80)], 200)
    fancy = tmp_path / "fancy.tsv"
    fancy.write_text(plain.read_text().replace("\ttag", "\ttäg"), encoding="utf-8")
    crlf = tmp_path / "crlf.tsv"
    crlf.write_bytes(plain.read_bytes().replace(b"\n", b"\r\n"))
    six = tmp_path / "six.tsv"  # the lenient 6-column Task 1 form with Q0
    six.write_text("".join(f"{line.split(chr(9), 1)[0]}\tQ0\t{line.split(chr(9), 1)[1]}\n"
                           for line in plain.read_text().splitlines()))
    from sharedtask.edition.toplists import _fast

    assert _fast(plain.read_bytes(), "arqmath-task1", 45) is not None  # column-wise
    assert _fast(crlf.read_bytes(), "arqmath-task1", 45) is not None
    assert _fast(six.read_bytes(), "arqmath-task1", 45) is not None
    assert _fast(fancy.read_bytes(), "arqmath-task1", 45) is None  # the record reader
    expected = naive_topk(plain, 1, 45)
    for path in (plain, fancy, crlf, six):
        pool = build_pool(task, [PoolRun(path, "primary", "r")], seed=1)
        got = {t: sorted((it.item, it.contributors[0][1]) for it in pool.items(t)) for t in pool.topics}
        assert got == {t: sorted(v) for t, v in expected.items()}, path.name


def test_depth_override_and_touche(tmp_path: Path) -> None:
    rng = random.Random(11)
    task = load_task("touche-2021-task1")
    topics = [str(i) for i in range(51, 56)]
    docs = [f"S{rng.getrandbits(32):08x}-A{rng.getrandbits(32):08x}" for _ in range(40)]
    runs = []
    for i in range(5):
        path = tmp_path / f"t{i}.txt"
        random_run(rng, path, "trec", topics, docs, 30)
        runs.append(PoolRun(path, "primary", f"team{i}"))
    pool = build_pool(task, runs, seed=1)
    assert actual_pool(pool) == expected_pool({r.name: naive_topk(r.path, 2, 5) for r in runs})
    deeper = build_pool(task, runs, depths={"primary": 12}, seed=1)
    assert actual_pool(deeper) == expected_pool({r.name: naive_topk(r.path, 2, 12) for r in runs})
    assert pool.rule["judged"] == ["relevance", "quality"]


def write_formula_index(path: Path, visual: dict[str, str]) -> None:
    header = "id\tpost_id\tthread_id\ttype\tcomment_id\told_visual_id\tvisual_id\tissue\tformula\n"
    body = "".join(f"{fid}\t{int(fid) // 3}\t1\tanswer\t\t{vid}\t{vid}\t\tx^{fid}\n" for fid, vid in visual.items())
    path.write_text(header + body)


@pytest.mark.parametrize("seed", [5, 6])
def test_task2_visual_ids_equal_naive_pool(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    task = load_task("arqmath-3-task2")
    formulas = [str(f) for f in range(1000, 1400)]
    visual = {f: str(rng.randrange(1, 60)) for f in formulas}  # many instances per visual id
    index = tmp_path / "formulas"
    index.mkdir()
    write_formula_index(index / "1.tsv", visual)
    topics = ["B.301", "B.302", "B.303"]
    runs = []
    for i in range(4):
        lines = []
        for topic in topics:
            for rank in range(1, 150):
                f = rng.choice(formulas + ["99999"])  # 99999: not in the index
                lines.append(f"{topic}\t{f}\t{int(f) // 3}\t{rank}\t{round(rng.uniform(0, 2), 1)}\ttag")
        rng.shuffle(lines)
        path = tmp_path / f"f{i}.tsv"
        path.write_text("\n".join(lines) + "\n")
        runs.append(PoolRun(path, "primary" if i < 2 else "alternate", f"f{i}"))
    pool = build_pool(task, runs, seed=3, formulas=index)
    expected = expected_pool({r.name: naive_visual(r.path, visual, 25 if r.kind == "primary" else 15)
                              for r in runs})
    assert actual_pool(pool) == expected
    for topic in topics:
        for item in pool.items(topic):
            assert 1 <= len(item.instances) <= 5
            assert all(visual[f] == item.item for f, _ in item.instances)
    # at most 25 visual ids from a primary run, 15 from an alternate
    for run in runs:
        per_topic = [sum(1 for it in pool.items(t) if any(n == run.name for n, _ in it.contributors)) for t in topics]
        assert max(per_topic) == (25 if run.kind == "primary" else 15)


def test_write_read_round_trip_and_display_order(tmp_path: Path) -> None:
    rng = random.Random(2)
    task = load_task("arqmath-3-task1")
    runs = []
    for i in range(3):
        path = tmp_path / f"run{i}.tsv"
        random_run(rng, path, "arqmath-task1", ["A.301", "A.302"], [str(d) for d in range(100)], 60)
        runs.append(PoolRun(path, "primary", f"r{i}"))
    pool = build_pool(task, runs, seed=42)
    pool.write(tmp_path / "pool")
    back = read_pool(tmp_path / "pool")
    assert actual_pool(back) == actual_pool(pool)
    meta = json.loads((tmp_path / "pool" / "pool.json").read_text())
    assert meta["display_seed"] == 42
    assert meta["counts"] == {t: len(pool.items(t)) for t in pool.topics}
    import hashlib

    assert [r["sha256"] for r in meta["runs"]] == [hashlib.sha256(r.path.read_bytes()).hexdigest() for r in runs]
    lines = (tmp_path / "pool" / "pool.tsv").read_text().splitlines()
    assert len(lines) == sum(meta["counts"].values())
    assert all(line.split("\t")[2].startswith("r") for line in lines)
    order = back.display_order("A.301")
    assert sorted(order) == sorted(it.item for it in pool.items("A.301"))
    assert order == pool.display_order("A.301")  # same seed, same order
    # not the order in which runs brought the items in, nor sorted
    assert order != [it.item for it in pool.items("A.301")] and order != sorted(order)
    # runs given in another order: the same display order
    again = build_pool(task, list(reversed(runs)), seed=42)
    assert again.display_order("A.301") == order


def test_invalid_run_names_file_line_and_column(tmp_path: Path) -> None:
    task = load_task("arqmath-3-task1")
    bad = tmp_path / "bad.tsv"
    bad.write_text("A.301\t12\t1\t2.5\ttag\nA.301\t13\tx\t2.4\ttag\n")
    with pytest.raises(FormatError) as err:
        build_pool(task, [PoolRun(bad, "primary", "bad")])
    assert str(err.value).startswith(f"{bad}:2:")
    assert "rank" in str(err.value)
    shifted = tmp_path / "shifted.tsv"  # 4 + 6 columns: 10 tokens, as two good lines would have
    shifted.write_text("A.301\t1\t1\t0.5\nA.301\t2\t2\t0.4\ttag\textra\n")
    from sharedtask.edition.toplists import _fast

    assert _fast(shifted.read_bytes(), "arqmath-task1", 45) is None
    with pytest.raises(FormatError, match=r"shifted.tsv:1\b"):
        build_pool(task, [PoolRun(shifted, "primary", "s")])
    other = tmp_path / "touche.txt"  # a Touché run given for an ARQMath task
    other.write_text("51 Q0 S0a1b2c3d-A0a1b2c3d 1 2.0 tag\n")
    with pytest.raises(FormatError, match="not a topic id of arqmath-3-task1"):
        build_pool(task, [PoolRun(other, "primary", "t")])
    with pytest.raises(SharedTaskError, match="named 'x'"):
        build_pool(task, [PoolRun(bad, "primary", "x"), PoolRun(bad, "alternate", "x")])
    with pytest.raises(SharedTaskError, match="not pooled"):
        build_pool(load_task("mathqa-test"), [PoolRun(bad, "primary", "x")])
    with pytest.raises(SharedTaskError, match="formula index"):
        build_pool(load_task("arqmath-3-task2"), [PoolRun(bad, "primary", "x")])


def test_task3_answers_join_task1_pool(tmp_path: Path) -> None:
    """ARQMath-3 Task 3 is judged in Task 1's pools: each Task 3 run's answer per topic joins
    the Task 1 pool of its topic, identical answers once, kept for the assessors with their text."""
    task1 = load_task("arqmath-3-task1")
    r1 = tmp_path / "t1.tsv"
    r1.write_text("A.301\t11\t1\t2.0\tx\nA.301\t12\t2\t1.0\tx\nA.302\t13\t1\t1.0\tx\n")
    answers = []
    for i, text in enumerate(["The area is $\\frac{1}{2}ab\\sin C$.", "Use Heron's formula.",
                              "The area is $\\frac{1}{2}ab\\sin C$."]):
        path = tmp_path / f"t3-{i}.tsv"
        path.write_text(f"A.301\t1\t1.0\tteam{i}\tsources\t{text}\n")
        answers.append(PoolRun(path, "primary", f"qa{i}", task="arqmath-3-task3"))
    pool = build_pool(task1, [PoolRun(r1, "primary", "t1"), *answers], seed=3)
    items = {it.item: it for it in pool.items("A.301")}
    texts = {it.text for it in items.values() if it.text is not None}
    assert texts == {"The area is $\\frac{1}{2}ab\\sin C$.", "Use Heron's formula."}
    same = next(it for it in items.values() if it.text and it.text.startswith("The area"))
    assert sorted(same.contributors) == [("qa0", 1), ("qa2", 1)]
    assert {pool.item_task("A.301", i) for i in items} == {"arqmath-3-task1", "arqmath-3-task3"}
    assert pool.rule["shared"]["arqmath-3-task3"]["unit"] == "answer"
    pool.write(tmp_path / "pool")
    back = read_pool(tmp_path / "pool")
    assert {i: it.text for i, it in back.topics["A.301"].items()} == {i: it.text for i, it in items.items()}
    assert back.item_task("A.301", same.item) == "arqmath-3-task3"
    with pytest.raises(SharedTaskError, match="not judged in the pools"):
        build_pool(task1, [PoolRun(r1, "primary", "x", task="touche-2021-task1")])


def test_worker_processes_give_the_same_pool(tmp_path: Path) -> None:
    rng = random.Random(21)
    task = load_task("arqmath-3-task1")
    runs = []
    for i in range(5):
        path = tmp_path / f"run{i}.tsv"
        random_run(rng, path, "arqmath-task1", ["A.301", "A.302"], [str(d) for d in range(150)], 100)
        runs.append(PoolRun(path, "alternate" if i == 3 else "primary", f"r{i}"))
    serial = build_pool(task, runs, seed=1, workers=1)
    parallel = build_pool(task, runs, seed=1, workers=2)
    assert actual_pool(parallel) == actual_pool(serial)
    assert [it.contributors for t in serial.topics for it in serial.items(t)] == \
        [it.contributors for t in parallel.topics for it in parallel.items(t)]  # same order too
    assert parallel.runs == serial.runs
    bad = tmp_path / "bad.tsv"
    bad.write_text("A.301\t1\t1\t0.5\ttag\nA.301\t2\tx\t0.4\ttag\n")
    with pytest.raises(FormatError, match=":2:"):
        build_pool(task, [*runs, PoolRun(bad, "primary", "bad")], workers=2)
