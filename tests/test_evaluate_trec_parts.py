"""A TREC run scored a few topics at a time (``evaluate.api.TREC_PART_LINES``) gives the same
result as the whole run scored at once: the same means, per-topic values and notes.

The whole-run numbers themselves are checked independently elsewhere (by hand and against
pytrec_eval in tests/test_evaluate_touche.py, test_evaluate_semantic_search.py and
test_evaluate_fidelity.py); this test only holds the part-wise path to them, on generated
runs with the cases that feed the notes: repeated documents, tied scores, scores that
contradict the rank column, equal ranks at the top-5 cut, topics the qrels do not know,
qrels topics the run lacks, and runs whose topics are interleaved (read whole).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sharedtask.evaluate import api, evaluate, touche

FIX = Path(__file__).parent / "fixtures" / "eval" / "touche-2021"
SAMPLES = Path(__file__).resolve().parent.parent / "tasks" / "samples"


def _qrels(path: Path, topics: int, docs: int, rng: random.Random, grades: tuple[int, ...]) -> None:
    lines = []
    for t in range(1, topics + 1):
        if t % 9 == 0:
            continue  # a run topic the qrels do not know
        for d in rng.sample(range(docs), 12):
            lines.append(f"{t} 0 d{d} {rng.choice(grades)}")
    lines += [f"{topics + 1} 0 d1 2", f"{topics + 2} 0 d2 1"]  # judged topics the run lacks
    path.write_text("\n".join(lines) + "\n")


def _run(path: Path, topics: list[int], docs: int, rng: random.Random) -> int:
    lines = []
    for t in topics:
        n = rng.randint(1, 30)
        chosen = [f"d{rng.randrange(docs)}" for _ in range(n)]  # repeats happen
        scores = sorted((round(rng.uniform(0, 5), 1) for _ in range(n)), reverse=True)  # ties happen
        ranks = list(range(1, n + 1))
        if t % 4 == 0 and n > 2:
            scores[0], scores[-1] = scores[-1], scores[0]  # contradicts the rank column
        if t % 5 == 0 and n > 3:
            ranks[2] = ranks[1]  # equal ranks at the top-5 cut
        lines += [f"{t} Q0 {d} {r} {s} tag" for d, r, s in zip(chosen, ranks, scores)]
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


def _same(a, b) -> None:
    assert a.scores == pytest.approx(b.scores, nan_ok=True)
    assert a.per_topic == b.per_topic
    assert a.notes == b.notes
    assert a.topics_averaged == b.topics_averaged


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("task,grades", [("touche-2021-task1", (-2, 0, 1, 2, 3)), ("mathlib4-search", (0, 1, 2))])
def test_parts_equal_the_whole_run(task: str, grades, seed: int, tmp_path: Path, monkeypatch) -> None:
    rng = random.Random(seed)
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    _qrels(qrels, 40, 60, rng, grades)
    lines = _run(run, list(range(1, 41)), 60, rng)
    monkeypatch.setattr(api, "TREC_PART_LINES", 10**9)
    whole = evaluate(run, task, qrels=qrels, per_topic=True)
    parts_seen = []
    real = touche.read_trec_run_in_parts

    def counting(path, max_lines):
        for part in real(path, max_lines):
            parts_seen.append(part.lines)
            yield part

    monkeypatch.setattr(touche, "read_trec_run_in_parts", counting)
    monkeypatch.setattr(api, "TREC_PART_LINES", 25)
    parted = evaluate(run, task, qrels=qrels, per_topic=True)
    assert len(parts_seen) > 5 and sum(parts_seen) == lines  # really scored in parts, every line once
    _same(parted, whole)
    assert whole.notes  # the generated runs do exercise the notes


def test_interleaved_topics_are_read_whole_with_the_same_result(tmp_path: Path, monkeypatch) -> None:
    run = tmp_path / "run.txt"
    rows = (FIX / "run.txt").read_text().splitlines()
    run.write_text("\n".join(rows[1:] + rows[:1]) + "\n")  # the first line moved to the end: its topic comes back
    with pytest.raises(touche.TopicsInterleaved):
        list(touche.read_trec_run_in_parts(run, 1))
    monkeypatch.setattr(api, "TREC_PART_LINES", 1)
    interleaved = evaluate(run, "touche-2021-task1", truth_dir=FIX, per_topic=True)
    monkeypatch.setattr(api, "TREC_PART_LINES", 10**9)
    _same(interleaved, evaluate(run, "touche-2021-task1", truth_dir=FIX, per_topic=True))


def test_the_bundled_touche_sample_in_one_line_parts(tmp_path: Path, monkeypatch) -> None:
    truth = SAMPLES / "touche-2021" / "truth"
    run = tmp_path / "run.txt"
    lines = [line.split() for line in (truth / "qrels.txt").read_text().splitlines() if line.strip()]
    by_topic: dict[str, list[str]] = {}
    for topic, _, doc, _ in lines:
        by_topic.setdefault(topic, []).append(doc)
    run.write_text("".join(f"{t} Q0 {d} {r} {100 - r} tag\n" for t, docs in by_topic.items()
                           for r, d in enumerate(docs, 1)))
    monkeypatch.setattr(api, "TREC_PART_LINES", 10**9)
    whole = evaluate(run, "touche-2021-task1", truth_dir=truth, per_topic=True)
    monkeypatch.setattr(api, "TREC_PART_LINES", 1)
    _same(evaluate(run, "touche-2021-task1", truth_dir=truth, per_topic=True), whole)


# --- The one-pass reader hands irregular files to the shared reader, whose error names the line ---

@pytest.mark.parametrize("bad,line,column", [
    ("1 Q0 d9 8 7.5", 5, None),  # five columns
    ("1 Q0 d9 x 7.5 tag", 5, 9),  # a rank that is not an integer (the column is the character's)
    ("1 Q0 d9 8 high tag", 5, 11),  # a score that is not a number
])
def test_an_irregular_line_is_named_with_its_line(bad: str, line: int, column, tmp_path: Path) -> None:
    from sharedtask.errors import FormatError

    run = tmp_path / "run.txt"
    good = [f"1 Q0 d{i} {i} {10 - i} tag" for i in range(1, 5)]
    run.write_text("\n".join(good + [bad] + ["2 Q0 d1 1 3.0 tag"]) + "\n")
    with pytest.raises(FormatError) as caught:
        evaluate(run, "touche-2021-task1", truth_dir=FIX)
    assert caught.value.location.line == line
    if column is not None:
        assert caught.value.location.column == column


def test_text_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    from sharedtask.errors import FormatError

    run = tmp_path / "run.txt"
    run.write_bytes(b"1 Q0 d1 1 3.0 tag\n1 Q0 d\xff2 2 2.0 tag\n")
    with pytest.raises(FormatError, match="UTF-8"):
        evaluate(run, "touche-2021-task1", truth_dir=FIX)


def _naive_order_flags(scores: list[float], docs: list[str]) -> tuple[bool, bool]:
    """trec_eval's order against the rank column, pair by pair (docs/evaluation.md): a score
    rising down the list contradicts it; equal float32 scores with docnos ascending reorder."""
    from sharedtask.evaluate.trec import as_float32

    tie = contra = False
    for (s1, d1), (s2, d2) in zip(zip(scores, docs), zip(scores[1:], docs[1:])):
        f1, f2 = as_float32(s1), as_float32(s2)
        contra |= f1 < f2
        tie |= f1 == f2 and d1 < d2
    return tie, contra


@pytest.mark.parametrize("seed", range(200))
def test_order_flags_equal_a_pairwise_walk(seed: int) -> None:
    from sharedtask.evaluate.trec import order_flags

    rng = random.Random(seed)
    n = rng.randint(0, 12)
    pool = [1.0, 1.0000000001, 2.5, 3.4028235677973366e38, 1e300, -1e39, float("inf"), 0.1, 0.1000000001]
    scores = [rng.choice(pool) if rng.random() < 0.5 else round(rng.uniform(0, 3), 1) for _ in range(n)]
    docs = [f"d{rng.randrange(6)}" for _ in range(n)]
    assert order_flags(scores, docs) == _naive_order_flags(scores, docs)
