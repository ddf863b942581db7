"""The re-ranking input: ``rerank.jsonl.gz``, one candidate per line, as TIREx hands it over.

Each line is ``{"qid", "query", "original_query", "docno", "text", "original_document",
"rank", "score"}``, the fields of TIREx's re-ranking datasets (Fröbe et al., SIGIR 2023;
tira 0.0.207, ``ir_datasets_loader.construct_rerank_row``; docs/formats.md):
``original_query`` is the topic's own fields with ``query_id``, ``original_document`` the
document's fields with ``doc_id``. Ours add ``"fields"``: the document's text by field
(conclusion/premises, title/body, name/informal/formal), for re-rankers that weigh them
(and read by images made before ``original_document`` was written). Lines are
grouped by topic in the order of the dataset's topics file, then by rank. The file is
gzip with no name and mtime 0, so the same run and dataset give the same bytes, and its
sha256 can key a cache and a run record.

A *stage directory* holds the first stage's ``run.txt`` and this file beside it; a
re-ranker gets it as ``$inputRun`` (TIRA's input run), and the re-rank dataset made from
it (:mod:`.dataset`) as ``$inputDataset``.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sharedtask.data.checksum import sha256
from sharedtask.errors import FormatError, SharedTaskError
from sharedtask.folders import output_folder
from sharedtask.formats.tira_layout import atomic, json_line
from sharedtask.rerank.candidates import Candidate, top_candidates
from sharedtask.formats.runfile import find_run_file
from sharedtask.rerank.texts import document_texts, topics
from sharedtask.spec import Task

RERANK_FILE = "rerank.jsonl.gz"
FIELDS = ("qid", "query", "docno", "text", "rank", "score")


@dataclass(frozen=True)
class RerankSummary:
    path: Path
    topics: int
    candidates: int
    depth: int
    sha256: str
    first_stage: str | None = None  # the run file the candidates came from

    def to_json(self) -> dict[str, object]:
        return {"input": str(self.path), "sha256": self.sha256, "depth": self.depth, "topics": self.topics,
                "candidates": self.candidates, "first_stage_run": self.first_stage}


def write_rerank_input(task: Task, dataset: Path, run: Path, out: Path, depth: int | None = None) -> RerankSummary:
    """Write ``out`` (a ``rerank.jsonl.gz``) from a first stage's ``run`` on ``dataset``.

    ``depth`` defaults to the task's ``rerank.depth``. A topic of the run that the
    dataset does not know, or a document its corpus does not hold, is an error: such a
    run would not have passed validation, and a re-ranker could not read its text.
    """
    depth = depth or (task.rerank.depth if task.rerank else None)
    if not depth:
        raise SharedTaskError(f"task {task.id} declares no re-ranking stage", hint="pass --depth N")
    run_file = find_run_file(run, task.output.file)
    queries = topics(task, dataset)
    candidates = top_candidates(run_file, depth)
    unknown = [qid for qid in candidates if qid not in queries]
    if unknown:
        raise FormatError(run_file, f"topic {unknown[0]} is not a topic of the dataset ({len(unknown)} such topic(s))",
                          hint=f"run the first stage on this dataset ({dataset}) and validate it first")
    wanted = {c.docno for rows in candidates.values() for c in rows}
    texts = document_texts(task, dataset, wanted)
    missing = sorted(wanted - texts.keys())
    if missing:
        raise FormatError(run_file, f"document {missing[0]} is not in the dataset's corpus ({len(missing)} such)",
                          hint="a first stage may only rank documents of the corpus: validate the run first")
    count = 0
    with atomic(out) as packed:
        for qid, topic in queries.items():
            for c in candidates.get(qid, ()):
                doc = texts[c.docno]
                packed.write(json_line({"qid": qid, "query": topic.text, "original_query": topic.original,
                                        "docno": c.docno, "text": doc.text,
                                        "original_document": {"doc_id": c.docno, **doc.fields},
                                        "rank": c.rank, "score": c.score, "fields": doc.fields}))
                count += 1
    return RerankSummary(out, sum(1 for q in queries if candidates.get(q)), count, depth, sha256(out), str(run_file))


def prepare_stage(task: Task, dataset: Path, run: Path, stage_dir: Path, depth: int | None = None) -> RerankSummary:
    """Fill ``stage_dir`` (the future ``$inputRun``) with the first stage's run and its candidates."""
    run_file = find_run_file(run, task.output.file)
    target = stage_dir / task.output.file
    with output_folder(stage_dir):  # removed again when the run or the dataset is refused
        if run_file.name.endswith(".gz"):  # TIRA accepts run.txt.gz; a re-ranker reads $inputRun/run.txt as text
            _gunzip(run_file, target, task.output.run_bytes_bound)
        elif run_file.resolve() != target.resolve():
            shutil.copyfile(run_file, target)
        try:
            return write_rerank_input(task, dataset, target, stage_dir / RERANK_FILE, depth)
        except FormatError as exc:  # name the user's file, not the copy that is removed again
            at = exc.location
            if run_file.name.endswith(".gz") or at.path != str(target):
                raise
            raise FormatError(run_file, exc.detail, line=at.line, column=at.column, record=at.record,
                              hint=exc.hint) from None


