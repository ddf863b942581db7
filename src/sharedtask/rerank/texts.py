"""The query and document texts of a task's dataset, as a re-ranker receives them.

Each document comes as one text and by field (for re-rankers that weigh fields, such as
BM25F). One reading per task family (the family names it: ``sharedtask.families``, its
``rerank_queries`` and ``rerank_documents``), from the task's input contract (its ``topics``,
``corpus`` and ``posts`` files); the corpus is streamed once and only the texts of the
wanted documents are kept, so memory is bounded by the candidates, not the corpus.

- Touché: the topic's title; an argument's conclusion followed by its premises (the text
  the BM25 and dense baselines index).
- ARQMath Task 1: the topic's title and question; an answer's body, each as readable
  text with formulae in ``$…$``, preceded by its question's title (as the BM25 baseline
  indexes an answer). The titles take a second pass over Posts.xml, which ends as soon as
  every question asked for is found (the dumps list posts by id, questions before answers).
- semantic search (mathlib4): the query; a statement's name, informal text and formal
  statement.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path
from typing import NamedTuple

from sharedtask import families
from sharedtask.errors import SharedTaskError
from sharedtask.families import Family
from sharedtask.spec import Task


def _files(task: Task, dataset: Path, role: str) -> list[Path]:
    entries = task.input.all(role)
    found = [p for entry in entries for p in entry.matches(dataset)]
    if not found:
        wanted = ", ".join(e.path for e in entries) or role
        raise SharedTaskError(f"{dataset} holds no {role} file of task {task.id} ({wanted})",
                              hint="pass the task's dataset folder (the one mounted as $inputDataset)")
    return found


def supports(task: Task) -> bool:
    return families.get(task.family).reranks


def _family(task: Task) -> Family:
    family = families.get(task.family)
    if not family.reranks:
        titles = [f.title for f in families.rerankable()]
        raise SharedTaskError(f"task {task.id} ({task.family}) has no re-ranking input",
                              hint=f"re-ranking inputs exist for {', '.join(titles[:-1])} and {titles[-1]}")
    return family


class Topic(NamedTuple):
    """A topic as a re-ranker receives it: the query text, and the topic's own fields
    (TIREx's ``original_query``: ``query_id`` and the fields of the task's topics file)."""

    text: str
    original: dict[str, str]


def query_texts(task: Task, dataset: Path) -> dict[str, str]:
    """Topic id → the query text a re-ranker reads."""
    return {qid: topic.text for qid, topic in topics(task, dataset).items()}


def topics(task: Task, dataset: Path) -> dict[str, Topic]:
    """Topic id → its query text and original fields, in the order of the topics file (the
    family's ``rerank_queries``)."""
    return families.resolve(_family(task).rerank_queries)(task, _files(task, dataset, "topics")[0])


def touche_queries(task: Task, topics: Path) -> dict[str, Topic]:
    """Touché: the topic's title; the original fields are title, description and narrative."""
    from sharedtask.formats.touche import read_touche_topics

    return {t.number: Topic(t.title, {"query_id": t.number, "title": t.title, "description": t.description or "",
                                      "narrative": t.narrative or ""})
            for t in read_touche_topics(topics)}


def arqmath_queries(task: Task, topics: Path) -> dict[str, Topic]:
    """ARQMath Task 1: the topic's title and question. The original fields are as the topics
    file has them (HTML with formula spans), so that a re-ranker can read the topic as its
    own full-rank run does."""
    from sharedtask.formats.arqmath import html_to_text, read_arqmath_topics

    return {t.number: Topic(" ".join(x for x in (html_to_text(t.title), html_to_text(t.question)) if x),
                            {"query_id": t.number, "title": t.title, "question": t.question,
                             "tags": ",".join(t.tags)})
            for t in read_arqmath_topics(topics)}


def statement_queries(task: Task, topics: Path) -> dict[str, Topic]:
    """Semantic search: the query."""
    from sharedtask.formats.jsonl import read_queries

    return {q.number: Topic(q.query, {"query_id": q.number, "text": q.query}) for q in read_queries(topics)}


class Document(NamedTuple):
    """A candidate's text as one string (what the baselines index) and by field, in order."""

    text: str
    fields: dict[str, str]


def document_texts(task: Task, dataset: Path, wanted: Collection[str]) -> dict[str, Document]:
    """Document id → its text and fields, for the ``wanted`` ids found in the corpus (missing ids
    are left out; the family's ``rerank_documents``)."""
    return families.resolve(_family(task).rerank_documents)(task, dataset, set(wanted))


def iter_documents(task: Task, dataset: Path) -> Iterator[tuple[str, Document]]:
    """Every document of the corpus with its text, streamed in corpus order (the family's
    ``corpus_documents``: Touché, mathlib4; ARQMath's answers need their questions' titles,
    which :func:`document_texts` pairs for the wanted ones only)."""
    family = _family(task)
    if family.corpus_documents is None:
        raise SharedTaskError(f"task {task.id}: the whole corpus as documents is not written for {family.title}",
                              hint="the ir_datasets layout exists for Touché and mathlib4-search")
    return families.resolve(family.corpus_documents)(task, dataset)


def _wanted(documents: Iterator[tuple[str, Document]], want: set[str]) -> dict[str, Document]:
    """The wanted documents of a streamed corpus, the first of a repeated id kept."""
    out: dict[str, Document] = {}
    for doc_id, doc in documents:
        if doc_id in want and doc_id not in out:
            out[doc_id] = doc
    return out


def statement_corpus(task: Task, dataset: Path) -> Iterator[tuple[str, Document]]:
    """Semantic search: a statement's name, informal text and formal statement."""
    from sharedtask.formats.jsonl import read_statements

    for path in _files(task, dataset, "corpus"):
        for s in read_statements(path):
            yield s.id, Document(" ".join(x for x in (s.name, s.informal, s.formal) if x).strip(),
                                 {"name": s.name, "informal": s.informal, "formal": s.formal})


def statement_documents(task: Task, dataset: Path, want: set[str]) -> dict[str, Document]:
    return _wanted(statement_corpus(task, dataset), want)


def touche_corpus(task: Task, dataset: Path) -> Iterator[tuple[str, Document]]:
    """Touché: an argument's conclusion followed by its premises."""
    from sharedtask.formats.argsme import read_argsme

    for path in _files(task, dataset, "corpus"):
        for arg in read_argsme(path):
            premises = [p.text for p in arg.premises]
            yield arg.id, Document(" ".join([arg.conclusion, *premises]),
                                   {"conclusion": arg.conclusion, "premises": " ".join(premises)})


def touche_documents(task: Task, dataset: Path, want: set[str]) -> dict[str, Document]:
    return _wanted(touche_corpus(task, dataset), want)


def arqmath_documents(task: Task, dataset: Path, want: set[str]) -> dict[str, Document]:
    """ARQMath Task 1: an answer's body preceded by its question's title."""
    from sharedtask.formats.arqmath import Answer, Question, html_to_text, read_posts

    posts = _files(task, dataset, "posts")[0]
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
