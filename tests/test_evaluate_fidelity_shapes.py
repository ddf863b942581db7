"""Differential tests on the edge shapes of issue 27, hypothesis-generated, 1,000 runs per family.

The reference on the other side is our own transcription of each official procedure, written
from the organizers' scripts (never their code itself), each citing script, commit and lines:

- ARQMath Task 2, **empty primes**: ``de_duplicate_2021.py`` as transcribed in
  test_evaluate_fidelity._dedup_task2 (approach0/pya0 938197b), then ``task2_get_results.py``
  (approach0/pya0 e904db1, eval-arqmath1-task2): an empty prime file is 0.0 for all four
  measures (lines 9-10, 23-24, 37-38, 51-52), anything else is trec_eval's mean (pytrec_eval
  reading the prime file, as trec_eval does);
- ARQMath Task 1 and Touché, **unranked topics**: the transcriptions of test_evaluate_fidelity
  (arqmath_to_prim_task1.py, pya0 2c9e163; Touché's clef21/evaluate.py as described there, and
  line by line from the script in tests/test_evaluate_touche_script.py);
- MathQA, the published check: ``evaluate_test_correctness.ipynb`` cell 3 with ``solver.py`` and
  ``utils.py`` (ongzexuan/mathqa-evaluation 9842c46), transcribed for all 53 operators of
  solver.py's function_switch (data/operators.txt), problems with up to 12 numbers (``n1``
  replaced inside ``n10``), zero values and options without a number; where an intermediate
  value passes 1e100 our calculator refuses by design (not compared, counted as an event);
- EXAM Cover, **unranked topics**: ``exam_cover_metric.py`` (TREMA-UNH/rubric-grading-workbench
  156f9e2), transcribed in _workbench_exam_cover with the lines it follows;
- ARQMath-3 Task 3, **quoted answers and repeated topics**: ``evaluate_task3_results_manual.py``
  (approach0/pya0 f2852c9, eval-arqmath3/task3): the run read with ``csv.reader`` and a tab
  delimiter (lines 17-21), the map (31-36, last row wins as ``dict()`` keeps it), the qrels
  (45-50), the map lookup before the repetition check (86-93), 5 and 6 -> 0, 4 and > 6 an
  error (97-109), AR and P@1 as ``statistics.mean`` (115-116: undefined on no judgement).

Wherever the official figure is defined we must agree to 1e-9; where the script stops (a
repeated mapped topic, an unknown grade) we must refuse with a one-line error; where its mean
is undefined we must not report a number.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from statistics import mean

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sharedtask.errors import SharedTaskError
from sharedtask.evaluate import evaluate
from test_evaluate_fidelity import _PRIME_KEYS, _dedup_task2, _trec_eval_file

TOL = 1e-9
RUNS = settings(max_examples=1000, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --- ARQMath Task 2: empty primes -----------------------------------------------------------

def _task2_official(run_rows: list[list[str]], index_rows: list[list[str]], qrels_rows: list[list[str]]) -> dict[str, float]:
    """The four numbers of task2_get_results.py's result line for this run."""
    prime = _dedup_task2(run_rows, index_rows, qrels_rows)
    if prime == "":  # os.path.getsize(...) == 0: score = '0.0' (lines 9-10, 23-24, 37-38, 51-52)
        return {key: 0.0 for key in _PRIME_KEYS}
    per = _trec_eval_file("".join("\t".join(r) + "\n" for r in qrels_rows), prime)
    return {key: mean(v[name] for v in per.values()) for key, name in _PRIME_KEYS.items()}


@st.composite
def task2_case(draw):
    formulas = draw(st.integers(3, 25))
    visual = [draw(st.integers(1, 12)) for _ in range(formulas)]
    index_rows = [[str(f + 1), str(100 + f), "1", "answer", "", str(v), str(v), "", "x"] for f, v in enumerate(visual)]
    topics = ["B.1", "B.2", "B.3"]
    qrels_rows = [[t, "0", str(v), str(draw(st.integers(0, 3)))]
                  for t in topics[:2] for v in range(1, 13) if draw(st.booleans())]
    if not qrels_rows:
        qrels_rows = [["B.1", "0", "12", "2"]]
    judged_topics = sorted({r[0] for r in qrels_rows})
    empty_prime = draw(st.booleans())  # the shape of the issue: no judged visual id at all
    rows = []
    for rank in range(1, draw(st.integers(1, 15)) + 1):
        topic = draw(st.sampled_from(judged_topics + ["B.3"]))
        if rank == 1:
            topic = judged_topics[0]  # at least one run topic the qrels know
        formula = draw(st.integers(1, formulas + 3))  # some ids are not in the index
        if empty_prime:
            judged = {r[2] for r in qrels_rows if r[0] == topic}
            choices = [f + 1 for f, v in enumerate(visual) if str(v) not in judged] + [formulas + 3]
            formula = draw(st.sampled_from(choices))
        fid = f"0{formula}" if draw(st.booleans()) and draw(st.booleans()) else str(formula)
        rows.append([topic, fid, str(100 + formula), str(rank), draw(st.sampled_from(["1.0", "0.5", "0.25", "2"])), "t"])
    return index_rows, qrels_rows, rows


