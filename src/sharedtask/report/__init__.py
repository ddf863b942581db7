"""The HTML report: leaderboards, per-topic charts, findings and run records in one offline file.

    from sharedtask.report import RunEntry, TaskSection, write_report
    entry = run_entry("bm25", image=img, sandbox=outcome, validation=verdict, evaluation=scores)
    write_report(Path("report.html"), [TaskSection(task, [entry, ...])])
"""

from sharedtask.report.adapters import run_entry
from sharedtask.report.model import STATUSES, RunEntry, TaskSection, leaderboard
from sharedtask.report.html import render_html, write_report

__all__ = ["STATUSES", "RunEntry", "TaskSection", "leaderboard", "render_html", "run_entry", "write_report"]
