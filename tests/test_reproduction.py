"""Reproduction measures and ``sharedtask compare``: values computed by hand on tiny runs,
and agreement with repro_eval (the measures' reference implementation) on random runs."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from sharedtask.cli import main
from sharedtask.evaluate import reproduction as rm
from sharedtask.evaluate.compare import compare

TASK = "touche-2021-task1"


def _write_run(path: Path, topics: dict[str, list[str]], tag: str = "t") -> Path:
    """A TREC run whose scores decrease with the rank (n, n-1, ...)."""
    lines = []
    for topic, docs in topics.items():
        for rank, doc in enumerate(docs, 1):
            lines.append(f"{topic} Q0 {doc} {rank} {len(docs) - rank + 1} {tag}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


ORIGINAL = {"1": ["d1", "d2", "d3", "d4"], "2": ["e1", "e2"]}
REPRODUCED = {"1": ["d2", "d1", "d3", "d5"], "2": ["e1", "e2"]}


# --- the measures, by hand ------------------------------------------------------------------

def test_ktu_by_hand() -> None:
    # union sorted: d1 d2 d3 d4 d5 -> original 0 1 2 3, reproduced 1 0 2 4:
    # of the 6 position pairs only (1, 2) is discordant: tau = (5 - 1) / 6
    assert rm.ktu(ORIGINAL["1"], REPRODUCED["1"]) == pytest.approx(4 / 6)
    assert rm.ktu(["a", "b", "c"], ["c", "b", "a"]) == pytest.approx(-1.0)
    assert rm.ktu(["a"], ["a"]) is None  # one position: tau is undefined
    assert rm.ktu(["a", "b"], ["a", "b"]) == 1.0


def test_rbo_by_hand() -> None:
    # depth 4, p = 0.5: overlaps 0/1, 2/2, 3/3, 3/4 weighted 1, .5, .25, .125; normalised by 1.875
    expected = (0 + 0.5 * 1 + 0.25 * 1 + 0.125 * 0.75) / 1.875
    assert expected == pytest.approx(0.45)
    assert rm.rbo(ORIGINAL["1"], REPRODUCED["1"], p=0.5) == pytest.approx(0.45)
    assert rm.rbo(["a", "b"], ["a", "b"], p=0.95) == 1.0
    assert rm.rbo(["a", "b"], ["c", "d"], p=0.95) == 0.0
    assert rm.rbo(["a"], [], p=0.9) == 0.0


def test_rmse_er_dri_ttest_by_hand() -> None:
    # topic 3 is missing from the original: it scores 0 there
    assert rm.rmse({"1": 0.5, "2": 1.0}, {"1": 0.25, "2": 1.0, "3": 0.5}) == pytest.approx(
        math.sqrt((0.25**2 + 0 + 0.5**2) / 3))
    orig_adv, orig_base = {"1": 0.8, "2": 0.6}, {"1": 0.4, "2": 0.4}
    rep_adv, rep_base = {"1": 0.7, "2": 0.5}, {"1": 0.4, "2": 0.5}
    # mean improvements: original (0.4 + 0.2) / 2 = 0.3, reproduction (0.3 + 0) / 2 = 0.15
    assert rm.effect_ratio(orig_adv, orig_base, rep_adv, rep_base) == pytest.approx(0.5)
    # RI original (0.7 - 0.4) / 0.4 = 0.75; reproduction (0.6 - 0.45) / 0.45 = 1/3
    assert rm.delta_ri(orig_adv, orig_base, rep_adv, rep_base) == pytest.approx(0.75 - 1 / 3)
    assert rm.effect_ratio(orig_base, orig_base, rep_adv, rep_base) is None  # no original effect
    # differences (-1, 0): t = -0.5 / (0.7071 / sqrt 2) = -1 with 1 df (Cauchy): p = P(|T| > 1) = 0.5
    assert rm.paired_ttest({"1": 1.0, "2": 1.0}, {"1": 0.0, "2": 1.0}) == (pytest.approx(0.5), 2)
    assert rm.paired_ttest({"1": 0.3, "2": 0.2}, {"1": 0.3, "2": 0.2}) == (1.0, 2)


def test_ranking_is_trec_eval_order() -> None:
    # score descending; equal scores (as C floats) by docno descending
    assert rm.ranking({"a": 1.0, "b": 2.0, "c": 1.0, "d": 1.00000001}) == ["b", "d", "c", "a"]


# --- agreement with repro_eval ---------------------------------------------------------------

def test_agrees_with_repro_eval_on_random_runs() -> None:
    """repro_eval is the authors' implementation (test dependency only, see the module doc)."""
    document_order = pytest.importorskip("repro_eval.measure.document_order")
    effectiveness = pytest.importorskip("repro_eval.measure.effectiveness")
    rng = random.Random(17)
    for _ in range(200):
        docs = [f"d{i}" for i in range(40)]
        n = rng.randint(2, 20)
        a, b = rng.sample(docs, n), rng.sample(docs, n)  # repro_eval needs equal lengths for KTU
        orig = {"q": {d: float(n - i) for i, d in enumerate(a)}}
        rep = {"q": {d: float(n - i) for i, d in enumerate(b)}}
        assert rm.ktu(a, b) == pytest.approx(document_order.KTU(orig, rep, per_topic=True)["q"], abs=1e-12)
        p = rng.choice([0.5, 0.8, 0.95])
        assert rm.rbo(a, b, p=p, depth=n) == pytest.approx(
            document_order.RBO(orig, rep, p=p, depth=n, pbar=False, per_topic=True)["q"], abs=1e-12)
    topics = [str(t) for t in range(30)]
    x = {t: rng.random() for t in topics}
    y = {t: rng.random() for t in topics}
    expected = effectiveness.RMSE({t: {"m": x[t]} for t in topics}, {t: {"m": y[t]} for t in topics})["m"]
    assert rm.rmse(x, y) == pytest.approx(expected)


