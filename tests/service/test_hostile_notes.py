"""Notes a team can act on (issue 39), with the real Docker daemon and the real service code:

- an image ``FROM scratch`` without ``sh`` and without ``CMD``: one line saying what to add
  (it was a traceback, "internal error (APIError)" in the service); with a command, the run
  record says the image has no ``sh``;
- an image the server lost between upload and run: the note says the server lost it (it told
  the team to ``docker pull`` it);
- ``run --input-run`` on a task without a re-ranking stage: refused, exit 2.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from service_helpers import TASK, unavailable

pytestmark = [pytest.mark.docker]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sharedtask", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


@pytest.fixture
def no_shell_image(docker_client, tmp_path: Path):
    """``FROM scratch`` + a static busybox as /bb: no /bin/sh, no CMD."""
    busybox = shutil.which("busybox")
    if busybox is None or b"ld-linux" in Path(busybox).read_bytes()[:4096]:
        unavailable("Debian's busybox-static is not installed (apt-get install busybox-static)")
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    shutil.copy(busybox, ctx / "bb")
    (ctx / "Dockerfile").write_text("FROM scratch\nCOPY bb /bb\n")
    tag = f"sharedtask-test/no-shell:{os.getpid()}"
    docker_client.images.build(path=str(ctx), tag=tag, rm=True, forcerm=True)
    yield tag
    docker_client.images.remove(tag, force=True)


def test_an_image_without_sh_or_cmd_gets_a_note_saying_what_to_add(no_shell_image: str, tmp_path: Path):
    done = _cli("run", "--task", TASK, "--image", no_shell_image, "--output", str(tmp_path / "a" / "output"),
                cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "no ENTRYPOINT or CMD" in done.stderr
    assert "set CMD" in " ".join(done.stderr.split())  # what to do, not only what went wrong
    done = _cli("run", "--task", TASK, "--image", no_shell_image, "--command", "echo hi", "--json",
                "--output", str(tmp_path / "b" / "output"), cwd=tmp_path)
    assert "Traceback" not in done.stderr
    record = json.loads((tmp_path / "b" / "run-record.json").read_text())
    assert record["status"] == "failed" and "the image has no sh" in record["message"]


def test_an_image_the_server_lost_is_said_to_be_lost_not_to_be_pulled(docker_client, no_shell_image: str,
                                                                       tmp_path: Path):
    from sharedtask.service.db import make_engine, migrate, sessions, sqlite_url
    from sharedtask.service.runs.claims import RunSettings
    from sharedtask.service.runs.pool import LocalPool
    from sharedtask.service.models import Image, Submission
    from sharedtask.service.teams.tokens import create_team

    engine = make_engine(sqlite_url(tmp_path / "service.db"))
    migrate(engine)
    factory = sessions(engine)
    lost = f"sharedtask-test/lost:{os.getpid()}"
    docker_client.images.get(no_shell_image).tag(lost)
    with factory.begin() as session:
        team, _ = create_team(session, "team-a")
        image = Image(archive_sha256="c" * 64, docker_id=docker_client.images.get(lost).id, size=1)
        session.add(image)
        session.flush()
        sub = Submission(team_id=team.id, task_id=TASK, image_id=image.id, image_name=lost, tag="run1",
                         command="true", status="queued", attempts=0, notes=[])
        session.add(sub)
        session.flush()
        sid = sub.id
    docker_client.images.remove(lost)  # gone from the server's daemon before the run
    LocalPool(factory, RunSettings(data_dir=tmp_path / "data"), workers=0).run(sid)  # the pool's step, in this thread
    with factory() as session:
        row = session.scalar(select(Submission).where(Submission.id == sid))
        assert row.status == "failed"
        note = row.notes[-1]
    assert "the server lost this submission's image" in note and "docker pull" not in note
    engine.dispose()


def test_input_run_on_a_task_without_a_reranking_stage_is_refused(tmp_path: Path):
    done = _cli("run", "--task", "arqmath-3-task2", "--image", "x:1", "--input-run", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2 and "has no re-ranking stage" in done.stderr and "Traceback" not in done.stderr