def _gunzip(source: Path, target: Path, bound: int) -> None:
    """``source`` decompressed into ``target``, refused past ``bound`` bytes (the task's run size bound)."""
    written = 0
    try:
        with gzip.open(source, "rb") as packed, open(target, "wb") as out:
            while chunk := packed.read(1 << 20):
                written += len(chunk)
                if written > bound:
                    raise FormatError(source, f"decompresses to more than the run size bound of {bound} bytes",
                                      hint="output.max_run_bytes in the task's spec bounds a run")
                out.write(chunk)
    except (OSError, EOFError) as exc:
        target.unlink(missing_ok=True)
        raise FormatError(source, f"not a readable gzip file ({exc})") from None
    except BaseException:
        target.unlink(missing_ok=True)
        raise


def read_rerank_input(path: Path) -> Iterator[Candidate]:
    """The candidates of a ``rerank.jsonl.gz`` (or its directory), checked line by line."""
    if path.is_dir():
        path = path / RERANK_FILE
    if not path.is_file():
        raise SharedTaskError(f"{path} does not exist", hint=f"a re-ranking stage directory holds {RERANK_FILE}")
    lineno = 0
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, 1):
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise FormatError(path, f"not valid JSON ({exc.msg})", line=lineno, column=exc.colno) from None
                if not isinstance(obj, dict) or any(key not in obj for key in FIELDS):
                    raise FormatError(path, "expected an object with " + ", ".join(FIELDS), line=lineno)
                yield Candidate(str(obj["qid"]), str(obj["docno"]), int(obj["rank"]), float(obj["score"]))
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise FormatError(path, f"not a readable gzip JSON Lines file ({exc})", line=lineno + 1) from None


def summarize(path: Path) -> RerankSummary:
    """The summary of an existing ``rerank.jsonl.gz`` (its depth: the most candidates of a topic)."""
    per_topic: dict[str, int] = {}
    for c in read_rerank_input(path):
        per_topic[c.qid] = per_topic.get(c.qid, 0) + 1
    return RerankSummary(path, len(per_topic), sum(per_topic.values()), max(per_topic.values(), default=0),
                         sha256(path))


def stage_for(task: Task, dataset: Path, input_run: Path, scratch: Path) -> RerankSummary | None:
    """The stage a re-ranker of ``task`` reads: ``input_run`` itself when it already holds
    ``rerank.jsonl.gz``, else a stage made in ``scratch`` from the run it is or holds. None
    when it is neither: any other previous stage is mounted as it is, as TIRA mounts it."""
    ready = input_run / RERANK_FILE if input_run.is_dir() else None
    if ready is not None and ready.is_file():
        return summarize(ready)
    name = task.output.file
    if not (input_run.is_file() or (input_run / name).is_file() or (input_run / f"{name}.gz").is_file()):
        return None
    if scratch.exists():
        shutil.rmtree(scratch)
    return prepare_stage(task, dataset, input_run, scratch)
