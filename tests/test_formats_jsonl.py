"""The JSON Lines readers: statements corpus, queries (semantic search) and exam questions (EXAM).
Every malformed line gives a one-line FormatError naming file, line (and column for JSON)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sharedtask.errors import FormatError
from sharedtask.formats import read_queries, read_statements

FIX = Path(__file__).parent / "fixtures" / "formats" / "jsonl"


def test_statements_fixture_reads_every_field_and_skips_blank_lines() -> None:
    first, second = list(read_statements(FIX / "corpus.jsonl"))
    assert first.id == "Nat.add_comm" and first.formal.endswith("m + n") and first.name == "Commutativity"
    assert second.id == "abs_add" and second.name == "" and second.informal == "triangle inequality"


def test_an_empty_informal_text_is_a_statement_without_restatement(tmp_path: Path) -> None:
    """A corpus built from mathlib4's sources (sharedtask data build) has no informal text."""
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"id": "Nat.succ_le", "name": "Nat.succ_le", "formal": "theorem succ_le : 1 ≤ 2", '
                    '"informal": "", "module": "Mathlib.X"}\n', encoding="utf-8")
    (only,) = read_statements(path)
    assert only.informal == "" and only.formal == "theorem succ_le : 1 ≤ 2"


def test_queries_keep_file_order() -> None:
    assert [(q.number, q.query) for q in read_queries(FIX / "queries.jsonl")][:2] == [
        ("1", "commutativity of addition"), ("2", "triangle inequality")]


@pytest.mark.parametrize(("text", "where", "what"), [
    ('{"id": "a", "formal": "x", "informal": "y"}\n{"id": "a", "formal": "x", "informal": "y"}\n', ":2", "appears twice"),
    ('{"id": "a", "formal": "x"}\n', ":1", "'informal' must be a string, found missing"),
    ('{"id": 7, "formal": "x", "informal": "y"}\n', ":1", "'id' must be a non-empty string, found int 7"),
    ('{"id": "a", "formal": "x", "informal": "y"}\n{"id": "b", "formal": \n', ":2:", "not valid JSON"),
    ('["a", "b"]\n', ":1:1", "expected a JSON object, found list"),
    ('{"id": "a", "formal": "   ", "informal": "y"}\n', ":1", "'formal' must be a non-empty string"),
])
def test_malformed_statements_are_located(tmp_path: Path, text: str, where: str, what: str) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FormatError) as info:
        list(read_statements(path))
    message = str(info.value)
    assert f"corpus.jsonl{where}" in message and what in message and "\n" not in message


def test_invalid_utf8_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"
    path.write_bytes(b'{"id": "1", "query": "ok"}\n{"id": "2", "query": "\xff"}\n')
    with pytest.raises(FormatError, match="invalid UTF-8"):
        read_queries(path)


def test_repeated_query_id(tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"
    path.write_text('{"id": "1", "query": "a"}\n{"id": "1", "query": "b"}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"queries.jsonl:2: query id '1' appears twice"):
        read_queries(path)


def test_exam_questions_with_and_without_choices(tmp_path: Path) -> None:
    from sharedtask.formats import read_exam

    path = tmp_path / "exam.jsonl"
    path.write_text('{"topic": "A.1", "id": "q1", "question": "?", "answer": "2"}\n'
                    '{"topic": "A.1", "id": "q2", "question": "?", "answer": "b", "choices": ["a", "b"]}\n',
                    encoding="utf-8")
    free, choice = read_exam(path)
    assert free.choices == () and choice.choices == ("a", "b") and choice.answer == "b"


@pytest.mark.parametrize(("choices", "what"), [
    ('["a"]', "must be a list of 2 to 26 distinct non-empty strings"),
    ('["a", "a", "b"]', "must be a list of 2 to 26 distinct non-empty strings"),
    ('"a, b"', "must be a list of 2 to 26 distinct non-empty strings"),
    ('["a", ""]', "must be a list of 2 to 26 distinct non-empty strings"),
    ('["a", "c"]', "the answer key 'b' is not one of the choices"),
])
def test_bad_exam_choices_are_located(tmp_path: Path, choices: str, what: str) -> None:
    from sharedtask.formats import read_exam

    path = tmp_path / "exam.jsonl"
    path.write_text('{"topic": "A.1", "id": "q1", "question": "?", "answer": "2"}\n'
                    f'{{"topic": "A.1", "id": "q2", "question": "?", "answer": "b", "choices": {choices}}}\n',
                    encoding="utf-8")
    with pytest.raises(FormatError) as info:
        read_exam(path)
    assert "exam.jsonl:2" in str(info.value) and what in str(info.value)
