"""The catalogue of finding codes: each code's default severity, what it means, and how to fix it.

Why one table: validators, the input check, the demo and the docs all speak of the same
codes; a code's severity and hint are decided here once (``Collector.report`` reads them),
and ``docs/findings.md`` is rendered from this table (``python -m sharedtask.findings.codes``;
a test keeps the two equal).

Severity rule: what TIRA, trec_eval or the task's official scorer would reject or silently
misread is an error; legal but risky is a warning; facts worth knowing are info. A few codes
are an error for one task family and a warning for another (their rule passes the severity);
the table holds the usual one. Codes are stable: tools and users match on them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from sharedtask.findings import Finding, Severity

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO


@dataclass(frozen=True)
class Code:
    group: str
    severity: Severity
    meaning: str
    hint: str


def _c(group: str, severity: Severity, meaning: str, hint: str) -> Code:
    return Code(group, severity, meaning, hint)


_B = "image builds"
_S, _F, _R, _T, _A, _IN, _P, _M = ("structure", "fields", "ranking", "TIRA's run check", "ARQMath", "dataset", "pipeline",
                                   "MathQA")

CATALOGUE: dict[str, Code] = {
    # --- structure of the file (validate/structure.py, validate/engine.py)
    "RUN-BOM": _c(_S, E, "the file starts with a UTF-8 byte-order mark",
                  "TIRA and trec_eval read the BOM as part of the first topic id: save without BOM"),
    "RUN-CR": _c(_S, E, "a carriage return that does not end a line",
                 "TIRA reads the file in text mode and starts a new line at a lone CR: remove it"),
    "RUN-CRLF": _c(_S, W, "lines end with CR LF",
                   "TIRA and trec_eval cope, but tools that split on tabs keep the CR in the last column: use LF line endings"),
    "RUN-CONTROL-CHAR": _c(_S, E, "a NUL or other control character in a line",
                           "C tools (trec_eval) stop at NUL and split differently than Python at control characters: remove them"),
    "RUN-ENCODING": _c(_S, E, "bytes that are not UTF-8", "write the run as UTF-8 (ids are ASCII in every task)"),
    "RUN-UNICODE-SPACE": _c(_S, E, "non-ASCII whitespace in a line",
                            "TIRA (Python) splits columns at it, trec_eval (C) does not: use a tab or a space"),
    "RUN-BLANK-LINE": _c(_S, E, "a blank line", "TIRA's run check rejects blank and # comment lines: remove them"),
    "RUN-COMMENT": _c(_S, E, "a # comment line", "TIRA's run check rejects blank and # comment lines: remove them"),
    "RUN-COLUMNS": _c(_S, E, "a line with the wrong number of columns",
                      "TIRA and trec_eval reject lines with a different number of columns"),
    "RUN-SEPARATOR": _c(_S, E, "columns of a tab-separated layout separated by spaces",
                        "the official ARQMath scripts split on tabs: separate every column by one tab"),
    "RUN-SPACE-IN-FIELD": _c(_S, E, "a space inside a tab-separated column",
                             "TIRA and trec_eval split columns at spaces, the official ARQMath scripts only at tabs: "
                             "remove spaces from ids and the run tag"),
    "RUN-EMPTY-FIELD": _c(_S, E, "an empty column (two tabs in a row, or a tab at the end)",
                          "two tabs in a row or a tab at the end of the line: whitespace-splitting tools see a column fewer"),
    "RUN-TRAILING-WHITESPACE": _c(_S, W, "whitespace at the end of a line",
                                  "tools that split on single tabs or spaces see an extra empty column: strip lines"),
    "RUN-LEADING-WHITESPACE": _c(_S, W, "whitespace at the start of a line",
                                 "tools that split on single tabs or spaces see an empty first column: strip lines"),
    "RUN-MIXED-SEPARATORS": _c(_S, W, "tabs and spaces both used as separators",
                               "trec_eval and TIRA accept any whitespace, but scripts that split on one character misread "
                               "the run: use one separator throughout"),
    "RUN-NO-FINAL-NEWLINE": _c(_S, W, "the last line has no newline",
                               "line-based tools (wc, while read) miss an unterminated last line: end the file with a newline"),
    "RUN-GZIP": _c(_S, E, "a .gz run that is not valid gzip", "recompress the run with gzip, or submit it uncompressed"),
    "RUN-TOO-LARGE": _c(_S, E, "the run (or its decompressed content) is larger than the task's bound for run files",
                        "the bound is the task's output.max_run_bytes: write at most max_results_per_topic lines per topic"),
    "RUN-LINE-TOO-LONG": _c(_S, E, "a line longer than the task's bound (output.max_line_bytes)",
                            "a run line holds a few ids and numbers: check that lines end with a newline"),
    "RUN-MEMORY-BOUND": _c(_S, E, "checking the run would keep more of it in memory than the task allows "
                           "(max(topics × depth, 100,000) lines, at most 500,000; 64 MiB of their text)",
                           "write each topic's lines together (not interleaved), at most max_results_per_topic lines "
                           "per topic, for the task's topics only, with one run tag"),
    "RUN-EMPTY": _c(_S, E, "the run has no result lines", "write one line per result in the task's layout"),
    # --- fields (validate/fields.py)
    "RUN-TOPIC-ID": _c(_F, E, "a topic id that does not match the task's pattern",
                       "write topic ids exactly as in the topics file (case matters)"),
    "RUN-DOC-ID": _c(_F, E, "a document id that does not match the task's pattern",
                     "write docnos exactly as the collection spells them"),
    "RUN-POST-ID": _c(_F, E, "a post id that does not match the task's pattern",
                      "write post ids exactly as the collection spells them"),
    "RUN-Q0": _c(_F, W, "something other than Q0 in the Q0 column",
                 "trec_eval ignores the column, but write the literal Q0 as the format says"),
    "RUN-RANK": _c(_F, E, "a rank that is not an integer", "TIRA's run check parses the rank with int(): write 1, 2, 3, ..."),
    "RUN-RANK-FORMAT": _c(_F, W, "a rank with a sign or leading zeros", "write ranks without sign or leading zeros"),
    "RUN-SCORE": _c(_F, E, "a score that is not a number",
                    "the score column must be a decimal number; TIRA rejects the run"),
    "RUN-SCORE-NONFINITE": _c(_F, E, "a NaN or infinite score",
                              "TIRA accepts it, but trec_eval's sort cannot order NaN/inf consistently: use finite scores"),
    "RUN-SCORE-FORMAT": _c(_F, E, "a score Python and C read differently (1_0, non-ASCII digits)",
                           "write scores as plain ASCII decimals like 12.5 or -0.25"),
    "RUN-SCORE-RANGE": _c(_F, E, "a score outside the range a C double holds", "write a finite decimal score"),
    # a note, not a warning: every official scorer (trec_eval's atof, TIRA, the ARQMath and Touché
    # scripts' float()) reads it; the shipped Lucene baselines write -1e-06 for their tail
    "RUN-SCORE-SCIENTIFIC": _c(_F, I, "a score in scientific notation",
                               "trec_eval and TIRA read it, but some scripts parse scores as plain decimals: "
                               "write e.g. 0.000123 instead of 1.23e-4"),
    "RUN-TAG": _c(_F, W, "a run tag with unusual characters", "use a short tag of letters, digits and _ . + -"),
    "RUN-TAG-MIXED": _c(_F, W, "more than one run tag in the file", "a run has one tag; trec_eval reports only the first"),
    # --- ranking, per topic (validate/ranking.py)
    "RUN-DUPLICATE-DOC": _c(_R, E, "a document listed twice for one topic",
                            "trec_eval refuses runs with duplicates and TIRA rejects them: keep the first occurrence "
                            "(sharedtask validate --fix does)"),
    "RUN-DEPTH": _c(_R, E, "more results for a topic than the task allows",
                    "keep the top results per topic up to the task's depth (sharedtask validate --fix does)"),
    "RUN-UNKNOWN-TOPIC": _c(_R, E, "a topic that is not one of the task's topics",
                            "the evaluation ignores it: check the topic ids (and the --topics/--input you gave)"),
    "RUN-MISSING-TOPICS": _c(_R, W, "topics of the task without any result",
                             "a topic without results scores 0 in averages over all topics"),
    "RUN-TIE": _c(_R, W, "results of a topic with equal scores that trec_eval orders otherwise than the ranks "
                  "(ties already in docno-descending rank order change nothing and are not reported)",
                  "break ties yourself (e.g. by a second feature) or run --fix, which orders them as trec_eval does "
                  "and makes the scores distinct"),
    "RUN-FLOAT32-TIE": _c(_R, W, "scores that differ but are equal as 32-bit floats (trec_eval 9 ties them)",
                          "keep scores at most 7 significant digits apart, or run --fix"),
    "RUN-RANK-SCORE": _c(_R, W, "ranks and scores order a topic differently (an error for Touché, whose scorer sorts by rank)",
                         "trec_eval ignores the ranks and sorts by score, so it evaluates a different ranking than your "
                         "ranks say: sort each topic by score descending and renumber ranks (--fix)"),
    "RUN-RANK-DUPLICATE": _c(_R, W, "two results of a topic with the same rank (an error for Touché)",
                             "give every line of a topic its own rank"),
    "RUN-RANK-START": _c(_R, W, "a topic whose ranks do not start at 1",
                         "trec_eval ignores ranks, but the Touché scorer and readers expect 1, 2, 3, ..."),
    "RUN-RANK-GAP": _c(_R, W, "gaps in a topic's ranks", "number the lines of each topic 1, 2, 3, ... without gaps"),
    "RUN-RANK-ORDER": _c(_R, W, "a topic's lines not written from rank 1 down", "write each topic's lines from rank 1 down"),
    "RUN-SCORE-ORDER": _c(_R, W, "a topic's lines not written by descending score",
                          "trec_eval re-sorts by score, but people and simple scripts read the file top-down"),
    "RUN-INTERLEAVED": _c(_R, W, "the lines of some topics are not contiguous",
                          "legal, but group each topic's lines together: streaming tools (and this validator) then "
                          "need far less memory"),
    "RUN-TOPICS-UNCHECKED": _c(_R, I, "topic ids were not checked against a topic set",
                               "pass --topics FILE or --input DATASET_DIR"),
    # --- TIRA's run.txt check (tira.check_format.RunFormat, tira 0.0.207)
    "RUN-TIRA-MIN-LINES": _c(_T, E, "fewer than 5 result lines (TIRA's check refuses them)",
                             "a real run has many results per topic"),
    "RUN-TIRA-MIN-TOPICS": _c(_T, E, "fewer than 3 topics (TIRA's check refuses them)", "answer every topic of the dataset"),
    "RUN-TIRA-SIZE": _c(_T, E, "a run file over TIRA's 75 MiB limit",
                        "gzip it as run.txt.gz (TIRA checks the compressed size) or cut the depth"),
    "RUN-TIRA-LAYOUT": _c(_T, I, "TIRA's generic run.txt check cannot accept this layout (it needs 6 TREC columns)",
                          "on TIRA, such runs need the task's own checker"),
    "RUN-TIRA-DUPLICATE-POST": _c(_T, I, "a post listed with several formulas (TIRA reads column 3 as the docno)",
                                  "legal for ARQMath Task 2, but TIRA's generic run.txt check reads column 3 as the docno "
                                  "and rejects repeated ones: submit outside TIRA's run check or keep one formula per post"),
    "RUN-LAYOUT-VARIANT": _c(_T, I, "ARQMath Task 1 written in the 6-column TREC layout",
                             "accepted (the official scripts did, and TIRA's run check needs 6 columns)"),
    # --- ARQMath (validate/arqmath.py, validate/ranking.py)
    "RUN-NOT-ANSWER": _c(_A, E, "a Task 1 result that is not an answer post of the collection",
                         "Task 1 retrieves answers (PostTypeId 2): questions and unknown ids are never relevant"),
    "RUN-UNKNOWN-FORMULA": _c(_A, E, "a Task 2 formula id missing from the formula index",
                              "the official evaluation cannot map it to a visual id and skips it"),
    "RUN-ANSWER-COUNT": _c(_A, E, "more than one Task 3 answer for a topic", "keep only your best answer for each topic"),
    "RUN-ANSWER-LENGTH": _c(_A, E, "a Task 3 answer longer than the task allows",
                            "the limit counts Unicode characters: shorten the answer"),
    "RUN-ANSWER-EMPTY": _c(_A, E, "an empty Task 3 answer", "write the answer text in the last column"),
    "RUN-ANSWER-RANK": _c(_A, W, "a Task 3 answer with a rank other than 1", "Task 3 answers have rank 1"),
    "RUN-ANSWER-QUOTE": _c(_A, W, "a Task 3 line the official scripts read otherwise than written: a field that "
                                  "begins with \" (unclosed on its line, it swallows the next lines)",
                           "the official scripts read the run with Python's csv quoting: a field that begins with \" "
                           "loses its quotes, and if unclosed runs over the next lines, whose topics are lost; do "
                           "not begin a field with \" (or write it as csv quotes it)"),
    "RUN-ANSWER-DOLLAR": _c(_A, W, "an unbalanced $ in a Task 3 answer",
                            "an unbalanced $ breaks the LaTeX rendering assessors see: close the formula or write \\$"),
    "RUN-FILE-NAME": _c(_A, W, "the run file is not named by the task's convention",
                        "name the file as the task's file_name_pattern says"),
    "RUN-FILE-NAME-CASE": _c(_A, W, "the run file name follows the convention except for letter case",
                             "name the file as the task's file_name_pattern says, in its case"),
    # --- MathQA program runs (validate/mathqa.py)
    "RUN-PROGRAM-FILE": _c(_M, E, "a program run that cannot be read as programs (line count, JSON)",
                           "one program per line in problem order (N per problem for a beam), or JSON Lines "
                           '{"id": ..., "program": ...}'),
    "RUN-PROGRAM-SYNTAX": _c(_M, W, "a program that does not parse (unknown operator, wrong arity, bad argument)",
                             "write MathQA's linear form: op(arg,arg)|op(#0,arg)| with the suite's operators"),
    "RUN-PROGRAM-UNEVALUABLE": _c(_M, W, "a program without a real value (division by zero, root of a negative, ...)",
                                  "it scores as a guess in option matching and 0 in the published check"),
    "RUN-PROGRAM-MISSING": _c(_M, W, "a problem without a program", "answer every problem"),
    "RUN-PROGRAM-UNKNOWN": _c(_M, E, "a program for a problem id the dataset does not have",
                              "use the ids of problems.jsonl"),
    # --- the dataset (sharedtask check-input)
    "INPUT-MISSING": _c(_IN, E, "a required file of the input contract is missing",
                        "put the task's file where the input contract says"),
    "INPUT-FORMAT": _c(_IN, E, "a dataset file that does not parse in its declared format",
                       "fix the file at the line and column given"),
    "INPUT-UNREADABLE": _c(_IN, E, "a dataset file that cannot be read", "check the file's permissions"),
    "INPUT-EMPTY": _c(_IN, E, "a dataset file without records", "an empty file cannot be a valid dataset"),
    "INPUT-TOPIC-ID": _c(_IN, E, "topic ids that do not match the task's topic pattern",
                         "is this the topics file of the task?"),
    "INPUT-TOPIC-DUPLICATE": _c(_IN, E, "a topic id given twice", "give every topic once"),
    # --- a participant's image build (sharedtask/images/dockerfile.py, sharedtask/images/context.py)
    "BUILD-FROM": _c(_B, E, "FROM an image that is not one of the organizer's base images",
                     "build FROM an allowed base (ARG BASE_IMAGE, then FROM ${BASE_IMAGE}, is the project's base image)"),
    "BUILD-COPY-FROM": _c(_B, E, "COPY --from an image that is neither an earlier stage nor an allowed base image",
                          "copy from an earlier stage of your own Dockerfile (FROM ... AS name) or from your build context"),
    "BUILD-ADD-URL": _c(_B, E, "ADD (or COPY) of a URL: dockerd would fetch it on the host's network",
                        "put the file into your build context and COPY it"),
    "BUILD-REGISTRY": _c(_B, E, "an image reference that names a registry other than the organizer's",
                         "use the organizer's base images by their local names"),
    "BUILD-UNSUPPORTED": _c(_B, E, "Dockerfile syntax the organizer's builder does not vouch for (heredocs, RUN "
                            "flags, `# syntax=`, variables where an image or URL could hide, unknown instructions)",
                            "write the Dockerfile with plain instructions: scripts as files of the build context"),
    "BUILD-TAG": _c(_B, E, "a submission whose image name is one of the organizer's base images (its build would "
                    "replace that base for every later build and run)",
                    "give the submission an image name of its own, e.g. team-name/run:1"),
    "BUILD-CONTEXT": _c(_B, E, "a build context with a FIFO, socket, device, a link leaving the context, or more "
                        "files or bytes than the organizer allows",
                        "keep only regular files and folders (and links inside the context) in the build context"),
    # --- the organizer's pipeline (sharedtask demo)
    "RUN-MISSING": _c(_P, E, "the software wrote no run file", "write $outputDir/run.txt (or run.txt.gz)"),
    "RUN-UNREADABLE": _c(_P, E, "the run file could not be read", "see the reason given"),
    "RUN-OUTPUT-LINK": _c(_P, E, "the run file in $outputDir is a symbolic link (never followed by the host)",
                          "write run.txt as a regular file into $outputDir, not a link to it"),
    "RUN-OUTPUT-SPECIAL": _c(_P, E, "the run file in $outputDir is a FIFO, socket, device or directory",
                             "write run.txt as a regular file"),
    # --- a re-ranker against what it was handed (sharedtask.rerank.check)
    "RUN-NOT-CANDIDATE": _c(_P, E, "a re-ranked run lists a document the first stage did not hand over for that topic",
                            "re-rank only the candidates of $inputDataset/rerank.jsonl.gz"),
    "RUN-RERANK-DEPTH": _c(_P, E, "a re-ranked run lists more documents for a topic than were handed over",
                           "rank at most the candidates given for each topic"),
}


def code(name: str) -> Code:
    """The catalogue entry of ``name``; an unknown code is a programming error, said plainly."""
    try:
        return CATALOGUE[name]
    except KeyError:
        raise KeyError(f"finding code {name!r} is not in sharedtask.findings.codes.CATALOGUE") from None


def finding(name: str, message: str, path: str | None = None, line: int | None = None, column: int | None = None,
            hint: str | None = None) -> Finding:
    """A finding of ``name`` outside a validator's collector (no cap): severity and hint from the catalogue."""
    entry = code(name)
    return Finding(entry.severity, name, message, path, line, column, hint or entry.hint)


def markdown() -> str:
    """``docs/findings.md``: the catalogue as a table per group."""
    lines = ["# Finding codes", "",
             "Every finding of `sharedtask validate`, `check-input` and the demo carries one of these codes.",
             "Generated from `src/sharedtask/findings/codes.py` by `python -m sharedtask.findings.codes > docs/findings.md`.",
             "Severity: **E** error (the run is invalid), **W** warning, **I** info.", ""]
    groups: dict[str, list[tuple[str, Code]]] = {}
    for name, entry in CATALOGUE.items():
        groups.setdefault(entry.group, []).append((name, entry))
    for group, entries in groups.items():
        lines += [f"## {group[0].upper()}{group[1:]}", "", "| code | severity | meaning | how to fix |", "| --- | --- | --- | --- |"]
        for name, entry in entries:
            cells = (entry.meaning, entry.hint)
            meaning, hint = (c.replace("|", "\\|") for c in cells)
            lines.append(f"| `{name}` | {entry.severity.value[0].upper()} | {meaning} | {hint} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(markdown())
