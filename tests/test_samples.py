"""The bundled sample datasets: reproducible, official formats, meaningful retrieval, ``sharedtask sample``.

Format expectations come from docs/formats.md; they are
checked on the raw bytes (regexes, csv, ElementTree) as well as through the official
readers of ``sharedtask.formats``. The retrieval check scores a small BM25 written here
against a seeded random ranking with pytrec_eval, never with our own evaluator.
"""

from __future__ import annotations

import collections
import csv
import json
import math
import random
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import pytrec_eval

from sharedtask import samples
from sharedtask.cli import main as cli_main
from sharedtask.formats import (
    formula_spans,
    html_to_text,
    read_answers_tsv,
    read_argsme_dir,
    read_arqmath_topics,
    read_formula_index,
    read_posts,
    read_qrels,
    read_touche_topics,
)
from sharedtask.spec import all_tasks, load_task

SAMPLES = Path(__file__).resolve().parent.parent / "tasks" / "samples"
ARG_ID = re.compile(r"S[0-9a-f]{8}-A[0-9a-f]{8}")


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ----------------------------------------------------------------------------- reproducible, small


@pytest.mark.parametrize("name", samples.SAMPLE_NAMES)
def test_regenerating_gives_the_checked_in_bytes(name: str, tmp_path: Path) -> None:
    samples.write_sample(name, tmp_path / name)
    assert _files(tmp_path / name) == _files(SAMPLES / name), "run: python -m sharedtask.samples"


@pytest.mark.parametrize("name", samples.SAMPLE_NAMES)
def test_sample_is_small_and_has_input_and_truth(name: str) -> None:
    files = _files(SAMPLES / name)
    assert sum(len(b) for b in files.values()) < 1_000_000
    assert any(f.startswith("input/") for f in files) and any(f.startswith("truth/") for f in files)


def test_every_task_names_an_existing_sample_with_its_contract_files() -> None:
    for task in all_tasks():
        assert task.sample_dir.is_dir(), (task.id, task.sample)  # generated (SAMPLE_NAMES) or hand-made
        for entry in task.input.files:
            if entry.required:
                assert list((task.sample_dir / "input").glob(entry.path)), (task.id, entry.path)
        for entry in task.truth.files:
            assert list((task.sample_dir / "truth").glob(entry.path)), (task.id, entry.path)


# ----------------------------------------------------------------------------- Touché formats


def _trec_qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = collections.defaultdict(dict)
    for line in path.read_text(encoding="utf-8").splitlines():
        topic, iteration, doc, rel = line.split(" ")
        assert iteration == "0"
        out[topic][doc] = int(rel)
    return out


