"""The READERS registry used by `sharedtask check-input`, and robustness: any bytes give
records or a FormatError, never another exception."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharedtask.errors import FormatError
from sharedtask.formats import READERS, count_records, count_topics, reader_for

FIX = Path(__file__).parent / "fixtures" / "formats"

# (format, fixture, records, topics) — counts by reading the fixture files by eye
CASES = [
    ("trec-run", "trec/touche-run.txt", 4, 2),
    ("trec-qrels", "trec/qrels-crlf.tsv", 3, 2),
    ("arqmath-posts-xml", "arqmath/Posts.xml", 4, None),
    ("arqmath-formula-tsv", "arqmath/formulas", 5, None),
    ("arqmath-topics-xml", "arqmath/topics-task2.xml", 2, 2),
    ("argsme-json", "argsme/debateorg.json", 3, None),
    ("touche-topics-xml", "touche/topics-2021.xml", 3, 3),
    ("arqmath-task1-run", "trec/arqmath-task1-6col.tsv", 2, 1),
    ("arqmath-task2-run", "trec/arqmath-task2.tsv", 3, 2),
    ("arqmath-task3-run", "trec/arqmath-task3.tsv", 2, 2),
    ("arqmath-answers-tsv", "arqmath/answers.tsv", 3, 2),
    ("statements-jsonl", "jsonl/corpus.jsonl", 2, None),
    ("queries-jsonl", "jsonl/queries.jsonl", 3, 3),
    ("mathqa-problems-jsonl", "mathqa/problems.jsonl", 2, 2),
    ("mathqa-json", "mathqa/gold.json", 2, None),
    ("mathqa-broken-txt", "mathqa/broken.txt", 1, None),
    ("exam-jsonl", "jsonl/exam.jsonl", 3, None),
    ("tira-documents-jsonl", "tira/documents.jsonl", 3, None),
    ("tira-queries-jsonl", "tira/queries.jsonl", 2, 2),
    ("tira-queries-xml", "tira/queries.xml", 2, 2),
]


def test_registry_covers_every_spec_format() -> None:
    assert set(READERS) == {c[0] for c in CASES}


@pytest.mark.parametrize(("fmt", "rel", "records", "topics"), CASES)
def test_counts(fmt: str, rel: str, records: int, topics: int | None) -> None:
    assert count_records(fmt, FIX / rel) == records
    assert count_topics(fmt, FIX / rel) == topics


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="known: "):
        reader_for("csv")


def test_count_records_raises_format_error() -> None:
    with pytest.raises(FormatError):
        count_records("argsme-json", FIX / "malformed" / "argsme-truncated.json")


def _parse_all(fmt: str, path: Path) -> None:
    try:
        for _ in READERS[fmt](path):
            pass
    except FormatError:
        pass


FILE_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FILE_SETTINGS
@given(data=st.binary(max_size=400), fmt=st.sampled_from(sorted(READERS)))
def test_random_bytes_only_raise_format_error(tmp_path: Path, data: bytes, fmt: str) -> None:
    path = tmp_path / "input"
    path.write_bytes(data)
    _parse_all(fmt, path)


def _fixture_bytes() -> list[tuple[str, bytes]]:
    out = []
    for fmt, rel, *_ in CASES:
        p = FIX / rel
        files = sorted(p.iterdir()) if p.is_dir() else [p]
        out.append((fmt, files[0].read_bytes()))
    return out


FIXTURES = _fixture_bytes()


@FILE_SETTINGS
@given(case=st.sampled_from(FIXTURES), cut=st.floats(0, 1), flips=st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=3))
def test_damaged_fixtures_only_raise_format_error(tmp_path: Path, case: tuple[str, bytes], cut: float,
                                                  flips: list[tuple[float, int]]) -> None:
    fmt, data = case
    buf = bytearray(data[: int(len(data) * cut)])
    for where, value in flips:
        if buf:
            buf[min(int(where * len(buf)), len(buf) - 1)] = value
    path = tmp_path / "input"
    path.write_bytes(bytes(buf))
    _parse_all(fmt, path)


@pytest.mark.parametrize("cut", range(1, 40))
def test_truncated_argsme_always_fails(tmp_path: Path, cut: int) -> None:
    data = (FIX / "argsme" / "debateorg.json").read_bytes().rstrip()
    path = tmp_path / "debateorg.json"
    path.write_bytes(data[: len(data) * cut // 40])
    with pytest.raises(FormatError):
        list(READERS["argsme-json"](path))


def test_truncated_posts_always_fail(tmp_path: Path) -> None:
    data = (FIX / "arqmath" / "Posts.xml").read_bytes().rstrip()
    for cut in itertools.islice(range(40, len(data) - 1, 97), 30):
        path = tmp_path / "Posts.xml"
        path.write_bytes(data[:cut])
        with pytest.raises(FormatError):
            list(READERS["arqmath-posts-xml"](path))


def test_one_run_layout_table_feeds_readers_validator_and_schema() -> None:
    """The task schema's run formats, the readers' layouts and the validator's layouts are one table."""
    import json

    from sharedtask.formats import trec
    from sharedtask.formats.layouts import BY_SHORT, RUN_LAYOUTS
    from sharedtask.validate import engine

    schema = json.loads((Path(__file__).resolve().parent.parent / "tasks" / "task.schema.json").read_text())
    # every run format is a layout, except MathQA's programs (one per line, no columns: formats/mathqa.py)
    assert schema["properties"]["output"]["properties"]["format"]["enum"] == [*RUN_LAYOUTS, "mathqa-programs"]
    assert trec.LAYOUTS == tuple(BY_SHORT)
    assert {name: engine.LAYOUTS[name].columns for name in RUN_LAYOUTS} == {n: lay.columns for n, lay in RUN_LAYOUTS.items()}
    assert trec.COLUMNS["arqmath-task2"] == "Topic_Id Formula_Id Post_Id Rank Score Run_Tag"  # docs/formats.md
