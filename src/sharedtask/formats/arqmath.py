"""ARQMath collection files: Posts XML, topics XML, Task 3 answer texts (+ re-exports).

Posts: ``<posts><row Id=.. PostTypeId=.. ParentId=.. Score=.. Body=.. Title=.. Tags=../>``,
PostTypeId 1 = question, 2 = answer; Body is HTML with formula spans
(docs/formats.md). The files are several GB, so they are parsed with
expat (the parser under ElementTree) fed in 1 MiB chunks and with element handlers
only: no element tree is ever built, memory stays flat and the current line is known
for error messages.
"""

from __future__ import annotations

import csv
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import IO, NamedTuple
from xml.parsers import expat

from sharedtask.errors import FormatError
from sharedtask.formats._io import BUFFER, DECODE_ERRORS, PathLike, decode_error, is_gzip, open_binary, open_text
from sharedtask.formats._ranges import ByteRange, find_boundary, open_range, split_ranges
from sharedtask.formats.formulas import (  # noqa: F401 - re-exported: part of the ARQMath API
    FormulaRecord,
    load_visual_ids,
    read_formula_index,
)
from sharedtask.formats.html import formula_spans, html_to_text, strip_dollars  # noqa: F401


class Question(NamedTuple):
    """A question post (PostTypeId 1). Ids are strings, as in runs and qrels."""

    id: str
    title: str
    body: str
    tags: tuple[str, ...]
    score: int
    accepted_answer_id: str | None
    answer_count: int | None
    creation_date: str | None
    owner_user_id: str | None
    line: int


class Answer(NamedTuple):
    """An answer post (PostTypeId 2); ``parent_id`` is its question."""

    id: str
    parent_id: str
    body: str
    score: int
    creation_date: str | None
    owner_user_id: str | None
    line: int


_ANGLE_TAGS = re.compile(r"<([^<>]+)>")


def split_tags(value: str | None) -> tuple[str, ...]:
    """Stack Exchange tags: ``<a><b>`` (dumps), ``|a|b|`` (newer dumps) or ``a,b`` (topics)."""
    if not value:
        return ()
    value = value.strip()
    if value.startswith("<"):
        return tuple(_ANGLE_TAGS.findall(value))
    sep = "|" if "|" in value else ","
    return tuple(t.strip() for t in value.split(sep) if t.strip())


def read_posts(path: PathLike) -> Iterator[Question | Answer]:
    """Stream the questions and answers of an ARQMath Posts XML file.

    Rows with other PostTypeIds (wiki, tag excerpts, ...) are skipped. Raises
    FormatError naming line and column for malformed XML, a missing Id/ParentId or a
    non-integer Score.
    """
    out: list[Question | Answer] = []
    parser = expat.ParserCreate()
    parser.buffer_text = True

    def fail(message: str, hint: str | None = None) -> FormatError:
        return FormatError(path, message, line=parser.CurrentLineNumber,
                           column=parser.CurrentColumnNumber + 1, hint=hint)

    def integer(attrs: dict[str, str], name: str, default: int | None) -> int | None:
        value = attrs.get(name)
        if value is None or value == "":
            return default
        try:
            return int(value)
        except ValueError:
            raise fail(f"row attribute {name} must be an integer, found {value!r}") from None

    def start(name: str, attrs: dict[str, str]) -> None:
        if name != "row":
            return
        kind = attrs.get("PostTypeId")
        if kind != "1" and kind != "2":
            if kind is None:
                raise fail("row without PostTypeId", hint="1 = question, 2 = answer")
            return
        ident = attrs.get("Id")
        if not ident:
            raise fail("row without Id attribute")
        line = parser.CurrentLineNumber
        if kind == "2":
            parent = attrs.get("ParentId")
            if not parent:
                raise fail(f"answer {ident} has no ParentId", hint="answers (PostTypeId 2) name their question")
            out.append(Answer(ident, parent, attrs.get("Body", ""), integer(attrs, "Score", 0),  # type: ignore[arg-type]
                              attrs.get("CreationDate"), attrs.get("OwnerUserId"), line))
        else:
            out.append(Question(ident, attrs.get("Title", ""), attrs.get("Body", ""),
                                split_tags(attrs.get("Tags")), integer(attrs, "Score", 0),  # type: ignore[arg-type]
                                attrs.get("AcceptedAnswerId") or None, integer(attrs, "AnswerCount", None),
                                attrs.get("CreationDate"), attrs.get("OwnerUserId"), line))

    parser.StartElementHandler = start
    with open_binary(path) as f:
        try:
            while True:
                chunk = f.read(BUFFER)
                parser.Parse(chunk, not chunk)
                if out:
                    yield from out
                    out.clear()
                if not chunk:
                    break
        except expat.ExpatError as exc:
            raise FormatError(path, f"malformed XML: {expat.ErrorString(exc.code)}", line=exc.lineno,
                              column=exc.offset + 1,
                              hint="the file may be truncated or not an ARQMath Posts file") from None
        except LookupError as exc:
            raise _encoding_error(path, exc) from None
        except DECODE_ERRORS as exc:
            raise decode_error(path, exc) from None


