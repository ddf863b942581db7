"""Streaming readers and writers for every official ARQMath and Touché format and the
semantic-search family's JSON Lines files.

Readers take a path (``str`` or ``Path``; ``.gz`` is decompressed transparently),
yield typed, immutable records (NamedTuples: cheap to build on hot paths) and raise
:class:`sharedtask.errors.FormatError` naming file, line/column or record, what was
expected and how to fix it. Identifiers (topics, posts, formulae, arguments) stay
strings exactly as written, so runs, qrels and collections join without conversion.

Registry for the input check (``sharedtask check-input``) and other generic callers::

    from sharedtask.formats import READERS, count_records
    records = READERS["argsme-json"](path)      # any spec format name -> iterable of records
    n = count_records("arqmath-formula-tsv", "formulas/*.tsv")   # int; FormatError if malformed

Keys of :data:`READERS` are the format names used in task specs: ``trec-run``,
``trec-qrels``, ``arqmath-posts-xml``, ``arqmath-formula-tsv`` (a file, a directory
or a glob), ``arqmath-topics-xml``, ``argsme-json`` (one file), ``touche-topics-xml``,
``arqmath-task1-run``, ``arqmath-task2-run``, ``arqmath-task3-run``,
``arqmath-answers-tsv``, ``statements-jsonl``, ``queries-jsonl``. :func:`count_topics` gives the number of distinct topics of
run, qrels and topics files (None for other formats).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache, partial
from importlib import import_module
from typing import Any

from sharedtask.errors import FormatError
from sharedtask.formats._io import PathLike

# Public names -> the module that defines them. They are imported on first use (PEP 562):
# the validator needs only sharedtask.formats.layouts, and importing every reader
# (expat, the args.me splitter, the HTML parser) cost a small run ~40 ms of start-up.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("ARGSME_FILES", "Argument", "Premise", "argsme_files", "read_argsme", "read_argsme_dir"),
                    "argsme"),
    **dict.fromkeys(("Answer", "AnswerText", "ArqmathTopic", "Question", "read_answers_tsv", "read_arqmath_topics",
                     "read_posts", "split_tags"), "arqmath"),
    **dict.fromkeys(("V2_HEADER", "V3_HEADER", "FormulaRecord", "formula_files", "load_visual_ids",
                     "read_formula_index"), "formulas"),
    **dict.fromkeys(("formula_spans", "html_to_text", "strip_dollars"), "html"),
    **dict.fromkeys(("ToucheTopic", "read_touche_topics"), "touche"),
    **dict.fromkeys(("ExamQuestion", "Query", "Statement", "read_exam", "read_queries", "read_statements"), "jsonl"),
    **dict.fromkeys(("GoldProblem", "Problem", "Programs", "read_broken", "read_gold", "read_problems",
                     "read_programs"), "mathqa"),
    **dict.fromkeys(("COLUMNS", "LAYOUTS", "Qrel", "RunReader", "RunRow", "detect_layout", "load_qrels_dict",
                     "load_run_dict", "read_qrels", "read_run", "write_qrels", "write_run"), "trec"),
}


def __getattr__(name: str) -> Any:
    if name == "READERS":
        value: Any = _readers()
    elif name in _EXPORTS:
        value = getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


Reader = Callable[[PathLike], Iterable[Any]]

@cache
def _readers() -> dict[str, Reader]:
    """``READERS``: spec format name -> reader (path -> iterable of records)."""
    from sharedtask.formats.argsme import read_argsme
    from sharedtask.formats.arqmath import read_answers_tsv, read_arqmath_topics, read_posts
    from sharedtask.formats.formulas import read_formula_index
    from sharedtask.formats.touche import read_touche_topics
    from sharedtask.formats.jsonl import read_exam, read_queries, read_statements
    from sharedtask.formats.mathqa import read_broken, read_gold, read_problems
    from sharedtask.formats.tira_layout import read_tira_documents, read_tira_queries, read_tira_queries_xml
    from sharedtask.formats.trec import read_qrels, read_run

    return {
        "trec-run": partial(read_run, layout="trec"),
        "trec-qrels": read_qrels,
        "arqmath-posts-xml": read_posts,
        "arqmath-formula-tsv": read_formula_index,
        "arqmath-topics-xml": read_arqmath_topics,
        "argsme-json": read_argsme,
        "touche-topics-xml": read_touche_topics,
        "arqmath-task1-run": partial(read_run, layout="arqmath-task1"),
        "arqmath-task2-run": partial(read_run, layout="arqmath-task2"),
        "arqmath-task3-run": partial(read_run, layout="arqmath-task3"),
        "arqmath-answers-tsv": read_answers_tsv,
        "statements-jsonl": read_statements,
        "queries-jsonl": read_queries,
        "mathqa-problems-jsonl": read_problems,
        "mathqa-json": read_gold,
        "mathqa-broken-txt": read_broken,
        "exam-jsonl": read_exam,
        "tira-documents-jsonl": read_tira_documents,
        "tira-queries-jsonl": read_tira_queries,
        "tira-queries-xml": read_tira_queries_xml,
    }


def reader_for(format_name: str) -> Reader:
    """The reader of a spec format name; ValueError names the known formats."""
    readers = _readers()
    try:
        return readers[format_name]
    except KeyError:
        raise ValueError(f"unknown format {format_name!r}; known: {', '.join(sorted(readers))}") from None


def count_records(format_name: str, path: PathLike) -> int:
    """Parse a whole file and count its records; raises FormatError on malformed input."""
    n = 0
    for _ in reader_for(format_name)(path):
        n += 1
    return n


TOPIC_FORMATS = ("arqmath-topics-xml", "touche-topics-xml", "queries-jsonl", "mathqa-problems-jsonl",
                 "tira-queries-jsonl", "tira-queries-xml")


def read_topic_ids(format_name: str, path: PathLike) -> list[str]:
    """The topic ids of a topics file in file order, repeats kept (the one topic-id reader:
    the validator's topic set, check-input's duplicate check and :func:`count_topics` use it)."""
    if format_name not in TOPIC_FORMATS:
        raise ValueError(f"{format_name!r} is not a topics format ({', '.join(TOPIC_FORMATS)})")
    return [t.number for t in reader_for(format_name)(path)]


def count_topics(format_name: str, path: PathLike) -> int | None:
    """Distinct topics of a run, qrels or topics file; None for corpus formats."""
    if format_name in TOPIC_FORMATS:
        return len(set(read_topic_ids(format_name, path)))
    if format_name.endswith("-run") or format_name in ("trec-qrels", "arqmath-answers-tsv"):
        return len({r.topic for r in reader_for(format_name)(path)})
    reader_for(format_name)
    return None


__all__ = [
    "ARGSME_FILES", "COLUMNS", "LAYOUTS", "READERS", "TOPIC_FORMATS", "V2_HEADER", "V3_HEADER",
    "Answer", "AnswerText", "Argument", "ArqmathTopic", "FormatError", "FormulaRecord", "Premise",
    "ExamQuestion", "GoldProblem", "Problem", "Programs", "Qrel", "Query", "Question", "RunReader", "Statement", "RunRow", "ToucheTopic",
    "argsme_files", "count_records", "count_topics", "detect_layout", "formula_files", "formula_spans",
    "html_to_text", "load_qrels_dict", "load_run_dict", "load_visual_ids", "read_answers_tsv",
    "read_argsme", "read_argsme_dir", "read_broken", "read_exam", "read_gold", "read_problems", "read_programs", "read_queries",
    "read_statements", "read_arqmath_topics", "read_formula_index", "read_posts",
    "read_qrels", "read_run", "read_topic_ids", "reader_for", "split_tags", "strip_dollars", "write_qrels", "write_run",
]
