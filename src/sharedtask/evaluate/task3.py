"""ARQMath-3 Task 3 (open-domain QA): the organizers' manual (AR, P@1) and automatic (LO)
measures, following their scripts (docs/evaluation.md, "ARQMath-3 Task 3"):

- ``evaluate_task3_results_manual.py``: each topic's answer has an assessment id, looked up
  in a map file ``run_name<TAB>topic<TAB>answer_id`` (the run name is the run file's name
  without extension); the run is read with Python's csv quoting (an answer that begins with
  ``"`` runs over the next lines); a repeated topic is an error only if the map names it; grades 5 (system failure) and 6 (do not
  know) count 0, 4 and above 6 are errors; AR and P@1 (grade > 1) are means over the topics
  whose answer has a judgment; unanswered topics and unjudged answers drop out.
- ``evaluate_task3_results_automatic.py``: answers are normalised (``$`` -> ``[MATH]`` /
  ``[/MATH]`` tags, whitespace collapsed, adjacent formulae merged), tokenised by the
  MathBERTa tokenizer into a **set** of tokens, and LO is the best set-F1 against the
  topic's known relevant (H+M) answers, averaged over the answered topics that have some.

Without a map file, an answer is matched to its assessment by its text among the topic's
known answers (``answers.tsv``); a text shared by known answers of different grades is
ambiguous and left unjudged (reported), never guessed.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sharedtask.errors import FormatError, SharedTaskError
from sharedtask.evaluate import readers
from sharedtask.formats import task3csv

Qrels = dict[str, dict[str, int]]


# --- reading the run and the map ------------------------------------------------------------

@dataclass
class Task3Run:
    answers: dict[str, str] = field(default_factory=dict)  # topic -> answer text, first record of each topic
    lines: dict[str, int] = field(default_factory=dict)  # topic -> line number of that record
    repeated: dict[str, list[int]] = field(default_factory=dict)  # topic -> lines of its later records
    swallowed: list[task3csv.Swallowed] = field(default_factory=list)  # lines a quoted answer runs over
    misread: list[task3csv.Misread] = field(default_factory=list)  # one-line records csv reads otherwise than written


def read_task3_run(path: Path) -> Task3Run:
    """Task 3 run ``Topic_Id Rank Score Run_Tag Sources Answer``, read as the official scripts
    read it: ``csv.reader(delimiter='\\t')`` with default quoting (sharedtask.formats.task3csv;
    evaluate_task3_results_manual.py, approach0/pya0 f2852c9, lines 17-21). An answer that begins
    with an unmatched ``"`` therefore takes the following lines, and their topics, with it.

    Each physical line is first checked by the shared reader (columns, rank, score), so a
    malformed line is still a one-line error. A repeated topic is kept in ``repeated``: whether
    it is an error depends on the answer map (``check_repeated``)."""
    for _row in readers.read_run(path, "arqmath-task3"):
        pass
    run = Task3Run()
    try:
        for row in task3csv.csv_rows(path):
            if not row.fields:
                continue  # a blank line (the official scripts stop on it: their number is undefined)
            topic = row.fields[0]
            if topic in run.answers:
                run.repeated.setdefault(topic, []).append(row.first_line)
                continue
            run.answers[topic] = "\t".join(row.fields[5:])
            run.lines[topic] = row.first_line
        run.swallowed, run.misread, _ = task3csv.quoting(path)  # csv_rows above raised already where csv stops
    except task3csv.CsvStop as exc:  # e.g. a NUL byte, or a quoted answer over csv's field size limit
        raise FormatError(path, f"cannot be read as the official scripts read it (Python's csv: {exc.reason}; "
                                "the scripts stop there)", line=exc.line) from None
    return run


def check_repeated(path: Path, run: Task3Run, answer_map: dict[str, str] | None) -> list[str]:
    """Refuse what the official manual script refuses; returns the repeated topics it ignores.

    The script looks each run topic up in the map first and raises "Repeated topic" only for a
    topic the map names; a topic the map does not name goes to its missing topics, however
    often it comes (evaluate_task3_results_manual.py, approach0/pya0 f2852c9, lines 86-93).
    Without a map there is no official procedure: an answer matched by its text must be one
    per topic, so any repeated topic is refused."""
    for topic, again in run.repeated.items():
        if answer_map is None or topic in answer_map:
            why = ("the official manual script stops on a repeated topic that its answer map names "
                   "('Repeated topic ... in ...')" if answer_map is not None else
                   "without the organizers' map (--answer-map) an answer is matched by its text, one per topic")
            raise SharedTaskError(
                f"{path}:{again[0]}: topic {topic} is answered again (first on line {run.lines[topic]}); {why}",
                hint="keep one answer per topic (sharedtask validate reports RUN-ANSWER-COUNT)")
    return sorted(run.repeated)


def read_answer_map(path: Path, run_name: str) -> dict[str, str]:
    """The official map file's rows for ``run_name``: topic -> assessment (answer) id."""
    out: dict[str, str] = {}
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            for lineno, row in enumerate(csv.reader(handle, delimiter="\t"), 1):
                if not row:
                    continue
                if len(row) != 3:
                    raise FormatError(path, f"expected 3 tab-separated columns (run name, topic, answer id), "
                                            f"found {len(row)}", line=lineno)
                if row[0] == run_name:
                    out[row[1]] = row[2]
    except OSError as exc:
        raise SharedTaskError(f"{path}: cannot read the answer map: {exc.strerror or exc}") from None
    if not out:
        raise SharedTaskError(f"the answer map {path} has no rows for run {run_name!r}",
                              hint="the official script looks the run up by its file name without extension: "
                                   "rename the run file or check the map")
    return out