def _encoding_error(path: PathLike, exc: LookupError) -> FormatError:
    return FormatError(path, f"the XML declaration names an unsupported encoding ({exc})", line=1,
                       hint='official files start with <?xml version="1.0" encoding="utf-8"?>')


# ---------------------------------------------------------------- reading Posts in parts
#
# Converting the 3.25 GB Posts.xml for an index is bound by the XML parse and the text
# conversion, both CPU: one process per CPU, each on a byte range of whole ``<row/>``
# elements, parsed by libxml2 (lxml), which reads the file in about 60 % of expat's
# CPU time (benchmarks/conversion.py). A range starts at ``<row`` right after the ``>``
# of the previous element: ``<`` is never literal in an attribute value or text (XML
# 1.0, section 2.4), so such a boundary is inside a comment, CDATA section or
# processing instruction or else a real element start; in the first case the range
# before it ends inside that construct, its parse fails and callers fall back to
# :func:`read_posts` on the whole file, which gives the exact error or the same rows.

#: Files smaller than this are read in one part: splitting them saves less than it costs.
MIN_SPLIT_BYTES = 16 << 20
#: How far past the wanted offset a row boundary is looked for before giving up.
SPLIT_SEARCH_BYTES = 16 << 20
_ROW_BOUNDARY = re.compile(rb">[ \t\r\n]*(<row[ \t\r\n/>])")
# The head of a file that can be cut: an optional BOM and XML declaration, then the root's
# start tag (no DOCTYPE, comment or PI before it: those could declare entities or hide markup).
_HEAD = re.compile(rb"\A(?:\xef\xbb\xbf)?(<\?xml[ \t\r\n][^<>?]*\?>)?[ \t\r\n]*"
                   rb"<([A-Za-z_][A-Za-z0-9._-]*)(?:[ \t\r\n][^<>]*)?(?<!/)>")
_ENCODING = re.compile(rb"""encoding[ \t\r\n]*=[ \t\r\n]*["']([A-Za-z0-9._-]+)["']""")


class PostsFrame(NamedTuple):
    """What turns a range of rows back into a whole Posts file: the head up to the root's
    start tag before it (for every range but the first) and the root's end tag after it."""

    head: bytes
    tail: bytes


def posts_frame(path: PathLike) -> PostsFrame | None:
    """The frame of an uncompressed UTF-8 Posts file, or None when it cannot be cut safely."""
    if is_gzip(path):
        return None
    with open_binary(path) as f:
        start = f.read(1 << 16)
    m = _HEAD.match(start)
    if m is None:
        return None
    if m.group(1):
        enc = _ENCODING.search(m.group(1))
        if enc is not None and enc.group(1).lower() not in (b"utf-8", b"utf8"):
            return None
    return PostsFrame(m.group(0), b"</" + m.group(2) + b">")