@RUNS
@given(task2_case())
def test_task2_equals_the_official_results_script_including_empty_primes(case) -> None:
    index_rows, qrels_rows, run_rows = case
    theirs = _task2_official(run_rows, index_rows, qrels_rows)
    event("empty prime" if _dedup_task2(run_rows, index_rows, qrels_rows) == "" else "prime with lines")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "formulas").mkdir()
        with open(folder / "formulas" / "1.tsv", "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, delimiter="\t", lineterminator="\n")
            writer.writerow(["id", "post_id", "thread_id", "type", "comment_id", "old_visual_id", "visual_id", "issue",
                             "formula"])
            writer.writerows(index_rows)
        (folder / "qrels.tsv").write_text("".join("\t".join(r) + "\n" for r in qrels_rows))
        (folder / "run.tsv").write_text("".join("\t".join(r) + "\n" for r in run_rows))
        result = evaluate(folder / "run.tsv", "arqmath-3-task2", qrels=folder / "qrels.tsv", input_dir=folder)
    for key, value in theirs.items():
        assert abs(result.scores[key] - value) <= TOL, (key, result.scores[key], value)


# --- ARQMath-3 Task 3: quoted answers, repeated topics ----------------------------------------

RUN_NAME = "Team-task3-run"


class Stops(Exception):
    """The official script raises here (no number)."""


def _task3_official(run: Path, map_file: Path, qrels_file: Path) -> tuple[float, float] | None:
    """evaluate_task3_results_manual.py (pya0 f2852c9) on these files: (AR, P@1), None where
    ``statistics.mean`` of no judgement is undefined; Stops where the script raises."""
    with open(map_file, "rt", newline="", encoding="utf-8") as fh:  # lines 31-36
        map_dict = {topic: answer for name, topic, answer in csv.reader(fh, delimiter="\t") if name == RUN_NAME}
    with open(qrels_file, "rt", newline="", encoding="utf-8") as fh:  # lines 45-50
        qrel_dict = {(topic, answer): int(grade) for topic, _, answer, grade in csv.reader(fh, delimiter="\t")}
    result: dict[str, str] = {}
    with open(run, "rt", newline="", encoding="utf-8") as fh:  # lines 17-21, 86-93
        for row in csv.reader(fh, delimiter="\t"):
            topic = row[0]
            if topic in map_dict:
                if topic in result:
                    raise Stops(f"Repeated topic {topic}")
                result[topic] = map_dict[topic]
    judgements = []
    for topic, answer in sorted(result.items()):  # lines 97-109
        if (topic, answer) in qrel_dict:
            grade = qrel_dict[topic, answer]
            if grade < 4:
                judgements.append(grade)
            elif grade in (5, 6):
                judgements.append(0)
            else:
                raise Stops(f"Unknown judgement value {grade}")
    if not judgements:
        return None
    return mean(float(j) for j in judgements), mean(1.0 if j > 1 else 0.0 for j in judgements)  # lines 115-116


_WORDS = ["the", "derivative", "is", "$x^2$", "area", "limit", "sum", "integral", "of"]


@st.composite
def answer_text(draw) -> str:
    words = draw(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=5))
    shape = draw(st.sampled_from(["plain", "plain", "opens", "inside", "closed", "closes-later"]))
    text = " ".join(words)
    if shape == "opens":  # begins with an unmatched quote: swallows what follows
        return '"' + text
    if shape == "inside":  # a quote inside a field is an ordinary character
        return f'{words[0]} "{text}'
    if shape == "closed":  # a quoted field that closes, text after it
        return f'"{words[0]}" {text}'
    if shape == "closes-later":  # a quote that can close an earlier open one
        return f'{text} "x" end'
    return text


@st.composite
def task3_case(draw):
    topics = [f"A.30{i}" for i in range(1, 7)]
    lines = draw(st.lists(st.tuples(st.sampled_from(topics), answer_text()), min_size=1, max_size=8))
    mapped = draw(st.lists(st.sampled_from(topics), unique=True, max_size=6))
    mapping = [(t, draw(st.sampled_from(["d_1", "d_2", "d_3", "d_9"]))) for t in mapped]
    grades = {(t, a): draw(st.sampled_from([-1, 0, 1, 2, 3, 4, 5, 6, 7])) for t in topics for a in ("d_1", "d_2", "d_3")
              if draw(st.booleans())}
    return lines, mapping, grades


