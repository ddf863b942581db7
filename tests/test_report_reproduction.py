"""The report's significance table (all pairs, corrected) and its Reproduction part."""

from __future__ import annotations

import re
from pathlib import Path

from browser_helpers import browser
from sharedtask.evaluate import leaderboard
from sharedtask.evaluate.compare import compare
from sharedtask.evaluate.result import EvaluationResult, MeasureInfo
from sharedtask.report import RunEntry, TaskSection, render_html, write_report
from sharedtask.spec import load_task

TASK = "touche-2021-task1"
HOSTILE = "<script>alert(1)</script>"


def _entry(name: str, per_topic: dict[str, dict[str, float]], reproduction=None) -> RunEntry:
    scores = {k: sum(v.values()) / len(v) for k, v in per_topic.items()}
    return RunEntry(name, f"img/{name}", None, "success", True, [], scores, per_topic, {}, reproduction=reproduction)


def _result(name: str, values: dict[str, float]) -> EvaluationResult:
    info = MeasureInfo(key="ndcg5_official", id="ndcg5_official", label="nDCG@5", procedure="p",
                       qrels_role="relevance", primary=True)
    return EvaluationResult(TASK, name, [info], {"ndcg5_official": sum(values.values()) / len(values)},
                            {"ndcg5_official": values})


def test_pairs_that_survive_correction_are_marked() -> None:
    topics = [str(t) for t in range(10)]
    strong = {t: 0.9 - 0.01 * i for i, t in enumerate(topics)}
    weak = {t: 0.2 + 0.02 * (i % 3) for i, t in enumerate(topics)}
    close = {t: 0.2 + 0.02 * ((i + 1) % 3) for i, t in enumerate(topics)}
    results = {"strong": _result("strong", strong), "weak": _result("weak", weak), HOSTILE: _result(HOSTILE, close)}
    board = leaderboard(results, TASK, test="ttest")
    entries = [_entry(n, r.per_topic) for n, r in results.items()]
    page = render_html([TaskSection(load_task(TASK), entries, board=board)])
    rows = re.findall(r'<tr class="pair" data-a="([^"]*)" data-b="([^"]*)" data-survives="(yes|no)"', page)
    assert len(rows) == 3  # 3 runs: 3 pairs on the primary measure
    survives = {(a, b): s for a, b, s in rows}
    expected = {(p.run_a, p.run_b): ("yes" if p.p_adjusted < 0.05 else "no") for p in board.pairs}
    assert {(a.replace("&lt;", "<").replace("&gt;", ">"), b.replace("&lt;", "<").replace("&gt;", ">")): s
            for (a, b), s in survives.items()} == expected
    assert survives[("strong", "weak")] == "yes"
    assert "adjusted by holm" in page and HOSTILE not in page


def _write(path: Path, topics: dict[str, list[str]]) -> Path:
    path.write_text("".join(f"{t} Q0 {d} {r} {len(ds) - r + 1} x\n" for t, ds in topics.items()
                            for r, d in enumerate(ds, 1)), encoding="utf-8")
    return path


def test_reproduction_part_shows_verdict_and_per_topic_differences(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 d1 1\n1 0 d2 0\n2 0 e1 1\n3 0 f1 1\n", encoding="utf-8")
    orig = _write(tmp_path / "o.txt", {"1": ["d1", "d2"], "2": ["e1", "e2"], "3": ["f1"]})
    rep = _write(tmp_path / "r.txt", {"1": ["d2", "d1"], "2": ["e1", "e2"], "3": ["f1"]})
    comparison = compare(orig, rep, TASK, qrels=qrels)
    entry = _entry("lucene-bm25", {}, reproduction=comparison.to_json())
    page = write_report(tmp_path / "report.html", [TaskSection(load_task(TASK), [entry])])
    html = page.read_text(encoding="utf-8")
    assert "<h3>Reproduction</h3>" in html
    assert 'data-verdict="differs"' in html and "mean KTU" in html
    chart = html[html.index('class="chart-box repro-chart"'):]
    chart = chart[:chart.index("</figure>")]
    assert chart.count('class="bar"') == 3  # one bar per topic
    # topic 1: nDCG@5 drops from 1 to 1/log2(3) = 0.6309: the bar's tooltip says -0.3691
    assert "-0.3691" in chart
    dom = browser(page, tmp_path, "--dump-dom").stdout
    assert "Reproduction" in dom and "differs" in dom


def test_no_reproduction_part_without_a_rerun() -> None:
    entry = _entry("a", {"ndcg5_official": {"1": 0.5}})
    assert "Reproduction" not in render_html([TaskSection(load_task(TASK), [entry])])
