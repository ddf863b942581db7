"""Deterministic generators of the bundled sample datasets (``tasks/samples/<name>/``).

Why: every command, test and demo needs small data in the *official* formats on which
retrieval is meaningful (relevant documents share vocabulary and formulae with their
topic, so BM25 beats random), with the awkward cases real data has: unjudged
documents, exact duplicates (tied scores), topics with few relevant documents, a
topic without judgments, escaped HTML, quoted TSV fields, CRLF qrels.

Format details follow docs/formats.md. The generators use seeded ``random.Random``
instances only and write bytes explicitly, so ``python -m sharedtask.samples``
reproduces the checked-in files byte for byte (tested in ``tests/test_samples.py``).
Subjects and vocabularies are data (``themes/*.yml``); each generator registers its
sample names (``registry.register``).

Layout of each sample: ``input/`` is exactly what TIRA mounts as ``$inputDataset``;
``truth/`` holds what the evaluator needs and participants never see.
"""

from __future__ import annotations

from pathlib import Path

from sharedtask.samples import touche as _touche  # noqa: F401, I001 - registers first: Touché, then ARQMath
from sharedtask.samples import arqmath as _arqmath  # noqa: F401
from sharedtask.samples import leansearch as _leansearch  # noqa: F401
from sharedtask.samples.builders import ARGSME_FILES
from sharedtask.samples.registry import GENERATORS

SAMPLE_NAMES: tuple[str, ...] = tuple(GENERATORS)

__all__ = ["ARGSME_FILES", "SAMPLE_NAMES", "default_root", "sample_files", "write_sample"]


def sample_files(name: str) -> dict[str, str]:
    """The files of sample ``name`` (relative path -> text), generated deterministically."""
    try:
        generator = GENERATORS[name]
    except KeyError:
        raise ValueError(f"unknown sample {name!r}; known: {', '.join(SAMPLE_NAMES)}") from None
    return generator()


def write_sample(name: str, target: Path) -> list[Path]:
    """Write sample ``name`` into ``target`` (its input/ and truth/); returns the files written."""
    written: list[Path] = []
    for rel, text in sorted(sample_files(name).items()):
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))  # bytes: no platform newline translation
        written.append(path)
    return written + _ir_layout(name, target / "input")


def _ir_layout(name: str, input_dir: Path) -> list[Path]:
    """TIRA's ir_datasets layout beside the native files, when a task of this sample declares it
    (docs/pipelines.md); written from the native files just written, so byte-stable too."""
    from sharedtask.data.irlayout import declares_layout, write_ir_layout
    from sharedtask.formats.tira_layout import FULL_RANK_FILES
    from sharedtask.spec import all_tasks

    task = next((t for t in all_tasks() if t.sample == name and declares_layout(t)), None)
    if task is None:
        return []
    write_ir_layout(task, input_dir)
    return [input_dir / f for f in FULL_RANK_FILES if (input_dir / f).is_file()]


def default_root() -> Path:
    from sharedtask.resources import resource

    return resource("tasks") / "samples"