@RUNS
@given(task3_case())
def test_task3_manual_measures_equal_the_official_script_on_quotes_and_repeats(case) -> None:
    lines, mapping, grades = case
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        run = folder / f"{RUN_NAME}.tsv"
        run.write_text("".join(f"{t}\t1\t1.0\ttag\tsrc\t{text}\n" for t, text in lines), encoding="utf-8")
        (folder / "map.tsv").write_text("".join(f"{RUN_NAME}\t{t}\t{a}\n" for t, a in mapping)
                                        + "Other-run\tA.301\td_1\n", encoding="utf-8")
        truth = folder / "truth"
        truth.mkdir()
        qrels = truth / "qrels.tsv"
        qrels.write_text("".join(f"{t}\t0\t{a}\t{g}\n" for (t, a), g in grades.items()) or "A.399\t0\td_1\t1\n")
        (truth / "answers.tsv").write_text("answer_id\ttopic\ttext\n", encoding="utf-8")
        with open(run, newline="", encoding="utf-8") as fh:
            records = len(list(csv.reader(fh, delimiter="\t")))
        event("a quote swallows lines" if records < len(lines) else "one record per line")
        topics = [t for t, _ in lines]
        event("repeated topic" if len(set(topics)) < len(topics) else "no repeat")
        try:
            theirs = _task3_official(run, folder / "map.tsv", qrels)
        except Stops:
            event("the script stops")
            with pytest.raises(SharedTaskError):
                evaluate(run, "arqmath-3-task3", truth_dir=truth, answer_map=folder / "map.tsv", measures=["ar", "p1"])
            return
        try:
            result = evaluate(run, "arqmath-3-task3", truth_dir=truth, answer_map=folder / "map.tsv",
                              measures=["ar", "p1"])
        except SharedTaskError as exc:  # no run topic in the qrels, or a map without this run: refused,
            assert theirs is None, exc  # where the official mean is undefined too
            assert "no topic of the run is in the qrels" in exc.message or "has no rows for run" in exc.message
            return
    if theirs is None:
        assert "ar" not in result.scores and "p1" not in result.scores
    else:
        assert abs(result.scores["ar"] - theirs[0]) <= TOL and abs(result.scores["p1"] - theirs[1]) <= TOL


def test_the_task3_reference_reads_quotes_as_the_script_does(tmp_path: Path) -> None:
    """The reference itself, on the issue's shape: A.303's answer opens a quote that closes on
    line 4, so A.304 is not a topic of the run (P@1 over A.301, A.302, A.303, A.305)."""
    run = tmp_path / f"{RUN_NAME}.tsv"
    run.write_text('A.301\t1\t1\tt\ts\tone\nA.302\t1\t1\tt\ts\ttwo\nA.303\t1\t1\tt\ts\t"three\n'
                   'A.304\t1\t1\tt\ts\tfour "x" end\nA.305\t1\t1\tt\ts\tfive\n')
    (tmp_path / "map.tsv").write_text("".join(f"{RUN_NAME}\tA.30{i}\td_{i}\n" for i in range(1, 6)))
    (tmp_path / "qrels.tsv").write_text("A.301\t0\td_1\t2\nA.302\t0\td_2\t0\nA.303\t0\td_3\t1\nA.304\t0\td_4\t3\n"
                                        "A.305\t0\td_5\t0\n")
    assert _task3_official(run, tmp_path / "map.tsv", tmp_path / "qrels.tsv") == (0.75, 0.25)
    rows = list(csv.reader(io.StringIO(run.read_text(), newline=""), delimiter="\t"))
    assert [r[0] for r in rows] == ["A.301", "A.302", "A.303", "A.305"]


# --- EXAM Cover: unranked topics, passages beyond the stored rank cut -------------------------

class TokenGrader:
    """A passage answers question ``A.t-kN`` when it holds the word ``kN`` (the same on both
    sides: the grader is an input of the procedure, not part of it)."""

    def grade(self, question, text: str) -> bool:  # noqa: ANN001
        return question.id.rsplit("-", 1)[1] in text.split()


def _workbench_exam_cover(run_rows: list[tuple[str, str, int]], questions: dict[str, list[str]],
                          texts: dict[str, str]) -> dict[str, float] | None:
    """compute_exam_cover_scores (TREMA-UNH/rubric-grading-workbench 156f9e2, exam_pp/exam_cover_metric.py)
    for one method, the run: its per-query EXAM Cover, None when the method gets no entry at all.

    The annotated file holds, per query, the run's paragraphs (posts with a text), each with its
    ranking entries (method, stored rank = the run's rank column) and its grades on every question
    of the query."""
    paragraphs: dict[str, dict[str, list[int]]] = {}  # query -> post -> its stored ranks
    for topic, post, rank in run_rows:
        if topic in questions and post in texts:
            paragraphs.setdefault(topic, {}).setdefault(post, []).append(rank)
    per_query: dict[str, float] = {}
    for query, paras in paragraphs.items():
        correct = {p: {q for q in questions[query] if q in texts[p].split()} for p in paras}
        total_questions = len(set(questions[query]))  # lines 80-85: correct + wrong over all paragraphs
        top = [p for p, ranks in paras.items() for r in ranks if r <= 20]  # lines 283-289
        if not top:  # the method is not in top_per_method for this query (lines 247-255)
            continue
        covered = set().union(*(correct[p] for p in top))  # lines 73-78, 88-92
        per_query[query] = len(covered) / total_questions if total_questions > 0 else 0.0  # frac, lines 21-22
    return per_query or None


