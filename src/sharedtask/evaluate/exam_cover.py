"""EXAM on ranking runs (ARQMath Task 1): EXAM Cover and EXAM qrels, after the
rubric-grading-workbench (Farzi and Dietz, "Pencils Down! Automatic Rubric-based Evaluation
of Retrieve/Generate Systems", ICTIR 2024; the workbench's ``exam_cover_metric.py`` and
``exam_to_qrels``).

The passages' text is read from the task's corpus (``Posts.xml`` of the dataset); each
(question, passage) pair is graded once by the grader in use (offline by default).

- **EXAM Cover** (``exam_cover``), as the workbench computes it (TREMA-UNH/rubric-grading-workbench
  156f9e2, exam_pp/exam_cover_metric.py): a method's passages for a query are those whose
  *stored rank* is at most 20 (``top_ranked_paragraphs``, lines 283-289; for a run file the
  stored rank is its rank column); coverage = distinct questions answered correctly by them /
  the query's questions (``_examCoverageScore`` and ``frac``, lines 21-22, 88-92; every
  question of a topic is graded on every passage, so the workbench's normaliser, the questions
  graded on any passage of the query, lines 80-85, is the topic's question count); a query
  enters the method's mean only when the method has such a passage there (lines 247-255), so
  **topics the run does not rank drop out**; the mean is ``statistics.mean`` (lines 211-222).
- **EXAM Cover, all topics** (``exam_cover_all_topics``, our variant): the run's first 20
  distinct posts in trec_eval's order (score descending, ties by id descending); a topic the
  run does not rank scores 0; the mean is over all topics with questions.
- **EXAM qrels**: every graded passage becomes a judgment whose grade is the *number* of
  the topic's questions it answers, as the workbench's ``exam_to_qrels`` writes it ("the
  judgment level is the number of correctly answerable questions"); 0 when it answers none.
  The graded pool is the run's top K plus the passages of the official qrels (so unjudged
  passages of the run get a judgment); ``ndcg_exam_qrels`` is then nDCG′ as the official
  path computes it (prime run, trec_eval ``ndcg``) on these qrels.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sharedtask.answers.exam import Grader, OfflineGrader, grade_all
from sharedtask.evaluate import arqmath, readers, trec
from sharedtask.formats.arqmath import Answer, html_to_text, read_posts

Qrels = dict[str, dict[str, int]]

#: The cut-off of EXAM Cover (rubric-grading-workbench: top 20 passages per query).
K = 20


def _run_lines(path: Path) -> Iterator[tuple[int, str, str, str, str]]:
    """(line number, topic, doc, rank, score) of each line of an ARQMath Task 1 run, as text:
    the 5-column ARQMath layout or the 6-column TREC one."""
    with readers.open_text(path) as handle:
        for lineno, line in enumerate(handle, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) == 5:
                yield lineno, parts[0], parts[1], parts[2], parts[3]
            elif len(parts) == 6:
                yield lineno, parts[0], parts[2], parts[3], parts[4]
            else:
                raise readers.wrong_columns(path, lineno, len(parts), "arqmath-task1-run")


def top_k(path: Path, k: int = K) -> dict[str, list[str]]:
    """The first ``k`` distinct documents per topic of an ARQMath Task 1 run, in trec_eval's
    order (score descending, equal scores by document id descending; scores as C floats)."""
    rows: dict[str, dict[str, float]] = {}
    for lineno, topic, doc, _, score in _run_lines(path):
        docs = rows.setdefault(topic, {})
        if doc not in docs:  # repeated lines: the first counts, as in the prime run
            docs[doc] = trec.as_float32(readers.parse_score(path, lineno, score))
    return {t: [d for _, d in sorted(((s, d) for d, s in docs.items()), reverse=True)[:k]]
            for t, docs in rows.items()}


def ranked_by_stored_rank(path: Path, cutoff: int = K) -> dict[str, list[str]]:
    """Per topic, the distinct posts the run lists with a rank column of at most ``cutoff``, in
    file order: the workbench's ``top_ranked_paragraphs`` (exam_cover_metric.py @156f9e2, lines
    283-289: ``if rank.rank <= rank_cut_off``), where a run's stored rank is its rank column."""
    out: dict[str, dict[str, None]] = {}
    for lineno, topic, doc, rank, _ in _run_lines(path):
        if readers.parse_rank(path, lineno, rank) <= cutoff:
            out.setdefault(topic, {})[doc] = None
    return {topic: list(docs) for topic, docs in out.items()}


def passages(posts: Path, wanted: set[str]) -> dict[str, str]:
    """Plain text (formulae as ``$LaTeX$``) of the answer posts in ``wanted``, one pass over the corpus."""
    out: dict[str, str] = {}
    for post in read_posts(posts):
        if isinstance(post, Answer) and post.id in wanted:
            out[post.id] = html_to_text(post.body)
    return out