def split_posts(path: PathLike, parts: int) -> list[ByteRange]:
    """Cut a Posts file into up to ``parts`` ranges of whole rows (one when it cannot be cut)."""
    if parts > 1 and posts_frame(path) is None:
        return [ByteRange(Path(path), 0, None)]
    return split_ranges(path, parts, row_boundary_after, MIN_SPLIT_BYTES)


def row_boundary_after(f: IO[bytes], offset: int, size: int) -> tuple[int, int] | None:
    """``(end of the previous element, start of the next row)`` at or after ``offset``."""
    return find_boundary(f, offset, size, _ROW_BOUNDARY, SPLIT_SEARCH_BYTES)


#: One post as :func:`read_post_rows` yields it: ``("1", id, title, "")`` for a question,
#: ``("2", id, parent id, body)`` for an answer. Plain tuples: no object per row.
PostRow = tuple[str, str, str, str]


def read_post_rows(part: ByteRange, frame: PostsFrame | None) -> Iterator[PostRow]:
    """The questions and answers of one range of :func:`split_posts`, in file order.

    Accepts what :func:`read_posts` accepts, rejects what it rejects (same checks of
    PostTypeId, Id, ParentId, Score, AnswerCount), but its FormatError says only
    where the range failed: for the exact message and line, read the file with
    :func:`read_posts`. Rows nested in rows (never in Stack Exchange dumps) are
    refused too, since their order would differ.
    """
    from lxml import etree  # only here: the import costs start-up time elsewhere

    def refuse(what: str) -> FormatError:
        return FormatError(part.path, f"{what} in the part from byte {part.start:,}",
                           hint="read the file with read_posts for the exact error")

    whole = part.start == 0 and part.end is None
    if whole:
        stream: IO[bytes] = open_binary(part.path)
    else:
        if frame is None:
            raise refuse("a part of a file without a frame")
        stream = open_range(part, frame.head if part.start else b"", frame.tail if part.end is not None else b"")
    with stream:
        try:
            for _, el in etree.iterparse(stream, events=("end",), tag="{*}row", huge_tree=True):
                if len(el):
                    raise refuse("a row with child elements")
                if el.prefix is None:  # expat without namespaces reports <p:row> as "p:row"
                    get = el.get
                    kind = get("PostTypeId")
                    if kind == "2" or kind == "1":
                        ident = get("Id")
                        if not ident:
                            raise refuse("a row without Id")
                        score = get("Score")
                        if score:
                            int(score)
                        if kind == "2":
                            parent = get("ParentId")
                            if not parent:
                                raise refuse("an answer without ParentId")
                            yield "2", ident, parent, get("Body", "")
                        else:
                            count = get("AnswerCount")
                            if count:
                                int(count)
                            yield "1", ident, get("Title", ""), ""
                    elif kind is None:
                        raise refuse("a row without PostTypeId")
                el.clear()
                while el.getprevious() is not None:
                    del el.getparent()[0]
        except DECODE_ERRORS as exc:
            raise decode_error(part.path, exc) from None
        except (ValueError, etree.LxmlError) as exc:  # int() of Score or AnswerCount, or lxml's parse
            raise refuse(f"malformed row or XML ({exc})") from None


# ---------------------------------------------------------------- topics


class ArqmathTopic(NamedTuple):
    """An ARQMath topic: ``A.x`` (Tasks 1 and 3) or ``B.x`` (Task 2, with the query formula).

    ``title`` and ``question`` are HTML (the XML escaping removed) with formula spans
    ``id="q_N"``; use :func:`html_to_text` / :func:`formula_spans` on them.
    """

    number: str
    title: str
    question: str
    tags: tuple[str, ...]
    formula_id: str | None
    latex: str | None


def _parse_small_xml(path: PathLike) -> ET.Element:
    """Parse a small XML file (topics) whole, mapping every failure to FormatError."""
    with open_binary(path) as f:
        try:
            return ET.parse(f).getroot()
        except ET.ParseError as exc:
            line, col = exc.position
            raise FormatError(path, f"malformed XML: {expat.ErrorString(exc.code)}", line=line,
                              column=col + 1) from None
        except LookupError as exc:
            raise _encoding_error(path, exc) from None
        except DECODE_ERRORS as exc:
            raise decode_error(path, exc) from None