@st.composite
def exam_case(draw):
    questions = {f"A.{t}": [f"k{i}" for i in range(1, draw(st.integers(1, 3)) + 1)] for t in range(1, 5)}
    texts = {str(p): " ".join(draw(st.lists(st.sampled_from(["k1", "k2", "k3", "none"]), min_size=1, max_size=3)))
             for p in range(1, 13)}
    rows = draw(st.lists(st.tuples(st.sampled_from(["A.1", "A.2", "A.3", "A.4", "A.5"]),
                                   st.sampled_from([str(p) for p in range(1, 16)]),  # 13-15: not in the corpus
                                   st.integers(1, 25)), min_size=1, max_size=12))
    return questions, texts, rows


def _posts_xml(texts: dict[str, str]) -> str:
    rows = ['  <row Id="100" PostTypeId="1" Title="t" Body="&lt;p&gt;q&lt;/p&gt;" Score="0" Tags="&lt;a&gt;" />']
    rows += [f'  <row Id="{p}" PostTypeId="2" ParentId="100" Body="&lt;p&gt;{body}&lt;/p&gt;" Score="0" />'
             for p, body in texts.items()]
    return '<?xml version="1.0" encoding="utf-8"?>\n<posts>\n' + "\n".join(rows) + "\n</posts>\n"


@RUNS
@given(exam_case())
def test_exam_cover_equals_the_workbench_including_unranked_topics(case) -> None:
    questions, texts, rows = case
    theirs = _workbench_exam_cover(rows, questions, texts)
    event("some topic with questions unranked" if theirs is None or len(theirs) < len(questions) else "all ranked")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "input").mkdir()
        (folder / "input" / "Posts.xml").write_text(_posts_xml(texts), encoding="utf-8")
        truth = folder / "truth"
        truth.mkdir()
        (truth / "qrels.tsv").write_text("".join(f"A.{t}\t0\t1\t2\n" for t in range(1, 6)))
        (truth / "exam.jsonl").write_text("".join(
            f'{{"topic": "{t}", "id": "{t}-{q}", "question": "?", "answer": "{q}"}}\n'
            for t, qs in questions.items() for q in qs), encoding="utf-8")
        run = folder / "run.tsv"
        run.write_text("".join(f"{t}\t{p}\t{r}\t{1.0 / r}\tx\n" for t, p, r in rows))
        result = evaluate(run, "arqmath-3-task1", truth_dir=truth, input_dir=folder / "input",
                          measures=["exam_cover"], per_topic=True, grader=TokenGrader())
    if theirs is None:
        assert math.isnan(result.scores["exam_cover"]) and result.per_topic["exam_cover"] == {}
        return
    assert set(result.per_topic["exam_cover"]) == set(theirs)
    for topic, value in theirs.items():
        assert abs(result.per_topic["exam_cover"][topic] - value) <= TOL
    assert abs(result.scores["exam_cover"] - mean(theirs.values())) <= TOL  # statistics.mean, lines 211-222


# --- ARQMath Task 1 and Touché: unranked topics, duplicates, topics outside the qrels --------

@st.composite
def task1_case(draw):
    topics = ["A.1", "A.2", "A.3", "A.4"]
    qrels_rows = [[t, "0", str(p), str(draw(st.integers(0, 3)))] for t in topics[:3] for p in range(1, 16)
                  if draw(st.booleans())]
    run_rows = []
    for topic in draw(st.lists(st.sampled_from(topics), min_size=1, max_size=3, unique=True)):  # unranked topics
        for rank in range(1, draw(st.integers(1, 12)) + 1):
            post = str(draw(st.integers(1, 18)))  # repeats and unjudged posts happen
            run_rows.append([topic, post, str(rank), draw(st.sampled_from(["1.0", "0.5", "0.75", "2.5"])), "tag"])
    return qrels_rows, run_rows


@RUNS
@given(task1_case())
def test_task1_equals_the_prime_run_and_trec_eval_including_unranked_topics(case) -> None:
    """arqmath_to_prim_task1.py (transcribed in test_evaluate_fidelity._prime_task1, pya0 2c9e163) and
    trec_eval on the prime file; where the prime file is empty the official scripts have no number
    (task1_get_results.py parses trec_eval's empty output), and we report none."""
    from test_evaluate_fidelity import _prime_task1

    qrels_rows, run_rows = case
    if not qrels_rows:
        return
    qrels_text = "".join("\t".join(r) + "\n" for r in qrels_rows)
    theirs = _trec_eval_file(qrels_text, _prime_task1(run_rows, qrels_rows))
    event("empty prime" if not theirs else "prime with lines")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "qrels.tsv").write_text(qrels_text)
        (folder / "run.tsv").write_text("".join("\t".join(r) + "\n" for r in run_rows))
        try:
            result = evaluate(folder / "run.tsv", "arqmath-3-task1", qrels=folder / "qrels.tsv", per_topic=True)
        except SharedTaskError:
            assert not theirs  # no run topic in the qrels
            return
    for key, name in _PRIME_KEYS.items():
        if not theirs:
            assert math.isnan(result.scores[key])
            continue
        assert set(result.per_topic[key]) == set(theirs)
        assert abs(result.scores[key] - mean(v[name] for v in theirs.values())) <= TOL


