"""Unit tests of the baselines' Python code (no Docker, no Java).

The baseline packages live in ``baselines/<name>/`` (they are copied into their
images, not installed into the sharedtask package), so the tests put those
folders on ``sys.path``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
for folder in ("lucene", "formula", "extractive-qa"):
    sys.path.insert(0, str(REPO / "baselines" / folder))

from extractive_qa.cut import answer_text, cut  # noqa: E402
from formula_baseline.approach0 import untie  # noqa: E402
from formula_baseline.collection import Formula, representatives  # noqa: E402
from formula_baseline.tokens import formula_text  # noqa: E402
from lucene_baseline import anserini, arqmath, touche  # noqa: E402
from lucene_baseline.jsonl import ShardedJsonl, clean_query  # noqa: E402
from lucene_baseline.mathtext import html_to_index_text, latex_tokens  # noqa: E402


# ---------------------------------------------------------------- LaTeX and HTML


def test_latex_tokens_turn_commands_and_operators_into_words() -> None:
    assert latex_tokens(r"\frac{a}{b}^2") == "frac a b sup 2"
    assert latex_tokens(r"x_1 = y") == "x sub 1 eq y"
    assert latex_tokens(r"$\left( n! \right)$") == "n fact"
    assert latex_tokens(r"a+b-c<d") == "a plus b minus c lt d"


def test_index_text_replaces_formula_spans_and_strips_tags() -> None:
    body = ('<p>Since <span class="math-container" id="7">$x^2 &lt; 1$</span> we are '
            '<em>done</em> &amp; happy.</p>')
    assert html_to_index_text(body) == "Since x sup 2 lt 1 we are done & happy."


def test_index_text_handles_bare_dollar_math_in_titles() -> None:
    assert html_to_index_text(r"Why is $e^{i\pi}=-1$?") == "Why is e sup i pi eq minus 1 ?"


def test_clean_query_is_one_bounded_line() -> None:
    query = clean_query("a\tb\nc " + "w " * 2000, max_words=10)
    assert "\t" not in query and "\n" not in query
    assert query.split() == ["a", "b", "c"] + ["w"] * 7


# ---------------------------------------------------------------- JSONL shards


def test_sharded_jsonl_spreads_documents_round_robin(tmp_path: Path) -> None:
    with ShardedJsonl(tmp_path, 2) as out:
        for i in range(5):
            out.write(f"d{i}", f"text {i} é")
    lines0 = (tmp_path / "docs-00.jsonl").read_text(encoding="utf-8").splitlines()
    lines1 = (tmp_path / "docs-01.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["id"] for x in lines0] == ["d0", "d2", "d4"]
    assert [json.loads(x)["id"] for x in lines1] == ["d1", "d3"]
    assert json.loads(lines1[0]) == {"id": "d1", "contents": "text 1 é"}


def test_touche_conversion_indexes_conclusion_and_premises(tmp_path: Path) -> None:
    data = tmp_path / "in"
    data.mkdir()
    arg = {"id": "Sabcdef01-A01234567", "conclusion": "Tenure is bad",
           "premises": [{"text": "Teachers relax.", "stance": "CON"}, {"text": "Costs rise.", "stance": "CON"}],
           "context": {}}
    for name in ("debateorg", "debatepedia", "debatewise", "idebate", "parliamentary"):
        args = [arg] if name == "idebate" else []
        (data / f"{name}.json").write_text(json.dumps({"arguments": args}), encoding="utf-8")
    with ShardedJsonl(tmp_path / "jsonl", 1) as out:
        assert touche.convert_corpus(data, out) == 1
    doc = json.loads((tmp_path / "jsonl" / "docs-00.jsonl").read_text(encoding="utf-8"))
    assert doc == {"id": "Sabcdef01-A01234567", "contents": "Tenure is bad Teachers relax. Costs rise."}


@pytest.mark.parametrize("workers", [1, 2])
def test_touche_conversion_in_ranges_writes_every_argument_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                workers: int) -> None:
    from sharedtask.formats import argsme
    monkeypatch.setattr(argsme, "MIN_SPLIT_BYTES", 0)  # split even these small files
    data = tmp_path / "in"
    data.mkdir()
    expected = {}
    for f, name in enumerate(("debateorg", "debatepedia", "debatewise", "idebate", "parliamentary")):
        args = []
        for i in range(f * 10, f * 10 + 9):
            arg_id = f"S{i:08d}-A{i:08d}"
            args.append({"premises": [{"text": f"premise }}, {{\"id\": {i}", "stance": "PRO"}],
                         "context": {"sourceId": str(i)}, "id": arg_id, "conclusion": f"claim {i} é"})
            expected[arg_id] = f"claim {i} é premise }}, {{\"id\": {i}"
        (data / f"{name}.json").write_text(json.dumps({"arguments": args}, indent=1), encoding="utf-8")
    with ShardedJsonl(tmp_path / "jsonl", 2) as out:
        assert touche.convert_corpus(data, out, workers=workers) == 45
    files = sorted((tmp_path / "jsonl").glob("*.jsonl"))
    assert len(files) == 5 * workers  # every file cut into `workers` ranges; no empty shards left
    docs = [json.loads(line) for path in files for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(docs) == 45
    assert {d["id"]: d["contents"] for d in docs} == expected


def test_arqmath_conversion_adds_question_title_even_when_answer_comes_first(tmp_path: Path) -> None:
    posts = tmp_path / "Posts.xml"
    posts.write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n<posts>\n'
        '  <row Id="5" PostTypeId="2" ParentId="9" Score="1" Body="&lt;p&gt;Use &lt;span '
        'class=&quot;math-container&quot; id=&quot;3&quot;&gt;$a^2$&lt;/span&gt;&lt;/p&gt;" />\n'
        '  <row Id="9" PostTypeId="1" Score="2" Title="Squares" Body="&lt;p&gt;q&lt;/p&gt;" Tags="&lt;x&gt;" />\n'
        '  <row Id="10" PostTypeId="2" ParentId="9" Score="0" Body="Plain" />\n'
        '</posts>\n', encoding="utf-8")
    with ShardedJsonl(tmp_path / "jsonl", 1) as out:
        assert arqmath.convert_posts(posts, out, tmp_path) == 2
    docs = [json.loads(x) for x in (tmp_path / "jsonl" / "docs-00.jsonl").read_text().splitlines()]
    assert docs == [{"id": "10", "contents": "Squares Plain"},
                    {"id": "5", "contents": "Squares Use a sup 2"}]
    assert not list(tmp_path.glob("answers-before-question*"))


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_arqmath_conversion_in_worker_processes_keeps_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          workers: int) -> None:
    # Small batches, so that several are in flight at once and have to come back in order.
    monkeypatch.setattr(arqmath, "BATCH", 3)
    rows = ['  <row Id="1" PostTypeId="1" Score="2" Title="Sums $a+b$" Body="q" Tags="&lt;x&gt;" />']
    rows += [f'  <row Id="{i}" PostTypeId="2" ParentId="1" Score="0" Body="answer {i} &lt;b&gt;$x_{i}$&lt;/b&gt;" />'
             for i in range(2, 40)]
    posts = tmp_path / "Posts.xml"
    posts.write_text('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n' + "\n".join(rows) + "\n</posts>\n",
                     encoding="utf-8")
    with ShardedJsonl(tmp_path / "jsonl", 2) as out:
        assert arqmath.convert_posts(posts, out, tmp_path, workers=workers) == 38
    docs = [json.loads(x) for name in ("docs-00.jsonl", "docs-01.jsonl")
            for x in (tmp_path / "jsonl" / name).read_text().splitlines()]
    # round robin: even positions in shard 0, odd ones in shard 1
    expected = [{"id": str(i), "contents": f"Sums a plus b answer {i} x sub {i}"} for i in range(2, 40)]
    assert docs == expected[0::2] + expected[1::2]


def test_ordered_map_bounds_what_is_in_flight() -> None:
    from lucene_baseline.parallel import ordered_map
    pulled = []

    def items():
        for i in range(20):
            pulled.append(i)
            yield i

    results = ordered_map(abs, items(), workers=1, window=3)
    assert next(results) == 0
    assert len(pulled) == 3  # the reader stays at most `window` items ahead
    assert list(results) == list(range(1, 20))


# ---------------------------------------------------------------- Anserini glue


def test_model_flags_match_anserini_options() -> None:
    # Flag names checked against `SearchCollection -options` of anserini 1.7.1.
    assert anserini.Model("qld", mu=2000).flags() == ["-qld", "-qld.mu", "2000"]
    assert anserini.Model("bm25").flags() == ["-bm25", "-bm25.k1", "0.9", "-bm25.b", "0.4"]
    with pytest.raises(ValueError):
        anserini.Model("tfidf").flags()


def test_read_run_parses_anserini_trec_output(tmp_path: Path) -> None:
    run = tmp_path / "run.txt"
    run.write_text("A.1 Q0 17 1 5.5071 t\nA.1 Q0 3 2 5.375299 t\n", encoding="utf-8")
    assert list(anserini.read_run(run)) == [anserini.Hit("A.1", "17", 1, "5.5071"),
                                            anserini.Hit("A.1", "3", 2, "5.375299")]


# ---------------------------------------------------------------- formula baseline


def test_formula_representatives_one_per_visual_id_without_comments_or_deleted(tmp_path: Path) -> None:
    folder = tmp_path / "formulas"
    folder.mkdir()
    header = "id\tpost_id\tthread_id\ttype\tcomment_id\told_visual_id\tvisual_id\tissue\tformula\n"
    rows = [
        "1\t10\t10\tquestion\t\t7\t7\t\tx^2\n",
        "2\t11\t10\tanswer\t\t7\t7\t\tx^2\n",       # same visual id: dropped
        "3\t11\t10\tcomment\t5\t8\t8\t\ty\n",       # comment: not retrievable in Task 2
        "4\t12\t10\tanswer\t\t9\t9\td\tz\n",        # deleted from the posts
        "5\t12\t10\tanswer\t\t10\t10\t\t\\frac{1}{2}\n",
    ]
    (folder / "1.tsv").write_text(header + "".join(rows), encoding="utf-8")
    assert representatives(folder) == [Formula("1", "10", "x^2"), Formula("5", "12", r"\frac{1}{2}")]


def test_formula_text_adds_adjacent_pairs() -> None:
    assert formula_text("x^2") == "x sup 2 x_sup sup_2"


def test_untie_makes_scores_follow_ranks() -> None:
    f = [Formula(str(i), "1", "x") for i in range(4)]
    out = untie([(f[0], 3.0), (f[1], 2.0), (f[2], 2.0), (f[3], 1.0)])
    scores = [s for _f, s in out]
    assert scores == [3.0, 2.0, 1.999999, 1.0]
    assert all(a > b for a, b in zip(scores, scores[1:]))


# ---------------------------------------------------------------- Task 3 answers


def test_answer_text_keeps_latex_on_one_line() -> None:
    body = '<p>We have</p>\n<p><span class="math-container" id="1">$$x &lt; y$$</span>\tdone.</p>'
    assert answer_text(body) == "We have $x < y$ done."


def test_cut_keeps_short_answers_whole() -> None:
    assert cut("One. Two.", 1200) == "One. Two."


def test_cut_stops_after_the_last_sentence_that_fits() -> None:
    text = "First sentence. Second one! Third is long and does not fit"
    assert cut(text, 30) == "First sentence. Second one!"
    assert len(cut("A. " + "b" * 3000, 1200)) == 2


def test_cut_never_ends_inside_a_formula() -> None:
    # the only '.' before the limit is inside $...$: cut at a space outside math instead
    text = "Take $a. b c d e f g$ and more words here"
    result = cut(text, 24)
    assert result == "Take $a. b c d e f g$"
    assert result.count("$") % 2 == 0
    assert cut("$" + "x" * 50 + "$", 20) == ""