@pytest.mark.parametrize("year", [2020, 2021])
def test_touche_corpus_is_args_me_json(year: int) -> None:
    root = SAMPLES / f"touche-{year}" / "input"
    assert sorted(p.name for p in root.glob("*.json")) == sorted(samples.ARGSME_FILES)
    domains = {"debateorg.json": "debate.org", "parliamentary.json": "canadian-parliament"}
    ids: list[str] = []
    for path in sorted(root.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert list(doc) == ["arguments"] and doc["arguments"], path.name
        for arg in doc["arguments"]:
            assert ARG_ID.fullmatch(arg["id"]), arg["id"]
            assert arg["id"].startswith(f"S{arg['context']['sourceId']}-A")
            assert arg["conclusion"] and arg["premises"]
            assert {p["stance"] for p in arg["premises"]} <= {"PRO", "CON"}
            ctx = arg["context"]
            for key in ("sourceId", "sourceTitle", "sourceUrl", "previousArgumentInSourceId",
                        "nextArgumentInSourceId", "sourceDomain", "sourceText", "discussionTitle", "acquisitionTime"):
                assert key in ctx, (arg["id"], key)
            if path.name in domains:
                assert ctx["sourceDomain"] == domains[path.name]
            start, end = ctx["sourceTextPremiseStart"], ctx["sourceTextPremiseEnd"]
            assert ctx["sourceText"][start:end] == arg["premises"][0]["text"]
            ids.append(arg["id"])
    assert len(ids) == len(set(ids)) and 200 <= len(ids) <= 400
    # the official reader agrees with json
    assert [a.id for a in read_argsme_dir(root)] and {a.id for a in read_argsme_dir(root)} == set(ids)


def test_touche_previous_and_next_ids_link_arguments_of_one_source() -> None:
    args = {a.id: a for a in read_argsme_dir(SAMPLES / "touche-2020" / "input")}
    links = 0
    for a in args.values():
        if a.next_argument_id:
            nxt = args[a.next_argument_id]
            assert nxt.previous_argument_id == a.id and nxt.source_id == a.source_id
            links += 1
    assert links > 50


def test_touche_topics_2020_have_details_2021_titles_only() -> None:
    t2020 = read_touche_topics(SAMPLES / "touche-2020" / "input" / "topics.xml")
    t2021 = read_touche_topics(SAMPLES / "touche-2021" / "input" / "topics.xml")
    assert [t.number for t in t2020] == ["1", "2", "3", "4", "5", "6"]
    assert [t.number for t in t2021] == ["51", "52", "53", "54", "55", "56"]
    assert all(t.description and t.narrative for t in t2020)
    assert all(t.description is None and t.narrative is None for t in t2021)
    raw = (SAMPLES / "touche-2021" / "input" / "topics.xml").read_text(encoding="utf-8")
    assert "<description>" not in raw


def test_touche_qrels_scales() -> None:
    q2020 = _trec_qrels(SAMPLES / "touche-2020" / "truth" / "qrels.txt")
    assert {r for d in q2020.values() for r in d.values()} == {-2, 0, 1, 2, 3, 4, 5}
    q2021 = _trec_qrels(SAMPLES / "touche-2021" / "truth" / "qrels.txt")
    quality = _trec_qrels(SAMPLES / "touche-2021" / "truth" / "qrels-quality.txt")
    assert {r for d in q2021.values() for r in d.values()} == {-2, 0, 1, 2}
    assert {r for d in quality.values() for r in d.values()} <= {0, 1, 2, 3}
    assert {t: set(d) for t, d in quality.items()} == {t: set(d) for t, d in q2021.items()}
    # the official reader parses them too
    assert len(list(read_qrels(SAMPLES / "touche-2020" / "truth" / "qrels.txt"))) == sum(map(len, q2020.values()))


@pytest.mark.parametrize("year", [2020, 2021])
def test_touche_judgments_have_the_awkward_cases(year: int) -> None:
    root = SAMPLES / f"touche-{year}"
    qrels = _trec_qrels(root / "truth" / "qrels.txt")
    topics = [t.number for t in read_touche_topics(root / "input" / "topics.xml")]
    corpus = {a.id: a for a in read_argsme_dir(root / "input")}
    judged = {d for docs in qrels.values() for d in docs}
    assert judged <= set(corpus)
    assert len(qrels) == len(topics) - 1  # one topic without judgments, as in Touché 2020
    assert min(sum(r >= 1 for r in docs.values()) for docs in qrels.values()) < 10
    assert len(set(corpus) - judged) > 100  # unjudged documents
    texts = collections.Counter((a.conclusion, a.premises[0].text) for a in corpus.values())
    assert sum(n > 1 for n in texts.values()) >= 5  # exact duplicates -> tied scores


# ----------------------------------------------------------------------------- ARQMath formats


def _formula_rows(folder: Path) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for path in sorted(folder.glob("*.tsv")):
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
            header = next(reader)
            assert header == ["id", "post_id", "thread_id", "type", "comment_id",
                              "old_visual_id", "visual_id", "issue", "formula"]
            rows.extend(dict(zip(header, r, strict=True)) for r in reader)
    return rows


def _arqmath_qrels(path: Path) -> dict[str, dict[str, int]]:
    raw = path.read_bytes()
    assert raw.endswith(b"\r\n") and raw.count(b"\n") == raw.count(b"\r\n"), "official qrels use CRLF"
    out: dict[str, dict[str, int]] = collections.defaultdict(dict)
    for line in raw.decode("utf-8").split("\r\n")[:-1]:
        topic, iteration, doc, rel = line.split("\t")
        assert iteration == "0"
        out[topic][doc] = int(rel)
    return out


def test_arqmath_posts_rows_and_formula_spans() -> None:
    root = SAMPLES / "arqmath-task1" / "input"
    tree = ET.parse(root / "Posts.xml").getroot()
    assert tree.tag == "posts"
    rows = list(tree)
    questions = {r.get("Id") for r in rows if r.get("PostTypeId") == "1"}
    answers = [r for r in rows if r.get("PostTypeId") == "2"]
    assert 50 <= len(questions) and 150 <= len(answers) <= 400
    for r in rows:
        assert r.tag == "row" and r.get("Id") and r.get("Score") and r.get("Body") and r.get("CreationDate")
    for a in answers:
        assert a.get("ParentId") in questions and a.get("Title") is None
    for r in rows:
        if r.get("PostTypeId") == "1":
            assert r.get("Title") and re.fullmatch(r"(<[a-z0-9-]+>)+", r.get("Tags") or "")
    raw = (root / "Posts.xml").read_text(encoding="utf-8")
    assert 'class=&quot;math-container&quot; id=&quot;' in raw  # Body is escaped HTML
    assert "&amp;lt;" in raw  # LaTeX '<' is HTML-escaped inside the XML-escaped Body
    # every span id is a formula of the index, with the same LaTeX
    index = {r["id"]: r for r in _formula_rows(root / "formulas")}
    spans = 0
    for r in rows:
        for html in (r.get("Body") or "", r.get("Title") or ""):
            for m in re.finditer(r'<span class="math-container" id="(\d+)">\$+(.*?)\$+</span>', html, re.S):
                spans += 1
                tex = m.group(2).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
                assert index[m.group(1)]["formula"] == tex
                assert index[m.group(1)]["post_id"] == r.get("Id")
    assert spans > 500
    # the official reader sees the same posts
    assert sum(1 for _ in read_posts(root / "Posts.xml")) == len(rows)


def test_arqmath_formula_index_v3() -> None:
    folder = SAMPLES / "arqmath-task1" / "input" / "formulas"
    rows = _formula_rows(folder)
    by_latex: dict[str, set[str]] = collections.defaultdict(set)
    for r in rows:
        assert r["type"] in {"title", "question", "answer", "comment"}
        assert r["issue"] in {"", "v", "d", "dv"}
        assert bool(r["comment_id"]) == (r["type"] == "comment")
        assert (r["old_visual_id"] != r["visual_id"]) == ("v" in r["issue"])
        by_latex[r["formula"]].add(r["visual_id"])
    assert all(len(v) == 1 for v in by_latex.values()), "identical formulae share one visual id"
    assert {"v", "d", "dv"} <= {r["issue"] for r in rows}
    raw = "".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.tsv")))
    assert '"\\text{Erd\\""os}"' in raw  # QUOTE_MINIMAL quoting of a formula holding '"'
    assert sum(1 for _ in read_formula_index(folder)) == len(rows)


def test_arqmath_topics_a_and_b() -> None:
    a_topics = read_arqmath_topics(SAMPLES / "arqmath-task1" / "input" / "topics.xml")
    b_topics = read_arqmath_topics(SAMPLES / "arqmath-task2" / "input" / "topics.xml")
    assert [t.number for t in a_topics] == [f"A.{n}" for n in range(301, 307)]
    assert [t.number for t in b_topics] == [f"B.{n}" for n in range(301, 307)]
    raw = (SAMPLES / "arqmath-task1" / "input" / "topics.xml").read_text(encoding="utf-8")
    assert "&lt;span class=\"math-container\" id=\"q_1\"&gt;" in raw  # HTML-escaped Title/Question
    for a, b in zip(a_topics, b_topics):
        assert a.tags and a.tags == b.tags and a.question == b.question
        spans = dict(formula_spans(b.title) + formula_spans(b.question))
        assert b.formula_id in spans and spans[b.formula_id].strip("$") == b.latex
        assert a.formula_id is None
    assert "Eigenvalues" in html_to_text(a_topics[4].title)


def test_arqmath_task1_qrels_judge_answers() -> None:
    qrels = _arqmath_qrels(SAMPLES / "arqmath-task1" / "truth" / "qrels.tsv")
    answers = {p.id for p in read_posts(SAMPLES / "arqmath-task1" / "input" / "Posts.xml") if hasattr(p, "parent_id")}
    assert set(qrels) == {f"A.{n}" for n in range(301, 306)}  # A.306 stays unjudged
    assert {d for docs in qrels.values() for d in docs} <= answers
    assert {r for docs in qrels.values() for r in docs.values()} == {0, 1, 2, 3}
    assert min(sum(r >= 2 for r in docs.values()) for docs in qrels.values()) < 10  # P'@10 < 1 possible
    assert len(answers - {d for docs in qrels.values() for d in docs}) > 50


def test_arqmath_task2_qrels_judge_visual_ids() -> None:
    qrels = _arqmath_qrels(SAMPLES / "arqmath-task2" / "truth" / "qrels.tsv")
    rows = _formula_rows(SAMPLES / "arqmath-task2" / "truth" / "formulas")
    assert rows == _formula_rows(SAMPLES / "arqmath-task2" / "input" / "formulas")
    visual = {r["visual_id"] for r in rows}
    topics = {t.number: t for t in read_arqmath_topics(SAMPLES / "arqmath-task2" / "input" / "topics.xml")}
    latex_to_visual = {r["formula"]: r["visual_id"] for r in rows}
    for topic, docs in qrels.items():
        assert set(docs) <= visual
        query_visual = latex_to_visual.get(topics[topic].latex or "")
        if query_visual in docs:
            assert docs[query_visual] == 3  # the query formula itself is highly relevant
    assert sum(latex_to_visual.get(t.latex or "") in qrels.get(n, {}) for n, t in topics.items()) >= 4


def test_arqmath_task3_qrels_and_answer_texts() -> None:
    qrels = _arqmath_qrels(SAMPLES / "arqmath-task3" / "truth" / "qrels.tsv")
    texts = list(read_answers_tsv(SAMPLES / "arqmath-task3" / "truth" / "answers.tsv"))
    assert {(t.topic, t.answer_id) for t in texts} == {(q, d) for q, docs in qrels.items() for d in docs}
    assert {r for docs in qrels.values() for r in docs.values()} == {0, 1, 2, 3, 5, 6}
    assert all(len(t.text) <= 1200 for t in texts)
    assert any("\n" in t.text for t in texts) and any("$" in t.text for t in texts)
    with (SAMPLES / "arqmath-task3" / "truth" / "answers.tsv").open(encoding="utf-8", newline="") as f:
        assert next(csv.reader(f, delimiter="\t")) == ["answer_id", "topic", "text"]


# ----------------------------------------------------------------------------- retrieval is meaningful


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _bm25(docs: dict[str, str], queries: dict[str, str], k1: float = 0.9, b: float = 0.4) -> dict[str, dict[str, float]]:
    toks = {d: _tokens(t) for d, t in docs.items()}
    tfs = {d: collections.Counter(t) for d, t in toks.items()}
    n = len(toks)
    avg = sum(len(t) for t in toks.values()) / n
    df = collections.Counter(w for t in toks.values() for w in set(t))
    run: dict[str, dict[str, float]] = {}
    for q, text in queries.items():
        scores = {}
        for d, tf in tfs.items():
            s = 0.0
            for w in _tokens(text):
                if tf[w]:
                    idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                    s += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(toks[d]) / avg))
            scores[d] = s
        run[q] = scores
    return run


