"""The task's leaderboard one row per team against the board of every run, as the crowd grows.

    .venv/bin/python benchmarks/task_board.py [--teams 20 100] [--runs 10] [--requests 10]

For each size: a SQLite service database with TEAMS teams x RUNS finished, scored runs of the
task (no phase), published; the app served by uvicorn in a thread on loopback (nothing runs in
Docker: the runs are rows, as the executor leaves them). Then REQUESTS GETs of each board, each
after a commit (not timed), so every answer is built afresh, never a kept one: the page one row
per team (the default), the page of every run (``?all=1``), the JSON board (every run, as
before) and the JSON board one row per team (``?per_team=1``). Prints p50 / p95 in ms per kind
and, per size, the ratio of the per-team page's p50 to the every-run page's (the per-team page
reads the same runs, then renders one row a team: it costs no more).
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from service_phases import new_database, timed_fresh  # importing it puts tests/ on sys.path (service_helpers)
from service_helpers import TASK, RecordingExecutor, ThreadServer


def one_size(teams: int, runs: int, requests: int, folder: Path) -> dict[str, tuple[float, float]]:
    from sharedtask.service.app import ServiceConfig, create_app
    from sharedtask.service.models import Image, Submission, TaskSettings, Team, utcnow
    from sqlalchemy import update

    engine, factory = new_database(folder)
    rng = random.Random(7)
    now = utcnow()
    with factory.begin() as session:
        image = Image(archive_sha256="a" * 64, docker_id="sha256:" + "b" * 64, size=1)
        session.add_all([image, TaskSettings(task_id=TASK, published=True)])
        session.flush()
        for t in range(teams):
            team = Team(name=f"team-{t}", organizer=False)
            session.add(team)
            session.flush()
            session.add_all([Submission(team_id=team.id, task_id=TASK, image_id=image.id, image_name=image.docker_id,
                                        tag=f"run{r}", status="done", run_status="success", valid=True, attempts=1,
                                        created=now, notes=[], scores={"ndcg5_official": rng.random()})
                             for r in range(runs)])
    app = create_app(factory, RecordingExecutor(), ServiceConfig(data_dir=folder, task_ids=[TASK]))
    figures: dict[str, tuple[float, float]] = {}
    with ThreadServer(app) as server:
        def touch() -> None:  # a commit that changes nothing on the boards: no kept answer is served
            with factory.begin() as session:
                session.execute(update(Image).values(size=rng.randint(1, 1 << 20)))

        for kind, path in (("page, one row per team", f"/tasks/{TASK}/leaderboard"),
                           ("page, every run (?all=1)", f"/tasks/{TASK}/leaderboard?all=1"),
                           ("JSON, every run", f"/api/tasks/{TASK}/leaderboard"),
                           ("JSON, one row per team", f"/api/tasks/{TASK}/leaderboard?per_team=1")):
            figures[kind] = timed_fresh(server.url + path, requests, touch)
    engine.dispose()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", type=int, nargs="+", default=[20, 100])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--requests", type=int, default=10)
    args = parser.parse_args()
    for teams in args.teams:
        with tempfile.TemporaryDirectory(prefix="sharedtask-board-") as folder:
            figures = one_size(teams, args.runs, args.requests, Path(folder))
        print(f"{teams} teams x {args.runs} runs ({teams * args.runs} runs of the task), SQLite, ms, built afresh:")
        for kind, (p50, p95) in figures.items():
            print(f"  {kind:28} p50 {p50:8.1f}   p95 {p95:8.1f}")
        ratio = figures["page, one row per team"][0] / figures["page, every run (?all=1)"][0]
        print(f"  per-team page / every-run page p50: {ratio:.2f}")


if __name__ == "__main__":
    main()