@RUNS
@given(st.integers(0, 2**32 - 1))
def test_touche_official_ndcg5_equals_the_described_procedure(seed: int) -> None:
    """The Touché reference of test_evaluate_fidelity (clef21/evaluate.py as the overview and the
    issue tracker describe it) on generated runs with missed qrels topics, duplicates and rank ties;
    topics with equal ranks at the cut are the script's unstable sort, undefined there."""
    import random

    from test_evaluate_fidelity import _random_touche, _touche_official, _write_touche

    lines, qrels, tied = _random_touche(random.Random(seed))
    if not {t for t, *_ in lines} & set(qrels):
        return
    with tempfile.TemporaryDirectory() as tmp:
        run, qrel_file = _write_touche(Path(tmp), lines, qrels)
        ours = evaluate(run, "touche-2021-task1", qrels=qrel_file, per_topic=True).per_topic["ndcg5_official"]
    theirs = _touche_official(lines, qrels)
    event("a qrels topic unranked" if set(qrels) - {t for t, *_ in lines} else "all ranked")
    for topic in (set(ours) | set(theirs)) - tied:
        assert topic in ours and topic in theirs
        assert abs(ours[topic] - theirs[topic]) <= TOL


# --- MathQA: the notebook's published check ----------------------------------------------------

class Undefined(Exception):
    """The notebook raises on this input: it prints no figure."""


def _suite_nargs(text: str) -> list[str]:
    """utils.py extract_nargs (ongzexuan/mathqa-evaluation 9842c46, lines 231-244)."""
    out = []
    for token in text.split():
        token = token.strip().replace(",", "")
        if token.isdigit():
            out.append(token)
        elif "." in token:
            left, _, right = token.partition(".")
            if left.isdigit() and right.isdigit():
                out.append(token)
    return out


def _f36(x: float) -> int:
    """math.factorial as the notebook's Python 3.6.10 (its kernel metadata) takes a float: whole
    and >= 0 (else ValueError); Python 3.10+ refuses every float, so we convert here."""
    if isinstance(x, complex) or not float(x).is_integer() or x < 0:
        raise Undefined(f"factorial({x})")
    return math.factorial(int(x))


def _suite_assert(ok: bool) -> None:
    if not ok:
        raise Undefined("assert")


def _suite_gcd(a: float, b: float) -> int:
    return math.gcd(int(a), int(b))


