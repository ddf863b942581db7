"""The C row converter (lucene_baseline/postsconv.c) gives what lxml and html_to_index_text give.

Differential: generated Posts files (valid and not: entities of both layers, formula
spans, tags, blanks of every kind, Unicode whitespace, invalid UTF-8 and characters,
quotes, comments, namespaced, duplicate and malformed attributes, bad Score values) are
read by :func:`postsconv.rows` and by ``read_post_rows`` + ``html_to_index_text``; the rows
must be the same, or both must refuse the file. Small read blocks and output buffers put
rows across block boundaries and through the buffer-full path.
"""

from __future__ import annotations

import sys
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "baselines" / "lucene"))

from lucene_baseline import arqmath, postsconv  # noqa: E402
from lucene_baseline.jsonl import ShardedJsonl  # noqa: E402

from sharedtask.errors import FormatError  # noqa: E402
from sharedtask.formats import arqmath as formats_arqmath  # noqa: E402
from sharedtask.formats._ranges import ByteRange  # noqa: E402
from sharedtask.formats.arqmath import posts_frame, read_arqmath_topics  # noqa: E402

HEAD = b'<?xml version="1.0" encoding="utf-8"?>\n<posts>\n'
SAMPLE = REPO / "tasks" / "samples" / "arqmath-task1" / "input" / "Posts.xml"

SPAN = "&lt;span class=&quot;math-container&quot; id=&quot;7&quot;&gt;"
# Pieces of an attribute value, as bytes in the file (so invalid ones can be written too).
PIECES: list[bytes] = [p.encode() if isinstance(p, str) else p for p in [
    "word", " ", "x", "42", "&lt;p&gt;", "&lt;/p&gt;", "&lt;b&gt;", "&lt;", "&gt;", "&lt;&gt;", "&amp;",
    "&quot;", "&apos;", "&#xA;", "&#10;", "&#xD;", "&#x9;", "&#65;", "&#x20AC;", "&#x1F600;", "&#0065;",
    SPAN, "&lt;/span&gt;", "&lt;span class=&quot;math-container&quot;&gt;", "&lt;/span",
    "\\frac", "\\left", "\\right", "\\", "\\\\", "\\,", "\\é", "\\&#xA;", "^", "_", "=", "+", "-", "*", "/",
    "!", "|", "'", "{", "}", "[", "]", "(", ")", ";", ",", "~", ":", "$", "$$", "\t", "\n", "\r\n", "\r",
    "&amp;amp;", "&amp;lt;", "&amp;gt;", "&amp;quot;", "&amp;nbsp;", "&amp;#36;", "&amp;#32;", "&amp;#39;",
    "&amp;#x41;", "&amp;#1234;", "&amp;#9;", "&amp;lt", "&amp;ampx", "&amp;foo;", "&amp;", "&amp; ",
    "&amp;&amp;", "&amp;;", "&amp;#", "&amp;#;", "&amp;AMP;", "&amp;copy;",
    "é", "\u00a0", "\u2003", "\u3000", "\u0085", "\u2028", "\u1680", "\u202f", "\x7f", "\U0001f600", "\ufdd0",
    b">", b"]]>",
]]
# Not well-formed in an attribute value (XML 1.0): rare, so that most files are valid.
INVALID: list[bytes] = [b"\x1c", b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xef\xbf\xbe", b"\x01", b"<", b"&",
                        b"&#x0;", b"&#xD800;", b"&#X41;", b"&#;", b"&#x110000;", b"&foo;", b"&lt"]
NO_KIND = b"(none)"


def _choice(common: list[bytes], odd: list[bytes], broken: list[bytes]) -> tuple[st.SearchStrategy[bytes], ...]:
    """(for a well-formed file, for a broken one): common values most of the time."""
    return (st.sampled_from(common * 6 + odd), st.sampled_from(common * 6 + odd + broken))


PIECE = _choice(PIECES, [], INVALID)
ID = _choice([b"1", b"2", b"3", b"17"], [b" 5", b"&#49;"], [b""])
SCORE = _choice([b"0", b"7", b"-3", b"12"], [b"+5", b"", b" 5", b"1_0", b"&#49;"], [b"x", b"--1"])
KIND = _choice([b"1", b"2", b"2", b"2"], [b"5", b"&#50;", b"1 "], [NO_KIND])  # no PostTypeId: an error
EXTRA = _choice([b""], [b' Tags="&lt;t&gt;"', b" CreationDate='2010'", b' xmlns="urn:x"', b' Odd.Name-1="v"',
                        b' Tags="&#x1F600;&apos;"', b' x="&#9;&#xD;"'],
                [b' Id="9"', b' p:x="1"', b' A="1"B="2"', b" Broken", b' Tags="a<b"', b' Tags="\x01"'])
