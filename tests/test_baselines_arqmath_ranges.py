"""The ARQMath conversion in byte ranges (lxml, one process per range) writes the same JSONL as before.

``convert_posts_serial`` is the conversion as it was at the branch point (one expat pass,
answer bodies converted in a worker), kept callable; every test here converts the same
real Posts.xml files with both and compares the shards byte for byte, on files made to
put questions and their answers in different ranges, answers before their question,
duplicate question ids, rows that are neither question nor answer, entities and
attribute line breaks, and on files the range reader must refuse (where the serial
conversion takes over and reports the same error).
"""

from __future__ import annotations

import gzip
import random
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "baselines" / "lucene"))

from lucene_baseline import arqmath  # noqa: E402
from lucene_baseline.jsonl import ShardedJsonl  # noqa: E402

from sharedtask.errors import FormatError  # noqa: E402
from sharedtask.formats import arqmath as formats_arqmath  # noqa: E402
from sharedtask.formats.arqmath import posts_frame, read_post_rows, read_posts, split_posts  # noqa: E402

HEAD = '<?xml version="1.0" encoding="utf-8"?>\n<posts>\n'
SAMPLE = REPO / "tasks" / "samples" / "arqmath-task1" / "input" / "Posts.xml"
BODIES = [
    "&lt;p&gt;Use &lt;span class=&quot;math-container&quot; id=&quot;3&quot;&gt;$a^2 &amp;lt; \\frac{1}{2}$&lt;/span&gt;&lt;/p&gt;",
    "plain &amp;amp; text&#xA;with a line break\nand a literal one \u00e9\u2013",
    "&lt;b&gt;$x_1 + \\left( y \\right)$&lt;/b&gt; &amp;gt; &#38;lt;",
    "",
    "ends with a backslash &lt;span class=&quot;math-container&quot;&gt;$a\\$&lt;/span&gt;",
]


def _posts(n: int, seed: int) -> str:
    """Rows in Id order with answers far from their question, some before it, some to a repeated id."""
    rng = random.Random(seed)
    rows: list[str] = []
    questions: list[int] = []
    for i in range(1, n + 1):
        roll = rng.random()
        if roll < 0.3 or not questions:
            qid = rng.choice(questions) if questions and roll < 0.03 else i  # now and then a repeated id
            questions.append(qid)
            rows.append(f'  <row Id="{qid}" PostTypeId="1" Score="{rng.randint(-3, 9)}" AnswerCount="2" '
                        f'Title="Title {i} $\\sqrt{{{i}}}$ &amp;amp;" Body="{rng.choice(BODIES)}" Tags="&lt;t&gt;" />')
        elif roll < 0.33:
            rows.append(f'  <row Id="{i}" PostTypeId="5" Body="a tag wiki" />')
        else:
            parent = rng.choice(questions) if roll < 0.95 else n + 10 + i % 7  # a question that comes later
            rows.append(f'  <row Id="{i}" PostTypeId="2" ParentId="{parent}" Score="1" '
                        f'Body="answer {i} {rng.choice(BODIES)}" />')
    late = [f'  <row Id="{n + 10 + k}" PostTypeId="1" Score="0" Title="Late {k} $x^{k}$" Body="" />' for k in range(7)]
    return HEAD + "\n".join(rows + late) + "\n</posts>\n"


def _convert(fn, posts: Path, work: Path, workers: int) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    work.mkdir()
    with ShardedJsonl(work / "jsonl", 2) as out:
        count = fn(posts, out, work, workers=workers)
    shards = {p.name: p.read_bytes() for p in sorted((work / "jsonl").iterdir())}
    assert sorted(p.name for p in work.iterdir()) == ["jsonl"]  # no part or spill file left behind
    shards["count"] = str(count).encode()
    return shards


@pytest.fixture
def split_small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formats_arqmath, "MIN_SPLIT_BYTES", 0)


