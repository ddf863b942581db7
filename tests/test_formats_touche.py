"""Touché topics XML (2020 with description/narrative, 2021 titles only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sharedtask.errors import FormatError
from sharedtask.formats import ToucheTopic, read_touche_topics

TOUCHE = Path(__file__).parent / "fixtures" / "formats" / "touche"


def test_2020_topics() -> None:
    topics = read_touche_topics(TOUCHE / "topics-2020.xml")
    assert [t.number for t in topics] == ["1", "2"]
    assert topics[0].title == "Should teachers get tenure?"
    assert topics[0].description == "A user has heard that some countries do give teachers tenure and others don't."
    assert topics[0].narrative == "Highly relevant arguments make a clear statement about tenure for teachers & schools."


def test_2021_titles_only() -> None:
    topics = read_touche_topics(TOUCHE / "topics-2021.xml")
    assert topics == [
        ToucheTopic("51", "Do we need sex education in schools?", None, None),
        ToucheTopic("52", "Should stem cell research be expanded?", None, None),
        ToucheTopic("53", "Should blood donations be financially compensated?", None, None),
    ]


@pytest.mark.parametrize(
    ("name", "line", "record", "words"),
    [
        ("topics-no-title.xml", None, "topic #2", "topic 2 has no <title>"),
        ("topics-mismatched.xml", 3, None, "malformed XML: mismatched tag"),
        ("topics-duplicate.xml", None, "topic #2", "topic number 1 appears twice"),
    ],
)
def test_malformed(name: str, line: int | None, record: str | None, words: str) -> None:
    with pytest.raises(FormatError) as err:
        read_touche_topics(TOUCHE / name)
    assert err.value.location.line == line
    assert err.value.location.record == record
    assert words in str(err.value)


def test_arqmath_topics_are_rejected_with_a_hint() -> None:
    with pytest.raises(FormatError) as err:
        read_touche_topics(TOUCHE.parent / "arqmath" / "topics-task1.xml")
    assert "expected <topics>" in str(err.value) and "ARQMath" in str(err.value)
