"""ARQMath Task 1 (answer retrieval): a run of answer posts, scored on the prime run
(trec_eval, the organizers' de-duplication), with EXAM on the corpus's passages."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from sharedtask.families.base import Family, register

if TYPE_CHECKING:
    from sharedtask.rerank.texts import Document
    from sharedtask.spec import Task


def known_answer_ids(task: Task, dataset: Path) -> object | None:
    """The answer ids of the dataset's Posts.xml: a run's post ids must be among them."""
    from sharedtask.validate import arqmath

    posts = task.input.file("posts")
    if posts is None:
        return None
    return arqmath.answer_ids(arqmath.require(dataset, posts.path, "posts file")[0])


def query_texts(task: Task, dataset: Path) -> dict[str, str]:
    """Topic id -> the topic's title and question, as readable text with formulae in ``$…$``."""
    from sharedtask.formats.arqmath import html_to_text, read_arqmath_topics
    from sharedtask.rerank.texts import dataset_files

    topics = dataset_files(task, dataset, "topics")[0]
    return {t.number: " ".join(x for x in (html_to_text(t.title), html_to_text(t.question)) if x)
            for t in read_arqmath_topics(topics)}


def document_texts(task: Task, dataset: Path, want: Collection[str]) -> dict[str, Document]:
    """An answer's body preceded by its question's title (as the BM25 baseline indexes an
    answer). The titles take a second pass over Posts.xml, which ends as soon as every question
    asked for is found (the dumps list posts by id, questions before answers)."""
    from sharedtask.formats.arqmath import Answer, Question, html_to_text, read_posts
    from sharedtask.rerank.texts import Document, dataset_files

    posts = dataset_files(task, dataset, "posts")[0]
    bodies: dict[str, tuple[str, str]] = {}  # answer id -> (question id, body text)
    for post in read_posts(posts):
        if isinstance(post, Answer) and post.id in want:
            bodies[post.id] = (post.parent_id, html_to_text(post.body))
    parents = {parent for parent, _ in bodies.values()}
    titles: dict[str, str] = {}
    if parents:  # second pass, only for the questions asked; it stops once all are found
        for post in read_posts(posts):
            if isinstance(post, Question) and post.id in parents:
                titles[post.id] = html_to_text(post.title)
                if len(titles) == len(parents):
                    break
    out: dict[str, Document] = {}
    for doc, (parent, body) in bodies.items():
        title = titles.get(parent, "")
        out[doc] = Document(" ".join(x for x in (title, body) if x), {"title": title, "body": body})
    return out


register(Family(
    name="arqmath-task1",
    title="ARQMath Task 1",
    input="prime",
    extra_inputs=("exam-passages",),
    evaluator="sharedtask.evaluate.api:score_prime_task1",
    known_ids={"answer_ids": f"{__name__}:known_answer_ids"},
    rerank_queries=f"{__name__}:query_texts",
    rerank_documents=f"{__name__}:document_texts",
    template="run_arqmath_task1.py",
    approach="term overlap of each answer post with the topic, one streamed pass over Posts.xml",
))
