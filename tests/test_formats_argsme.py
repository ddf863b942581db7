"""args.me JSON: streaming reader over the five corpus files, truncated and malformed files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from sharedtask.errors import FormatError
from sharedtask.formats import ARGSME_FILES, Premise, argsme, read_argsme, read_argsme_dir

FIX = Path(__file__).parent / "fixtures" / "formats"
ARGS = FIX / "argsme"
BAD = FIX / "malformed"


def test_debateorg_nested_context() -> None:
    args = list(read_argsme(ARGS / "debateorg.json"))
    assert [a.id for a in args] == ["Sb38112c8-A443a9828", "S1c0e2ec2-A9d7b4a5e", "Sf3d7e1a0-A00000001"]
    first = args[0]
    assert first.conclusion == "Teachers should get tenure"
    assert first.premises == (Premise(
        'Tenure protects teachers from being fired for unpopular opinions. "Academic freedom" matters.', "PRO"),)
    assert first.source_id == "c67482ba-2019-04-18T13:32:05Z"
    assert first.source_title == "Online Debate: Teachers should get tenure | Debate.org"
    assert first.source_url == "https://www.debate.org/debates/Teachers-should-get-tenure/1/"
    assert first.discussion_title == "Teachers should get tenure"
    assert first.next_argument_id == "c67482ba-2019-04-18T13:32:05Z-00001-000"
    assert first.context["aspects"][0]["name"] == "academic freedom"
    assert first.context["mode"] == "person"
    second = args[1]
    assert [p.stance for p in second.premises] == ["CON", "CON"]
    assert second.premises[1].text == "Unicode: caf\u00e9 \u2013 na\u00efve \U0001F600"
    assert second.source_domain == "debate.org"
    assert args[2].premises == () and args[2].discussion_title == "Empty premises"  # context.topic


def test_reader_agrees_with_json_load() -> None:
    for name in ARGSME_FILES:
        expected = json.loads((ARGS / name).read_text(encoding="utf-8-sig"))["arguments"]
        got = list(read_argsme(ARGS / name))
        assert [a.id for a in got] == [e["id"] for e in expected]
        assert [a.context for a in got] == [e["context"] for e in expected]


def test_directory_in_fixed_order() -> None:
    ids = [a.id for a in read_argsme_dir(ARGS)]
    assert ids == ["Sb38112c8-A443a9828", "S1c0e2ec2-A9d7b4a5e", "Sf3d7e1a0-A00000001",
                   "S0000000a-A0000000a", "S0000000b-A0000000b", "S0000000c-A0000000c", "S0000000c-A0000000d"]


def test_directory_missing_file(tmp_path: Path) -> None:
    for name in ARGSME_FILES[:-1]:
        (tmp_path / name).write_bytes((ARGS / name).read_bytes())
    with pytest.raises(FormatError, match="parliamentary.json: args.me corpus file missing"):
        list(read_argsme_dir(tmp_path))
    (tmp_path / "parliamentary.json.gz").write_bytes(gzip.compress(b'{"arguments": [{"id": "x"}]}'))
    assert [a.id for a in read_argsme_dir(tmp_path)][-1] == "x"


def test_arguments_spanning_many_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a tiny window forces every argument across chunk borders, incl. inside escapes
    monkeypatch.setattr(argsme, "CHUNK_CHARS", 7)
    got = list(read_argsme(ARGS / "debateorg.json"))
    assert [a.id for a in got] == ["Sb38112c8-A443a9828", "S1c0e2ec2-A9d7b4a5e", "Sf3d7e1a0-A00000001"]
    expected = json.loads((ARGS / "debateorg.json").read_text())["arguments"]
    assert [a.context for a in got] == [e["context"] for e in expected]
    assert got[1].premises[1].text.endswith("\U0001F600")


def test_truncated_file_names_the_argument() -> None:
    with pytest.raises(FormatError) as err:
        list(read_argsme(BAD / "argsme-truncated.json"))
    e = err.value
    assert e.location.record == "argument #2"
    assert "truncated JSON" in e.detail and "starts on line 26" in e.detail
    assert e.location.line == 33  # where the file ends


@pytest.mark.parametrize(
    ("name", "line", "record", "words"),
    [
        ("argsme-bad-premises.json", 3, "argument #2", "premises must be a list"),
        ("argsme-missing-comma.json", 3, "argument #1", "expected ',' or ']' after argument #1"),
        ("argsme-syntax.json", 3, "argument #2", "malformed JSON: Expecting value"),
        ("argsme-no-arguments.json", None, None, 'no "arguments" array'),
        ("argsme-array.json", 1, None, "expected a JSON object"),
    ],
)
def test_malformed(name: str, line: int | None, record: str | None, words: str) -> None:
    with pytest.raises(FormatError) as err:
        list(read_argsme(BAD / name))
    assert err.value.location.line == line
    assert err.value.location.record == record
    assert words in str(err.value)


@pytest.mark.parametrize("name", ["argsme-bad-premises.json", "argsme-missing-comma.json", "argsme-syntax.json",
                                  "argsme-truncated.json"])
@pytest.mark.parametrize("gz", [False, True])
def test_error_lines_do_not_depend_on_the_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 name: str, gz: bool) -> None:
    # Lines of text the window has dropped are counted again only for the error message.
    path = BAD / name
    if gz:
        path = tmp_path / (name + ".gz")
        path.write_bytes(gzip.compress((BAD / name).read_bytes()))
    with pytest.raises(FormatError) as big:
        list(read_argsme(path))
    monkeypatch.setattr(argsme, "CHUNK_CHARS", 5)
    with pytest.raises(FormatError) as tiny:
        list(read_argsme(path))
    assert big.value.location.line is not None
    assert (tiny.value.location, tiny.value.detail) == (big.value.location, big.value.detail)


def test_gzip(tmp_path: Path) -> None:
    gz = tmp_path / "idebate.json.gz"
    gz.write_bytes(gzip.compress((ARGS / "idebate.json").read_bytes()))
    assert [a.id for a in read_argsme(gz)] == ["S0000000c-A0000000c", "S0000000c-A0000000d"]


# ------------------------------------------------------------------ reading one file in parts


def _tricky_corpus(n: int, indent: int | None) -> dict:
    """Arguments whose strings hold what a boundary looks like: `}, {"`, quotes, backslashes."""
    return {"arguments": [{
        "premises": [{"text": f'premise {i} ends with }}, {{"id": "fake", "conclusion": "x"}} \\', "stance": "PRO"},
                     {"text": f"second premise of {i} \u00e9\u2013\U0001F600", "stance": "CON"}],
        "context": {"sourceId": f"s{i}", "aspects": [{"name": "a", "weight": 1}]},
        "id": f"S{i:04d}-A{i:04d}",
        "conclusion": f"conclusion {i}: {{\"not\": \"an argument\"}}",
    } for i in range(n)]}


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("parts", [2, 3, 7])
def test_ranges_together_read_like_the_whole_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  indent: int | None, parts: int) -> None:
    monkeypatch.setattr(argsme, "MIN_SPLIT_BYTES", 0)
    path = tmp_path / "debateorg.json"
    doc = _tricky_corpus(50, indent)
    path.write_text(json.dumps(doc, indent=indent, ensure_ascii=False), encoding="utf-8")
    ranges = argsme.split_argsme(path, parts)
    assert len(ranges) == parts
    read = [a for r in ranges for a in argsme.read_argsme_range(r)]
    # independent expectation: the json module's reading of the same file
    assert [a.id for a in read] == [a["id"] for a in doc["arguments"]]
    assert [a.premises[0].text for a in read] == [a["premises"][0]["text"] for a in doc["arguments"]]
    assert all(len(list(argsme.read_argsme_range(r))) > 0 for r in ranges)


def test_small_and_gzipped_files_stay_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "debateorg.json"
    path.write_text(json.dumps(_tricky_corpus(5, None)), encoding="utf-8")
    assert argsme.split_argsme(path, 2) == [argsme.ArgsmeRange(path, 0, None)]  # under MIN_SPLIT_BYTES
    monkeypatch.setattr(argsme, "MIN_SPLIT_BYTES", 0)
    packed = tmp_path / "debateorg.json.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert argsme.split_argsme(packed, 2) == [argsme.ArgsmeRange(packed, 0, None)]


def test_error_in_a_later_range_names_the_files_own_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(argsme, "MIN_SPLIT_BYTES", 0)
    text = json.dumps(_tricky_corpus(20, None), indent=1, ensure_ascii=False)
    lines = text.split("\n")
    # break argument 17's premises (a string instead of a list of objects), far into the second half
    target = max(i for i, line in enumerate(lines) if '"id": "S0017-A0017"' in line)
    bad_at = next(i for i in range(target, 0, -1) if lines[i].strip() == '"premises": [')
    lines[bad_at] = '  "premises": 5,'
    # drop the now-orphaned premise list up to its closing bracket
    end = next(i for i in range(bad_at + 1, len(lines)) if lines[i].strip() == "],")
    del lines[bad_at + 1:end + 1]
    path = tmp_path / "debateorg.json"
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(FormatError) as whole:
        list(read_argsme(path))
    ranges = argsme.split_argsme(path, 2)
    assert len(ranges) == 2 and ranges[1].start < path.read_text().index("S0017-A0017")
    with pytest.raises(FormatError) as part:
        for r in ranges:
            list(argsme.read_argsme_range(r))
    assert whole.value.location.line is not None
    assert part.value.location.line == whole.value.location.line
    assert part.value.location.column == whole.value.location.column
    assert "S0017-A0017" in str(part.value) and "part from byte" in str(part.value)
