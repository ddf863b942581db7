"""The site's pages in a real headless Chromium: task page, phases, team page, a failed submission,
a phase's leaderboard and the organizer's page, each rendered, screenshotted (PNG files in the
test's folder, named in the output) and checked for the basics a keyboard or screen-reader user
needs: a language, one h1, every form control with a label, every table header with a scope.

The server runs in a thread with a recording executor (nothing runs in Docker): the runs'
outcomes are written as the executor would write them.
"""

from __future__ import annotations

import subprocess
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

from browser_helpers import chromium
from service_helpers import TASK, call
from service_helpers import database, postgres_server  # noqa: F401 - fixtures
from service.test_phases import DAY, an_image, iso, manifest, put_phase, scored_runs, service, team  # noqa: F401
from sharedtask.service import submissions
from sharedtask.service.models import Submission


class Basics(HTMLParser):
    """What the rendered DOM holds for accessibility basics."""

    def __init__(self) -> None:
        super().__init__()
        self.lang = None
        self.h1 = 0
        self.controls: list[str] = []  # ids (or "" for none) of inputs, selects that a user fills in
        self.labels: set[str] = set()
        self.aria: int = 0
        self.th_without_scope = 0
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "html":
            self.lang = a.get("lang")
        if tag == "h1":
            self.h1 += 1
        if tag in ("input", "select", "textarea") and a.get("type") != "hidden":
            if a.get("aria-label"):
                self.aria += 1
            else:
                self.controls.append(a.get("id") or "")
        if tag == "label" and a.get("for"):
            self.labels.add(a["for"])
        if tag == "th" and not a.get("scope") and self._in_new_table:
            self.th_without_scope += 1
        if tag == "table":
            self._in_new_table = "phases" in (a.get("class") or "") or "leaderboard" in (a.get("class") or "")
        if tag == "script":
            self.scripts += 1

    _in_new_table = False


def render(url: str, folder: Path, name: str) -> tuple[str, Path]:
    """The DOM after Chromium rendered ``url``, and a full-page screenshot of it."""
    shot = folder / f"{name}.png"
    common = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", f"--user-data-dir={folder / f'profile-{name}'}"]
    dom = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True, timeout=180, check=True).stdout
    subprocess.run([*common, f"--screenshot={shot}", "--window-size=1280,1600", "--hide-scrollbars", url],
                   capture_output=True, text=True, timeout=180, check=True)
    assert shot.stat().st_size > 10_000  # a real image, not an empty file
    print(f"screenshot {name}: {shot}")
    return dom, shot


def signed(url: str, token: str, path: str) -> str:
    return f"{url}/login?{urllib.parse.urlencode({'token': token, 'next': path})}"


def test_every_page_renders_in_chromium_with_labels_headings_and_screenshots(service, tmp_path):
    url, factory, state, tokens = service
    put_phase(url, tokens["org"], "dev", opens=iso(-DAY), closes=iso(DAY), max_selected=2, leaderboard_public=True)
    put_phase(url, tokens["org"], "test", dataset="hidden", opens=iso(DAY), closes=iso(3 * DAY),
              scores_visible=False)
    image_id = an_image(factory)
    a_ok, a_failed = scored_runs(factory, state, team(factory, "team-a"), image_id, [0.6, None])
    scored_runs(factory, state, team(factory, "team-b"), image_id, [0.4])
    with factory.begin() as session:
        session.get(Submission, a_failed).notes = ["sandbox: the container exited with code 3"]
    assert call(f"{url}/api/submissions/{a_ok}/select", "POST", tokens["a"])[0] == 200
    assert call(f"{url}/api/tasks/{TASK}/publish", "POST", tokens["org"])[0] == 200

    pages = {
        "tasks": f"{url}/",
        "task": f"{url}/tasks/{TASK}?tz=America/New_York",
        "team": signed(url, tokens["a"], "/team"),
        "failed-submission": signed(url, tokens["a"], f"/submissions/{a_failed}"),
        "phase-leaderboard": f"{url}/tasks/{TASK}/phases/dev/leaderboard",
        "task-leaderboard": f"{url}/tasks/{TASK}/leaderboard?tz=Europe/Berlin",
        "closed-phase-leaderboard": f"{url}/tasks/{TASK}/phases/test/leaderboard",
        "organizer": signed(url, tokens["org"], "/organizer"),
    }
    for name, address in pages.items():
        dom, _ = render(address, tmp_path, name)
        basics = Basics()
        basics.feed(dom)
        assert basics.lang == "en" and basics.h1 == 1, name
        assert basics.scripts == 0, name  # no JavaScript on the site
        unlabelled = [c for c in basics.controls if not c or c not in basics.labels]
        assert unlabelled == [], (name, unlabelled)
        assert basics.th_without_scope == 0, name
        assert '<nav class="site"' in dom, name
    failed_dom, _ = render(pages["failed-submission"], tmp_path, "failed-again")
    assert "This run failed:" in failed_dom and "exited with code 3" in failed_dom
    task_dom, _ = render(pages["task"], tmp_path, "task-again")
    assert "America/New_York" in task_dom and 'data-phase="test"' in task_dom
    board_dom, _ = render(pages["phase-leaderboard"], tmp_path, "board-again")
    assert 'data-run="team-a/run1"' in board_dom and 'data-run="team-b/run1"' in board_dom


