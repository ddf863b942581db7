"""The HTML report: ordering and escaping in Python, rendering in a real headless browser.

The browser tests need Debian's chromium (``apt-get install -y chromium``); without
it they skip on a developer machine and fail in CI (env CI set), like the docker tests.
"""

from __future__ import annotations

import os
from collections import Counter
import shutil
import struct
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path


from browser_helpers import DomSummary, browser
from sharedtask.findings import Finding, Severity
from sharedtask.report import RunEntry, TaskSection, leaderboard, render_html, write_report
from sharedtask.report.chart import natural_key, nice_ceiling
from sharedtask.findings.output import group_findings
from sharedtask.spec import load_task

HOSTILE = '<script>alert("x")</script><img src=http://evil.example/x.png>'
WHEN = datetime(2026, 11, 2, 12, 0, tzinfo=timezone.utc)


def _run(name: str, status: str = "success", valid: bool | None = True, per_topic=None, findings=(), notes=(), **record):
    """A run whose mean scores are the mean of its made-up per-topic values."""
    per_topic = per_topic or {}
    scores = {k: sum(v.values()) / len(v) for k, v in per_topic.items() if v}
    rec = {"status": status, "exit_code": 0 if status == "success" else 1, "wall_seconds": 3.25,
           "peak_memory_bytes": 150 * 1024 * 1024, "limits": {"memory": 4 * 1024**3, "cpus": 1.0, "timeout": 3600},
           "log_tail": "indexing...\nsearching 3 topics\ndone"}
    rec.update(record)
    return RunEntry(name=name, image=f"sharedtask/{name}:latest", command="python run.py", status=status, valid=valid,
                    findings=list(findings), scores=scores, per_topic=per_topic, record=rec, notes=list(notes))


TOUCHE_TOPICS = ["51", "52", "60", "100"]
ARQ_TOPICS = ["A.301", "A.302", "A.310", "A.335", "A.399"]


def touche_section() -> TaskSection:
    task = load_task("touche-2021-task1")
    rel, qual = "ndcg5_official", "ndcg5_official_quality"
    bm25 = {rel: dict(zip(TOUCHE_TOPICS, [0.8, 0.5, 0.6, 0.3])), qual: dict(zip(TOUCHE_TOPICS, [0.9, 0.7, 0.8, 0.6]))}
    dlm = {rel: dict(zip(TOUCHE_TOPICS, [0.7, 0.6, 0.4, 0.2])), qual: dict(zip(TOUCHE_TOPICS, [0.8, 0.9, 0.7, 0.5]))}
    dup = [Finding(Severity.ERROR, "RUN-DUPLICATE-DOC", f"document S0000000{i}-A00000001 appears twice", "run.txt", 10 + i)
           for i in range(5)]
    tie = [Finding(Severity.WARNING, "RUN-TIED-SCORES", "tied scores", "run.txt", 3, hint="break ties")]
    return TaskSection(task, [
        _run("dirichlet-lm", per_topic=dlm, findings=tie, notes=["ties changed the order of 2 documents"]),
        _run("lucene-bm25", per_topic=bm25),
        _run(HOSTILE, valid=False, findings=dup + tie, per_topic={}),
        _run("crashes", status="oom", valid=None, exit_code=137, log_tail=f"Killed {HOSTILE}"),
    ])


def arqmath_section() -> TaskSection:
    task = load_task("arqmath-3-task1")
    keys = [m.key for m in task.measures]
    runs = []
    for i, name in enumerate(["bm25-answers", "tfidf", "random"]):
        per_topic = {k: {t: round(((j + 1) * (i + 2) * (ki + 3)) % 10 / 10, 2) for j, t in enumerate(ARQ_TOPICS)}
                     for ki, k in enumerate(keys)}
        runs.append(_run(name, per_topic=per_topic, valid=None if name == "random" else True))
    runs.append(_run("times-out", status="timeout", valid=None))
    return TaskSection(task, runs)


# ------------------------------------------------------------------ pure Python


