"""A real headless browser (Debian's chromium) for the HTML report tests.

Shared by the report tests and the demo test. Skips without chromium on a
developer machine; fails in CI (CI=true), where setup.sh installs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    reason = "Debian's chromium is not installed (apt-get install -y chromium)"
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the browser tests, but {reason}")
    pytest.skip(reason)


def browser(page: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'chrome-profile'}", *args, page.as_uri()]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=True)


class DomSummary(HTMLParser):
    """Counts what the rendered DOM holds, per task section."""

    def __init__(self) -> None:
        super().__init__()
        self.title = ""
        self._in_title = False
        self.task: str | None = None
        self.rows: dict[str, int] = {}
        self.charts: dict[str, list[int]] = {}
        self.scripts = 0
        self.details = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "title" and self.task is None and not self.title:
            self._in_title = True
        if tag == "section" and "task" in classes:
            self.task = a["data-task"]
            self.rows[self.task] = 0
            self.charts[self.task] = []
        if tag == "tr" and "run" in classes:
            self.rows[self.task] += 1
        if tag == "svg" and "chart" in classes:
            self.charts[self.task].append(0)
        if tag == "rect" and "bar" in classes:
            self.charts[self.task][-1] += 1
        if tag == "script":
            self.scripts += 1
        if tag == "details" and ("record" in classes or "run-findings" in classes):
            self.details += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
