"""Full-size synthetic generators, exercised at small scales: official formats, counts, determinism.

Parsing goes through json/csv/ElementTree directly *and* the official readers of
``sharedtask.formats``; expected counts come from the real profile in
docs/formats.md (387,740 arguments: 338,620 / 21,197 / 14,353 / 13,522 / 48).
"""

from __future__ import annotations

import collections
import csv
import hashlib
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sharedtask.samples import synthetic
from sharedtask.formats import (
    read_argsme,
    read_arqmath_topics,
    read_formula_index,
    read_posts,
    read_qrels,
    read_run,
    read_touche_topics,
)

ARG_ID = re.compile(r"S[0-9a-f]{8}-A[0-9a-f]{8}")


def _digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------------------- args.me


@pytest.fixture(scope="module")
def argsme_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("argsme")
    synthetic.write_argsme(out, scale=0.002, seed=3, topics=10, judged_per_topic=20)
    return out


def test_argsme_counts_follow_the_real_profile() -> None:
    assert sum(synthetic.ARGSME_PROFILE.values()) == 387_740
    assert synthetic.argsme_counts(1.0) == {"debateorg.json": 338_620, "debatepedia.json": 21_197,
                                            "debatewise.json": 14_353, "idebate.json": 13_522,
                                            "parliamentary.json": 48}
    small = synthetic.argsme_counts(0.002)
    assert small["debateorg.json"] == 677 and small["parliamentary.json"] == 1  # never an empty file


def test_argsme_files_parse_and_have_the_counts(argsme_dir: Path) -> None:
    ids: list[str] = []
    premise_chars: list[int] = []
    for name, expected in synthetic.argsme_counts(0.002).items():
        raw = (argsme_dir / "input" / name).read_bytes()
        assert b"\n" not in raw  # one line, like the original dump: readers must not read lines
        doc = json.loads(raw)
        assert len(doc["arguments"]) == expected
        for arg in doc["arguments"]:
            assert ARG_ID.fullmatch(arg["id"]) and arg["conclusion"]
            assert arg["premises"][0]["stance"] in ("PRO", "CON")
            ctx = arg["context"]
            assert arg["id"].startswith("S" + ctx["sourceId"])
            assert ctx["sourceText"][ctx["sourceTextPremiseStart"]:ctx["sourceTextPremiseEnd"]] == arg["premises"][0]["text"]
            premise_chars.append(len(arg["premises"][0]["text"]))
        ids.extend(a["id"] for a in doc["arguments"])
        assert [a.id for a in read_argsme(argsme_dir / "input" / name)] == [a["id"] for a in doc["arguments"]]
    assert len(ids) == len(set(ids))
    mean = sum(premise_chars) / len(premise_chars)
    assert 700 < mean < 1400, mean  # about 1 KB of premise text per argument


def test_argsme_debates_link_previous_and_next(argsme_dir: Path) -> None:
    args = {a.id: a for a in read_argsme(argsme_dir / "input" / "debateorg.json")}
    firsts = [a for a in args.values() if not a.previous_argument_id]
    assert 677 / 11 < len(firsts) < 677 / 2  # debates of 2-10 arguments
    for a in args.values():
        if a.next_argument_id:
            assert args[a.next_argument_id].previous_argument_id == a.id
            assert args[a.next_argument_id].source_id == a.source_id


def test_argsme_vocabulary_is_zipf_like(argsme_dir: Path) -> None:
    counts = collections.Counter(
        w.rstrip(".").lower() for a in read_argsme(argsme_dir / "input" / "debateorg.json")
        for w in a.premises[0].text.split())
    freqs = [n for _, n in counts.most_common()]
    # Zipf-Mandelbrot 1/(rank + 2.7)^1.05: f(1)/f(10) = (11.7/2.7)^1.05 = 4.7, f(10)/f(1000) = 106
    assert freqs[0] > 3.5 * freqs[9] and freqs[9] > 30 * freqs[999]
    assert len(counts) > 10_000  # a long tail, as Lucene sees in real text


def test_argsme_topics_and_qrels(argsme_dir: Path) -> None:
    topics = read_touche_topics(argsme_dir / "input" / "topics.xml")
    assert [t.number for t in topics] == [str(n) for n in range(1, 11)]
    assert all(t.title.endswith("?") and t.description and t.narrative for t in topics)
    ids = {a.id for name in synthetic.ARGSME_PROFILE for a in read_argsme(argsme_dir / "input" / name)}
    qrels = list(read_qrels(argsme_dir / "truth" / "qrels.txt"))
    assert len(qrels) == 200 and {q.doc for q in qrels} <= ids
    assert {q.rel for q in qrels} <= {-2, 0, 1, 2, 3, 4, 5}
    assert (argsme_dir / "truth" / "qrels.txt").read_text().count(" ") == 3 * 200