@pytest.mark.parametrize("workers", [0, 1, 2])
@pytest.mark.parametrize("seed", [1, 2])
def test_ranges_write_the_same_jsonl_as_one_pass(tmp_path: Path, split_small: None, workers: int, seed: int) -> None:
    posts = tmp_path / "Posts.xml"
    posts.write_text(_posts(400, seed), encoding="utf-8")
    assert len(split_posts(posts, workers + 1)) == max(1, workers + 1)
    new = _convert(arqmath.convert_posts, posts, tmp_path / "new", workers)
    old = _convert(arqmath.convert_posts_serial, posts, tmp_path / "old", workers)
    assert int(new["count"]) > 200
    assert new == old


def test_the_bundled_sample_converts_the_same(tmp_path: Path, split_small: None) -> None:
    new = _convert(arqmath.convert_posts, SAMPLE, tmp_path / "new", 2)
    old = _convert(arqmath.convert_posts_serial, SAMPLE, tmp_path / "old", 0)
    assert new == old and int(new["count"]) > 0


def test_an_answer_in_a_later_range_gets_its_title(tmp_path: Path, split_small: None) -> None:
    # hand-made expectation: question 1 in the first range, its answer in the last of three
    filler = "".join(f'  <row Id="{i}" PostTypeId="5" Body="{"w" * 200}" />\n' for i in range(2, 40))
    posts = tmp_path / "Posts.xml"
    posts.write_text(HEAD + '  <row Id="1" PostTypeId="1" Title="Why $a^2$?" Body="" />\n' + filler
                     + '  <row Id="50" PostTypeId="2" ParentId="1" Body="&lt;p&gt;Because &amp;amp;&lt;/p&gt;" />\n'
                     + '  <row Id="51" PostTypeId="2" ParentId="99" Body="orphan" />\n</posts>\n', encoding="utf-8")
    ranges = split_posts(posts, 3)
    data = posts.read_bytes()
    assert len(ranges) == 3 and ranges[0].end is not None
    assert data.index(b'Id="1"') < ranges[0].end and ranges[2].start < data.index(b'Id="50"')
    shards = _convert(arqmath.convert_posts, posts, tmp_path / "new", 2)
    assert shards["docs-00.jsonl"] == b'{"id": "50", "contents": "Why a sup 2 ? Because &"}\n'
    assert shards["docs-01.jsonl"] == b'{"id": "51", "contents": "orphan"}\n'


def test_range_rows_are_the_rows_of_read_posts(tmp_path: Path, split_small: None) -> None:
    posts = tmp_path / "Posts.xml"
    posts.write_text(_posts(300, 3).replace("\n", "\r\n"), encoding="utf-8")
    expected = [("1", p.id, p.title, "") if p.__class__.__name__ == "Question" else ("2", p.id, p.parent_id, p.body)
                for p in read_posts(posts)]
    frame = posts_frame(posts)
    for parts in (1, 2, 3, 7):
        ranges = split_posts(posts, parts)
        assert len(ranges) == parts
        assert [row for r in ranges for row in read_post_rows(r, frame)] == expected


@pytest.mark.parametrize(("case", "text"), [
    ("comment hiding a row boundary", HEAD + '  <row Id="1" PostTypeId="1" Title="T" Body="" />\n  <!-- x>\n'
     + "".join(f'  <row Id="{i}" PostTypeId="2" ParentId="1" Body="in a comment" />\n' for i in range(2, 30))
     + '  -->\n  <row Id="30" PostTypeId="2" ParentId="1" Body="real" />\n</posts>\n'),
    ("prefixed rows, not rows to expat", HEAD.replace("<posts>", '<posts xmlns:p="u">')
     + "".join(f'  <p:row Id="{i}" PostTypeId="2" ParentId="1" Body="skip" />\n' for i in range(2, 30))
     + '  <row Id="1" PostTypeId="1" Title="T" Body="" />\n  <row Id="30" PostTypeId="2" ParentId="1" Body="x" />\n</posts>\n'),
    ("rows in a default namespace", HEAD.replace("<posts>", '<posts xmlns="u">')
     + "".join(f'  <row Id="{i}" PostTypeId="2" ParentId="1" Body="a {i}" />\n' for i in range(2, 30))
     + '  <row Id="1" PostTypeId="1" Title="T" Body="" />\n</posts>\n'),
])
def test_files_the_range_reader_refuses_or_must_not_misread(tmp_path: Path, split_small: None, case: str,
                                                            text: str) -> None:
    posts = tmp_path / "Posts.xml"
    posts.write_text(text, encoding="utf-8")
    new = _convert(arqmath.convert_posts, posts, tmp_path / "new", 2)
    old = _convert(arqmath.convert_posts_serial, posts, tmp_path / "old", 0)
    assert new == old, case
    assert int(new["count"]) > 0


