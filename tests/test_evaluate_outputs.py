"""Leaderboard, significance test, prototext read by tira's own parsers, TIRA mode, CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sharedtask.cli import main
from sharedtask.evaluate import evaluate, leaderboard
from sharedtask.evaluate.leaderboard import paired_p_value
from sharedtask.evaluate.prototext import write_prototext
from sharedtask.evaluate.tira import evaluate_tira

FIX = Path(__file__).parent / "fixtures" / "eval"
T1 = FIX / "arqmath-task1"
TOUCHE = FIX / "touche-2021"


def _runs(tmp_path: Path) -> dict[str, Path]:
    """Three Task 1 runs over the fixture qrels: good (ideal order), mid, bad (reversed)."""
    order = {"A.1": ["10", "15", "11", "14", "12", "13"], "A.2": ["22", "21", "20"], "A.3": ["30"],
             "A.4": ["40"]}
    paths = {}
    for name, transform in [("good", lambda d: d), ("bad", lambda d: d[::-1]),
                            ("mid", lambda d: d[1:] + d[:1])]:
        p = tmp_path / f"{name}.tsv"
        with p.open("w") as f:
            for topic, docs in order.items():
                for rank, doc in enumerate(transform(docs), 1):
                    f.write(f"{topic}\t{doc}\t{rank}\t{100 - rank}\t{name}\n")
        paths[name] = p
    return paths


def test_leaderboard_sorted_by_primary_with_json_and_csv(tmp_path):
    results = {n: evaluate(p, "arqmath-3-task1", qrels=T1 / "qrels.tsv", per_topic=True)
               for n, p in _runs(tmp_path).items()}
    board = leaderboard(results, "arqmath-3-task1")
    assert [r for r, _ in board.rows] == ["good", "mid", "bad"]
    assert board.primary == "ndcg_prime"
    data = board.to_json()
    assert data["runs"][0]["run"] == "good" and data["runs"][0]["rank"] == 1
    assert data["runs"][0]["scores"]["ndcg_prime"] == pytest.approx(results["good"].scores["ndcg_prime"])
    lines = board.to_csv().splitlines()
    assert lines[0] == "rank,run,ndcg_prime,map_prime,p10_prime,bpref_prime"
    assert lines[1].startswith("1,good,1.000000")


def test_paired_tests_agree_with_scipy_by_hand():
    from scipy import stats

    a = {"1": 0.9, "2": 0.8, "3": 0.7, "4": 0.95, "5": 0.85}
    b = {"1": 0.1, "2": 0.2, "3": 0.3, "4": 0.15, "5": 0.05, "6": 1.0}  # topic 6 is unpaired
    p, n = paired_p_value(a, b, "ttest")
    keys = sorted(a)
    assert n == 5
    assert p == pytest.approx(stats.ttest_rel([a[k] for k in keys], [b[k] for k in keys]).pvalue)
    p_perm, _ = paired_p_value(a, b, "permutation")
    # 5 pairs -> 2^5 = 32 sign flips, all differences positive: exact two-sided p = 2/32
    assert p_perm == pytest.approx(2 / 32)
    assert paired_p_value(a, a, "ttest") == (1.0, 5)


def test_significance_marks_in_the_table(tmp_path):
    from rich.console import Console

    results = {n: evaluate(p, "arqmath-3-task1", qrels=T1 / "qrels.tsv", per_topic=True)
               for n, p in _runs(tmp_path).items()}
    board = leaderboard(results, "arqmath-3-task1", test="ttest", alpha=0.99)
    assert board.best["ndcg_prime"] == "good"
    assert "good" not in board.p_values
    assert board.significant("bad", "ndcg_prime")  # alpha 0.99: any real difference is marked
    console = Console(record=True, width=200)
    console.print(board.table())
    text = console.export_text()
    assert "mid  │ 0.9267†" in text or "0.9267†" in text
    assert "paired" in text and "ttest" in text
    assert "0.1750†" not in text  # P′@10 is the same for all runs: p = 1, no mark
    assert board.to_json()["runs"][1]["p_values"]["ndcg_prime"]["topics"] == 4


def test_prototext_is_read_by_tiras_own_parsers(tmp_path):
    from tira.io_utils import load_output_of_directory, parse_prototext_key_values

    result = evaluate(TOUCHE / "run.txt", "touche-2021-task1", truth_dir=TOUCHE)
    path = write_prototext(result, tmp_path)
    assert path.name == "evaluation.prototext"
    parsed = list(parse_prototext_key_values(str(path)))
    assert len(parsed) == 4
    by_key = {m["key"]: m["value"] for m in parsed}
    assert by_key["nDCG@5 (relevance)"] == pytest.approx(result.scores["ndcg5_official"], abs=1e-9)
    assert by_key["nDCG@5 (quality)"] == pytest.approx(result.scores["ndcg5_official_quality"], abs=1e-9)
    loaded = load_output_of_directory(tmp_path, evaluation=True)
    assert loaded == by_key


def test_tira_mode_reads_run_directory_and_truth_from_environment(tmp_path, monkeypatch):
    run_dir, truth, out = tmp_path / "input-run", tmp_path / "truth", tmp_path / "out"
    run_dir.mkdir()
    shutil.copy(T1 / "run.tsv", run_dir / "run.txt")
    (run_dir / ".tracking-results.yml").write_text("tracked: yes\n")  # TIRA may add it
    shutil.copytree(T1, truth)
    monkeypatch.setenv("inputRun", str(run_dir))
    monkeypatch.setenv("inputDataset", str(truth))
    monkeypatch.setenv("outputDir", str(out))
    assert main(["evaluate", "--tira", "--task", "arqmath-3-task1"]) == 0
    from tira.io_utils import load_output_of_directory

    loaded = load_output_of_directory(out, evaluation=True)
    direct = evaluate(T1 / "run.tsv", "arqmath-3-task1", qrels=T1 / "qrels.tsv")
    assert loaded["nDCG′"] == pytest.approx(direct.scores["ndcg_prime"], abs=1e-9)
    assert set(loaded) == {"nDCG′", "MAP′", "P′@10", "bpref′"}


def test_tira_mode_without_run_file_is_a_clear_error(tmp_path):
    (tmp_path / "run").mkdir()
    with pytest.raises(Exception, match="no run.txt"):
        evaluate_tira("arqmath-3-task1", tmp_path / "run", T1, tmp_path / "o")


def test_cli_single_run_json(capsys):
    assert main(["evaluate", str(T1 / "run.tsv"), "--task", "arqmath-3-task1",
                 "--qrels", str(T1 / "qrels.tsv"), "--json", "--per-topic"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["primary_measure"] == "ndcg_prime"
    assert set(data["per_topic"]["ndcg_prime"]) == {"A.1", "A.2"}


def test_cli_leaderboard_csv_with_significance(tmp_path, capsys):
    runs = _runs(tmp_path)
    assert main(["evaluate", *map(str, runs.values()), "--task", "arqmath-3-task1",
                 "--qrels", str(T1 / "qrels.tsv"), "--csv", "--significance", "permutation"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("p_bpref_prime")
    assert [line.split(",")[1] for line in lines[1:]] == ["good.tsv", "mid.tsv", "bad.tsv"]


def test_cli_table_and_per_topic(capsys):
    assert main(["evaluate", str(TOUCHE / "run.txt"), "--task", "touche-2021-task1",
                 "--truth", str(TOUCHE), "--per-topic"]) == 0
    out = capsys.readouterr().out
    assert "(primary)" in out and "per topic" in out and "S0000000" not in out


@pytest.mark.parametrize("args, message", [
    (["--qrels", str(T1 / "run.tsv")], "looks like a run"),
    (["--qrels", str(T1 / "missing.tsv")], "cannot open"),
    ([], "scored with the official qrels, as no --qrels/--truth was given"),  # the sample's topics are not official
])
def test_cli_user_errors_exit_2_with_one_line(args, message, capsys):
    assert main(["evaluate", str(T1 / "run.tsv"), "--task", "arqmath-3-task1", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cli_run_for_another_task_exit_2(capsys):
    assert main(["evaluate", str(T1 / "run.tsv"), "--task", "touche-2021-task1",
                 "--truth", str(TOUCHE)]) == 2
    assert "expects a TREC run" in capsys.readouterr().err