def _random(docs: dict[str, str], queries: dict[str, str]) -> dict[str, dict[str, float]]:
    rng = random.Random(7)
    return {q: {d: rng.random() for d in sorted(docs)} for q in queries}


def _mean(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], measure: str) -> float:
    result = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
    return sum(v[measure] for v in result.values()) / len(result)


@pytest.mark.parametrize("year", [2020, 2021])
def test_bm25_beats_random_on_touche(year: int) -> None:
    root = SAMPLES / f"touche-{year}"
    docs = {a.id: a.conclusion + " " + " ".join(p.text for p in a.premises) for a in read_argsme_dir(root / "input")}
    queries = {t.number: t.title for t in read_touche_topics(root / "input" / "topics.xml")}
    qrels = {t: {d: max(0, r) for d, r in docs_.items()} for t, docs_ in _trec_qrels(root / "truth" / "qrels.txt").items()}
    bm25 = _mean(qrels, _bm25(docs, queries), "ndcg_cut_10")
    rand = _mean(qrels, _random(docs, queries), "ndcg_cut_10")
    assert bm25 > 0.4 and bm25 > rand + 0.25, (bm25, rand)


def test_bm25_beats_random_on_arqmath_task1() -> None:
    root = SAMPLES / "arqmath-task1"
    docs = {p.id: html_to_text(p.body) for p in read_posts(root / "input" / "Posts.xml") if hasattr(p, "parent_id")}
    queries = {t.number: html_to_text(t.title) + " " + html_to_text(t.question)
               for t in read_arqmath_topics(root / "input" / "topics.xml")}
    qrels = _arqmath_qrels(root / "truth" / "qrels.tsv")
    binary = {t: {d: int(r >= 2) for d, r in ds.items()} for t, ds in qrels.items()}
    bm25_run, rand_run = _bm25(docs, queries), _random(docs, queries)
    assert _mean(binary, bm25_run, "P_10") > _mean(binary, rand_run, "P_10") + 0.2
    assert _mean(qrels, bm25_run, "ndcg") > _mean(qrels, rand_run, "ndcg") + 0.2