#: solver.py's function_switch (9842c46, lines 232-286), each function transcribed from its
#: lines. Two follow what the notebook's recorded run computed rather than the committed file:
#: ``choose`` as the commented-out line 135 (math.comb, line 136, does not exist in the
#: notebook's Python 3.6.10), and ``factorial`` without the > 50 refusal of lines 52-53 (its
#: recorded output scores factorial(59) and factorial(58), test problems 1402 and 1958).
_SUITE_OPS: dict[str, Callable[..., float]] = {
    "log": lambda a: math.log(a),  # 9-10
    "sqrt": lambda a: math.sqrt(a),  # 13-14
    "floor": lambda a: math.floor(a),  # 17-18
    "square_area": lambda a: a * a,  # 21-22
    "circle_area": lambda a: math.pi * a * a,  # 25-26
    "circumface": lambda a: 2.0 * math.pi * a,  # 29-30
    "inverse": lambda a: 1.0 / a,  # 33-34
    "negate": lambda a: -a,  # 37-38
    "cube_edge_by_volume": lambda a: a ** (1 / 3),  # 41-42
    "volume_cube": lambda a: a ** 3,  # 45-46
    "factorial": _f36,  # 49-54
    "square_perimeter": lambda a: 4 * a,  # 57-58
    "square_edge_by_perimeter": lambda a: a / 4,  # 61-62
    "square_edge_by_area": lambda a: a ** (1 / 2),  # 65-66
    "surface_sphere": lambda a: 4 * math.pi * a * a,  # 69-70
    "volume_sphere": lambda a: 4 / 3 * math.pi * (a ** 3),  # 73-74
    "rhombus_perimeter": lambda a: 4 * a,  # 77-78
    "negate_prob": lambda a: (_suite_assert(0 <= a <= 1), 1 - a)[1],  # 81-83
    "tangent": lambda a: math.tan(a),  # 86-87
    "sine": lambda a: math.sin(a),  # 90-91
    "cosine": lambda a: math.cos(a),  # 94-95
    "surface_cube": lambda a: 6 * a * a,  # 98-99
    "add": lambda a, b: a + b,  # 102-103
    "subtract": lambda a, b: a - b,  # 106-107
    "multiply": lambda a, b: a * b,  # 110-111
    "divide": lambda a, b: a / b,  # 114-115
    "max": lambda a, b: max(a, b),  # 118-119
    "min": lambda a, b: min(a, b),  # 122-123
    "power": lambda a, b: a ** b,  # 126-127
    "speed": lambda a, b: a / b,  # 130-131
    "choose": lambda a, b: _f36(a) / _f36(b) / _f36(a - b),  # 134-136 (line 135)
    "rectangle_perimeter": lambda a, b: 2 * (a + b),  # 139-140
    "surface_cylinder": lambda a, b: 2 * math.pi * a * (a + b),  # 143-144
    "reminder": lambda a, b: divmod(a, b)[1],  # 147-148, the "reminder" key of line 247
    "original_price_before_loss": lambda a, b: (_suite_assert(0 < (100 - a) <= 100), 100 / (100 - a) * b)[1],  # 151-153
    "original_price_before_gain": lambda a, b: 100 / (100 + a) * b,  # 156-157
    "lcm": lambda a, b: abs(a * b) // _suite_gcd(a, b),  # 160-161
    "rectangle_area": lambda a, b: a * b,  # 164-165
    "rhombus_area": lambda a, b: a * b / 2,  # 168-169
    "volume_cylinder": lambda a, b: math.pi * a * a * b,  # 172-173
    "triangle_area": lambda a, b: a * b / 2,  # 176-177
    "gcd": _suite_gcd,  # 180-181
    "p_after_gain": lambda a, b: a / 100 * b,  # 185-186
    "permutation": lambda a, b: (_suite_assert((a - b) >= 0), _f36(a) / _f36(a - b))[1],  # 189-191
    "diagonal": lambda a, b: (a ** 2 + b ** 2) ** (1 / 2),  # 194-195
    "volume_cone": lambda a, b: math.pi / 3 * a * a * b,  # 198-199
    "stream_speed": lambda a, b: (a + b) / 2,  # 202-203
    "speed_in_still_water": lambda a, b: a * b * 2,  # 207-208
    "volume_rectangular_prism": lambda a, b, c: a * b * c,  # 211-212
    "triangle_area_three_edges": lambda a, b, c: (((a + b + c) / 2) * ((a + b + c) / 2 - a) * ((a + b + c) / 2 - b)
                                                  * ((a + b + c) / 2 - c)) ** (1 / 2),  # 215-217
    "quadrilateral_area": lambda a, b, c: a * (b + c) / 2,  # 220-221
    "triangle_perimeter": lambda a, b, c: a + b + c,  # 224-225
    "surface_rectangular_prism": lambda a, b, c: 2 * (a * b + b * c + a * c),  # 228-229
}
#: data/operators.txt (9842c46): every operator's arity
_SUITE_ARITY = {name: _SUITE_OPS[name].__code__.co_argcount for name in _SUITE_OPS}


class BeyondOurBound(Exception):
    """An intermediate value beyond 1e100: sharedtask's calculator refuses it by design
    (answers.programs.MAX_MAGNITUDE), the suite computes on; a stated difference, not compared."""


def _suite_solve(formula: str, text: str) -> float:
    """solver.py fill_n_args (textual: n1 also inside n10) and solve_linear_program with
    get_op_and_args / evaluate_args (9842c46, solver.py lines 289-359, 398-403) over every
    operator of function_switch. Undefined where the notebook raises (an exception in an
    operator, a complex value that its final float() refuses, a bad reference)."""
    for i, arg in enumerate(_suite_nargs(text)):
        formula = formula.replace(f"n{i}", str(arg))
    memory: list[float] = []
    beyond = False
    for token in formula.split():
        token = token.strip()
        if not token:
            continue
        op = token[:token.find("(")].strip()
        args = []
        for arg in (t.strip() for t in token[token.find("(") + 1:token.find(")")].split(",")):
            if arg.startswith("#"):
                if not arg[1:].isdigit() or int(arg[1:]) >= len(memory):
                    raise Undefined(arg)
                args.append(memory[int(arg[1:])])
            elif arg.startswith("const_"):
                args.append(3.14159 if arg[6:] == "pi" else float(arg[6:].replace("_", ".")))
            else:
                try:
                    args.append(float(arg))
                except ValueError:
                    raise Undefined(arg) from None  # an n-arg the problem text does not have
        if op not in _SUITE_OPS or len(args) != _SUITE_ARITY[op]:
            raise Undefined(token)  # KeyError or TypeError in the notebook
        try:
            value = _SUITE_OPS[op](*args)
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise Undefined(f"{token}: {exc}") from None
        if isinstance(value, complex):
            raise Undefined(f"{token}: complex")  # float() of the last value refuses it (or an op before)
        if isinstance(value, float) and not math.isfinite(value) or abs(value) > 1e100:
            beyond = True
        memory.append(value)
    if not memory:
        raise Undefined("empty program")
    if beyond:
        raise BeyondOurBound(formula)
    return memory[-1]


def _suite_option(token: str) -> float | None:
    """utils.py extract_options for one option holding at most one numeral (lines 187-229)."""
    numerals = re.findall(r"-?[0-9]+\.[0-9]*|-?[0-9]+", token.replace(",", ""))
    if not numerals:
        return None
    value = float(numerals[0])
    return int(value) if value and value.is_integer() else value


