"""A phase's leaderboard and a team's selection as the crowd grows.

    .venv/bin/python benchmarks/service_phases.py [--teams 100 1000] [--runs 10] [--requests 50]

For each size: a SQLite service database with TEAMS teams x RUNS finished, scored runs in one
phase (``max_selected: 2``, each team selected two), the app served by uvicorn in a thread on
loopback (nothing runs in Docker: the runs are rows, as the executor leaves them), then
REQUESTS sequential GETs of the public phase board (JSON and CSV; the same board again, which
the server keeps until the next commit) and of the task page, REQUESTS GETs of the board's
JSON and page each after a commit (built afresh), and one selection request per team. Prints
p50 / p95 in ms per kind and the ratio of the largest size's fresh board p50 to the smallest's
(the board reads the light columns of every finished run of the phase and keeps each team's
selected ones: linear in the phase's runs).
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from service_helpers import TASK, RecordingExecutor, ThreadServer, call  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(url: str, token: str | None, n: int) -> tuple[float, float]:
    values = []
    for _ in range(n):
        start = time.perf_counter()
        status, _ = call(url, token=token)
        assert status == 200, (url, status)
        values.append(time.perf_counter() - start)
    return 1000 * statistics.median(values), 1000 * percentile(values, 0.95)


def timed_fresh(url: str, n: int, touch: "Callable[[], None]") -> tuple[float, float]:
    """As :func:`timed`, with a commit before each request (not timed): no kept answer can be served."""
    values = []
    for _ in range(n):
        touch()
        start = time.perf_counter()
        status, _ = call(url)
        assert status == 200, (url, status)
        values.append(time.perf_counter() - start)
    return 1000 * statistics.median(values), 1000 * percentile(values, 0.95)


def new_database(folder: Path) -> tuple[Any, Any]:
    """A migrated SQLite service database in ``folder``: (engine, its sessions)."""
    from sharedtask.service.db import make_engine, migrate, sessions, sqlite_url

    engine = make_engine(sqlite_url(folder / "service.db"))
    migrate(engine)
    return engine, sessions(engine)


def one_size(teams: int, runs: int, requests: int, folder: Path) -> dict[str, tuple[float, float]]:
    from sharedtask.service.app import ServiceConfig, create_app
    from sharedtask.service.models import Image, Phase, Submission, Team, Token, utcnow
    from sharedtask.service.teams.tokens import digest, organizer_token
    from sqlalchemy import update

    engine, factory = new_database(folder)
    rng = random.Random(7)
    now = utcnow()
    with factory.begin() as session:
        org = organizer_token(session)
        phase = Phase(task_id=TASK, name="test", dataset="sample", opens=now - dt.timedelta(days=1),
                      scores_visible=True, leaderboard_public=True, max_selected=2)
        image = Image(archive_sha256="a" * 64, docker_id="sha256:" + "b" * 64, size=1)
        session.add_all([phase, image])
        session.flush()
        phase_id = phase.id
        tokens: list[tuple[str, list[int]]] = []
        for t in range(teams):
            team = Team(name=f"team-{t}", organizer=False)
            session.add(team)
            session.flush()
            session.add(Token(digest=digest(f"tok-{t}"), team_id=team.id))
            subs = [Submission(team_id=team.id, task_id=TASK, image_id=image.id, image_name=image.docker_id,
                               tag=f"run{r}", status="done", run_status="success", valid=True, attempts=1,
                               created=now, notes=[], phase_id=phase.id, selected=r < 2,
                               scores={"ndcg5_official": rng.random()}) for r in range(runs)]
            session.add_all(subs)
            session.flush()
            tokens.append((f"tok-{t}", [s.id for s in subs]))
    app = create_app(factory, RecordingExecutor(), ServiceConfig(data_dir=folder, task_ids=[TASK]))
    figures: dict[str, tuple[float, float]] = {}
    with ThreadServer(app) as server:
        base = f"{server.url}/api/tasks/{TASK}/phases/test/leaderboard"
        figures["phase board (JSON)"] = timed(base, None, requests)

        def touch() -> None:  # a commit that changes nothing on the board: the phase's creation time
            with factory.begin() as session:
                session.execute(update(Phase).where(Phase.id == phase_id).values(created=utcnow()))

        figures["phase board (JSON), after a commit"] = timed_fresh(base, requests, touch)
        page = f"{server.url}/tasks/{TASK}/phases/test/leaderboard"
        figures["phase board (page), after a commit"] = timed_fresh(page, requests, touch)
        figures["phase board (CSV)"] = timed(base + "?format=csv", None, requests)
        figures["organizer's board (every run)"] = timed(base, org, max(5, requests // 5))
        figures["task page"] = timed(f"{server.url}/tasks/{TASK}", None, requests)
        values = []
        for token, ids in tokens[: min(teams, 200)]:  # unselect one run, select another: two writes each
            for path in (f"/api/submissions/{ids[0]}/unselect", f"/api/submissions/{ids[2]}/select"):
                start = time.perf_counter()
                status, body = call(server.url + path, "POST", token)
                assert status == 200, body
                values.append(time.perf_counter() - start)
        figures["select / unselect"] = (1000 * statistics.median(values), 1000 * percentile(values, 0.95))
    engine.dispose()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    results = {}
    for teams in args.teams:
        with tempfile.TemporaryDirectory(prefix="sharedtask-phases-") as folder:
            results[teams] = one_size(teams, args.runs, args.requests, Path(folder))
        print(f"{teams} teams x {args.runs} runs ({teams * args.runs} runs in the phase), SQLite, ms:")
        for kind, (p50, p95) in results[teams].items():
            print(f"  {kind:38} p50 {p50:8.1f}   p95 {p95:8.1f}")
    if len(results) > 1:
        small, large = min(results), max(results)
        fresh = "phase board (JSON), after a commit"
        ratio = results[large][fresh][0] / results[small][fresh][0]
        print(f"board p50 ratio {large} / {small} teams: {ratio:.1f}x for {large / small:.0f}x the runs")


if __name__ == "__main__":
    main()