def _luminance(hex_colour: str) -> float:
    """WCAG 2.1 relative luminance (w3.org/TR/WCAG21/#dfn-relative-luminance)."""
    channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio (w3.org/TR/WCAG21/#dfn-contrast-ratio)."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_sites_text_colours_meet_wcag_aa_contrast():
    """Every text/background pair the site's pages use, read from the stylesheet they share,
    against WCAG 2.1 AA: 4.5:1 for normal text (success criterion 1.4.3)."""
    import re

    from sharedtask.report.html import stylesheet

    css = stylesheet()
    var = dict(re.findall(r"--([a-z-]+):\s*(#[0-9a-f]{6})", css))
    header_bg = re.search(r"header\.page \{[^}]*background:\s*(#[0-9a-f]{6})", css).group(1)
    header_meta = re.search(r"header\.page \.meta \{[^}]*color:\s*(#[0-9a-f]{6})", css).group(1)
    th_bg = re.search(r"\bth \{[^}]*background:\s*(#[0-9a-f]{6})", css).group(1)
    pairs = {
        "text on the page": (var["fg"], var["bg"]), "text on a card": (var["fg"], var["card"]),
        "muted text on a card": (var["muted"], var["card"]), "table headers": (var["muted"], th_bg),
        "links and best scores": (var["accent"], var["card"]), "the title": ("#ffffff", header_bg),
        "signed in as": (header_meta, header_bg), "valid badge": (var["ok"], var["ok-bg"]),
        "failed badge": (var["bad"], var["bad-bg"]), "warning badge": (var["warn"], var["warn-bg"]),
    }
    low = {name: round(contrast(*pair), 2) for name, pair in pairs.items() if contrast(*pair) < 4.5}
    assert low == {}


def _ahead(page: str, sid: int) -> str | None:
    """The "N ahead of it" count in submission ``sid``'s row of a page, None when the row shows none."""
    import re

    row = re.search(rf'<tr class="submission" data-id="{sid}".*?</tr>', page, re.S)
    assert row is not None, f"no row of submission {sid}"
    found = re.search(r'data-ahead="(\d+)">(\d+) ahead of it<', row.group(0))
    return found.group(1) if found and found.group(1) == found.group(2) else None


def test_a_queued_submission_shows_how_many_are_ahead_of_it_on_the_team_and_submission_pages(service):
    """The line is every team's queued submissions, oldest first (as ``GET /api/queue``); nothing
    runs here (a recording executor), so the line moves only when a run is marked as started."""
    url, factory, state, tokens = service
    image_id = an_image(factory)
    a, b = team(factory, "team-a"), team(factory, "team-b")
    a1 = submissions.admit(state, a, TASK, image_id, "sha256:" + "b" * 64, None, "first", None).id
    b1 = submissions.admit(state, b, TASK, image_id, "sha256:" + "b" * 64, None, "first", None).id
    a2 = submissions.admit(state, a, TASK, image_id, "sha256:" + "b" * 64, None, "second", None).id

    status, page = call(f"{url}/team", token=tokens["a"])
    assert status == 200 and (_ahead(page, a1), _ahead(page, a2)) == ("0", "2")
    assert f'data-id="{b1}"' not in page  # the other team's run counts, but is not shown
    assert _ahead(call(f"{url}/team", token=tokens["b"])[1], b1) == "1"
    # the API says the same places (position 1: next)
    positions = call(f"{url}/api/queue", token=tokens["a"])[1]["positions"]
    assert positions == [{"id": a1, "position": 1}, {"id": a2, "position": 3}]

    with factory.begin() as session:  # the executor takes the oldest: it runs, the line moves up
        session.get(Submission, a1).status = "running"
    page = call(f"{url}/team", token=tokens["a"])[1]
    assert (_ahead(page, a1), _ahead(page, a2)) == (None, "1")
    status, sub_page = call(f"{url}/submissions/{a2}", token=tokens["a"])
    assert status == 200 and 'class="queue"' in sub_page and 'data-ahead="1">1 ahead of it<' in sub_page
    running_page = call(f"{url}/submissions/{a1}", token=tokens["a"])[1]
    assert 'class="queue"' not in running_page and "ahead of it" not in running_page
    assert _ahead(call(f"{url}/organizer", token=tokens["org"])[1], b1) == "0"