def _notebook(problems: list[dict], programs: list[str], broken: set[int]) -> dict[str, float]:
    """evaluate_test_correctness.ipynb, cell 3 (9842c46), with the run's program in place of the
    gold linear_formula: per problem not on the broken list, 1.0 for EQUAL or CLOSE, else 0.0."""
    out = {}
    for i, (datum, program) in enumerate(zip(problems, programs)):
        if i + 1 in broken:
            continue
        solution = float(_suite_solve(program.replace("|", " "), datum["Problem"]))
        solution = int(solution) if solution.is_integer() else round(solution, 5)
        options = [_suite_option(t) for t in datum["options"].split(", ")]
        gold = options["abcde".index(datum["correct"])]
        ok = bool(solution and gold and abs(float(gold) == float(solution)))
        ok = ok or bool(solution and gold and abs(float(gold) - float(solution)) <= 0.5)
        out[str(i + 1)] = 1.0 if ok else 0.0
    return out


_OPERATOR_NAMES = sorted(_SUITE_OPS)


@st.composite
def mathqa_case(draw):
    problems, programs = [], []
    for _ in range(draw(st.integers(1, 4))):
        numbers = draw(st.lists(st.sampled_from(["0", "1", "2", "3", "5", "7", "10", "12", "2.5", "0.5", "100"]),
                                min_size=1, max_size=12))  # up to n11: n1 is also replaced inside n10, n11
        problem = " ".join(f"w {n}" for n in numbers) + " ?"
        steps = []
        for k in range(draw(st.integers(1, 3))):
            pool = [f"n{i}" for i in range(len(numbers))] + ["const_2", "const_100", "const_0_5", "const_pi",
                                                              "const_1", "const_3_6"] + [f"#{j}" for j in range(k)]
            op = draw(st.sampled_from(_OPERATOR_NAMES))
            steps.append(f"{op}({','.join(draw(st.sampled_from(pool)) for _ in range(_SUITE_ARITY[op]))})")
        values = [draw(st.sampled_from(["0", "1", "2", "3.5", "4", "5", "7.25", "10", "12", "50", "none of these"]))
                  for _ in range(5)]
        correct = draw(st.sampled_from("abcde"))
        try:  # the gold option near the suite's own value half the time, so that each operator's value counts
            value = float(_suite_solve(" ".join(steps), problem))
        except (Undefined, BeyondOurBound, OverflowError):
            value = None
        if value is not None and draw(st.booleans()):
            values["abcde".index(correct)] = f"{value + draw(st.sampled_from([0.0, 0.0, 0.3, -0.45, 0.7])):.5f}"
        options = " , ".join(f"{letter} ) {v}" for letter, v in zip("abcde", values))
        problems.append({"Problem": problem, "options": options, "correct": correct,
                         "linear_formula": "add(n0,n0)|"})
        programs.append("|".join(steps) + "|")
    broken = set(draw(st.lists(st.integers(1, len(problems)), max_size=1)))
    return problems, programs, broken


@RUNS
@given(mathqa_case())
def test_mathqa_published_equals_the_notebook_check(case) -> None:
    problems, programs, broken = case
    try:
        theirs = _notebook(problems, programs, broken)
    except Undefined:
        event("the notebook stops")
        return
    except BeyondOurBound:
        event("a value beyond 1e100 (our calculator's bound, stated)")
        return
    for program, right in zip(programs, [theirs.get(str(i + 1)) for i in range(len(programs))]):
        for step in program.split("|")[:-1]:
            event(f"operator {step[:step.find('(')]}" + (" in a program counted right" if right else ""))
    event("some problem counted wrong" if 0.0 in theirs.values() else "all counted right")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        truth = folder / "truth"
        truth.mkdir()
        (truth / "gold.json").write_text(json.dumps(problems), encoding="utf-8")
        (truth / "broken.txt").write_text("".join(f"{n}\n" for n in sorted(broken)), encoding="utf-8")
        run = folder / "run.txt"
        run.write_text("".join(p + "\n" for p in programs), encoding="utf-8")
        result = evaluate(run, "mathqa-test", truth_dir=truth, measures=["mathqa_published"], per_topic=True)
    assert result.per_topic["mathqa_published"] == theirs
    if theirs:
        assert abs(result.scores["mathqa_published"] - mean(theirs.values())) <= TOL


@st.composite
def mathqa_program(draw) -> tuple[str, str]:
    """A problem text and a program of one to four steps over every operator of the suite."""
    numbers = draw(st.lists(st.sampled_from(["0", "1", "2", "3", "4", "5", "7", "10", "12", "2.5", "0.5", "0.25",
                                             "60", "100"]), min_size=1, max_size=12))
    steps = []
    for k in range(draw(st.integers(1, 4))):
        pool = [f"n{i}" for i in range(len(numbers))] + ["const_2", "const_100", "const_0_5", "const_pi", "const_1",
                                                          "const_3_6", "const_4"] + [f"#{j}" for j in range(k)] * 3
        op = draw(st.sampled_from(_OPERATOR_NAMES))
        steps.append(f"{op}({','.join(draw(st.sampled_from(pool)) for _ in range(_SUITE_ARITY[op]))})")
    return " ".join(f"w {n}" for n in numbers) + " ?", "|".join(steps) + "|"