BETWEEN = _choice([b"\n  "], [b"\n", b" ", b"\r\n", b"", b"\n<!-- c -->\n", b"\n<?pi x?>\n"], [b"\ntext\n"])
CLOSE = _choice([b" />"], [b"/>", b"\n/>", b"></row>"], [b">", b" / >"])


@st.composite
def rows(draw: st.DrawFn, broken: int) -> bytes:
    kind = draw(KIND[broken])
    value = st.lists(PIECE[broken], max_size=12).map(b"".join)
    attrs = [b'Id="' + draw(ID[broken]) + b'"']
    if kind != NO_KIND:
        attrs.append(b'PostTypeId="' + kind + b'"')
    attrs.append(b'ParentId="' + draw(ID[broken]) + b'"')
    attrs.append(b'Score="' + draw(SCORE[broken]) + b'"')
    if draw(st.booleans()):
        attrs.append(b'AnswerCount="' + draw(SCORE[broken]) + b'"')
    attrs.append(b'Title="' + draw(value) + b'"')
    attrs.append(b'Body="' + draw(value) + b'"')
    order = draw(st.permutations(attrs))
    return b"<row " + b" ".join(order) + draw(EXTRA[broken]) + draw(CLOSE[broken])


@st.composite
def files(draw: st.DrawFn) -> bytes:
    broken = int(draw(st.integers(0, 3)) == 0)  # one file in four may hold what XML forbids
    body = b""
    for row in draw(st.lists(rows(broken), min_size=1, max_size=6)):
        body += draw(BETWEEN[broken]) + row
    return HEAD + body + b"\n</posts>\n"


Part = tuple[dict[str, str], bytes] | type[FormatError]


def _python_part(path: Path, target: Path) -> Part:
    """The part file and titles of the whole file, by lxml and html_to_index_text (no frame: no C)."""
    try:
        titles = arqmath.convert_range((ByteRange(path, 0, None), None, target))
    except FormatError:
        return FormatError
    return titles, target.read_bytes()


def _c_part(path: Path, target: Path, counts: postsconv.Counts | None = None) -> Part:
    frame = posts_frame(path)
    assert frame is not None
    try:
        titles = postsconv.convert_range(ByteRange(path, 0, None), frame, target, counts)
    except FormatError:
        return FormatError
    return titles, target.read_bytes()


def test_the_library_is_built_here() -> None:
    # CI has a C compiler: the fast path must really run there, not fall back in silence.
    assert postsconv.library() is not None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(data=files(), block=st.sampled_from([16, 64, 4096, postsconv.BLOCK]), slack=st.sampled_from([0, 1 << 20]))
def test_rows_equal_lxml_and_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, block: int,
                                    slack: int) -> None:
    monkeypatch.setattr(postsconv, "BLOCK", block)
    monkeypatch.setattr(postsconv, "OUT_SLACK", slack)
    path = tmp_path / "Posts.xml"
    path.write_bytes(data)
    assert _c_part(path, tmp_path / "c.part") == _python_part(path, tmp_path / "python.part")


def _collection(n: int) -> bytes:
    rows = []
    for i in range(1, n + 1):
        if i % 4 == 1:
            rows.append(f'<row Id="{i}" PostTypeId="1" Score="1" AnswerCount="3" Title="Q {i} {SPAN}$x^{i}$&lt;/span&gt;" '
                        f'Body="&lt;p&gt;question&lt;/p&gt;" />')
        else:
            body = f"&lt;p&gt;answer {i} {SPAN}$\\frac{{a}}{{{i}}} &amp;lt; b$&lt;/span&gt;&lt;/p&gt;&#xA;"
            if i % 50 == 0:
                body += "&amp;copy; left to Python"
            rows.append(f'<row Id="{i}" PostTypeId="2" ParentId="{i - (i - 1) % 4}" Score="2" Body="{body}" />')
        if i % 97 == 0:
            rows.append("<!-- a comment: lxml reads this stretch -->")
        if i % 131 == 0:
            rows.append(f"<row Id='{i}x' PostTypeId='5' Body='single quotes' />")
    return HEAD + "\n  ".join(rows).encode() + b"\n</posts>\n"


def test_every_path_is_taken_on_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "Posts.xml"
    path.write_bytes(_collection(1000))
    monkeypatch.setattr(postsconv, "BLOCK", 1000)
    counts = postsconv.Counts()
    assert _c_part(path, tmp_path / "c.part", counts) == _python_part(path, tmp_path / "python.part")
    assert counts.c_rows > 900  # the common case is read in C
    assert counts.python_rows >= 20  # &copy; is left to html_to_index_text
    assert counts.lxml_windows >= 10 + 7  # comments and single quotes (and the end tag)


