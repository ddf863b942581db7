"""JSON Lines corpora and query files of the semantic-search family (docs/formats.md,
"Semantic search").

``statements-jsonl``: one theorem statement per line,
``{"id": "Nat.add_comm", "formal": "theorem Nat.add_comm ...", "informal": "Addition ..."}``
(the LeanSearch corpus pairs each mathlib4 statement with an informal restatement; an
optional ``"name"`` carries the informal name). ``queries-jsonl``: one informal query
per line, ``{"id": "1", "query": "commutativity of addition"}``.

Why JSON Lines: one record per line streams in constant memory and an error names its
line; both files are what a dense retriever's pipeline reads anyway.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import NamedTuple

from sharedtask.errors import FormatError
from sharedtask.formats._io import DECODE_ERRORS, PathLike, decode_error, open_text


class Statement(NamedTuple):
    id: str
    formal: str
    informal: str
    name: str


class Query(NamedTuple):
    number: str  # the topic id, named as in the other topic readers
    query: str


def json_objects(path: PathLike, what: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each non-blank line; a line that is not a JSON object is an error."""
    lineno = 0
    try:
        with open_text(path) as handle:
            for lineno, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise FormatError(path, f"not valid JSON ({exc.msg})", line=lineno, column=exc.colno,
                                      hint=f"write one JSON object per line ({what})") from None
                if not isinstance(obj, dict):
                    raise FormatError(path, f"expected a JSON object, found {type(obj).__name__}", line=lineno,
                                      column=1, hint=f"write one JSON object per line ({what})")
                yield lineno, obj
    except DECODE_ERRORS as exc:
        raise decode_error(path, exc, lineno + 1) from None


def text_field(path: PathLike, obj: dict, key: str, lineno: int, *, required: bool = True,
               may_be_empty: bool = False) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not may_be_empty and not value.strip()):
        found = "missing" if value is None else f"{type(value).__name__} {json.dumps(value)[:40]}"
        what = "a string" if may_be_empty else "a non-empty string"
        raise FormatError(path, f"field {key!r} must be {what}, found {found}", line=lineno,
                          hint=f'add "{key}": "..." to this line')
    return value


def unique_id(path: PathLike, obj: dict, lineno: int, seen: set[str], what: str) -> str:
    """The record's ``id``, refused when an earlier line had it (runs and truth name records by id)."""
    ident = text_field(path, obj, "id", lineno)
    if ident in seen:
        raise FormatError(path, f"{what} id {ident!r} appears twice", line=lineno, hint=f"give every {what} its own id")
    seen.add(ident)
    return ident


def read_statements(path: PathLike) -> Iterator[Statement]:
    """Stream a statements corpus; ids must be unique (a run names documents by them)."""
    seen: set[str] = set()
    for lineno, obj in json_objects(path, '{"id": ..., "formal": ..., "informal": ...}'):
        doc_id = unique_id(path, obj, lineno, seen, "statement")
        # "informal" may be "": a corpus built from mathlib4's sources has no informal restatement
        yield Statement(doc_id, text_field(path, obj, "formal", lineno),
                        text_field(path, obj, "informal", lineno, may_be_empty=True),
                        text_field(path, obj, "name", lineno, required=False))


def read_queries(path: PathLike) -> list[Query]:
    """Read a query file (small: returned whole, in file order); ids must be unique."""
    out: list[Query] = []
    seen: set[str] = set()
    for lineno, obj in json_objects(path, '{"id": ..., "query": ...}'):
        number = unique_id(path, obj, lineno, seen, "query")
        out.append(Query(number, text_field(path, obj, "query", lineno)))
    return out


class ExamQuestion(NamedTuple):
    topic: str
    id: str
    question: str
    answer: str  # the answer key a text must state
    choices: tuple[str, ...] = ()  # multiple choice (the original EXAM's form): the key is one of them


def _choices(path: PathLike, obj: dict, lineno: int, answer: str) -> tuple[str, ...]:
    """The optional ``choices``: a list of distinct non-empty strings that holds the answer key."""
    value = obj.get("choices")
    if value is None:
        return ()
    if (not isinstance(value, list) or len(value) < 2 or len(value) > 26
            or not all(isinstance(c, str) and c.strip() for c in value) or len(set(value)) != len(value)):
        raise FormatError(path, "field 'choices' must be a list of 2 to 26 distinct non-empty strings", line=lineno,
                          hint='e.g. "choices": ["0.5", "2", "4"], or leave the field out')
    if answer not in value:
        raise FormatError(path, f"the answer key {answer!r} is not one of the choices", line=lineno,
                          hint="the answer must be written exactly as one of the choices")
    return tuple(value)


def read_exam(path: PathLike) -> list[ExamQuestion]:
    """An exam-question file (``exam-jsonl``): ``{"topic", "id", "question", "answer"}`` per
    line, optionally ``"choices"`` (EXAM, Sander and Dietz, DESIRES 2021: held-out questions
    per query with an answer key); ids unique."""
    out: list[ExamQuestion] = []
    seen: set[str] = set()
    for lineno, obj in json_objects(path, '{"topic": ..., "id": ..., "question": ..., "answer": ...}'):
        qid = unique_id(path, obj, lineno, seen, "question")
        answer = text_field(path, obj, "answer", lineno)
        out.append(ExamQuestion(text_field(path, obj, "topic", lineno), qid, text_field(path, obj, "question", lineno),
                                answer, _choices(path, obj, lineno, answer)))
    return out