# --- compare() and the CLI on tiny runs --------------------------------------------------------

@pytest.fixture()
def tiny(tmp_path: Path) -> dict[str, Path]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 d1 1\n1 0 d2 0\n1 0 d6 0\n2 0 e1 1\n", encoding="utf-8")
    return {
        "qrels": qrels,
        "orig": _write_run(tmp_path / "orig.txt", ORIGINAL),
        "same": _write_run(tmp_path / "same.txt", ORIGINAL),
        "rep": _write_run(tmp_path / "rep.txt", REPRODUCED),
        "tagged": _write_run(tmp_path / "tagged.txt", ORIGINAL, tag="other"),
    }


def test_identical_bytes(tiny: dict[str, Path]) -> None:
    result = compare(tiny["orig"], tiny["same"], TASK, qrels=tiny["qrels"])
    assert result.identical and result.verdict == "identical"
    assert result.verdict_line().startswith("identical")


def test_same_rankings_other_bytes_are_reproduced(tiny: dict[str, Path]) -> None:
    result = compare(tiny["orig"], tiny["tagged"], TASK, qrels=tiny["qrels"])
    assert not result.identical
    assert result.verdict == "reproduced" and result.mean_ktu == 1.0 and result.mean_rbo == 1.0
    assert all(m.rmse == 0.0 for m in result.measures)


def test_perturbed_tiny_run_by_hand(tiny: dict[str, Path]) -> None:
    result = compare(tiny["orig"], tiny["rep"], TASK, qrels=tiny["qrels"], p=0.5)
    assert result.ktu == {"1": pytest.approx(4 / 6), "2": 1.0}
    assert result.rbo == {"1": pytest.approx(0.45), "2": 1.0}
    assert result.mean_ktu == pytest.approx(5 / 6) and result.mean_rbo == pytest.approx(0.725)
    (ndcg,) = [m for m in result.measures if m.info.key == "ndcg5_official"]
    # topic 1: the one relevant document moves from rank 1 to rank 2: nDCG@5 1 -> 1/log2(3);
    # topic 2 stays 1. RMSE = (1 - 1/log2 3) / sqrt 2; t = -1 with 1 df: p = 0.5
    drop = 1 - 1 / math.log2(3)
    assert ndcg.per_topic_difference == {"1": pytest.approx(-drop), "2": 0.0}
    assert ndcg.rmse == pytest.approx(drop / math.sqrt(2))
    assert ndcg.p_value == pytest.approx(0.5)
    assert result.verdict == "differs"
    assert any("mean KTU 0.8333 < 0.9" == r for r in result.reasons)


def test_effect_ratio_through_compare(tiny: dict[str, Path], tmp_path: Path) -> None:
    # baseline: the relevant document of topic 1 after two judged ones: nDCG 1/log2(4) = 0.5
    # (Touché's official nDCG@5 skips unjudged documents); topic 2 at rank 1: 1
    base = _write_run(tmp_path / "base.txt", {"1": ["d2", "d6", "d1"], "2": ["e1"]})
    result = compare(tiny["orig"], tiny["rep"], TASK, qrels=tiny["qrels"], baselines=(base, base))
    (ndcg,) = [m for m in result.measures if m.info.key == "ndcg5_official"]
    effect_orig = ((1 - 0.5) + 0) / 2
    effect_rep = ((1 / math.log2(3) - 0.5) + 0) / 2
    assert ndcg.effect_ratio == pytest.approx(effect_rep / effect_orig)
    ri_orig = (1 - 0.75) / 0.75
    ri_rep = ((1 / math.log2(3) + 1) / 2 - 0.75) / 0.75
    assert ndcg.delta_ri == pytest.approx(ri_orig - ri_rep)


