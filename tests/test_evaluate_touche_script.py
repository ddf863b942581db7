"""Touché's official nDCG@5 against the organizers' script itself, read line by line.

The script is ``clef21/evaluate.py`` of touche-webis-de/touche-code, commit
82329a496e3ea33a7a463f76c012ccd575e3c4cc ("add clef21 shared evaluation script", the file's
only version). ``_clef21`` below is our own transcription of what it computes, in plain
Python, each step citing the lines it follows; the script's code is not in this repository.
A hypothesis differential (1,000 runs) compares ``sharedtask evaluate`` with it, including
the edge shapes: topics the run does not rank, run topics outside the qrels, documents listed
twice, unjudged documents in the top 5, ranks out of file order, -2 and other negative grades,
topics without a positive judgment.

Where the script's figure is not defined we compare nothing and say why: equal ranks at the
top-5 cut (pandas sorts them with an unstable sort, lines 64-67 and 29-33) and a topic whose
IDCG is 0 (0/0 is NaN, left out of pandas' mean; x/0 is an infinity, and the script's mean
with it). A run with several tags is not generated: the script cuts the top 5 per topic over
all tags together (line 33) and scores per (topic, tag); TIRA runs carry one tag.

With ``SHAREDTASK_TOUCHE_GIT`` set to a git copy of touche-webis-de/touche-code, one more test
loads the script itself at that commit (``git show``, into the test's tmp folder only) and
checks the transcription against it on generated runs; without it that test is skipped.
"""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sharedtask.errors import SharedTaskError
from sharedtask.evaluate import evaluate

