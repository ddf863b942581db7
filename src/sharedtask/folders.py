"""Folders a command makes for its output, removed again when it fails.

Why: a refused input (a binary run, a dataset without topics) must leave nothing behind, not
an empty or half-written output folder the next attempt then trips over (issue 40).
"""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def output_folder(folder: Path) -> Iterator[Path]:
    """Make ``folder`` (and missing parents); on any exception remove the outermost folder this
    call made, with what was written into it. A folder that existed before is left as it is."""
    made = next((p for p in reversed((folder, *folder.parents)) if not p.exists()), None)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        yield folder
    except BaseException:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise


def check_output_option(folder: Path) -> None:
    """``--output`` names a folder: a file there is refused before any work (was ``File exists``)."""
    from sharedtask.errors import SharedTaskError

    if folder.exists() and not folder.is_dir():
        raise SharedTaskError(f"--output {folder} is a file, not a folder", hint="name a new folder")
