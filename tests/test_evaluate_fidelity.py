"""Evaluation equals the organizers' procedures on many generated inputs, and never crashes.

Each official procedure is transcribed here, independently of ``sharedtask.evaluate``,
from the organizers' scripts (approach0/pya0 mirrors them):

- ARQMath Task 1: ``eval-arqmath2-task1/arqmath_to_prim_task1.py`` (pya0 2c9e163) writes the
  prime run file, trec_eval scores it (pytrec_eval here, reading that file with parse_run);
- ARQMath Task 2: ``eval-arqmath2-task2/de_duplicate_2021.py`` (pya0 938197b), with the formula
  index's v3 ``visual_id`` column where the 2021 script read v2's column 4;
- ARQMath-3 Task 3: ``eval-arqmath3/task3/evaluate_task3_results_manual.py`` (pya0 f2852c9) and
  ``evaluate_task3_results_automatic.py`` (ARQMathCode, ARQMath-3) with our tokenizer in place of
  MathBERTa's (the only part that needs a model hub);
- Touché: ``clef21/evaluate.py`` as the issue tracker and the Touché overview describe it
  (tests/test_evaluate_touche_script.py transcribes the script itself, touche-webis-de/touche-code
  82329a4, line by line): rank-sorted top 5 with every line counted,
  unjudged dropped, -2 -> 0, topics without a judged document in the top 5 or without a
  positive judgment left out. Where the script sorts equal ranks in an unspecified order we
  compare only topics without rank ties in the top 5;
- trec_eval ``ndcg_cut.5`` on the **raw** qrels (negative grades included), run in a child
  process because trec_eval 9.0.8 segfaults on some of them: wherever it survives, it must
  equal our number.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import subprocess
import sys
from pathlib import Path
from statistics import mean

import pytest
import pytrec_eval

from sharedtask.errors import SharedTaskError, SpecError
from sharedtask.evaluate import evaluate, leaderboard
from sharedtask.evaluate.task3 import math_tags, normalise, tokens

TOL = 1e-9


# --- the crash of the issue ----------------------------------------------------------------

def test_negative_grades_in_two_topics_no_longer_crash_the_cli(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("52 0 a 0\n52 0 b -2\n53 0 c -2\n")
    run = tmp_path / "run.txt"
    run.write_text("52 Q0 a 1 2.0 r\n52 Q0 b 2 1.0 r\n53 Q0 c 1 1.0 r\n")
    # trec_eval itself dies on exactly this input:
    child = subprocess.run([sys.executable, "-c", "import pytrec_eval; pytrec_eval.RelevanceEvaluator("
                            "{'52': {'a': 0, 'b': -2}, '53': {'c': -2}}, {'ndcg_cut_5'}).evaluate("
                            "{'52': {'a': 2.0, 'b': 1.0}, '53': {'c': 1.0}})"], capture_output=True)
    assert child.returncode < 0  # killed by a signal (SIGSEGV)
    out = subprocess.run([sys.executable, "-m", "sharedtask", "evaluate", str(run), "--task", "touche-2021-task1",
                          "--qrels", str(qrels), "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["scores"]["ndcg_cut_5"] == 0.0  # no positive grade anywhere: trec_eval's nDCG is 0
    assert data["scores"]["ndcg5_official"] is None  # every topic has IDCG 0: the official mean is undefined
    assert any("no topic counts" in n for n in data["notes"])


@pytest.mark.parametrize("grade", ["1e308", "99999999999", "nan", "2.5"])
def test_absurd_qrels_grades_are_one_line_errors(tmp_path: Path, grade: str) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"52 0 a {grade}\n52 0 b 1\n53 0 c 1\n")
    run = tmp_path / "run.txt"
    run.write_text("52 Q0 a 1 2.0 r\n52 Q0 b 2 1.0 r\n53 Q0 c 1 1.0 r\n")
    out = subprocess.run([sys.executable, "-m", "sharedtask", "evaluate", str(run), "--task", "touche-2021-task1",
                          "--qrels", str(qrels)], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.startswith(f"error: {qrels}:1:8: ") and "Traceback" not in out.stderr


# --- Touché --------------------------------------------------------------------------------

def _touche_official(run_lines: list[tuple[str, str, int, float]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """clef21/evaluate.py as described (module docstring)."""
    out = {}
    by_topic: dict[str, list[tuple[str, int]]] = {}
    for topic, doc, rank, _ in run_lines:
        by_topic.setdefault(topic, []).append((doc, rank))
    for topic, rows in by_topic.items():
        if topic not in qrels:
            continue
        judged = {d: (0 if g == -2 else g) for d, g in qrels[topic].items()}
        top5 = [d for d, _ in sorted(rows, key=lambda x: x[1])[:5]]
        gains = [judged[d] for d in top5 if d in judged]
        if not gains:
            continue
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
        ideal = sorted(judged.values(), reverse=True)[:5]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        if idcg:
            out[topic] = dcg / idcg
    return out


def _random_touche(rng: random.Random) -> tuple[list[tuple[str, str, int, float]], dict[str, dict[str, int]], set[str]]:
    qrels: dict[str, dict[str, int]] = {}
    lines: list[tuple[str, str, int, float]] = []
    tied: set[str] = set()
    for t in range(51, 51 + rng.randint(1, 5)):
        topic = str(t)
        docs = [f"S{t}d{i}" for i in range(rng.randint(1, 12))]
        judged = {d: rng.choice([-2, 0, 0, 1, 2, 3]) for d in docs if rng.random() < 0.7}
        if judged and rng.random() < 0.9:
            qrels[topic] = judged
        if rng.random() < 0.1:
            continue  # a qrels topic the run misses
        picks = [rng.choice(docs) for _ in range(rng.randint(1, 9))]  # duplicates happen
        ranks = list(range(1, len(picks) + 1))
        if rng.random() < 0.3:
            ranks = [r if rng.random() < 0.7 else max(1, r - 1) for r in ranks]  # rank ties
        if len(sorted(ranks)[:6]) > 1 and any(a == b for a, b in zip(sorted(ranks)[:5], sorted(ranks)[1:6])):
            tied.add(topic)
        for doc, rank in zip(picks, ranks):
            lines.append((topic, doc, rank, rng.choice([1.0, 0.5, round(rng.random(), 3)])))
    if not qrels:
        qrels["51"] = {"S51d0": 1}
    return lines, qrels, tied


def _write_touche(tmp: Path, lines, qrels) -> tuple[Path, Path]:
    run, qrel_file = tmp / "run.txt", tmp / "qrels.txt"
    run.write_text("".join(f"{t} Q0 {d} {r} {s} tag\n" for t, d, r, s in lines))
    qrel_file.write_text("".join(f"{t} 0 {d} {g}\n" for t, docs in qrels.items() for d, g in docs.items()))
    return run, qrel_file


def test_touche_official_ndcg5_equals_the_organizers_procedure(tmp_path: Path) -> None:
    rng = random.Random(20261123)
    compared = exceeding_one = 0
    for case in range(250):
        lines, qrels, tied = _random_touche(rng)
        if not {t for t, *_ in lines} & set(qrels):
            continue
        run, qrel_file = _write_touche(tmp_path, lines, qrels)
        ours = evaluate(run, "touche-2021-task1", qrels=qrel_file, per_topic=True).per_topic["ndcg5_official"]
        theirs = _touche_official(lines, qrels)
        for topic in set(ours) | set(theirs):
            if topic in tied:
                continue  # the script's unstable sort decides: its number is not defined there
            assert topic in ours and topic in theirs, (case, topic)
            assert abs(ours[topic] - theirs[topic]) <= TOL, (case, topic, ours[topic], theirs[topic])
            compared += 1
            exceeding_one += ours[topic] > 1 + TOL
    assert compared > 300 and exceeding_one > 0  # repeated documents can push nDCG over 1, as in the script


_TREC_EVAL_CHILD = r"""
import json, sys, pytrec_eval
qrels, run = json.loads(sys.stdin.read())
print(json.dumps(pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_5"}).evaluate(run)))
"""


def test_ndcg_cut_5_equals_trec_eval_on_the_raw_qrels_wherever_trec_eval_survives(tmp_path: Path) -> None:
    rng = random.Random(7)
    compared = crashed = 0
    for case in range(40):
        lines, qrels, _ = _random_touche(rng)
        if not {t for t, *_ in lines} & set(qrels):
            continue
        run, qrel_file = _write_touche(tmp_path, lines, qrels)
        ours = evaluate(run, "touche-2021-task1", qrels=qrel_file, per_topic=True).per_topic["ndcg_cut_5"]
        first: dict[str, dict[str, float]] = {}
        for t, d, _, s in lines:
            first.setdefault(t, {}).setdefault(d, s)  # trec_eval refuses repeats; the first line counts
        child = subprocess.run([sys.executable, "-c", _TREC_EVAL_CHILD], input=json.dumps([qrels, first]),
                               capture_output=True, text=True)
        if child.returncode != 0:
            crashed += 1  # trec_eval's own number does not exist; ours still does
            assert ours is not None
            continue
        theirs = {t: v["ndcg_cut_5"] for t, v in json.loads(child.stdout).items()}
        assert set(ours) == set(theirs), case
        for topic in theirs:
            assert abs(ours[topic] - theirs[topic]) <= TOL, (case, topic)
        compared += 1
    assert compared > 20


# --- ARQMath Task 1 ------------------------------------------------------------------------

def _prime_task1(run_rows: list[list[str]], qrels_rows: list[list[str]]) -> str:
    """arqmath_to_prim_task1.py: first line per (topic, post), judged posts of qrels topics only."""
    qrel = {}
    for row in qrels_rows:
        qrel.setdefault(row[0], []).append(row[2])
    seen: dict[str, list[str]] = {}
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
    for row in run_rows:
        topic, post = row[0], row[1]
        if topic in seen:
            if post in seen[topic]:
                continue
            seen[topic].append(post)
        else:
            seen[topic] = [post]
        if topic in qrel and post in qrel[topic]:
            writer.writerow([row[0], "Q0", *row[1:5]])
    return out.getvalue()


def _trec_eval_file(qrels_text: str, prime_text: str) -> dict[str, dict[str, float]]:
    """trec_eval as the official commands run it: ndcg; -l2 map, P.10, bpref (per topic)."""
    qrels = pytrec_eval.parse_qrel(io.StringIO(qrels_text))
    run = pytrec_eval.parse_run(io.StringIO(prime_text))
    if not run:
        return {}
    per: dict[str, dict[str, float]] = {}
    for level, names in ((1, {"ndcg"}), (2, {"map", "P_10", "bpref"})):
        for topic, values in pytrec_eval.RelevanceEvaluator(qrels, names, relevance_level=level).evaluate(run).items():
            per.setdefault(topic, {}).update(values)
    return per


_PRIME_KEYS = {"ndcg_prime": "ndcg", "map_prime": "map", "p10_prime": "P_10", "bpref_prime": "bpref"}


def test_arqmath_task1_equals_the_organizers_prime_run_and_trec_eval(tmp_path: Path) -> None:
    rng = random.Random(1)
    compared = 0
    for case in range(120):
        topics = [f"A.{i}" for i in range(1, rng.randint(2, 6))]
        qrels_rows = [[t, "0", str(p), str(rng.randint(0, 3))] for t in topics[:-1] for p in range(1, 25)
                      if rng.random() < 0.35]
        run_rows = []
        for t in topics:
            posts = [str(rng.randint(1, 30)) for _ in range(rng.randint(1, 20))]
            for rank, post in enumerate(posts, 1):
                run_rows.append([t, post, str(rank), rng.choice(["1.0", "0.5", f"{rng.random():.4f}"]), "tag"])
        if not qrels_rows:
            continue
        qrels_text = "".join("\t".join(r) + "\n" for r in qrels_rows)
        (tmp_path / "qrels.tsv").write_text(qrels_text)
        (tmp_path / "run.tsv").write_text("".join("\t".join(r) + "\n" for r in run_rows))
        theirs = _trec_eval_file(qrels_text, _prime_task1(run_rows, qrels_rows))
        try:
            result = evaluate(tmp_path / "run.tsv", "arqmath-3-task1", qrels=tmp_path / "qrels.tsv", per_topic=True)
        except SharedTaskError:
            assert not theirs  # no judged result at all: nothing to score on either side
            continue
        for key, name in _PRIME_KEYS.items():
            ours = result.per_topic[key]
            assert set(ours) == set(theirs), (case, key)
            for topic in ours:
                assert abs(ours[topic] - theirs[topic][name]) <= TOL, (case, key, topic)
            if theirs:
                assert abs(result.scores[key] - mean(v[name] for v in theirs.values())) <= TOL
            else:
                assert math.isnan(result.scores[key])  # nothing judged retrieved: no mean on either side
        compared += 1
    assert compared > 80


# --- ARQMath Task 2 ------------------------------------------------------------------------

def _dedup_task2(run_rows: list[list[str]], index_rows: list[list[str]], qrels_rows: list[list[str]]) -> str:
    """de_duplicate_2021.py: int formula ids, score-sorted, first instance per visual id, judged only."""
    visual = {int(r[0]): int(r[6]) for r in index_rows}  # v3: visual_id is column 6 (v2: 4)
    topic_visual: dict[str, list[int]] = {}
    for row in qrels_rows:
        topic_visual.setdefault(row[0], []).append(int(row[2]))
    results: dict[str, dict[int, float]] = {}
    for row in run_rows:
        results.setdefault(row[0], {})[int(row[1])] = float(row[4])
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
    for topic, lst in topic_visual.items():
        if topic not in results:
            continue
        ranked = dict(sorted(results[topic].items(), key=lambda kv: kv[1], reverse=True))
        seen: list[int] = []
        kept: dict[int, float] = {}
        for formula in ranked:
            if formula not in visual:
                continue
            vid = visual[formula]
            if vid in seen:
                continue
            kept[vid] = ranked[formula]
            seen.append(vid)
        prim = dict(sorted({v: s for v, s in kept.items() if v in lst}.items(), key=lambda kv: kv[1], reverse=True))
        for rank, (vid, score) in enumerate(prim.items(), 1):
            writer.writerow([topic, "Q0", str(vid), str(rank), str(score), "tag"])
    return out.getvalue()


def test_arqmath_task2_equals_the_organizers_dedup_with_integer_formula_ids(tmp_path: Path) -> None:
    rng = random.Random(2)
    compared = leading_zeros = 0
    header = ["id", "post_id", "thread_id", "type", "comment_id", "old_visual_id", "visual_id", "issue", "formula"]
    for case in range(80):
        index_rows = [[str(f), str(100 + f), "1", "answer", "", str(v), str(v), "", f"x^{v}"]
                      for f in range(1, 60) for v in [rng.randint(1, 20)]]
        topics = [f"B.{i}" for i in range(1, rng.randint(2, 5))]
        qrels_rows = [[t, "0", str(v), str(rng.randint(0, 3))] for t in topics for v in range(1, 21) if rng.random() < 0.4]
        run_rows = []
        for t in topics:
            for rank in range(1, rng.randint(2, 25)):
                f = rng.randint(1, 70)  # some ids are not in the index
                fid = f"0{f}" if rng.random() < 0.2 else str(f)
                leading_zeros += fid.startswith("0")
                run_rows.append([t, fid, str(100 + f), str(rank), rng.choice(["1.0", f"{rng.random():.3f}"]), "tag"])
        if not qrels_rows:
            continue
        index = tmp_path / "formulas"
        index.mkdir(exist_ok=True)
        with open(index / "1.tsv", "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, delimiter="\t", lineterminator="\n")
            writer.writerow(header)
            writer.writerows(index_rows)
        qrels_text = "".join("\t".join(r) + "\n" for r in qrels_rows)
        (tmp_path / "qrels.tsv").write_text(qrels_text)
        (tmp_path / "run.tsv").write_text("".join("\t".join(r) + "\n" for r in run_rows))
        theirs = _trec_eval_file(qrels_text, _dedup_task2(run_rows, index_rows, qrels_rows))
        try:
            result = evaluate(tmp_path / "run.tsv", "arqmath-3-task2", qrels=tmp_path / "qrels.tsv",
                              input_dir=tmp_path, per_topic=True)
        except SharedTaskError:
            assert not theirs
            continue
        for key, name in _PRIME_KEYS.items():
            ours = result.per_topic[key]
            assert set(ours) == set(theirs), (case, key, sorted(ours), sorted(theirs))
            for topic in ours:
                assert abs(ours[topic] - theirs[topic][name]) <= TOL, (case, key, topic)
        compared += 1
    assert compared > 50 and leading_zeros > 100


# --- ARQMath-3 Task 3 ----------------------------------------------------------------------

def _manual(run_topics: list[str], mapping: dict[str, str], qrels: dict[tuple[str, str], int]) -> tuple[float, float] | None:
    """evaluate_task3_results_manual.py (AR, P@1), None where its mean is undefined."""
    result: dict[str, str] = {}
    for topic in run_topics:
        if topic in mapping:
            if topic in result:
                raise ValueError(f"Repeated topic {topic}")
            result[topic] = mapping[topic]
    judgements = []
    for topic, answer in sorted(result.items()):
        if (topic, answer) in qrels:
            j = qrels[topic, answer]
            judgements.append(j if j < 4 else 0)
    if not judgements:
        return None
    return mean(float(j) for j in judgements), mean(1.0 if j > 1 else 0.0 for j in judgements)


def _lexical(run: list[tuple[str, str]], relevant: dict[str, set[str]]) -> float | None:
    """compute_lexical_overlap over the run lines whose topic has relevant answers (tokens: ours)."""
    scores = []
    for topic, answer in run:
        if topic not in relevant:
            continue
        mine = tokens(normalise(math_tags(answer)))
        refs = sorted(filter(len, (tokens(normalise(math_tags(r))) for r in relevant[topic])), key=sorted)
        if not refs:
            continue
        best = float("-inf")
        for ref in refs:
            common = mine & ref
            if not common:
                f1 = 0.0  # the script divides by zero here: undefined; we count 0
            else:
                p, r = len(common) / len(mine), len(common) / len(ref)
                f1 = 2 * p * r / (p + r)
            best = max(best, f1)
        scores.append(best)
    return mean(scores) if scores else None


_WORDS = "the derivative of integral area curve is a an limit sum $x^2$ $2x$ $\\frac{1}{2}$ prime".split()


def test_arqmath_task3_equals_the_organizers_manual_and_automatic_procedures(tmp_path: Path) -> None:
    rng = random.Random(3)
    compared = 0
    for case in range(80):
        topics = [f"A.{300 + i}" for i in range(1, rng.randint(2, 7))]
        answers = {(t, f"d_{k}"): " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 8)))
                   for t in topics for k in range(rng.randint(1, 4))}
        qrels = {key: rng.choice([0, 1, 2, 3, 5, 6]) for key in answers if rng.random() < 0.8}
        if not qrels:
            continue
        answered = [t for t in topics if rng.random() < 0.8] or topics[:1]
        mapping = {t: rng.choice([aid for (tt, aid) in answers if tt == t] + ["d_99"]) for t in answered}
        texts = {t: answers.get((t, mapping[t]), "a brand new answer") for t in answered}
        truth = tmp_path / "truth"
        truth.mkdir(exist_ok=True)
        (truth / "qrels.tsv").write_text("".join(f"{t}\t0\t{a}\t{g}\n" for (t, a), g in qrels.items()))
        with open(truth / "answers.tsv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, delimiter="\t", lineterminator="\n")
            w.writerow(["answer_id", "topic", "text"])
            w.writerows([[a, t, text] for (t, a), text in answers.items()])
        run = tmp_path / "Team-task3-run.tsv"
        run.write_text("".join(f"{t}\t1\t1.0\ttag\t\t{texts[t]} and more words\n" for t in answered))
        (tmp_path / "map.tsv").write_text("".join(f"Team-task3-run\t{t}\t{a}\n" for t, a in mapping.items())
                                         + "Other-run\tA.301\td_0\n")
        qrel_topics = {t for t, _ in qrels}
        if not set(answered) & qrel_topics:
            with pytest.raises(SharedTaskError, match="no topic of the run is in the qrels"):
                evaluate(run, "arqmath-3-task3", truth_dir=truth, answer_map=tmp_path / "map.tsv")
            continue
        result = evaluate(run, "arqmath-3-task3", truth_dir=truth, answer_map=tmp_path / "map.tsv", per_topic=True)
        manual = _manual(answered, mapping, qrels)
        if manual is None:
            assert "ar" not in result.scores
        else:
            assert abs(result.scores["ar"] - manual[0]) <= TOL and abs(result.scores["p1"] - manual[1]) <= TOL, case
        relevant: dict[str, set[str]] = {}
        for (t, a), g in qrels.items():
            if 1 < g < 4:
                relevant.setdefault(t, set()).add(answers[t, a])
        lo = _lexical([(t, texts[t] + " and more words") for t in answered], relevant)
        if lo is None:
            assert math.isnan(result.scores["lexical_overlap"])
        else:
            assert abs(result.scores["lexical_overlap"] - lo) <= TOL, case
        compared += 1
    assert compared > 50


# --- measure registry and leaderboard ------------------------------------------------------

def test_a_misspelt_measure_is_refused_when_the_spec_loads(tmp_path: Path) -> None:
    import shutil

    from sharedtask.spec import load_task_file, tasks_dir

    tasks = tmp_path / "tasks"
    shutil.copytree(tasks_dir(), tasks, ignore=shutil.ignore_patterns("samples"))
    base = tasks / "_base" / "arqmath-task1.yml"
    base.write_text(base.read_text().replace("id: bpref_prime", "id: bpref_prme"))
    with pytest.raises(SpecError) as err:
        load_task_file(tasks / "arqmath-3-task1.yml")
    assert str(err.value).startswith(f"{base.resolve()}: measures[3].id: 'bpref_prme' is not a registered measure")
    assert "bpref_prime" in (err.value.hint or "")
    touche = tasks / "touche-2020-task1.yml"
    touche.write_text(touche.read_text().replace("id: ndcg_cut_5", "id: ndcg_prime"))
    with pytest.raises(SpecError, match=r"measures\[1\].id: 'ndcg_prime' does not apply to touche tasks"):
        load_task_file(touche)
    env = {"SHAREDTASK_TASKS": str(tasks), "SHAREDTASK_NO_CACHE": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "sharedtask", "tasks", "show", "arqmath-3-task1"], env=env,
                         capture_output=True, text=True)
    assert out.returncode == 2 and "bpref_prme" in out.stderr and "Traceback" not in out.stderr


def test_adding_a_measure_is_one_registered_declaration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from sharedtask import measures
    from sharedtask.spec import load_task_file, tasks_dir

    monkeypatch.setattr(measures, "REGISTRY", dict(measures.REGISTRY))
    measures.register(measures.Measure("recall_prime", "prime", "arqmath-prime", "trec_eval recall.1000 -l2",
                                       "R′@1000 on the prime run", trec_eval="recall_1000", relevance_level=2))
    tasks = tmp_path / "tasks"
    shutil.copytree(tasks_dir(), tasks, ignore=shutil.ignore_patterns("samples"))
    spec = tasks / "arqmath-3-task1.yml"
    spec.write_text(spec.read_text() + "measures:\n  - {id: ndcg_prime, label: nDCG′, procedure: official, primary: true}\n"
                    "  - {id: recall_prime, label: R′@1000, procedure: 'prime run, trec_eval recall_1000 -l2'}\n")
    task = load_task_file(spec)
    fix = Path(__file__).parent / "fixtures" / "eval" / "arqmath-task1"
    result = evaluate(fix / "run.tsv", task, qrels=fix / "qrels.tsv", per_topic=True)
    qrels = pytrec_eval.parse_qrel(open(fix / "qrels.tsv"))
    prime = _prime_task1([line.split() for line in open(fix / "run.tsv") if line.strip()],
                         [line.split() for line in open(fix / "qrels.tsv") if line.strip()])
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"recall_1000"}, relevance_level=2).evaluate(
        pytrec_eval.parse_run(io.StringIO(prime)))
    assert result.per_topic["recall_prime"] == pytest.approx({t: v["recall_1000"] for t, v in expected.items()}, abs=TOL)
    assert result.measure("recall_prime").source == "trec_eval recall.1000 -l2"


def test_ties_share_a_rank_in_every_leaderboard_output(tmp_path: Path) -> None:
    from sharedtask.report.model import RunEntry, TaskSection, leaderboard as report_order
    from sharedtask.spec import load_task

    fix = Path(__file__).parent / "fixtures" / "eval" / "arqmath-task1"
    run_b = tmp_path / "b.tsv"
    run_b.write_bytes((fix / "run.tsv").read_bytes())  # the same run twice: equal scores
    worse = tmp_path / "c.tsv"
    worse.write_text("A.1\t13\t1\t1.0\tw\n")
    results = {name: evaluate(path, "arqmath-3-task1", qrels=fix / "qrels.tsv", per_topic=True)
               for name, path in (("a", fix / "run.tsv"), ("b", run_b), ("c", worse))}
    board = leaderboard(results, "arqmath-3-task1")
    assert [r["rank"] for r in board.to_json()["runs"]] == [1, 1, 3]
    assert [line.split(",")[0] for line in board.to_csv().splitlines()[1:]] == ["1", "1", "3"]
    from rich.console import Console

    console = Console(record=True, width=200)
    console.print(board.table())
    rows = [line for line in console.export_text().splitlines() if "│" in line and line.split("│")[2].strip() in "abc"]
    assert [row.split("│")[1].strip() for row in rows] == ["1", "1", "3"]
    entries = [RunEntry(n, "img", None, "success", True, [], r.scores, r.per_topic, {}) for n, r in results.items()]
    order = report_order(TaskSection(load_task("arqmath-3-task1"), entries))
    assert [rank for rank, _ in order] == [1, 1, 3]


def test_measure_descriptions_name_the_official_script_and_averaging(tmp_path: Path) -> None:
    fix = Path(__file__).parent / "fixtures" / "eval" / "arqmath-task1"
    out = subprocess.run([sys.executable, "-m", "sharedtask", "evaluate", str(fix / "run.tsv"), "--task",
                          "arqmath-3-task1", "--qrels", str(fix / "qrels.tsv"), "--json"], capture_output=True, text=True)
    measures = {m["key"]: m for m in json.loads(out.stdout)["measures"]}
    assert "arqmath_to_prim_task1.py" in measures["ndcg_prime"]["source"]
    assert "without -c" in measures["ndcg_prime"]["averaging"]
    assert measures["map_prime"]["description"].startswith("MAP′: trec_eval map -l2")


def test_official_labels_only_where_an_official_implementation_is_matched() -> None:
    """Issue 27: the MathQA option score's 1/k and guess rules are ours (the suite's evaluate.py,
    ongzexuan/mathqa-evaluation 9842c46, stops with NameError: sol at line 49 and adds k for k
    candidates at line 71); Lexical Overlap replaces the MathBERTa tokenizer. Neither is official."""
    from sharedtask.spec import load_task

    labels = {(t, m.id): m.official for t in ("mathqa-test", "mathqa-challenge", "arqmath-3-task3")
              for m in load_task(t).measures}
    assert labels[("mathqa-test", "mathqa_options")] is False
    assert labels[("mathqa-challenge", "mathqa_options")] is False
    assert labels[("mathqa-test", "mathqa_published")] is True
    assert labels[("arqmath-3-task3", "lexical_overlap")] is False
    assert labels[("arqmath-3-task3", "ar")] is True and labels[("arqmath-3-task3", "p1")] is True