def test_leaderboard_order_ranks_and_unranked_at_bottom() -> None:
    section = touche_section()
    order = [(rank, run.name) for rank, run in leaderboard(section)]
    # means by hand: bm25 (0.8+0.5+0.6+0.3)/4 = 0.55, dlm (0.7+0.6+0.4+0.2)/4 = 0.475
    assert order == [(1, "lucene-bm25"), (2, "dirichlet-lm"), (None, HOSTILE), (None, "crashes")]


def test_leaderboard_ties_share_a_rank() -> None:
    task = load_task("arqmath-3-task3")
    key = task.primary_measure.key
    runs = [_run(n, per_topic={key: {"A.301": v}}) for n, v in (("b", 0.5), ("a", 0.5), ("c", 0.7), ("d", 0.1))]
    assert [(r, run.name) for r, run in leaderboard(TaskSection(task, runs))] == [
        (1, "c"), (2, "a"), (2, "b"), (4, "d")]


def test_findings_grouped_by_code_errors_first() -> None:
    groups = group_findings(touche_section().runs[2].findings)
    assert [(sev.value, code, total) for sev, code, _items, total in groups] == [
        ("error", "RUN-DUPLICATE-DOC", 5), ("warning", "RUN-TIED-SCORES", 1)]


def test_untrusted_strings_are_escaped_and_page_is_offline() -> None:
    page = render_html([touche_section(), arqmath_section()], generated=WHEN)
    assert HOSTILE not in page
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    # no resource or link leaves the file: every href is an in-page anchor, no src at all
    links = LinkCollector()
    links.feed(page)
    assert links.tags["img"] == 0 and links.tags["script"] == 0 and links.tags["link"] == 0
    assert links.src == []
    assert links.href and all(h.startswith("#") for h in links.href)
    assert "url(" not in page and "@import" not in page


def test_log_tails_show_terminal_controls_escaped() -> None:
    """A log may carry ANSI sequences (clear screen, colours, a title): the page shows them as text."""
    section = TaskSection(load_task("touche-2021-task1"),
                          [_run("ansi", status="failed", valid=None, log_tail="\x1b[2J\x1b]0;title\x07red \x1b[31mx\r")])
    page = render_html([section], generated=WHEN)
    assert "\x1b" not in page and "\x07" not in page and "\r" not in page.split("<pre", 1)[1]
    assert "\\x1b[2J\\x1b]0;title\\x07red \\x1b[31mx\\x0d" in page


class LinkCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.src: list[str] = []
        self.href: list[str] = []
        self.tags: Counter[str] = Counter()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        for name, value in attrs:
            if name == "src":
                self.src.append(value or "")
            elif name == "href":
                self.href.append(value or "")


def test_natural_topic_order_and_axis_maximum() -> None:
    assert sorted(["A.310", "A.35", "A.301", "100", "51"], key=natural_key) == ["51", "100", "A.35", "A.301", "A.310"]
    assert [nice_ceiling(v) for v in (0.55, 1.0, 0.19, 2.346, 0.0)] == [1.0, 1.0, 0.2, 2.5, 1.0]


def test_write_report_is_atomic_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.html"
    write_report(target, [touche_section()], generated=WHEN)
    first = target.read_text(encoding="utf-8")
    write_report(target, [arqmath_section()], title="second", generated=WHEN)
    assert target.read_text(encoding="utf-8") != first
    assert "<title>second</title>" in target.read_text(encoding="utf-8")
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.html"]  # no temp files left


# ------------------------------------------------------------------ real browser


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    sections = [touche_section(), arqmath_section()]
    page = write_report(tmp_path / "report.html", sections, title="Demo <report> & more", generated=WHEN)
    dom = browser(page, tmp_path, "--dump-dom").stdout
    summary = DomSummary()
    summary.feed(dom)

    assert summary.title == "Demo <report> & more"
    assert summary.scripts == 0  # the hostile run name stayed text
    assert HOSTILE in dom.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    # one leaderboard row per run
    assert summary.rows == {"touche-2021-task1": 4, "arqmath-3-task1": 4}
    # touche: 2 measures with per-topic data (relevance, quality), 4 topics x 2 evaluated runs each
    assert summary.charts["touche-2021-task1"] == [len(TOUCHE_TOPICS) * 2] * 2
    # arqmath: every declared measure (4 trec_eval ones, EXAM Cover, EXAM Cover over all topics, nDCG' on EXAM
    # qrels), 5 topics x 3 runs
    assert summary.charts["arqmath-3-task1"] == [len(ARQ_TOPICS) * 3] * 7
    # findings + record per run, per task
    assert summary.details == 2 * (4 + 4)