@dataclass
class ExamPassages:
    """What EXAM Cover and EXAM qrels read: the run's top K, the questions, the passages' grades."""

    run_path: Path
    ranked: dict[str, list[str]]  # topic -> top-K post ids (trec_eval order)
    exam: dict[str, list]  # topic -> its ExamQuestions
    pool: dict[str, set[str]]  # topic -> further posts to grade for the EXAM qrels (the official qrels)
    texts: dict[str, str]  # post id -> text
    grader: Grader = field(default_factory=OfflineGrader)
    answered: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (topic, post) -> question ids
    stored_top: dict[str, list[str]] = field(default_factory=dict)  # topic -> posts at rank column <= K

    def grades(self, pooled: bool = False) -> dict[str, dict[str, set[str]]]:
        """topic -> post -> the questions it answers, for the top K (and with ``pooled`` the
        pool). Each (question, passage) pair is graded once, the new ones in one batch (an
        HTTP grader sends them concurrently); EXAM Cover alone never grades the pool."""
        return self.grade({topic: [*self.ranked.get(topic, []), *(sorted(self.pool.get(topic, ())) if pooled else [])]
                           for topic in sorted(self.exam)})

    def grade(self, docs: dict[str, list[str]]) -> dict[str, dict[str, set[str]]]:
        """topic -> post -> the questions it answers, for the given posts that have a text."""
        wanted = {topic: [d for d in dict.fromkeys(found) if d in self.texts] for topic, found in docs.items()}
        todo = [(topic, doc, q) for topic, docs in wanted.items() for doc in docs
                if (topic, doc) not in self.answered for q in self.exam[topic]]
        verdicts = grade_all(self.grader, [(q, self.texts[doc]) for _, doc, q in todo])
        for (topic, doc, q), ok in zip(todo, verdicts):
            found = self.answered.setdefault((topic, doc), set())
            if ok:
                found.add(q.id)
        return {topic: {doc: self.answered[(topic, doc)] for doc in docs} for topic, docs in wanted.items()}


def load(run_path: Path, exam: dict[str, list], posts: Path, pool: dict[str, set[str]],
         grader: Grader | None = None) -> ExamPassages:
    """Read the run's top K and the text of every passage to grade."""
    ranked = top_k(run_path)
    stored = ranked_by_stored_rank(run_path)
    wanted = {d for t in exam for d in [*ranked.get(t, []), *stored.get(t, []), *pool.get(t, ())]}
    return ExamPassages(run_path=run_path, ranked=ranked, exam=exam, pool=pool, texts=passages(posts, wanted),
                        grader=grader or OfflineGrader(), stored_top=stored)


def exam_cover(inp: ExamPassages) -> dict[str, float]:
    """EXAM Cover as the workbench computes it (module docstring): per topic with questions
    where the run has a graded passage at stored rank <= 20; other topics are left out."""
    grades = inp.grade({topic: inp.stored_top.get(topic, []) for topic in sorted(inp.exam)})
    out: dict[str, float] = {}
    for topic, questions in sorted(inp.exam.items()):
        if not grades[topic]:  # no paragraph of this method for the query: not in its mean (lines 247-255)
            continue
        covered: set[str] = set().union(*grades[topic].values())
        out[topic] = len(covered) / len(questions)
    return out


def exam_cover_all_topics(inp: ExamPassages) -> dict[str, float]:
    """Our variant (module docstring): the top 20 in trec_eval's order, every topic with
    questions, a topic the run does not rank counting 0."""
    grades = inp.grades()
    out: dict[str, float] = {}
    for topic, questions in sorted(inp.exam.items()):
        covered: set[str] = set()
        for doc in inp.ranked.get(topic, []):
            covered |= grades[topic].get(doc, set())
        out[topic] = len(covered) / len(questions)
    return out


def exam_qrels(inp: ExamPassages) -> Qrels:
    """The EXAM qrels: every graded passage, grade = questions it answers (module docstring)."""
    return {topic: {doc: len(ids) for doc, ids in docs.items()} for topic, docs in inp.grades(pooled=True).items()
            if docs}


def ndcg_exam_qrels(inp: ExamPassages) -> dict[str, float]:
    """nDCG′ (prime run, trec_eval ndcg) on the EXAM qrels, per topic with a graded passage in the run."""
    qrels = exam_qrels(inp)
    prime = arqmath.prime_task1(inp.run_path, qrels)
    values = trec.per_topic(qrels, prime.run, ["ndcg"])
    return {topic: v["ndcg"] for topic, v in values.items()}