# --- what the measures read ----------------------------------------------------------------

@dataclass
class Task3Input:
    run: Task3Run
    qrels: Qrels
    known: dict[str, dict[str, str]]  # topic -> {answer id: text} (answers.tsv)
    threshold: int = 2
    max_chars: int = 1200  # the automatic script refuses longer answers
    judged: dict[str, int] = field(default_factory=dict)  # topic -> grade of the run's answer
    unjudged: set[str] = field(default_factory=set)  # answered topics whose answer has no judgment
    ambiguous: dict[str, list[str]] = field(default_factory=dict)  # topic -> colliding answer ids
    exam: dict[str, list] = field(default_factory=dict)  # topic -> its exam questions (exam.jsonl), for EXAM
    grader: Any = None  # the EXAM grader (sharedtask.answers.exam.Grader); None: the offline one


def _collapse(text: str) -> str:
    return " ".join(text.split())


def check_grade(topic: str, answer_id: str, grade: int) -> int:
    """The manual script keeps any grade below 4 as it is, reads 5 and 6 as 0 and stops on 4 and
    on grades above 6 (evaluate_task3_results_manual.py, pya0 f2852c9, lines 100-107)."""
    if grade == 4 or grade > 6:
        raise SharedTaskError(f"qrels grade {grade} for topic {topic}, answer {answer_id}: Task 3 grades are 0-3, "
                              "5 (system failure) or 6 (do not know); the official script stops on it")
    return grade


def gain(grade: int) -> int:
    """5 (system failure) and 6 (do not know) count 0 (evaluate_task3_results_manual.py)."""
    return 0 if grade in (5, 6) else grade


def judge(inp: Task3Input, answer_map: dict[str, str] | None) -> None:
    """Find the grade of each answer: by the map file (official), else by its text."""
    for topic, answer in inp.run.answers.items():
        judgments = inp.qrels.get(topic, {})
        if answer_map is not None:
            answer_id = answer_map.get(topic)
            if answer_id is not None and answer_id in judgments:
                inp.judged[topic] = check_grade(topic, answer_id, judgments[answer_id])
            else:
                inp.unjudged.add(topic)
            continue
        wanted = _collapse(answer)
        ids = [aid for aid, text in inp.known.get(topic, {}).items() if aid in judgments and _collapse(text) == wanted]
        grades = {check_grade(topic, aid, judgments[aid]) for aid in ids}
        if len(grades) == 1:
            inp.judged[topic] = grades.pop()
        elif len(grades) > 1:
            inp.ambiguous[topic] = sorted(ids)
        else:
            inp.unjudged.add(topic)


# --- manual measures -----------------------------------------------------------------------

