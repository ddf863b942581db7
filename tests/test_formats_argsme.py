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


def test_gzip(tmp_path: Path) -> None:
    gz = tmp_path / "idebate.json.gz"
    gz.write_bytes(gzip.compress((ARGS / "idebate.json").read_bytes()))
    assert [a.id for a in read_argsme(gz)] == ["S0000000c-A0000000c", "S0000000c-A0000000d"]
