"""ARQMath Tasks 1 and 2: prime runs (Task 3 lives in ``task3``).

Procedures: docs/evaluation.md ("ARQMath Tasks 1 and 2"), checked against the
organizers' scripts (ARQMath arqmath_to_prim_task1.py, de_duplicate_2021.py and
task1/task2_get_results.py as mirrored in approach0/pya0 eval-arqmath2-*):

- Task 1: keep the first line of each (topic, post); drop topics not in the qrels and
  posts not judged for the topic; the rest is the "prime" run, given to trec_eval
  (``ndcg``; ``map``, ``P_10``, ``bpref`` with ``-l2``) *without* ``-c``.
- Task 2: formula ids compared as integers (the script reads them with ``int()``, so
  ``02179`` is formula 2179); per topic, formula instances sorted by score (not rank; a
  stable sort, and a repeated formula id keeps its last score, as the script's dict
  does); each formula id
  mapped to its visual id through the formula index (ids not in the index skipped and
  reported); the first (highest-scored) instance of each visual id kept with its score;
  unjudged visual ids dropped; then the Task 1 measures.

Averaging (decided against the official scripts): trec_eval 9.0.8 without ``-c`` on
the prime run averages over the topics that have at least one judged result in the
run; a qrels topic the run misses entirely (or where it retrieves nothing judged)
drops out of the mean instead of counting 0. We follow that and say so in the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sharedtask.errors import FormatError
from sharedtask.evaluate import readers

Qrels = dict[str, dict[str, int]]

@dataclass
class PrimeRun:
    """A prime (judged-only, de-duplicated) run plus what the filtering removed."""

    run: dict[str, dict[str, float]] = field(default_factory=dict)
    order: dict[str, list[tuple[int, float, str]]] = field(default_factory=dict)  # (rank, score, id)
    run_topics: set[str] = field(default_factory=set)
    lines: int = 0
    duplicates: int = 0
    unjudged: int = 0
    outside_qrels: int = 0  # lines of topics the qrels do not know
    missing_formulas: int = 0  # Task 2: formula ids not in the index
    formula_duplicates: int = 0  # Task 2: instances dropped for sharing a visual id


def _looks_like_other_task(parts: list[str]) -> str | None:
    """A hint when a 6-column line given as a Task 1 run looks like a Task 2 run."""
    if len(parts) == 6 and parts[1].isdigit() and parts[1] != "0" and parts[2].isdigit():
        return "column 2 is a number, not Q0: this looks like an ARQMath Task 2 run; check --task"
    return None


def prime_task1(path: Path, qrels: Qrels) -> PrimeRun:
    """Stream an ARQMath Task 1 run into its prime run (one pass, judged posts only).

    Accepts the 5-column ARQMath format and, leniently, 6-column TREC with Q0
    (docs/formats.md, "Runs", *lenient*).
    """
    prime = PrimeRun()
    run, order, run_topics = prime.run, prime.order, prime.run_topics
    last_topic = None
    judged: dict[str, int] | None = None
    kept: dict[str, float] | None = None
    rows: list | None = None
    lines = unjudged = outside = duplicates = 0
    with readers.open_text(path) as handle:
        lineno = 0
        try:
            for lineno, line in enumerate(handle, 1):
                parts = line.split()
                n = len(parts)
                if n == 5:
                    topic, doc, rank, score = parts[0], parts[1], parts[2], parts[3]
                elif n == 6:
                    hint = _looks_like_other_task(parts)
                    if hint:
                        raise FormatError(path, "expected an ARQMath Task 1 run", line=lineno, hint=hint)
                    topic, doc, rank, score = parts[0], parts[2], parts[3], parts[4]
                elif n == 0:
                    continue
                else:
                    raise readers.wrong_columns(path, lineno, n, "arqmath-task1-run")
                lines += 1
                if topic != last_topic:
                    last_topic = topic
                    run_topics.add(topic)
                    judged = qrels.get(topic)
                    if judged is not None:
                        kept = run.get(topic)
                        if kept is None:
                            kept = run[topic] = {}
                            rows = order[topic] = []
                        else:
                            rows = order[topic]
                if judged is None:
                    outside += 1
                    continue
                if doc not in judged:
                    unjudged += 1
                    continue
                if doc in kept:
                    duplicates += 1
                    continue
                value = readers.parse_score(path, lineno, score)
                kept[doc] = value
                rows.append((readers.parse_rank(path, lineno, rank), value, doc))
        except UnicodeDecodeError as exc:
            raise FormatError(path, f"invalid UTF-8 ({exc.reason})", line=lineno + 1) from None
    prime.lines, prime.unjudged, prime.outside_qrels, prime.duplicates = lines, unjudged, outside, duplicates
    for topic in [t for t, docs in run.items() if not docs]:
        del run[topic], order[topic]
    return prime


def read_task2_instances(path: Path) -> tuple[dict[str, dict[str, tuple[float, int]]], int]:
    """Task 2 run -> ({topic: {formula_id: (score, rank)}} in first-seen order, lines).

    A repeated formula id keeps its last score but its first position, like the
    official script's dict.
    """
    out: dict[str, dict[str, tuple[float, int]]] = {}
    lines = 0
    for row in readers.read_run(path, "arqmath-task2"):
        lines += 1
        out.setdefault(row.topic, {})[formula_key(row.doc)] = (row.score, row.rank)
    return out, lines


def formula_key(formula_id: str) -> str:
    """A formula id as the official script compares it: as an integer (``02179`` is 2179)."""
    return str(int(formula_id)) if formula_id.isascii() and formula_id.isdigit() else formula_id


def prime_task2(instances: dict[str, dict[str, tuple[float, int]]], visual: dict[str, str],
                qrels: Qrels) -> PrimeRun:
    """Visual-id de-duplication and prime filtering of a Task 2 run (module docstring)."""
    prime = PrimeRun()
    for topic, formulas in instances.items():
        prime.run_topics.add(topic)
        prime.lines += len(formulas)
        judged = qrels.get(topic)
        if judged is None:
            prime.outside_qrels += len(formulas)
            continue
        # sort by score descending; Python's sort is stable, as in the official script
        ranked = sorted(formulas.items(), key=lambda item: item[1][0], reverse=True)
        kept: dict[str, float] = {}
        rows: list[tuple[int, float, str]] = []
        seen: set[str] = set()
        for formula, (score, rank) in ranked:
            vid = visual.get(formula)
            if vid is None:
                prime.missing_formulas += 1
                continue
            if vid in seen:
                prime.formula_duplicates += 1
                continue
            seen.add(vid)
            if vid not in judged:
                prime.unjudged += 1
                continue
            kept[vid] = score
            rows.append((rank, score, vid))
        if kept:
            prime.run[topic] = kept
            prime.order[topic] = rows
    return prime