@pytest.mark.parametrize("workers", [0, 1, 3])
def test_conversion_with_and_without_c_writes_the_same_shards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               workers: int) -> None:
    monkeypatch.setattr(formats_arqmath, "MIN_SPLIT_BYTES", 0)
    posts = tmp_path / "Posts.xml"
    posts.write_bytes(_collection(3000))
    shards = {}
    for label, env in (("c", "1"), ("python", "0")):
        monkeypatch.setenv(postsconv.ENV, env)
        postsconv.library.cache_clear()
        work = tmp_path / label
        work.mkdir()
        with ShardedJsonl(work / "jsonl", 2) as out:
            count = arqmath.convert_posts(posts, out, work, workers=workers)
        shards[label] = (count, {p.name: p.read_bytes() for p in sorted((work / "jsonl").iterdir())})
    postsconv.library.cache_clear()
    assert shards["c"] == shards["python"]
    assert shards["c"][0] == 2250


def test_the_bundled_sample(tmp_path: Path) -> None:
    counts = postsconv.Counts()
    assert _c_part(SAMPLE, tmp_path / "c.part", counts) == _python_part(SAMPLE, tmp_path / "python.part")
    assert counts.c_rows > 0


def test_a_stale_or_missing_compiler_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A build failure is logged and the Python path is used (callers check library()).
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    monkeypatch.setattr(postsconv, "SOURCE", tmp_path / "postsconv.c")
    (tmp_path / "postsconv.c").write_text("int st_convert_rows(void) { return 0; }\n")
    postsconv.library.cache_clear()
    try:
        assert postsconv.library() is None
    finally:
        postsconv.library.cache_clear()


def test_a_range_refused_after_others_were_merged_starts_over_cleanly(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # Ranges are merged as they finish; when a later one fails to parse (a comment hiding
    # a row boundary), what the earlier ones wrote is discarded before the one-pass
    # conversion writes the whole file again: no document twice.
    monkeypatch.setattr(formats_arqmath, "MIN_SPLIT_BYTES", 0)
    good = "".join(f'  <row Id="{i}" PostTypeId="2" ParentId="1" Body="answer {i}" />\n' for i in range(2, 400))
    hidden = "".join(f'  <row Id="{i}" PostTypeId="2" ParentId="1" Body="in a comment" />\n' for i in range(400, 420))
    text = (HEAD.decode() + '  <row Id="1" PostTypeId="1" Title="T" Body="" />\n' + good + "  <!-- x>\n" + hidden
            + '  -->\n  <row Id="420" PostTypeId="2" ParentId="1" Body="real" />\n</posts>\n')
    posts = tmp_path / "Posts.xml"
    posts.write_text(text, encoding="utf-8")
    ranges = formats_arqmath.split_posts(posts, 2 * arqmath.RANGES_PER_PROCESS)
    assert len(ranges) == 8 and text.index("<!--") > ranges[2].start  # the comment is in a later range
    shards = {}
    for fn in (arqmath.convert_posts, arqmath.convert_posts_serial):
        work = tmp_path / fn.__name__
        work.mkdir()
        with ShardedJsonl(work / "jsonl", 2) as out:
            count = fn(posts, out, work, workers=1)
        shards[fn.__name__] = (count, {p.name: p.read_bytes() for p in sorted((work / "jsonl").iterdir())})
    assert shards["convert_posts"] == shards["convert_posts_serial"]
    assert shards["convert_posts"][0] == 399  # rows 400-419 are inside the comment


def _attribute(value: str) -> str:
    """An attribute value as the Stack Exchange dumps write it (double quotes, line breaks as references)."""
    return '"' + xml_escape(value, {'"': "&quot;", "\n": "&#xA;", "\r": "&#xD;", "\t": "&#x9;"}) + '"'


def test_real_math_stack_exchange_html_is_read_in_c(tmp_path: Path) -> None:
    # The official ARQMath Task 1 topics (shipped with sharedtask) are real Math Stack
    # Exchange questions: their HTML, written as rows the way the dumps write them, is the
    # closest to the real Posts.xml there is here. Same bytes as Python, and nearly every
    # row in C (measured: 590 of 596; the others have an entity or a bare $ for Python).
    rows = []
    for path in sorted((REPO / "src" / "sharedtask" / "data" / "arqmath").glob("topics.*task1*.xml")):
        for topic in read_arqmath_topics(path):
            qid, aid = 2 * len(rows) + 1, 2 * len(rows) + 2
            rows.append(f'<row Id="{qid}" PostTypeId="1" Score="3" Title={_attribute(topic.title)} '
                        f'Body={_attribute(topic.question)} />\n  <row Id="{aid}" PostTypeId="2" ParentId="{qid}" '
                        f'Score="1" Body={_attribute(topic.question)} />')
    assert len(rows) == 298
    path = tmp_path / "Posts.xml"
    path.write_text(HEAD.decode() + "  " + "\n  ".join(rows) + "\n</posts>\n", encoding="utf-8")
    counts = postsconv.Counts()
    assert _c_part(path, tmp_path / "c.part", counts) == _python_part(path, tmp_path / "python.part")
    assert counts.c_rows >= 0.95 * 2 * len(rows)
    assert counts.lxml_windows == 1  # only the end tag
