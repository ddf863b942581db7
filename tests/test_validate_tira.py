"""Compatibility with TIRA: whatever the validator accepts passes ``tira.check_format``.

A corpus of generated runs (valid ones and ones broken in every way the rules know,
plus seeded random damage) is validated; each accepted run is placed as ``run.txt``
in an output directory and checked with TIRA's own ``run.txt`` check. The fixed
version of every run (``--fix``) must validate clean and pass TIRA too. Covers the
TREC 6-column layouts: Touché, ARQMath Task 1 (TREC variant) and Task 2.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from sharedtask.findings import Severity
from sharedtask.spec import load_task
from sharedtask.validate import fix_run, validate

tira_check = pytest.importorskip("tira.check_format")


def tira_ok(run: Path) -> tuple[bool, str]:
    out = run.parent / (run.name + ".tira")
    out.mkdir()
    (out / "run.txt").write_bytes(run.read_bytes())
    status, msg = tira_check.check_format(out, "run.txt")
    return status == tira_check.FormatMsgType.OK, str(msg)


def _trec(topic_prefix: str, doc: Callable[[int], str], q0: str = "Q0", sep: str = " ") -> list[str]:
    lines = []
    for t in range(1, 6):
        for r in range(1, 9):
            lines.append(sep.join([f"{topic_prefix}{t}", q0, doc(t * 100 + r), str(r), f"{30 - r * 1.75:.2f}", "tag"]))
    return lines


def touche() -> list[str]:
    return _trec("5", lambda i: f"S{i:08x}-A{i:08x}")


def arq1_trec() -> list[str]:
    return _trec("A.30", str, sep="\t")


def arq2() -> list[str]:
    lines = []
    for t in range(1, 6):
        for r in range(1, 9):
            lines.append("\t".join([f"B.30{t}", str(t * 1000 + r), str(t * 100 + r), str(r), f"{30 - r * 1.75:.2f}", "tag"]))
    return lines


BASES: dict[str, Callable[[], list[str]]] = {
    "touche-2021-task1": touche,
    "arqmath-3-task1": arq1_trec,
    "arqmath-3-task2": arq2,
}

Mutation = Callable[[bytes], bytes]

MUTATIONS: dict[str, Mutation] = {
    "none": lambda b: b,
    "bom": lambda b: b"\xef\xbb\xbf" + b,
    "crlf": lambda b: b.replace(b"\n", b"\r\n"),
    "lone-cr": lambda b: b.replace(b"tag\n", b"t\rag\n", 1),
    "nul": lambda b: b.replace(b"tag\n", b"t\x00ag\n", 1),
    "latin1": lambda b: b.replace(b"tag\n", b"t\xe4g\n", 1),
    "nbsp": lambda b: b.replace(b"tag\n", "\u00a0tag\n".encode(), 1),
    "blank": lambda b: b.replace(b"\n", b"\n\n", 1),
    "comment": lambda b: b"# comment\n" + b,
    "comment-6": lambda b: b"# a b 1 2 c\n" + b,
    "five-cols": lambda b: b.replace(b"tag\n", b"\n", 1),
    "seven-cols": lambda b: b.replace(b"tag\n", b"tag extra\n", 1),
    "float-rank": lambda b: _field(b, 3, b"1.0"),
    "nan": lambda b: _field(b, 4, b"nan"),
    "inf": lambda b: _field(b, 4, b"-inf"),
    "word-score": lambda b: _field(b, 4, b"high"),
    "underscore": lambda b: _field(b, 4, b"1_0"),
    "sci": lambda b: _field(b, 4, b"2.9e1"),
    "dup": lambda b: b + b.split(b"\n")[0] + b"\n",
    "tie": lambda b: _field(b, 4, b"28.25"),
    "two-topics": lambda b: b"\n".join(ln for ln in b.split(b"\n") if ln and ln.split()[0][-1:] in b"12") + b"\n",
    "four-lines": lambda b: b"\n".join(b.split(b"\n")[:4]) + b"\n",
    "empty": lambda b: b"",
    "interleaved": lambda b: b"\n".join(_interleave(b.split(b"\n")[:-1])) + b"\n",
    "no-final-newline": lambda b: b.rstrip(b"\n"),
    "trailing-space": lambda b: b.replace(b"tag\n", b"tag \n"),
}


def _field(data: bytes, index: int, value: bytes) -> bytes:
    lines = data.split(b"\n")
    sep = b"\t" if b"\t" in lines[0] else b" "
    parts = lines[1].split(sep)
    parts[index] = value
    lines[1] = sep.join(parts)
    return b"\n".join(lines)


def _interleave(lines: list[bytes]) -> list[bytes]:
    return lines[0::2] + lines[1::2]


def _random_damage(data: bytes, rnd: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rnd.randint(1, 4)):
        op = rnd.randrange(3)
        pos = rnd.randrange(len(b)) if b else 0
        if op == 0 and b:
            del b[pos]
        elif op == 1:
            b.insert(pos, rnd.choice(b" \t\n\r0123456789.-eQ#xA\x00\xff"))
        elif b:
            b[pos] = rnd.choice(b" \t\n0123456789.-Q")
    return bytes(b)


def corpus() -> list[tuple[str, str, bytes]]:
    items = []
    rnd = random.Random(20240601)
    for task, make in BASES.items():
        base = ("\n".join(make()) + "\n").encode()
        for name, mutate in MUTATIONS.items():
            items.append((task, name, mutate(base)))
        for i in range(25):
            items.append((task, f"random-{i}", _random_damage(base, rnd)))
    return items


CORPUS = corpus()


@pytest.mark.parametrize(("task", "name", "data"), CORPUS, ids=[f"{t}-{n}" for t, n, _ in CORPUS])
def test_accepted_runs_pass_tira_and_fixed_runs_too(tmp_path: Path, task: str, name: str, data: bytes) -> None:
    spec = load_task(task)
    run = tmp_path / "submitted.txt"
    run.write_bytes(data)
    result = validate(run, spec)
    # Task 2 (ARQMath): several formulas of one post are legal, TIRA's generic check reads the post
    # id as docno and rejects them; we accept with a warning that says exactly this.
    if result.valid and "RUN-TIRA-DUPLICATE-POST" not in result.codes():
        ok, msg = tira_ok(run)
        assert ok, f"we accepted a run TIRA rejects: {msg}"
    fixed = tmp_path / "fixed.txt"
    report = fix_run(run, spec, fixed)
    assert report.after is not None
    tira_minimum = {"RUN-TIRA-MIN-LINES", "RUN-TIRA-MIN-TOPICS", "RUN-EMPTY"}
    if report.after.codes() & tira_minimum:
        return  # too little content left to be a run: nothing to fix
    problems = [f for f in report.after.findings if f.severity is not Severity.INFO
                and f.code not in ("RUN-DOC-ID", "RUN-TOPIC-ID", "RUN-TIRA-DUPLICATE-POST")]
    if not report.after.codes() & {"RUN-DOC-ID", "RUN-TOPIC-ID"}:
        assert problems == [], problems
        if "RUN-TIRA-DUPLICATE-POST" not in report.after.codes():
            ok, msg = tira_ok(fixed)
            assert ok, msg


def test_corpus_exercises_both_outcomes(tmp_path: Path) -> None:
    """The compatibility test can fail: TIRA rejects some runs and we reject all of those."""
    accepted = rejected_by_tira = 0
    for i, (task, _name, data) in enumerate(CORPUS):
        run = tmp_path / f"r{i}.txt"
        run.write_bytes(data)
        result = validate(run, load_task(task))
        valid = result.valid and "RUN-TIRA-DUPLICATE-POST" not in result.codes()
        tira_valid, _ = tira_ok(run)
        accepted += valid
        rejected_by_tira += not tira_valid
        assert not (valid and not tira_valid)
    assert accepted >= 10 and rejected_by_tira >= 10


def test_fix_orders_ties_as_trec_eval_and_makes_scores_distinct(tmp_path: Path) -> None:
    import pytrec_eval

    spec = load_task("touche-2021-task1")
    lines = touche()
    parts = lines[2].split(" ")
    parts[4] = lines[1].split(" ")[4]  # ranks 2 and 3 of topic 51 tie
    lines[2] = " ".join(parts)
    lines.append(lines[0])  # and a duplicate
    run = tmp_path / "run.txt"
    run.write_text("\n".join(lines) + "\n")
    report = fix_run(run, spec, tmp_path / "fixed.txt")
    assert report.changes["duplicate documents dropped"] == 1
    assert report.changes["tied scores made distinct"] == 1
    assert report.after is not None and report.after.valid
    assert [f.code for f in report.after.findings if f.severity is not Severity.INFO] == []
    fixed = (tmp_path / "fixed.txt").read_text().splitlines()
    topic51 = [ln.split(" ") for ln in fixed if ln.startswith("51 ")]
    assert [p[3] for p in topic51] == [str(r) for r in range(1, 9)]
    # trec_eval on the ORIGINAL run orders the tie by docno descending: the fixed file says the same
    run_dict: dict[str, dict[str, float]] = {}
    for ln in lines[:-1]:
        p = ln.split(" ")
        run_dict.setdefault(p[0], {})[p[2]] = float(p[4])
    tie_docs = {lines[1].split(" ")[2], lines[2].split(" ")[2]}
    first = max(tie_docs)
    qrels = {"51": {first: 1, min(tie_docs): 0, topic51[0][2]: 0}}
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"})
    assert ev.evaluate({"51": run_dict["51"]})["51"]["recip_rank"] == 0.5  # first of the tie -> rank 2
    assert [p[2] for p in topic51[1:3]] == [first, min(tie_docs)]
