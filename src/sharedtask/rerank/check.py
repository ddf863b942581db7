"""A re-ranked run against its input: it may only reorder (or cut) the candidates it was given.

TIREx compares re-rankers on the same candidates; a re-ranker that adds documents of its
own (from an index it built, or from another run) is no longer that comparison, so such a
line is an error, and so is a topic ranked deeper than what was handed over.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sharedtask.findings.codes import finding
from sharedtask.findings import Finding
from sharedtask.formats.trec import read_run
from sharedtask.rerank.inputs import read_rerank_input

#: Findings of one code listed line by line; the rest are counted in one more finding.
SHOWN = 5


def check_reranked(run: Path, stage: Path) -> list[Finding]:
    """Findings for ``run`` (a run file) re-ranked from ``stage`` (a stage dir or rerank.jsonl.gz)."""
    handed: dict[str, set[str]] = {}
    for c in read_rerank_input(stage):
        handed.setdefault(c.qid, set()).add(c.docno)
    out: list[Finding] = []
    extra = 0
    rows: Counter[str] = Counter()
    for row in read_run(run):
        doc = row.doc or (row.post_id or "")
        rows[row.topic] += 1
        if doc not in handed.get(row.topic, ()):
            extra += 1
            if extra <= SHOWN:
                given = len(handed.get(row.topic, ()))
                out.append(finding("RUN-NOT-CANDIDATE",
                                   f"topic {row.topic}: document {doc} was not among the {given} candidate(s) handed over",
                                   str(run), row.line))
    if extra > SHOWN:
        out.append(finding("RUN-NOT-CANDIDATE", f"{extra - SHOWN} more line(s) name documents that were not handed over",
                           str(run)))
    for topic, count in rows.items():
        given = len(handed.get(topic, ()))
        if count > given:
            out.append(finding("RUN-RERANK-DEPTH", f"topic {topic}: {count} documents ranked, {given} handed over",
                               str(run)))
    return out
