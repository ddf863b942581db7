"""The topic ids a run is checked against: from --topics or the input dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sharedtask.errors import SharedTaskError


def topic_ids(path: Path, fmt: str) -> set[str]:
    """Topic ids of a topics XML file in the task's format (``arqmath-topics-xml``/``touche-topics-xml``)."""
    if not Path(path).is_file():
        raise SharedTaskError(f"{path}: topics file not found")
    reader = _reader(fmt)
    ids: set[str] = set()
    for topic in reader(path):
        tid = _topic_id(topic)
        if tid is None:
            raise SharedTaskError(f"{path}: a topic without a number", hint=f"is this a {fmt} file?")
        ids.add(tid)
    if not ids:
        raise SharedTaskError(f"{path}: no topics found", hint=f"expected a {fmt} file")
    return ids


def _reader(fmt: str) -> Any:
    import sharedtask.formats as formats

    name = {"arqmath-topics-xml": "read_arqmath_topics", "touche-topics-xml": "read_touche_topics"}.get(fmt)
    if name is None:
        raise SharedTaskError(f"topics format {fmt!r} is not supported by the validator")
    reader = getattr(formats, name, None)
    if reader is None:
        raise SharedTaskError(f"sharedtask.formats.{name} is not available in this installation")
    return reader


def _topic_id(topic: Any) -> str | None:
    for name in ("number", "id", "topic_id", "qid"):
        value = topic.get(name) if isinstance(topic, dict) else getattr(topic, name, None)
        if value is not None:
            return str(value).strip()
    return None
