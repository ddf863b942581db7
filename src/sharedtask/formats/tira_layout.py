"""TIRA's ir_datasets layout of a dataset folder: what ``tira.third_party_integrations``
reads from ``$TIRA_INPUT_DATASET``.

The files and fields are those of the tira client 0.0.207 (``ir_datasets_loader.py``
writes them, ``ir_datasets_util.py`` reads them):

- ``queries.jsonl``: ``{"qid", "query", "original_query"}`` per topic;
- ``queries.xml``: ``<topics><topic number="…"><query>…</query><original_query><field>…``
  (TREC-style topics, for PyTerrier's ``trecxml`` reader);
- ``documents.jsonl[.gz]``: ``{"docno", "text", "original_document"}`` per document (full rank);
- ``rerank.jsonl.gz``: the candidates (a re-rank dataset, :mod:`sharedtask.rerank.inputs`).

Every writer here gives the same bytes for the same input (JSON with ``ensure_ascii=False``,
no gzip name or time), so the files can be pinned by sha256 like any dataset file.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO
from xml.etree import ElementTree

from sharedtask.errors import FormatError
from sharedtask.formats._io import PathLike
from sharedtask.formats.jsonl import Query, json_objects, text_field

QUERIES_JSONL = "queries.jsonl"
QUERIES_XML = "queries.xml"
DOCUMENTS_JSONL = "documents.jsonl.gz"
#: The files of the full-rank layout, as ``check-input`` names them.
FULL_RANK_FILES = (DOCUMENTS_JSONL, QUERIES_JSONL, QUERIES_XML)


def json_line(obj: Mapping[str, object]) -> bytes:
    """One JSON Lines line, UTF-8, as every file of the layout writes it."""
    return json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n"


@contextmanager
def atomic(path: Path, mode: str = "wb") -> Iterator[IO[bytes]]:
    """Write ``path`` through a temporary file renamed into place: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as raw:
            if path.name.endswith(".gz"):
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed:
                    yield packed  # type: ignore[misc]
            else:
                yield raw
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_queries(folder: Path, queries: Iterable[tuple[str, str, Mapping[str, str]]], *,
                  with_id: bool = False) -> int:
    """``queries.jsonl`` and ``queries.xml`` in ``folder`` from (qid, query, original fields); the count.

    ``with_id``: each line also carries ``id`` (first), so that one ``queries.jsonl`` is both a
    task's native ``queries-jsonl`` topics file (mathlib4-search) and TIRA's.
    """
    root = ElementTree.Element("topics")
    count = 0
    with atomic(folder / QUERIES_JSONL) as out:
        for qid, query, original in queries:
            line = {"id": qid} if with_id else {}
            out.write(json_line({**line, "qid": qid, "query": query, "original_query": dict(original)}))
            topic = ElementTree.SubElement(root, "topic", number=qid)
            ElementTree.SubElement(topic, "query").text = query
            fields = ElementTree.SubElement(topic, "original_query")
            for key, value in original.items():
                ElementTree.SubElement(fields, key).text = str(value)
            count += 1
    ElementTree.indent(root)
    with atomic(folder / QUERIES_XML) as out:
        out.write(ElementTree.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n")
    return count


def write_documents(folder: Path, documents: Iterable[tuple[str, str, Mapping[str, str]]]) -> int:
    """``documents.jsonl.gz`` in ``folder`` from (docno, text, original fields); the count."""
    count = 0
    with atomic(folder / DOCUMENTS_JSONL) as out:
        for docno, text, original in documents:
            out.write(json_line({"docno": docno, "text": text, "original_document": {"doc_id": docno, **original}}))
            count += 1
    return count


# ------------------------------------------------------------------ readers (check-input)


def _unique(path: PathLike, obj: dict, key: str, lineno: int, seen: set[str], what: str) -> str:
    ident = text_field(path, obj, key, lineno)
    if ident in seen:
        raise FormatError(path, f"{what} {key} {ident!r} appears twice", line=lineno, hint=f"give every {what} its own {key}")
    seen.add(ident)
    return ident


def read_tira_documents(path: PathLike) -> Iterator[tuple[str, str]]:
    """(docno, text) of a ``documents.jsonl[.gz]``, streamed; docno unique, text present."""
    seen: set[str] = set()
    for lineno, obj in json_objects(path, '{"docno": ..., "text": ...}'):
        docno = _unique(path, obj, "docno", lineno, seen, "document")
        yield docno, text_field(path, obj, "text", lineno, may_be_empty=True)


def read_tira_queries(path: PathLike) -> list[Query]:
    """The topics of a TIRA ``queries.jsonl`` (``qid``, ``query``), in file order."""
    seen: set[str] = set()
    return [Query(_unique(path, obj, "qid", lineno, seen, "query"), text_field(path, obj, "query", lineno))
            for lineno, obj in json_objects(path, '{"qid": ..., "query": ...}')]


def read_tira_queries_xml(path: PathLike) -> list[Query]:
    """The topics of a TIRA ``queries.xml`` (``<topic number="…"><query>…</query>``), in file order."""
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as exc:
        line, column = exc.position
        raise FormatError(path, f"not well-formed XML ({exc.msg if hasattr(exc, 'msg') else exc})", line=line,
                          column=column + 1) from None
    if root.tag != "topics":
        raise FormatError(path, f"the root element is <{root.tag}>, expected <topics>", line=1)
    out: list[Query] = []
    seen: set[str] = set()
    for topic in root:
        number, query = topic.get("number"), topic.findtext("query")
        if topic.tag != "topic" or not number or query is None:
            raise FormatError(path, f"expected <topic number=\"…\"><query>…</query></topic>, found <{topic.tag}>",
                              hint="TIRA's queries.xml: one <topic number> with a <query> per topic")
        if number in seen:
            raise FormatError(path, f"topic number {number!r} appears twice")
        seen.add(number)
        out.append(Query(number, query.strip()))
    return out
