"""All-pairs tests on leaderboards, corrected by Holm–Bonferroni or Bonferroni: values by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sharedtask.cli import main
from sharedtask.evaluate import leaderboard
from sharedtask.evaluate.multiple import adjust, bonferroni, holm
from sharedtask.evaluate.result import EvaluationResult, MeasureInfo

TASK = "touche-2021-task1"


def test_holm_and_bonferroni_by_hand() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> running max 0.02, 0.03, 0.06, 0.06
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert bonferroni(p) == pytest.approx([0.04, 0.16, 0.12, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([]) == []
    # Holm never rejects less than Bonferroni
    assert all(h <= b for h, b in zip(holm(p), bonferroni(p)))
    with pytest.raises(Exception, match="unknown correction"):
        adjust(p, "sidak")


def _result(name: str, values: dict[str, float]) -> EvaluationResult:
    info = MeasureInfo(key="m", id="m", label="M", procedure="test", qrels_role="relevance", primary=True)
    return EvaluationResult(task=TASK, run=name, measures=[info], scores={"m": sum(values.values()) / len(values)},
                            per_topic={"m": values})


def test_all_pairs_with_holm_on_the_leaderboard() -> None:
    from scipy import stats

    topics = [str(t) for t in range(8)]
    a = {t: 0.8 + 0.01 * i for i, t in enumerate(topics)}
    b = {t: 0.5 + 0.03 * (i % 3) for i, t in enumerate(topics)}
    c = {t: 0.5 + 0.02 * (i % 4) for i, t in enumerate(topics)}
    results = {"a": _result("a", a), "b": _result("b", b), "c": _result("c", c)}
    board = leaderboard(results, TASK, test="ttest")
    assert board.correction == "holm"
    pairs = {(p.run_a, p.run_b): p for p in board.pairs_of("m")}
    # the better mean first: a (0.835) > c (0.53) > b (0.52625)
    assert set(pairs) == {("a", "b"), ("a", "c"), ("c", "b")}
    raw = {key: stats.ttest_rel([results[key[0]].per_topic["m"][t] for t in topics],
                                [results[key[1]].per_topic["m"][t] for t in topics]).pvalue for key in pairs}
    ordered = sorted(raw, key=raw.get)
    expected = {}
    running = 0.0
    for i, key in enumerate(ordered):  # Holm by hand: (m - i) * p, running maximum
        running = max(running, min(1.0, (3 - i) * raw[key]))
        expected[key] = running
    for key, pair in pairs.items():
        assert pair.p == pytest.approx(raw[key])
        assert pair.p_adjusted == pytest.approx(expected[key])
        assert board.survives(pair) == (expected[key] < 0.05)
    assert board.survives(pairs[("a", "b")])  # a is far above b on every topic
    data = board.to_json()["significance"]["all_pairs"]
    assert data["correction"] == "holm" and len(data["tests"]) == 3
    bonf = leaderboard(results, TASK, test="ttest", correction="bonferroni")
    for pair in bonf.pairs:
        assert pair.p_adjusted == pytest.approx(min(1.0, 3 * pair.p))


def test_cli_prints_the_pairs_and_refuses_unknown_corrections(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    fixtures = Path(__file__).parent / "fixtures" / "eval" / "arqmath-task1"
    order = {"A.1": ["10", "15", "11", "14", "12", "13"], "A.2": ["22", "21", "20"], "A.3": ["30"]}
    runs = []
    for name, turn in (("good", 0), ("mid", 1), ("bad", 2)):
        path = tmp_path / f"{name}.tsv"
        path.write_text("".join(f"{topic}\t{doc}\t{rank}\t{100 - rank}\t{name}\n" for topic, docs in order.items()
                                for rank, doc in enumerate(docs[turn:] + docs[:turn], 1)), encoding="utf-8")
        runs.append(str(path))
    assert main(["evaluate", *runs, "--task", "arqmath-3-task1", "--qrels", str(fixtures / "qrels.tsv"),
                 "--significance", "--correction", "bonferroni"]) == 0
    out = capsys.readouterr().out
    assert "all pairs on" in out and "bonferroni correction" in out and "survives" in out
    assert main(["evaluate", *runs, "--task", "arqmath-3-task1", "--qrels", str(fixtures / "qrels.tsv"),
                 "--significance", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["significance"]["all_pairs"]["correction"] == "holm"
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", *runs, "--task", "arqmath-3-task1", "--correction", "sidak"])
    assert exc.value.code == 2