@RUNS
@given(mathqa_program())
def test_mathqa_calculator_equals_the_suite_solver_on_every_operator(case) -> None:
    """The value itself (not only the notebook's 0.5 check): our calculator, with the numbers put
    in as the suite does, against the transcription of solver.py, to 1e-9 relative; where the
    suite raises, or its value is complex, we give no number either."""
    from sharedtask.answers import Unevaluable, problem_numbers, run_program
    from sharedtask.answers.programs import substitute_like_the_suite

    problem, program = case
    ops = {step[:step.find("(")] for step in program.split("|")[:-1]}
    try:
        theirs = float(_suite_solve(program.replace("|", " "), problem))
    except BeyondOurBound:
        event("beyond 1e100: not compared (our calculator's stated bound)")
        return
    except Undefined:
        event("the suite raises")
        with pytest.raises(Unevaluable):
            run_program(substitute_like_the_suite(program, problem_numbers(problem)))
        return
    except OverflowError:  # float() of a huge int
        return
    for op in ops:
        event(f"{op} compared")
    ours = run_program(substitute_like_the_suite(program, problem_numbers(problem)))
    assert abs(ours - theirs) <= TOL * max(1.0, abs(theirs)), (program, problem, ours, theirs)


#: arguments inside every operator's domain (a probability for negate_prob, n >= k for permutation)
_IN_DOMAIN = {1: ["const_0_5", "const_4", "n0", "n1"], 2: ["n1,n0", "n2,n0", "const_4,n1", "n0,const_0_5"],
              3: ["n0,n1,n2", "const_3,const_4,const_5", "n2,n1,n1"]}


@pytest.mark.parametrize("op", _OPERATOR_NAMES)
def test_each_operator_of_the_suite_has_the_suite_value(op: str) -> None:
    """Every operator of function_switch, in its domain, four ways; the table is the suite's 53."""
    from sharedtask.answers import OPERATORS, run_program

    assert set(OPERATORS) == set(_SUITE_OPS) and len(_SUITE_OPS) == 53
    assert OPERATORS[op].arity == _SUITE_ARITY[op]
    problem = "w 0.25 w 5 w 12 ?"  # n0 0.25, n1 5, n2 12
    for args in _IN_DOMAIN[_SUITE_ARITY[op]]:
        program = f"{op}({args})|"
        if op == "negate_prob" and args not in ("const_0_5", "n0"):
            continue
        try:
            theirs = float(_suite_solve(program.replace("|", " "), problem))
        except Undefined:  # e.g. factorial(0.25): no number on either side
            with pytest.raises(ValueError):
                run_program(program, ["0.25", "5", "12"])
            continue
        assert abs(run_program(program, ["0.25", "5", "12"]) - theirs) <= TOL * max(1.0, abs(theirs)), (program, theirs)


def test_the_operator_transcription_equals_the_suite_solver_itself(tmp_path: Path) -> None:
    """Where a git copy of the suite is at hand (tests/mathqa_suite.py: SHAREDTASK_MATHQA_GIT), its
    solver.py itself, loaded from the pinned commit into tmp_path, against _SUITE_OPS on in-domain
    arguments. Not compared: factorial, choose and permutation, which this Python refuses for
    floats (math.factorial and math.comb take floats only up to 3.9; the notebook ran 3.6.10)."""
    import importlib.util
    import os
    import subprocess

    import mathqa_suite

    git = os.environ.get("SHAREDTASK_MATHQA_GIT")
    if not git or not mathqa_suite.available():
        pytest.skip("set SHAREDTASK_MATHQA_GIT to a git copy of ongzexuan/mathqa-evaluation")
    for name in ("solver.py", "utils.py"):
        (tmp_path / name).write_bytes(subprocess.run(["git", "--git-dir", git, "show", f"{mathqa_suite.COMMIT}:{name}"],
                                                     capture_output=True, check=True).stdout)
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        spec = importlib.util.spec_from_file_location("suite_solver", tmp_path / "solver.py")
        assert spec is not None and spec.loader is not None
        solver = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(solver)
    finally:
        sys.path.remove(str(tmp_path))
    assert set(solver.function_switch) == set(_SUITE_OPS)
    samples = {1: [(0.5,), (4.0,), (12.0,)], 2: [(5.0, 2.0), (12.0, 0.25), (4.0, 3.0)],
               3: [(3.0, 4.0, 5.0), (0.5, 2.0, 2.0)]}
    compared = 0
    for op, function in solver.function_switch.items():
        if op in ("factorial", "choose", "permutation"):
            continue
        for args in samples[_SUITE_ARITY[op]]:
            if op == "negate_prob" and args[0] > 1:
                continue
            assert _SUITE_OPS[op](*args) == function(*args), (op, args)
            compared += 1
    assert compared > 100