def test_argsme_is_deterministic_per_seed(argsme_dir: Path, tmp_path: Path) -> None:
    synthetic.write_argsme(tmp_path / "same", scale=0.002, seed=3, topics=10, judged_per_topic=20)
    assert _digest(tmp_path / "same") == _digest(argsme_dir)
    synthetic.write_argsme(tmp_path / "other", scale=0.002, seed=4, topics=10, judged_per_topic=20)
    assert _digest(tmp_path / "other")["input/debateorg.json"] != _digest(argsme_dir)["input/debateorg.json"]


# ------------------------------------------------------------------------------- ARQMath


@pytest.fixture(scope="module")
def arqmath_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, synthetic.ArqmathCounts]:
    out = tmp_path_factory.mktemp("arqmath")
    counts = synthetic.write_arqmath(out, answers=1400, seed=5, topics=8, judged_per_topic=10, rows_per_tsv=10_000)
    return out, counts


def _tsv_rows(folder: Path) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for path in sorted(folder.glob("*.tsv"), key=lambda p: int(p.stem)):
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
            header = next(reader)
            assert header == list(synthetic.FORMULA_TSV_HEADER)
            rows.extend(dict(zip(header, r, strict=True)) for r in reader)
    return rows


def test_arqmath_posts_counts_and_threads(arqmath_dir: tuple[Path, synthetic.ArqmathCounts]) -> None:
    out, counts = arqmath_dir
    assert (counts.questions, counts.answers) == (1000, 1400)  # questions = answers / 1.4
    rows = list(ET.parse(out / "input" / "Posts.xml").getroot())
    types = collections.Counter(r.get("PostTypeId") for r in rows)
    assert types == {"1": 1000, "2": 1400}
    seen_questions: set[str] = set()
    last_id = 0
    for r in rows:
        assert int(r.get("Id")) > last_id  # ids ascending, as in the dump
        last_id = int(r.get("Id"))
        if r.get("PostTypeId") == "1":
            seen_questions.add(r.get("Id"))
            assert r.get("Title") and r.get("Tags", "").startswith("<")
        else:
            assert r.get("ParentId") in seen_questions  # an answer follows its question
    assert sum(1 for _ in read_posts(out / "input" / "Posts.xml")) == 2400


def test_arqmath_formula_index_matches_the_posts(arqmath_dir: tuple[Path, synthetic.ArqmathCounts]) -> None:
    out, counts = arqmath_dir
    rows = _tsv_rows(out / "input" / "formulas")
    assert len(rows) == counts.formulae and counts.formula_files == len(list((out / "input" / "formulas").glob("*.tsv"))) > 1
    assert 14 < len(rows) / counts.answers < 26  # about 20 formulae per answer, as 28M / 1.4M
    by_id = {r["id"]: r for r in rows}
    assert len(by_id) == len(rows)
    visual_of: dict[str, str] = {}
    for r in rows:
        assert visual_of.setdefault(r["formula"], r["visual_id"]) == r["visual_id"]
        assert r["type"] in ("title", "question", "answer", "comment")
        assert bool(r["comment_id"]) == (r["type"] == "comment")
    assert {"", "v", "d"} <= {r["issue"] for r in rows}
    assert any('"' in r["formula"] for r in rows)  # quoted cells (QUOTE_MINIMAL)
    in_posts: set[str] = set()
    for post in ET.parse(out / "input" / "Posts.xml").getroot():
        for html in (post.get("Body") or "", post.get("Title") or ""):
            for m in re.finditer(r'<span class="math-container" id="(\d+)">\$(.*?)\$</span>', html, re.S):
                row = by_id[m.group(1)]
                assert row["post_id"] == post.get("Id")
                assert row["formula"] == m.group(2).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
                in_posts.add(m.group(1))
    not_in_posts = {r["id"] for r in rows} - in_posts
    assert {by_id[i]["type"] for i in not_in_posts if by_id[i]["issue"] != "d"} == {"comment"}
    assert all(by_id[i]["issue"] != "d" for i in in_posts)
    assert sum(1 for _ in read_formula_index(out / "input" / "formulas")) == len(rows)


