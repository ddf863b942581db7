"""The assessor's page in a real headless Chromium, with a hostile post in the pool.

An ARQMath Task 1 server whose dataset is the sample plus one answer whose HTML tries to run
script three ways (a ``<script>``, an ``onerror=``, a ``javascript:`` link) and once more inside
a formula (``\\text{<img onerror=...>}``, which latex2mathml copies unescaped). Each attempt would
set the page's title to PWNED. Chromium renders the page; the test reads the DOM after load.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from browser_helpers import chromium
from service_helpers import RecordingExecutor, ThreadServer, call, database, postgres_server  # noqa: F401
from sharedtask.service.app import ServiceConfig, create_app
from sharedtask.service.assessment.people import create_assessor
from sharedtask.service.db import make_engine, migrate, sessions
from sharedtask.service.models import Image, Submission, Team
from sharedtask.service.teams.tokens import create_team, organizer_token

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "tasks" / "samples" / "arqmath-task1"
TASK = "arqmath-3-task1"
ATTACK = "document.title='PWNED'"
HOSTILE = (f'<p>hostile answer <script>{ATTACK}</script><img src="x" onerror="{ATTACK}">'
           f'<a href="javascript:{ATTACK}">click</a> and a formula '
           f'<span class="math-container" id="9">$\\text{{<img src=y onerror={ATTACK}>}} x^2$</span></p>')


@pytest.fixture
def hostile_dataset(tmp_path: Path) -> Path:
    folder = tmp_path / "hostile"
    shutil.copytree(SAMPLE, folder)
    posts = folder / "input" / "Posts.xml"
    row = (f'  <row Id="99999" PostTypeId="2" ParentId="11" CreationDate="2010-08-02T17:12:32.000" Score="1" '
           f'Body="{html.escape(HOSTILE, quote=True)}" />\n</posts>')
    posts.write_text(posts.read_text().replace("</posts>", row))
    manifest = tmp_path / "tira.yml"
    manifest.write_text(f"version: 1\ntasks:\n  {TASK}:\n    datasets:\n"
                        f"      hostile: {{input: {folder / 'input'}, truth: {folder / 'truth'}}}\n")
    return manifest


def served(tmp_path: Path, database: str, task: str, run: str, **config: Any) -> tuple[ThreadServer, Any, str, str]:
    """A server in a thread over a fresh database: the organizer, assessor alice, and team-a's one
    finished run of ``task`` (``run`` as its run file, as the executor leaves one)."""
    engine = make_engine(database)
    migrate(engine)
    factory = sessions(engine)
    with factory.begin() as session:
        org, alice = organizer_token(session), create_assessor(session, "alice")[1]
        create_team(session, "team-a")
        image = Image(archive_sha256="a" * 64, docker_id="sha256:" + "b" * 64, size=1)
        session.add(image)
        session.flush()
        who = session.scalar(select(Team).where(Team.name == "team-a"))
        sub = Submission(team_id=who.id, task_id=task, image_id=image.id, image_name="x", tag="r", status="done",
                         run_status="success", valid=True)
        session.add(sub)
        session.flush()
        run_dir = tmp_path / "data" / "runs" / str(sub.id)
        run_dir.mkdir(parents=True)
        (run_dir / "run.txt").write_text(run)
        sub.run_dir = str(run_dir)
    app = create_app(factory, RecordingExecutor(), ServiceConfig(data_dir=tmp_path / "data", max_upload=65536,
                                                                 task_ids=[task], **config))
    return ThreadServer(app), factory, org, alice


def test_the_assessors_page_renders_formulae_and_runs_nothing_from_a_hostile_post(tmp_path, database,
                                                                                    hostile_dataset):
    server, _, org, alice = served(tmp_path, database, TASK, "A.301\t99999\t1\t10.0\tr\nA.301\t12\t2\t9.0\tr\n",
                                   manifest=hostile_dataset, dataset="hostile")
    with server:
        url = server.url
        status, pool = call(f"{url}/api/tasks/{TASK}/pools", "POST", org, {"seed": 5})
        assert status == 201, pool
        status, campaign = call(f"{url}/api/tasks/{TASK}/campaigns", "POST", org,
                                {"pool": pool["id"], "assignments": {"A.301": "alice"}})
        assert status == 201, campaign
        page = f"/assess/campaigns/{campaign['id']}/topics/A.301"
        link = f"{url}/assess/login?{urllib.parse.urlencode({'token': alice, 'next': page})}"
        dom = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                              "--disable-background-networking", "--disable-component-update", "--disable-sync",
                              "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                              link], capture_output=True, text=True, timeout=180, check=True).stdout
        headers = call(f"{url}{page}", token=alice)
    assert "hostile answer" in dom  # the post is shown
    assert "PWNED" not in dom.split("</title>")[0] and "<title>topic A.301" in dom  # no attempt ran
    assert "onerror" not in dom and "javascript:" not in dom  # the cleaner removed every attempt
    assert dom.count("<script") == 1 and 'src="/assess/static/assess.js"' in dom  # the service's own only
    assert dom.count("<math") >= 4  # the question's and the posts' formulae, as MathML
    assert 'data-ready="1"' in dom  # the page's own script ran (the policy lets it), and marked the first item
    assert 'class="item current"' in dom
    assert "Sufficient to answer the complete question on its own." in dom  # the scale's definitions
    assert headers[0] == 200


# ----------------------------------------------------------------------------- keys, progress, resume


def test_an_assessor_judges_with_the_keyboard_resumes_after_a_reload_and_changes_a_judgment(tmp_path, database,
                                                                                            monkeypatch):
    """Touché: relevance with a digit, quality with Shift + digit; the page saves at once, moves to
    the next open item, counts progress; a reload resumes at the first open item; k goes back and
    a new digit changes the saved judgment (the same row, saved again)."""
    from cdp_helpers import Browser
    from service_helpers import TASK as TOUCHE
    from service_helpers import SAMPLE as TOUCHE_SAMPLE
    from sharedtask.service.models import Judgment

    monkeypatch.setenv("SHAREDTASK_DATA", str(tmp_path / "store"))
    docs = [line.split()[2] for line in (TOUCHE_SAMPLE / "truth" / "qrels.txt").read_text().splitlines()
            if line.startswith("51 ")][:4]
    server, factory, org, alice = served(tmp_path, database, TOUCHE,
                                         "".join(f"51 Q0 {d} {i} {10 - i} r\n" for i, d in enumerate(docs, 1)))
    with server:
        url = server.url
        pool = call(f"{url}/api/tasks/{TOUCHE}/pools", "POST", org, {"seed": 2})[1]
        cid = call(f"{url}/api/tasks/{TOUCHE}/campaigns", "POST", org,
                   {"pool": pool["id"], "assignments": {"51": "alice"}})[1]["id"]
        page = f"/assess/campaigns/{cid}/topics/51"
        order = [i["item"] for i in call(f"{url}/api/assess/campaigns/{cid}/topics/51", token=alice)[1]["items"]]
        browser = Browser(tmp_path / "profile")
        try:
            browser.open(f"{url}/assess/login?{urllib.parse.urlencode({'token': alice, 'next': page})}")
            browser.wait_for("document.body && document.body.dataset.ready === '1'")
            assert browser.js("document.activeElement.dataset.item") == order[0]
            browser.key("!", "Digit1", shift=True)  # quality 1 first: nothing saved without a grade
            browser.key("2", "Digit2")  # relevance 2: saved with quality 1, on to the next item
            browser.wait_for("document.getElementById('progress').textContent.startsWith('1 of 4')")
            assert browser.js("document.activeElement.dataset.item") == order[1]
            browser.key("j", "KeyJ")
            assert browser.js("document.activeElement.dataset.item") == order[2]
            # a break: the page loaded again resumes at the first item not judged yet
            browser.navigate(f"{url}{page}")
            browser.wait_for("document.body && document.body.dataset.ready === '1' && "
                             "document.querySelector('article.current') !== null")
            assert browser.js("document.activeElement.dataset.item") == order[1]
            assert browser.js("document.getElementById('progress').textContent").startswith("1 of 4")
            browser.key("k", "KeyK")  # back to the first, and change it
            browser.key("3", "Digit3")
            browser.wait_for("document.getElementById('message').textContent === '' && "
                             "document.activeElement.dataset.item !== " + json.dumps(order[0]))
        finally:
            browser.close()
    with factory() as session:
        rows = {r.item: r for r in session.scalars(select(Judgment).where(Judgment.campaign_id == cid))}
    assert (rows[order[0]].grade, rows[order[0]].quality, rows[order[0]].saves) == (3, 1, 2)
    assert all(rows[i].grade is None for i in order[1:])