def _inner(elem: ET.Element | None) -> str | None:
    """Text content of an element; child elements (HTML that was not escaped) are kept as markup."""
    if elem is None:
        return None
    parts = [elem.text or ""]
    for child in elem:
        parts.append(ET.tostring(child, encoding="unicode"))
    return "".join(parts).strip()


def _child(topic: ET.Element, *names: str) -> ET.Element | None:
    for name in names:
        found = topic.find(name)
        if found is not None:
            return found
    return None


def read_arqmath_topics(path: PathLike) -> list[ArqmathTopic]:
    """Read an ARQMath topics file ``<Topics><Topic number="A.301">…</Topic></Topics>``."""
    root = _parse_small_xml(path)
    topics = root.findall("Topic") if root.tag != "Topic" else [root]
    if root.tag not in ("Topics", "Topic"):
        raise FormatError(path, f"root element is <{root.tag}>, expected <Topics>", line=1,
                          hint="is this a Touché topics file?" if root.tag == "topics" else None)
    out: list[ArqmathTopic] = []
    for i, elem in enumerate(topics, 1):
        number = (elem.get("number") or "").strip()
        if not number:
            raise FormatError(path, "<Topic> without a number attribute", record=f"topic #{i}",
                              hint='write <Topic number="A.301">')
        title = _inner(_child(elem, "Title"))
        if title is None:
            raise FormatError(path, f"topic {number} has no <Title>", record=f"topic #{i}")
        question = _inner(_child(elem, "Question")) or ""
        tags = split_tags(_inner(_child(elem, "Tags")))
        formula_id = _inner(_child(elem, "Formula_Id", "FormulaId"))
        latex = _inner(_child(elem, "Latex", "LaTeX"))
        if number.startswith("B.") and not formula_id:
            raise FormatError(path, f"Task 2 topic {number} has no <Formula_Id>", record=f"topic #{i}",
                              hint="B.x topics name their query formula, e.g. <Formula_Id>q_6</Formula_Id>")
        out.append(ArqmathTopic(number, title, question, tags, formula_id or None,
                                strip_dollars(latex) if latex else None))
    return out


# ---------------------------------------------------------------- Task 3 answer texts


class AnswerText(NamedTuple):
    """A known Task 3 answer text (truth ``answers.tsv``: ``answer_id topic text``)."""

    answer_id: str
    topic: str
    text: str
    line: int


def read_answers_tsv(path: PathLike) -> Iterator[AnswerText]:
    """Stream ``answers.tsv`` (header line, tab separated, csv QUOTE_MINIMAL)."""
    from sharedtask.formats.formulas import _raise_field_limit

    _raise_field_limit()
    with open_text(path) as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        try:
            first = True
            for row in reader:
                if not row:
                    continue
                if first:
                    first = False
                    if row[0].strip().lower() in ("answer_id", "id"):
                        continue
                if len(row) != 3:
                    raise FormatError(path, f"expected 3 tab-separated fields `answer_id topic text`, "
                                      f"found {len(row)}", line=reader.line_num,
                                      hint="quote texts that contain tabs or line breaks")
                yield AnswerText(row[0], row[1], row[2], reader.line_num)
        except csv.Error as exc:
            raise FormatError(path, f"malformed TSV: {exc}", line=reader.line_num) from None
        except DECODE_ERRORS as exc:
            raise decode_error(path, exc, line=reader.line_num + 1) from None


__all__ = [
    "Answer", "AnswerText", "ArqmathTopic", "FormulaRecord", "PostRow", "PostsFrame", "Question", "formula_spans",
    "html_to_text", "load_visual_ids", "posts_frame", "read_answers_tsv", "read_arqmath_topics",
    "read_formula_index", "read_post_rows", "read_posts", "split_posts", "split_tags", "strip_dollars",
]
