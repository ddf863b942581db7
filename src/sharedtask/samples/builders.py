"""Escaping and small builders of the official formats, shared by the samples and the
full-size synthetic generator (``sharedtask.samples.synthetic``). Format facts: docs/formats.md."""

from __future__ import annotations

import csv
import io
import json
import random
import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

# docs/formats.md: the five args.me 2020-04-01 source files.
ARGSME_FILES: tuple[str, ...] = (
    "debateorg.json",
    "debatepedia.json",
    "debatewise.json",
    "idebate.json",
    "parliamentary.json",
)

# docs/formats.md: formula index v3 header.
FORMULA_TSV_HEADER: tuple[str, ...] = (
    "id", "post_id", "thread_id", "type", "comment_id",
    "old_visual_id", "visual_id", "issue", "formula",
)

ANSWERS_TSV_HEADER: tuple[str, ...] = ("answer_id", "topic", "text")

# --------------------------------------------------------------------------------------
# Escaping and small format builders (shared with sharedtask.samples.synthetic)
# --------------------------------------------------------------------------------------

_ATTR_ESCAPES = str.maketrans({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;",
    "\n": "&#xA;", "\r": "&#xD;", "\t": "&#x9;",
})
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def xml_attr(value: str) -> str:
    """Escape an XML attribute value the way Stack Exchange dumps do (newlines as ``&#xA;``)."""
    return value.translate(_ATTR_ESCAPES)


def xml_text(value: str) -> str:
    """Escape XML element text (``&``, ``<``, ``>``)."""
    return value.translate(_TEXT_ESCAPES)


def html_escape(value: str) -> str:
    """Escape text placed inside HTML (LaTeX such as ``|r|<1`` must become ``&lt;``)."""
    return value.translate(_TEXT_ESCAPES)


def math_span(formula_id: str | int, latex: str, display: bool = False) -> str:
    """An ARQMath formula span: ``<span class="math-container" id="ID">$LATEX$</span>`` (docs/formats.md)."""
    dollars = "$$" if display else "$"
    return f'<span class="math-container" id="{formula_id}">{dollars}{html_escape(latex)}{dollars}</span>'


def hex8(rng: random.Random) -> str:
    """Eight lowercase hex digits, as in args.me ids ``S[0-9a-f]{8}-A[0-9a-f]{8}``."""
    return f"{rng.getrandbits(32):08x}"


def slug(title: str, sep: str = "-") -> str:
    return sep.join(re.findall(r"[A-Za-z0-9]+", title))


# docs/formats.md: context fields of an args.me argument; sourceDomain values as ir_datasets parses them.
DOMAIN_OF_FILE: dict[str, str] = {
    "debateorg.json": "debate.org",
    "debatepedia.json": "debatepedia",
    "debatewise.json": "debatewise",
    "idebate.json": "idebate",
    "parliamentary.json": "canadian-parliament",
}


def source_meta(file_name: str, discussion: str, number: int) -> tuple[str, str]:
    """(sourceTitle, sourceUrl) in the style of each debate portal."""
    if file_name == "debateorg.json":
        return f"Debate Argument: {discussion} | Debate.org", f"https://www.debate.org/debates/{slug(discussion)}/{number % 5 + 1}/"
    if file_name == "debatepedia.json":
        return f"Debate: {discussion} - Debatepedia", f"http://www.debatepedia.org/en/index.php/Debate:_{slug(discussion, '_')}"
    if file_name == "debatewise.json":
        return f"{discussion} | Debatewise", f"https://debatewise.org/debates/{number}-{slug(discussion).lower()}/"
    if file_name == "idebate.json":
        return f"This House believes: {discussion} | idebate.org", f"https://idebate.org/debatabase/debates/{slug(discussion).lower()}"
    return f"House of Commons debate: {discussion}", f"https://www.lipad.ca/full/{2000 + number % 19}/{number % 12 + 1:02d}/{number % 28 + 1:02d}/"


@dataclass
class Argument:
    """One args.me argument before serialization."""

    id: str
    conclusion: str
    premise: str
    stance: str
    file_name: str
    source_id: str
    discussion: str
    number: int
    acquisition: str
    previous_id: str = ""
    next_id: str = ""
    aspects: list[tuple[str, float]] = field(default_factory=list)
    author: str | None = None


def argsme_record(arg: Argument) -> dict:
    """The JSON object of one argument: id, conclusion, premises, full context (docs/formats.md)."""
    source_text = f"{arg.conclusion} {arg.premise}"
    title, url = source_meta(arg.file_name, arg.discussion, arg.number)
    premise: dict = {"text": arg.premise, "stance": arg.stance}
    if arg.file_name != "parliamentary.json":  # annotations are optional (docs/formats.md: "annotations"?)
        premise["annotations"] = []
    context: dict = {
        "sourceId": arg.source_id,
        "previousArgumentInSourceId": arg.previous_id,
        "acquisitionTime": arg.acquisition,
        "discussionTitle": arg.discussion,
        "sourceTitle": title,
        "sourceUrl": url,
        "nextArgumentInSourceId": arg.next_id,
        "sourceDomain": DOMAIN_OF_FILE[arg.file_name],
        "sourceText": source_text,
        "sourceTextConclusionStart": 0,
        "sourceTextConclusionEnd": len(arg.conclusion),
        "sourceTextPremiseStart": len(arg.conclusion) + 1,
        "sourceTextPremiseEnd": len(source_text),
        "mode": "discussion" if arg.file_name == "parliamentary.json" else "person",
    }
    if arg.author is not None:
        context["author"] = arg.author
        context["authorRole"] = "Member of Parliament"
        context["authorOrganization"] = "House of Commons"
        context["date"] = arg.acquisition
    if arg.aspects:
        context["aspects"] = [
            {"name": name, "weight": weight, "normalizedWeight": round(weight / sum(w for _, w in arg.aspects), 4), "rank": rank}
            for rank, (name, weight) in enumerate(arg.aspects, start=1)
        ]
    return {"id": arg.id, "conclusion": arg.conclusion, "premises": [premise], "context": context}


def argsme_json(records: Iterable[dict]) -> str:
    """``{"arguments": [...]}`` with one argument per line (whitespace is insignificant in JSON)."""
    body = ",\n".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records)
    return '{"arguments":[\n' + body + "\n]}\n"


def tsv(rows: Iterable[Sequence[object]], header: Sequence[str] | None = None) -> str:
    """Tab-separated with csv QUOTE_MINIMAL, as the ARQMath formula index is written (docs/formats.md)."""
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    if header:
        writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()
