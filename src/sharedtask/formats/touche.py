"""Touché Task 1 topics XML.

``<topics><topic><number>1</number><title>…</title><description>…</description>
<narrative>…</narrative></topic>…</topics>``; 2020 has description and narrative,
2021 titles only (docs/formats.md).
"""

from __future__ import annotations

from typing import NamedTuple

from sharedtask.errors import FormatError
from sharedtask.formats._io import PathLike
from sharedtask.formats.arqmath import _inner, _parse_small_xml


class ToucheTopic(NamedTuple):
    number: str
    title: str
    description: str | None
    narrative: str | None


def read_touche_topics(path: PathLike) -> list[ToucheTopic]:
    """Read a Touché topics file; every topic needs a number and a title."""
    root = _parse_small_xml(path)
    if root.tag != "topics":
        raise FormatError(path, f"root element is <{root.tag}>, expected <topics>", line=1,
                          hint="is this an ARQMath topics file?" if root.tag == "Topics" else None)
    out: list[ToucheTopic] = []
    seen: set[str] = set()
    for i, elem in enumerate(root.findall("topic"), 1):
        number = _inner(elem.find("number"))
        if not number:
            raise FormatError(path, "<topic> without a <number>", record=f"topic #{i}",
                              hint="write <number>1</number> inside each <topic>")
        title = _inner(elem.find("title"))
        if not title:
            raise FormatError(path, f"topic {number} has no <title>", record=f"topic #{i}")
        if number in seen:
            raise FormatError(path, f"topic number {number} appears twice", record=f"topic #{i}")
        seen.add(number)
        out.append(ToucheTopic(number, title, _inner(elem.find("description")) or None,
                               _inner(elem.find("narrative")) or None))
    return out