def test_compare_cli_json_and_exit_codes(tiny: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(tiny["orig"]), str(tiny["same"]), "--task", TASK, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "identical"
    code = main(["compare", str(tiny["orig"]), str(tiny["rep"]), "--task", TASK, "--qrels", str(tiny["qrels"]),
                 "--rbo-p", "0.5", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["verdict"] == "differs"
    assert data["order"]["rbo_p"] == 0.5 and data["order"]["mean_rbo"] == pytest.approx(0.725)
    assert main(["compare", str(tiny["orig"]), str(tiny["rep"]), "--task", TASK, "--min-ktu", "0.8",
                 "--min-rbo", "0.7"]) == 0
    out = capsys.readouterr().out
    assert "reproduced within the thresholds" in out and "KTU >= 0.8" in out


def test_compare_cli_user_errors(tiny: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(tiny["orig"]), str(tmp_path / "missing.txt"), "--task", TASK]) == 2
    err = capsys.readouterr().err
    assert "missing.txt" in err and "Traceback" not in err
    assert main(["compare", str(tiny["orig"]), str(tiny["rep"]), "--task", TASK, "--rbo-p", "1.5"]) == 2
    assert "between 0 and 1" in capsys.readouterr().err
    assert main(["compare", str(tiny["orig"]), str(tiny["rep"]), "--task", TASK,
                 "--baseline", str(tiny["orig"]), str(tiny["orig"])]) == 2
    assert "needs qrels" in capsys.readouterr().err


def test_reproduce_cli_user_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce"]) == 2
    assert "either RECORD or --all" in capsys.readouterr().err
    assert main(["reproduce", str(tmp_path / "run-record.json")]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" not in err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert main(["reproduce", str(bad)]) == 2
    assert "not a run record" in capsys.readouterr().err
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}', encoding="utf-8")
    assert main(["reproduce", str(other)]) == 2
    assert "not a sharedtask run record" in capsys.readouterr().err
    other.write_text("[1, 2]", encoding="utf-8")
    assert main(["reproduce", str(other)]) == 2
    assert "not a sharedtask run record" in capsys.readouterr().err
    assert main(["reproduce", str(other), "--update"]) == 2
    assert "--update" in capsys.readouterr().err


def test_reproduce_all_prints_a_line_per_run_off_a_terminal_and_the_tally(monkeypatch: pytest.MonkeyPatch,
                                                                           capsys: pytest.CaptureFixture[str],
                                                                           tmp_path: Path) -> None:
    """`reproduce --all` in CI printed nothing for 4 minutes and ended without "44 of 44". The
    re-runs themselves (Docker, minutes) are tested in test_reproduce_docker.py; here they are stood
    in for by their outcomes, to test what the command prints around them: rich's live bar draws
    nothing off a terminal, so one line per step, and the closing tally."""
    from types import SimpleNamespace

    import sharedtask.reproduce as reproduce_module
    import sharedtask.sandbox.runner as runner
    from sharedtask.reproduce import Reproduction
    from sharedtask.spec import load_task

    task = load_task("touche-2021-task1")
    same = SimpleNamespace(verdict="identical", identical=True, measures=[])
    close = SimpleNamespace(verdict="reproduced", identical=False, mean_ktu=0.98, mean_rbo=0.99,
                            measures=[SimpleNamespace(rmse=0.001)])

    def fake(manifest, out, say, **options):
        reps = []
        for k, (name, comparison) in enumerate([("lucene-bm25", same), ("lucene-dirichlet", same),
                                                 ("dense-rerank", close)]):
            say(f"{task.id}: re-running {name} ({k + 1} of 3)")
            reps.append(Reproduction(name, task, tmp_path / name, tmp_path, None, comparison))  # type: ignore[arg-type]
        return reps

    monkeypatch.setattr(reproduce_module, "reproduce_baselines", fake)
    monkeypatch.setattr(runner, "docker_client", lambda: None)
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["reproduce", "--all", "--output", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    assert [ln for ln in err.splitlines() if "re-running" in ln] == [
        f"{task.id}: re-running lucene-bm25 (1 of 3)", f"{task.id}: re-running lucene-dirichlet (2 of 3)",
        f"{task.id}: re-running dense-rerank (3 of 3)"]
    assert out.rstrip().splitlines()[-1] == "2 of 3 identical, 1 reproduced"
    assert f"{task.id}/dense-rerank" in out  # the task/baseline cell whole at 80 columns
