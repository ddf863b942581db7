"""Topics and qrels through ir_datasets, the registry TIRA uses (``irds:<id>``).

The real ir_datasets code path: ``ir_datasets.load(id)`` and its handlers, reading the
files from its cache (``$IR_DATASETS_HOME``, which it fills by downloading when it can).
Where ir_datasets keeps the organizers' file as it was published (topics, relevance
qrels) we copy it byte for byte, so the registry's md5 still applies; quality grades
exist only as fields of its records and are written out as ``qid 0 doc grade``.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path
from typing import Iterator

from sharedtask.errors import SharedTaskError


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """ir_datasets' prints and log lines kept from the user's terminal while it works.

    Why: each of its modules makes its own logger with a handler on stderr, level INFO and
    no propagation (ir_datasets 0.6.3 log.py), so setting the "ir_datasets" logger's level
    does not reach them; its download retries and "[INFO] ..." lines would stand before our
    one-line error. ``logging.disable`` holds for every logger, only while ir_datasets runs;
    its prints (the qrels path, ToucheQrels.qrels_iter) would spoil a --json stdout.
    """
    import logging

    before = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logging.disable(before)


def _load(irds_id: str):
    try:
        with _quiet():
            import ir_datasets
    except ImportError:
        raise SharedTaskError("irds: datasets need the ir_datasets package",
                              hint="pip install ir_datasets (or sharedtask[data])") from None
    try:
        with _quiet():
            return ir_datasets.load(irds_id)
    except KeyError:
        raise SharedTaskError(f"ir_datasets has no dataset {irds_id!r}",
                              hint="check the id at ir-datasets.com") from None


def _fail(irds_id: str, part: str, exc: BaseException) -> SharedTaskError:
    import ir_datasets

    home = ir_datasets.util.home_path()
    return SharedTaskError(f"ir_datasets could not provide the {part} of {irds_id}: {type(exc).__name__}: {exc}",
                           hint=f"it downloads into {home} ($IR_DATASETS_HOME); without network put the "
                                "organizers' files there in ir_datasets' layout")


def source_path(irds_id: str, part: str) -> Path:
    """The file ir_datasets reads ``part`` from (downloaded into its cache if it can). For the
    quality qrels, the organizers' quality file (ToucheQualityQrels' second source)."""
    dataset = _load(irds_id)
    with _quiet():
        try:
            if part == "queries":
                return Path(dataset.queries_handler().queries_path())
            handler = dataset.qrels_handler()
            if part == "qrels-quality":
                return Path(handler._source_quality.path())  # ir_datasets 0.6.3 formats/touche.py, ToucheQualityQrels
            return Path(handler.qrels_path())
        except SharedTaskError:
            raise
        except Exception as exc:  # ir_datasets raises plain IOError/ValueError/AssertionError
            raise _fail(irds_id, part, exc) from None


def write_part(irds_id: str, part: str, dest: Path) -> None:
    """Write ``part`` (queries, qrels, qrels-quality) of ``irds_id`` to ``dest``."""
    dataset = _load(irds_id)
    # ir_datasets 0.6.3 prints the qrels path on stdout (ToucheQrels.qrels_iter); our
    # stdout may be --json, so its chatter goes to a buffer.
    with _quiet():
        try:
            if part == "queries":
                shutil.copyfile(dataset.queries_handler().queries_path(), dest)
            elif part == "qrels":
                shutil.copyfile(dataset.qrels_handler().qrels_path(), dest)
            else:
                with open(dest, "w", encoding="utf-8") as out:
                    for q in dataset.qrels_iter():
                        out.write(f"{q.query_id} 0 {q.doc_id} {q.quality}\n")
        except SharedTaskError:
            raise
        except Exception as exc:  # ir_datasets raises plain IOError/ValueError/AssertionError
            raise _fail(irds_id, part, exc) from None
