"""The topic ids a run is checked against: from --topics or the input dataset."""

from __future__ import annotations

from pathlib import Path

from sharedtask.errors import SharedTaskError


def topic_ids(path: Path, fmt: str) -> set[str]:
    """Topic ids of a topics XML file in the task's format (``arqmath-topics-xml``/``touche-topics-xml``)."""
    from sharedtask import formats

    if not Path(path).is_file():
        raise SharedTaskError(f"{path}: topics file not found")
    if fmt not in formats.TOPIC_FORMATS:
        raise SharedTaskError(f"topics format {fmt!r} is not supported by the validator")
    ids = {tid.strip() for tid in formats.read_topic_ids(fmt, path)}
    if not ids:
        raise SharedTaskError(f"{path}: no topics found", hint=f"expected a {fmt} file")
    return ids
