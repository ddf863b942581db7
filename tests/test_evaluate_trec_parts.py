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