# ----------------------------------------------------------------------------- sharedtask sample


def test_cli_sample_copies_the_task_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "data"
    assert cli_main(["sample", "touche-2021-task1", str(target)]) == 0
    assert _files(target) == _files(load_task("touche-2021-task1").sample_dir)
    out = capsys.readouterr().out
    assert "$inputDataset" in out and "qrels-quality.txt" in out


def test_cli_sample_refuses_a_non_empty_dir_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    assert cli_main(["sample", "arqmath-3-task2", str(tmp_path)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert not (tmp_path / "input").exists()
    assert cli_main(["sample", "touche-2020-task1", str(tmp_path), "--force"]) == 0
    assert cli_main(["sample", "arqmath-3-task2", str(tmp_path), "--force"]) == 0
    # --force replaces input/ and truth/ entirely (no mix of two samples) and keeps other files
    assert not (tmp_path / "input" / "debateorg.json").exists()
    assert (tmp_path / "mine.txt").read_text() == "keep me"
    expected = _files(load_task("arqmath-3-task2").sample_dir)
    assert {k: v for k, v in _files(tmp_path).items() if k != "mine.txt"} == expected


def test_cli_sample_unknown_task_is_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["sample", "no-such-task", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "no-such-task" in err and "Traceback" not in err


def test_sample_registry_refuses_a_second_generator_under_one_name() -> None:
    from sharedtask.samples.registry import register

    with pytest.raises(ValueError, match="registered twice"):
        register(samples.SAMPLE_NAMES[0])(lambda: {})


def test_unknown_sample_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown sample 'nope'; known: touche-2020"):
        samples.sample_files("nope")
