"""The re-rank dataset: what a re-ranker sees as ``$inputDataset`` / ``$TIRA_INPUT_DATASET``.

TIREx hands a re-ranker a dataset of its own, not the corpus: ``rerank.jsonl.gz`` (the
candidates with their text) and the topics as ``queries.jsonl`` and ``queries.xml`` (tira
0.0.207: ``load_rerank_data`` reads ``$TIRA_INPUT_DATASET/rerank.jsonl.gz``, its
``ir_datasets`` integration registers the folder's candidates as a dataset). Made from a
stage's ``rerank.jsonl.gz`` alone, so the stage's sha256 names it too, and a stage made
before this layout (no ``original_query``) gives one as well. The re-ranker never sees a
corpus file: nothing else is in the folder.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

from sharedtask.errors import FormatError
from sharedtask.formats.tira_layout import QUERIES_JSONL, QUERIES_XML, write_queries
from sharedtask.rerank.inputs import RERANK_FILE

#: The files of a re-rank dataset, and nothing else.
RERANK_DATASET_FILES = (RERANK_FILE, QUERIES_JSONL, QUERIES_XML)


def _topics(candidates: Path) -> list[tuple[str, str, dict[str, str]]]:
    """(qid, query, original fields) of each topic, in the order of the candidates."""
    seen: dict[str, tuple[str, str, dict[str, str]]] = {}
    lineno = 0
    try:
        with gzip.open(candidates, "rt", encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, 1):
                obj = json.loads(line)
                qid = str(obj["qid"])
                if qid not in seen:
                    original = obj.get("original_query")
                    if not isinstance(original, dict):  # a stage made before original_query was written
                        original = {"query_id": qid, "text": str(obj["query"])}
                    seen[qid] = (qid, str(obj["query"]), {str(k): str(v) for k, v in original.items()})
    except (OSError, EOFError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise FormatError(candidates, f"not a re-ranking input ({exc.__class__.__name__}: {exc})",
                          line=lineno or None) from None
    return list(seen.values())


def make_rerank_dataset(stage: Path, folder: Path) -> Path:
    """Fill ``folder`` (emptied first) with the re-rank dataset of ``stage`` (a stage folder or
    its ``rerank.jsonl.gz``); returns ``folder``.

    The candidates are hard-linked when the file system allows (a stage of the real mathlib4
    is megabytes), else copied; the folder is mounted read-only, so a link cannot be written
    through.
    """
    candidates = stage / RERANK_FILE if stage.is_dir() else stage
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    target = folder / RERANK_FILE
    try:
        os.link(candidates, target)
    except OSError:
        shutil.copyfile(candidates, target)
    write_queries(folder, _topics(target))
    return folder
