"""The TIRA execution contract as the baselines see it (docs/formats.md).

Input: ``$inputDataset`` (read-only, default ``/tira-data/input``). Output:
``$outputDir/run.txt`` (default ``/tira-data/output``). Scratch space (converted
JSONL, the Lucene index) goes to a temporary folder on the container's own file
system (``/var/tmp``), never into the input and never into the output folder: the
sandbox's ``/tmp`` is a tmpfs charged to the memory limit (sharedtask.sandbox.policy),
and a 400 MB JSONL file there would eat the JVM's heap. ``$BASELINE_SCRATCH`` overrides
the location; with a read-only root file system we fall back to ``$TMPDIR``/``/tmp``.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DEFAULT_INPUT = "/tira-data/input"
DEFAULT_OUTPUT = "/tira-data/output"
RUN_FILE = "run.txt"

log = logging.getLogger("baseline")


def setup_logging() -> None:
    """Progress lines on stderr with elapsed seconds (stdout stays free)."""
    start = time.monotonic()

    class _Elapsed(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return f"[baseline {time.monotonic() - start:7.1f}s] {record.getMessage()}"

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Elapsed())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


def input_dir(arg: str | None = None) -> Path:
    """``--input`` if given, else ``$inputDataset`` (TIRA), else the TIRA mount point."""
    return Path(arg or os.environ.get("inputDataset") or DEFAULT_INPUT)


def output_dir(arg: str | None = None) -> Path:
    """``--output`` if given, else ``$outputDir`` (TIRA), else the TIRA mount point."""
    return Path(arg or os.environ.get("outputDir") or DEFAULT_OUTPUT)


def prepare(input_arg: str | None, output_arg: str | None, threads_arg: int = 0) -> tuple[Path, Path, int]:
    """What every baseline does first: logging, a resolvable host name, its folders, its threads.

    Returns (input folder, output folder (created), thread count).
    """
    from lucene_baseline import anserini

    setup_logging()
    anserini.ensure_resolvable_hostname()
    data, out = input_dir(input_arg), output_dir(output_arg)
    out.mkdir(parents=True, exist_ok=True)
    return data, out, threads_arg or anserini.cpu_count()


def _scratch_parent() -> str:
    """The first writable of ``$BASELINE_SCRATCH``, ``/var/tmp``, the system temp folder."""
    for candidate in (os.environ.get("BASELINE_SCRATCH"), "/var/tmp"):
        if candidate and os.path.isdir(candidate) and os.access(candidate, os.W_OK):
            return candidate
    return tempfile.gettempdir()


@contextmanager
def scratch_dir(keep: str | None = None) -> Iterator[Path]:
    """A private work folder (JSONL, index) removed afterwards unless ``keep`` names one."""
    if keep:
        path = Path(keep)
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    path = Path(tempfile.mkdtemp(prefix="baseline-", dir=_scratch_parent()))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