@pytest.mark.parametrize(("case", "row", "words"), [
    ("bad score", '<row Id="77" PostTypeId="2" ParentId="1" Score="many" Body="x" />',
     "Score must be an integer, found 'many'"),
    ("no parent", '<row Id="77" PostTypeId="2" Body="x" />', "answer 77 has no ParentId"),
    ("no PostTypeId", '<row Id="77" Body="x" />', "row without PostTypeId"),
    ("malformed XML", '<row Id="77" PostTypeId="2" ParentId="1" Body="a < b" />', "malformed XML"),
])
def test_errors_in_a_later_range_are_reported_as_before(tmp_path: Path, split_small: None, case: str, row: str,
                                                        words: str) -> None:
    lines = [f'  <row Id="{i}" PostTypeId="2" ParentId="1" Body="fine {i}" />' for i in range(2, 60)]
    lines[45] = "  " + row
    posts = tmp_path / "Posts.xml"
    posts.write_text(HEAD + '  <row Id="1" PostTypeId="1" Title="T" Body="" />\n' + "\n".join(lines) + "\n</posts>\n",
                     encoding="utf-8")
    assert len(split_posts(posts, 3)) == 3
    errors = []
    for fn in (arqmath.convert_posts, arqmath.convert_posts_serial):
        work = tmp_path / fn.__name__
        work.mkdir()
        with pytest.raises(FormatError) as err, ShardedJsonl(work / "jsonl", 2) as out:
            fn(posts, out, work, workers=2)
        assert [p.name for p in work.iterdir()] == ["jsonl"], case  # no part file left behind
        errors.append(str(err.value))
    assert errors[0] == errors[1]
    assert words in errors[0] and ":49:" in errors[0]  # declaration, <posts>, question, then lines[45]


def test_gzipped_and_other_encodings_stay_in_one_range(tmp_path: Path, split_small: None) -> None:
    text = _posts(100, 4)
    packed = tmp_path / "Posts.xml.gz"
    packed.write_bytes(gzip.compress(text.encode("utf-8")))
    assert len(split_posts(packed, 3)) == 1
    latin = tmp_path / "Posts-latin1.xml"
    latin.write_bytes(text.replace("utf-8", "ISO-8859-1").encode("latin-1", errors="replace"))
    assert posts_frame(latin) is None and len(split_posts(latin, 3)) == 1
    new = _convert(arqmath.convert_posts, packed, tmp_path / "new", 1)
    old = _convert(arqmath.convert_posts_serial, packed, tmp_path / "old", 1)
    assert new == old


def test_without_lxml_the_one_pass_conversion_takes_over(tmp_path: Path, split_small: None,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in, not a real part: an image built before lxml joined the base image cannot be
    # made here, so the import is made to fail (None in sys.modules), inherited by the workers.
    posts = tmp_path / "Posts.xml"
    posts.write_text(_posts(200, 5), encoding="utf-8")
    old = _convert(arqmath.convert_posts_serial, posts, tmp_path / "old", 1)
    monkeypatch.setitem(sys.modules, "lxml", None)
    with pytest.raises(ImportError):
        list(read_post_rows(split_posts(posts, 1)[0], posts_frame(posts)))
    assert _convert(arqmath.convert_posts, posts, tmp_path / "new", 1) == old
