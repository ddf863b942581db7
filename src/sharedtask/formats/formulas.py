"""ARQMath formula index TSV (``latex_representation_v3/*.tsv`` and the v2 layout).

Header v3: ``id post_id thread_id type comment_id old_visual_id visual_id issue formula``;
header v2: ``id post_id thread_id type visual_id formula``. Written with csv
QUOTE_MINIMAL, so read with the csv module, a tab delimiter and a raised field size
limit (docs/formats.md). Identifiers stay strings, as in runs and qrels.
"""

from __future__ import annotations

import csv
import glob as _glob
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import NamedTuple

from sharedtask.errors import FormatError
from sharedtask.formats._io import DECODE_ERRORS, PathLike, decode_error, open_text

V3_HEADER = ("id", "post_id", "thread_id", "type", "comment_id", "old_visual_id", "visual_id", "issue", "formula")
V2_HEADER = ("id", "post_id", "thread_id", "type", "visual_id", "formula")


class FormulaRecord(NamedTuple):
    """One formula instance. v2 files have no ``comment_id``, ``old_visual_id``, ``issue``
    (None); empty optional cells are None too. ``issue``: "" / v / d / dv (``d`` = formula
    no longer in the posts, not retrievable)."""

    id: str
    post_id: str
    thread_id: str
    type: str
    comment_id: str | None
    old_visual_id: str | None
    visual_id: str | None
    issue: str | None
    formula: str


#: Largest accepted cell. Raised far above csv's 128 KiB default (formulae can be long),
#: but bounded so that a stray unterminated quote fails instead of swallowing the file.
FIELD_LIMIT = 64 << 20


def _raise_field_limit() -> None:
    """Set csv's cell size limit to :data:`FIELD_LIMIT`."""
    csv.field_size_limit(FIELD_LIMIT)


def formula_files(spec: PathLike) -> list[Path]:
    """Resolve a file, a directory (all ``*.tsv``/``*.tsv.gz``, sorted) or a glob to files."""
    text = str(spec)
    path = Path(text)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.name.endswith((".tsv", ".tsv.gz")) and p.is_file())
        if not files:
            raise FormatError(path, "no *.tsv files in this directory",
                              hint="the formula index is a folder of TSV files")
        return files
    if any(c in text for c in "*?["):
        files = sorted(Path(p) for p in _glob.glob(text))
        if not files:
            raise FormatError(text, "no file matches this pattern")
        return files
    return [path]


def _optional(value: str) -> str | None:
    return value if value else None


def _read_one(path: Path) -> Iterator[FormulaRecord]:
    _raise_field_limit()
    with open_text(path) as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        try:
            header = next(reader, None)
            if header is None:
                raise FormatError(path, "empty file, expected a header line", line=1,
                                  hint="v3 header: " + " ".join(V3_HEADER))
            names = tuple(h.strip().lower() for h in header)
            if names == V3_HEADER:
                width = 9
            elif names == V2_HEADER:
                width = 6
            else:
                raise FormatError(
                    path, f"unknown header {' '.join(header)!r}", line=1,
                    hint=f"expected the v3 header `{' '.join(V3_HEADER)}` or the v2 header "
                         f"`{' '.join(V2_HEADER)}`, tab separated")
            for row in reader:
                if len(row) != width:
                    if not row:
                        continue
                    raise FormatError(
                        path, f"expected {width} tab-separated fields, found {len(row)}",
                        line=reader.line_num,
                        hint="quote fields that contain tabs, quotes or line breaks (csv QUOTE_MINIMAL)")
                if width == 9:
                    fid, post, thread, typ, comment, old_vis, vis, issue, formula = row
                    yield FormulaRecord(fid, post, thread, typ, _optional(comment), _optional(old_vis),
                                        _optional(vis), issue, formula)
                else:
                    fid, post, thread, typ, vis, formula = row
                    yield FormulaRecord(fid, post, thread, typ, None, None, _optional(vis), None, formula)
        except csv.Error as exc:
            raise FormatError(path, f"malformed TSV: {exc}", line=reader.line_num,
                              hint="fields with tabs or quotes must be double-quoted") from None
        except DECODE_ERRORS as exc:
            raise decode_error(path, exc, line=reader.line_num + 1) from None


def read_formula_index(spec: PathLike) -> Iterator[FormulaRecord]:
    """Stream formula records from a TSV file, a directory of them (sorted) or a glob."""
    for path in formula_files(spec):
        yield from _read_one(path)


def load_visual_ids(spec: PathLike, only: Collection[str] | None = None) -> dict[str, str]:
    """Map formula id -> visual id (Task 2 evaluation, docs/evaluation.md).

    ``only`` restricts the map to the given formula ids: the full index has 28M
    formulae, a run mentions at most a few hundred thousand.
    """
    out: dict[str, str] = {}
    for rec in read_formula_index(spec):
        if rec.visual_id is not None and (only is None or rec.id in only):
            out[rec.id] = rec.visual_id
    return out