def test_arqmath_topics_and_qrels(arqmath_dir: tuple[Path, synthetic.ArqmathCounts]) -> None:
    out, _ = arqmath_dir
    topics = read_arqmath_topics(out / "input" / "topics.xml")
    assert [t.number for t in topics] == [f"A.{n}" for n in range(301, 309)]
    raw = (out / "truth" / "qrels.tsv").read_bytes()
    assert raw.count(b"\r\n") == raw.count(b"\n") == 80
    answers = {p.id for p in read_posts(out / "input" / "Posts.xml") if hasattr(p, "parent_id")}
    qrels = list(read_qrels(out / "truth" / "qrels.tsv"))
    assert {q.doc for q in qrels} <= answers and {q.rel for q in qrels} <= {0, 1, 2, 3}


def test_arqmath_is_deterministic(arqmath_dir: tuple[Path, synthetic.ArqmathCounts], tmp_path: Path) -> None:
    out, _ = arqmath_dir
    synthetic.write_arqmath(tmp_path, answers=1400, seed=5, topics=8, judged_per_topic=10, rows_per_tsv=10_000)
    assert _digest(tmp_path) == _digest(out)


# ------------------------------------------------------------------------------- runs


@pytest.mark.parametrize("interleaved", [False, True])
def test_trec_run_and_qrels(tmp_path: Path, interleaved: bool) -> None:
    run = tmp_path / "run.txt"
    n = synthetic.write_run(run, topics=7, depth=60, interleaved=interleaved, corpus=5000, judged=20)
    assert n == 420
    rows = list(read_run(run, layout="trec"))
    assert len(rows) == 420
    if interleaved:
        assert [(r.topic, r.rank) for r in rows[:8]] == [(str(t), 1) for t in range(1, 8)] + [("1", 2)]
    else:
        assert [r.topic for r in rows[:60]] == ["1"] * 60
    by_topic: dict[str, list] = collections.defaultdict(list)
    for r in rows:
        by_topic[r.topic].append(r)
    ties = 0
    for topic_rows in by_topic.values():
        topic_rows.sort(key=lambda r: r.rank)
        assert [r.rank for r in topic_rows] == list(range(1, 61))
        assert len({r.doc for r in topic_rows}) == 60
        assert all(ARG_ID.fullmatch(r.doc) for r in topic_rows)
        scores = [r.score for r in topic_rows]
        assert scores == sorted(scores, reverse=True)
        ties += len(scores) - len(set(scores))
    assert ties > 0
    qrels = list(read_qrels(tmp_path / "run.txt.qrels"))
    assert len(qrels) == 7 * 20
    retrieved = {(r.topic, r.doc) for r in rows}
    assert sum((q.topic, q.doc) in retrieved for q in qrels) == 7 * 16  # 80 % judged from the run
    assert {q.rel for q in qrels} == {0, 1, 2}


def test_arqmath_task1_and_task2_runs(tmp_path: Path) -> None:
    synthetic.write_run(tmp_path / "t1.tsv", topics=3, depth=10, fmt="arqmath-task1", corpus=100, judged=5)
    rows = list(read_run(tmp_path / "t1.tsv", layout="arqmath-task1"))
    assert len(rows) == 30 and rows[0].topic == "A.1" and rows[0].doc.isdigit()
    assert "\t" in (tmp_path / "t1.tsv").read_text().splitlines()[0]
    raw = (tmp_path / "t1.tsv.qrels").read_bytes()
    assert raw.count(b"\r\n") == 15 and {q.rel for q in read_qrels(tmp_path / "t1.tsv.qrels")} <= {0, 1, 2, 3}
    synthetic.write_run(tmp_path / "t2.tsv", topics=2, depth=10, fmt="arqmath-task2", corpus=100)
    rows2 = list(read_run(tmp_path / "t2.tsv", layout="arqmath-task2"))
    assert len(rows2) == 20 and rows2[0].topic == "B.1" and rows2[0].post_id


def test_run_is_deterministic(tmp_path: Path) -> None:
    synthetic.write_run(tmp_path / "a", topics=4, depth=30, corpus=1000, judged=10, seed=9)
    synthetic.write_run(tmp_path / "b", topics=4, depth=30, corpus=1000, judged=10, seed=9)
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    assert (tmp_path / "a.qrels").read_bytes() == (tmp_path / "b.qrels").read_bytes()


def test_cli_entry_writes_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert synthetic.main(["run", str(tmp_path / "r.txt"), "--topics", "3", "--depth", "5"]) == 0
    assert len((tmp_path / "r.txt").read_text().splitlines()) == 15
    assert str(tmp_path / "r.txt") in capsys.readouterr().out