def ar(inp: Task3Input) -> dict[str, float]:
    """AR per topic whose answer is judged (official averaging)."""
    return {t: float(gain(g)) for t, g in inp.judged.items()}


def p1(inp: Task3Input) -> dict[str, float]:
    """P@1 per topic whose answer is judged: grade > 1 after 5, 6 -> 0 (official)."""
    return {t: 1.0 if gain(g) >= inp.threshold else 0.0 for t, g in inp.judged.items()}


def ar_all_topics(inp: Task3Input) -> dict[str, float]:
    """AR per qrels topic, 0 where there is no judged answer (a lower bound; our averaging)."""
    return {t: float(gain(inp.judged[t])) if t in inp.judged else 0.0 for t in inp.qrels}


def p1_all_topics(inp: Task3Input) -> dict[str, float]:
    return {t: 1.0 if t in inp.judged and gain(inp.judged[t]) >= inp.threshold else 0.0 for t in inp.qrels}


# --- lexical overlap -----------------------------------------------------------------------

_DOLLAR = re.compile(r"(?:^|\\\\|[^\\])\$")


def math_tags(answer: str) -> str:
    """``$`` delimiters -> `` [MATH] `` / `` [/MATH] ``, alternately (replace_dollars_with_math_tags).

    As in the script, the character before an unescaped ``$`` is consumed with it."""
    opening = True

    def swap(_match: re.Match[str]) -> str:
        nonlocal opening
        tag = " [MATH] " if opening else " [/MATH] "
        opening = not opening
        return tag

    return _DOLLAR.sub(swap, answer)


def normalise(answer: str) -> str:
    """normalize_answer_text: collapse whitespace, merge adjacent formulae, drop a final close tag."""
    answer = re.sub(r"\s+", " ", answer.rstrip())
    if not answer.startswith(" [MATH]"):
        answer = answer.lstrip()
    answer = answer.replace(" [/MATH] [MATH] ", " ")
    return re.sub(r" \[/MATH\]$", "", answer)


# The pre-tokenizer of byte-level BPE tokenizers (GPT-2, RoBERTa and MathBERTa, which is a
# RoBERTa): contractions, letter runs, digit runs and runs of other symbols, each with the
# space before it. MathBERTa then splits rare pre-tokens into subwords; we keep whole
# pre-tokens (its vocabulary needs a model hub): docs/evaluation.md measures the effect.
_PRETOKEN = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")


def tokens(text: str) -> frozenset[str]:
    """The token set of a normalised answer (the tokenizer runs with add_prefix_space)."""
    if not text.startswith(" "):
        text = " " + text
    return frozenset(_PRETOKEN.findall(text))


def set_f1(answer: frozenset[str], reference: frozenset[str]) -> float:
    """F1 of two token sets. The script divides by zero when nothing is shared (its number is
    undefined there); we count 0."""
    common = len(answer & reference)
    if common == 0:
        return 0.0
    precision, recall = common / len(answer), common / len(reference)
    return 2.0 * precision * recall / (precision + recall)


def references(inp: Task3Input) -> dict[str, list[frozenset[str]]]:
    """Token sets of each topic's known relevant (H+M: 1 < grade < 4) answers, empty ones left out."""
    out: dict[str, list[frozenset[str]]] = {}
    for topic, answers in inp.known.items():
        judgments = inp.qrels.get(topic, {})
        sets = {tokens(normalise(math_tags(text))) for aid, text in answers.items()
                if 1 < judgments.get(aid, 0) < 4}
        sets.discard(frozenset())
        if sets:
            out[topic] = sorted(sets, key=sorted)
    return out


def lexical_overlap(inp: Task3Input) -> dict[str, float]:
    """LO per answered topic with known relevant answers (compute_lexical_overlap)."""
    refs = references(inp)
    out: dict[str, float] = {}
    for topic, answer in inp.run.answers.items():
        if len(answer) > inp.max_chars:
            raise SharedTaskError(f"the answer to topic {topic} (line {inp.run.lines[topic]}) has {len(answer)} "
                                  f"characters; the official script refuses answers over {inp.max_chars}")
        if topic not in refs:
            continue
        mine = tokens(normalise(math_tags(answer)))
        out[topic] = max(set_f1(mine, ref) for ref in refs[topic])
    return out