def test_report_screenshot_is_a_real_page(tmp_path: Path) -> None:
    page = write_report(tmp_path / "report.html", [touche_section(), arqmath_section()], generated=WHEN)
    shot = tmp_path / "report.png"
    browser(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,2400", "--hide-scrollbars")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 2400)
    keep = os.environ.get("SHAREDTASK_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)


def test_sandbox_record_shows_limits_memory_and_log_tail_from_files(tmp_path: Path) -> None:
    """A record shaped like sharedtask.sandbox's run-record.json: logs are paths, not text."""
    (tmp_path / "stdout.log").write_text("".join(f"line {i}\n" for i in range(100)))
    (tmp_path / "stderr.log").write_text("Traceback <b>boom</b>\n")
    record = {"status": "failed", "exit_code": 3, "wall_seconds": 75.5, "message": "exited with code 3",
              "peak_memory": {"bytes": 3 * 1024**3, "human": "3.0 GiB", "source": "cgroup"},
              "policy": {"limits": {"memory": 4 * 1024**3, "cpus": 1.0, "timeout": 3600.0, "pids": 1024}},
              "logs": {"stdout": str(tmp_path / "stdout.log"), "stderr": str(tmp_path / "stderr.log")},
              "validation": {"status": "no run file", "reason": "no run.txt", "report": {"findings": ["x" * 50]}}}
    task = load_task("touche-2020-task1")
    run = RunEntry("broken", "team/broken:1", None, "failed", None, [], {}, {}, record)
    page = render_html([TaskSection(task, [run])], generated=WHEN)
    record_html = page[page.index('<details class="record"'):]
    assert "line 99" in record_html and "line 60" in record_html and "line 59\n" not in record_html  # last 40 lines
    assert "[stderr] Traceback &lt;b&gt;boom&lt;/b&gt;" in record_html
    assert "3.0 GiB" in record_html and "4.0 GiB" in record_html  # peak memory and memory limit
    assert "1 min 16 s" in record_html and "exit code 3" in record_html and "of 1 h" in record_html
    assert "no run file no run.txt" in record_html and "x" * 50 not in record_html
    assert "(image default" in record_html


def test_chart_survives_nan_inf_and_negative_values() -> None:
    from sharedtask.report.chart import Series, grouped_bars

    svg = grouped_bars("t", "m", ["1", "2", "3"], [Series("a", "#000", {"1": float("nan"), "2": float("inf"), "3": -0.3}),
                                                   Series("b", "#111", {"1": 0.5, "3": 0.0})])
    assert svg.count('<rect class="bar"') == 5  # b has no value for topic 2
    assert "a · topic 1: nan" in svg and "a · topic 2: inf" in svg and "a · topic 3: -0.3" in svg
    assert ">-0.5<" in svg  # the y axis reaches below zero (nice floor of -0.3)


def test_run_entry_from_stage_results() -> None:
    from types import SimpleNamespace

    from sharedtask.report import run_entry

    sandbox = SimpleNamespace(record={"status": "success", "exit_code": 0, "wall_seconds": 1.5},
                              result=SimpleNamespace(status="success", log_tail=["a", "b"]))
    verdict = SimpleNamespace(valid=False, findings=[Finding(Severity.ERROR, "RUN-EMPTY", "empty")])
    scores = SimpleNamespace(scores={"ndcg_prime": 0.25}, per_topic={"ndcg_prime": {"A.301": 0.25}}, notes=["n1"])
    entry = run_entry("x", image="i", sandbox=sandbox, validation=verdict, evaluation=scores, notes=["n2"])
    assert (entry.status, entry.valid, entry.verdict, entry.notes) == ("success", False, "invalid", ["n1", "n2"])
    assert entry.record["log_tail"] == ["a", "b"] and entry.per_topic == {"ndcg_prime": {"A.301": 0.25}}
    crashed = run_entry("y", image="i", status="error")
    assert (crashed.status, crashed.valid, crashed.scores, crashed.ranked) == ("error", None, {}, False)