TOL = 1e-9
DEPTH = 5
COMMIT = "82329a496e3ea33a7a463f76c012ccd575e3c4cc"
RUNS = settings(max_examples=1000, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

RunRow = tuple[str, str, int, float]  # topic, doc, rank, score (Q0 and the tag written as constants)
QrelsRow = tuple[str, str, int]  # topic, doc, grade


def _clef21(run: list[RunRow], qrels: list[QrelsRow], depth: int = DEPTH) -> dict[str, float]:
    """Per-topic nDCG@depth of clef21/evaluate.py (one run tag): NaN or an infinity where it
    divides by an IDCG of 0. Topics absent from the result are absent from the script's table."""
    # load_qrels, lines 15-22: every qrels line a row; the grade -2 replaced by 0, others kept.
    judged = [(t, d, 0 if g == -2 else g) for t, d, g in qrels]
    # load_runs, lines 25-49: rows sorted by (Topic descending, Rank ascending), then the first
    # `depth` rows of each topic; Q0 and the score column dropped (the score plays no part).
    by_topic: dict[str, list[tuple[int, str]]] = {}
    for topic, doc, rank, _ in run:
        by_topic.setdefault(topic, []).append((rank, doc))
    cut = {t: sorted(rows, key=lambda r: r[0])[:depth] for t, rows in by_topic.items()}
    out: dict[str, float] = {}
    for topic, rows in cut.items():
        # calculate_scores, lines 59-63: a left merge on (Topic, ID), then the rows without a
        # qrels grade dropped: each cut row once per qrels line of its (topic, doc), in run order.
        merged = [(rank, g) for rank, doc in rows for t, d, g in judged if t == topic and d == doc]
        if not merged:
            continue  # the topic has no row left: it is not in the table, nor in the mean
        # dcg, lines 53-55, applied per (Topic, Tag) to the rows sorted by Rank (lines 64-74):
        # the first k gains, the i-th (from 0) divided by log2(2 + i).
        gains = [g for _, g in sorted(merged, key=lambda r: r[0])][:depth]
        dcg = sum(g / math.log2(2 + i) for i, g in enumerate(gains))
        # IDCG, lines 75-83: the topic's qrels grades sorted descending, the first k, same dcg.
        ideal = sorted((g for t, _, g in judged if t == topic), reverse=True)[:depth]
        idcg = sum(g / math.log2(2 + i) for i, g in enumerate(ideal))
        # normalize, lines 57-58 and 84: np.float64(DCG - 0) / np.float64(IDCG - 0).
        if idcg == 0:
            out[topic] = math.nan if dcg == 0 else math.copysign(math.inf, dcg)
        else:
            out[topic] = dcg / idcg
    return out


def _clef21_mean(per_topic: dict[str, float]) -> float:
    """calculate_mean, lines 95-104: pandas' mean over the topics, NaN left out (NaN if none)."""
    values = [v for v in per_topic.values() if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def _tied_at_cut(run: list[RunRow], depth: int = DEPTH) -> set[str]:
    """Topics where equal ranks lie among the first depth + 1 by rank: the script's unstable
    sorts (lines 29-33, 64-67) decide their number there."""
    ranks: dict[str, list[int]] = {}
    for topic, _, rank, _ in run:
        ranks.setdefault(topic, []).append(rank)
    out = set()
    for topic, values in ranks.items():
        first = sorted(values)[:depth + 1]
        if len(set(first)) < len(first):
            out.add(topic)
    return out


@st.composite
def touche_case(draw) -> tuple[list[RunRow], list[QrelsRow]]:
    topics = [str(t) for t in range(51, 51 + draw(st.integers(1, 5)))]
    qrels: list[QrelsRow] = []
    for topic in topics:
        if draw(st.integers(0, 9)) == 0:
            continue  # a run topic the qrels do not know
        for doc in draw(st.lists(st.integers(0, 11), unique=True, max_size=8)):
            qrels.append((topic, f"S{topic}d{doc}", draw(st.sampled_from([-2, -2, -1, 0, 0, 1, 2, 3]))))
    if not qrels:
        qrels.append(("51", "S51d0", 1))
    run: list[RunRow] = []
    for topic in topics:
        if draw(st.integers(0, 7)) == 0:
            continue  # a qrels topic the run does not rank
        n = draw(st.integers(1, 9))
        docs = [f"S{topic}d{draw(st.integers(0, 13))}" for _ in range(n)]  # repeats and unjudged documents
        ranks = draw(st.permutations(range(1, n + 1)))  # file order is not rank order
        if draw(st.integers(0, 4)) == 0:
            ranks = [r + draw(st.sampled_from([0, 0, 3])) for r in ranks]  # gaps, and sometimes ties
        for doc, rank in zip(docs, ranks):
            run.append((topic, doc, rank, draw(st.sampled_from([1.0, 0.5, 0.25, 2.0]))))
    if not run:
        run.append((topics[0], f"S{topics[0]}d0", 1, 1.0))
    return run, qrels


def _write(folder: Path, run: list[RunRow], qrels: list[QrelsRow]) -> tuple[Path, Path]:
    run_file, qrels_file = folder / "run.txt", folder / "qrels.txt"
    run_file.write_text("".join(f"{t} Q0 {d} {r} {s} tag\n" for t, d, r, s in run))
    qrels_file.write_text("".join(f"{t} 0 {d} {g}\n" for t, d, g in qrels))
    return run_file, qrels_file


@RUNS
@given(touche_case())
def test_official_ndcg5_equals_clef21_evaluate(case) -> None:
    run, qrels = case
    theirs = _clef21(run, qrels)
    tied = _tied_at_cut(run)
    undefined = {t for t, v in theirs.items() if not math.isfinite(v)}
    event("a qrels topic unranked" if {t for t, _, _ in qrels} - {t for t, *_ in run} else "every qrels topic ranked")
    event("a document listed twice" if len({(t, d) for t, d, *_ in run}) < len(run) else "no repeat")
    event("a topic with IDCG 0" if undefined else "every IDCG positive or negative")
    with tempfile.TemporaryDirectory() as tmp:
        run_file, qrels_file = _write(Path(tmp), run, qrels)
        try:
            result = evaluate(run_file, "touche-2021-task1", qrels=qrels_file, per_topic=True)
        except SharedTaskError as exc:  # no run topic in the qrels: the script's table is empty too
            assert not theirs and "qrels" in exc.message, exc
            return
    ours = result.per_topic["ndcg5_official"]
    for topic in undefined:
        assert topic not in ours  # no number where the script divides by 0
    compare = set(theirs) - tied - undefined
    assert set(ours) - tied == compare
    for topic in compare:
        assert abs(ours[topic] - theirs[topic]) <= TOL, (topic, ours[topic], theirs[topic])
    if not tied and not undefined:
        official = _clef21_mean(theirs)
        if math.isnan(official):
            assert math.isnan(result.scores["ndcg5_official"])
        else:
            assert abs(result.scores["ndcg5_official"] - official) <= TOL


def test_the_transcription_by_hand() -> None:
    """One topic worked out from the script's lines: the top 5 by rank (not file order) is
    d1 (rank 1, unjudged), d2 (2, grade -2 -> 0), d3 (3, grade 2), d3 again (4), d5 (5, grade 1);
    d6 (rank 6, grade 3) is cut. Judged rows re-indexed: gains 0, 2, 2, 1 at positions 0-3:
    DCG = 2/log2(3) + 2/log2(4) + 1/log2(5). Ideal: 3, 2, 1, 0 -> 3 + 2/log2(3) + 1/log2(4)."""
    run = [("51", "d6", 6, 9.0), ("51", "d3", 3, 1.0), ("51", "d1", 1, 1.0), ("51", "d2", 2, 1.0),
           ("51", "d5", 5, 1.0), ("51", "d3", 4, 1.0)]
    qrels = [("51", "d2", -2), ("51", "d3", 2), ("51", "d5", 1), ("51", "d6", 3), ("51", "d7", 0)]
    dcg = 2 / math.log2(3) + 2 / math.log2(4) + 1 / math.log2(5)
    idcg = 3 + 2 / math.log2(3) + 1 / math.log2(4)
    assert _clef21(run, qrels) == {"51": pytest.approx(dcg / idcg, abs=1e-15)}
    with tempfile.TemporaryDirectory() as tmp:
        run_file, qrels_file = _write(Path(tmp), run, qrels)
        result = evaluate(run_file, "touche-2021-task1", qrels=qrels_file, per_topic=True)
    assert result.per_topic["ndcg5_official"]["51"] == pytest.approx(dcg / idcg, abs=TOL)


# --- the script itself, where the user has a copy ------------------------------------------

_LOADED: dict[str, object] = {}


def _official_module(tmp: Path):  # noqa: ANN202 - the organizers' module
    git = os.environ.get("SHAREDTASK_TOUCHE_GIT")
    if git in _LOADED:
        return _LOADED[git]
    if not git or not Path(git).is_dir():
        pytest.skip("set SHAREDTASK_TOUCHE_GIT to a git copy of touche-webis-de/touche-code to run "
                    "clef21/evaluate.py itself")
    pytest.importorskip("pandas")
    source = subprocess.run(["git", "--git-dir", git, "show", f"{COMMIT}:clef21/evaluate.py"], capture_output=True)
    if source.returncode != 0:
        pytest.skip(f"{git} has no commit {COMMIT}: {source.stderr.decode().strip()}")
    path = tmp / "clef21_evaluate.py"
    path.write_bytes(source.stdout)
    spec = importlib.util.spec_from_file_location("clef21_evaluate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _LOADED[git] = module
    return module


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(case=touche_case())
def test_the_transcription_equals_the_script_itself(tmp_path: Path, case) -> None:
    import warnings

    official = _official_module(tmp_path)
    run, qrels = case
    tied = _tied_at_cut(run)
    theirs = _clef21(run, qrels)
    with tempfile.TemporaryDirectory() as tmp:
        run_file, qrels_file = _write(Path(tmp), run, qrels)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pandas' deprecations and numpy's 0/0 inside the script
            try:
                scores = official.calculate_scores(official.load_runs(str(run_file), DEPTH),
                                                   official.load_qrels(str(qrels_file)), DEPTH)
            except ValueError:  # pandas cannot assign the NDCG column of an empty table
                assert theirs == {}  # no topic has a judged document in its top 5
                return
    script = {str(t): float(v) for t, v in zip(scores["Topic"], scores[f"nDCG@{DEPTH}"])}
    assert set(script) == set(theirs)
    for topic in set(script) - tied:
        a, b = script[topic], theirs[topic]
        assert (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= TOL, (topic, a, b)
