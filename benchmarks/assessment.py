"""Assessors at once: an assessor's page and a saved judgment, p50 / p95 in ms.

    .venv/bin/python benchmarks/assessment.py [--assessors 20] [--depth 100] [--think 0.5] [--items 60] [--db URL | --postgres]

A real ``sharedtask serve`` process (SQLite in its data folder unless ``--db`` or ``--postgres``) for the Touché
2021 sample; two teams' finished runs (each ranks DEPTH of the sample's 266 arguments per topic,
written as the executor leaves them), pooled at DEPTH, and as many campaigns on that pool as it
takes to give every assessor one topic of its own (5 topics per campaign). Then every assessor,
each in its own thread and all at once, loads their topic's page and saves a judgment of
ITEMS items (``POST /api/assess/campaigns/C/judgments``), reading THINK seconds on average
before each save (uniform between half and one and a half of it; ``--think 0``: no reading, a
saturation test) and loading the page again every 10 saves (a resume). Prints p50 / p95 of pages and saves, the bars (page p95 <= 100 ms, save p95 <= 20 ms)
and whether they were met, and checks that every save is in the database exactly once.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from service_helpers import SAMPLE, TASK, call, free_port, start_server, stop  # noqa: E402

PAGE_BAR_MS, SAVE_BAR_MS = 100.0, 20.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def page(url: str, cookie: str) -> float:
    request = urllib.request.Request(url, headers={"Cookie": cookie})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200
        response.read()
    return 1000 * (time.perf_counter() - start)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (``/proc/PID/stat``, fields 14 and 15, in clock ticks)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sign_in(url: str, token: str) -> str:
    """The assessor's sign-in cookie (the page's own way in), without following the redirect."""
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(f"{url}/assess/login?token={token}", timeout=60)
    except urllib.error.HTTPError as exc:  # the 303
        return exc.headers["set-cookie"].split(";")[0]
    raise AssertionError("no sign-in cookie")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assessors", type=int, default=20)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--think", type=float, default=0.5,
                        help="seconds an assessor reads between two saves, on average (default 0.5; a person "
                             "takes far longer); 0: every assessor saves as fast as the server answers")
    parser.add_argument("--items", type=int, default=60, help="saves per assessor (default 60)")
    parser.add_argument("--db", help="a PostgreSQL URL (default: SQLite in the data folder)")
    parser.add_argument("--postgres", action="store_true",
                        help="start a PostgreSQL server on loopback for the run (Debian's postgresql)")
    args = parser.parse_args()
    postgres = None
    if args.postgres:
        from service_helpers import PostgresServer

        postgres = PostgresServer()
        args.db = postgres.new_database()
    try:
        return run(args)
    finally:
        if postgres is not None:
            postgres.stop()


def run(args: argparse.Namespace) -> int:

    from sqlalchemy import func, select

    from sharedtask.formats.argsme import read_argsme_dir
    from sharedtask.service.db import make_engine, migrate, sessions, sqlite_url
    from sharedtask.service.models import Image, Judgment, Submission, Team

    base = Path(tempfile.mkdtemp(prefix="sharedtask-assess-bench-"))
    data = base / "data"
    data.mkdir()
    db = args.db or sqlite_url(data / "service.db")
    engine = make_engine(db)
    migrate(engine)
    factory = sessions(engine)
    server = start_server(data, db, free_port())
    try:
        org = server.token()
        server.token("team-a"), server.token("team-b")
        tokens = [server.cli("serve", "--db", db, "--data-dir", str(data), "--new-assessor", f"a{i}").stdout.strip()
                  for i in range(args.assessors)]
        topics = sorted({line.split()[0] for line in (SAMPLE / "truth" / "qrels.txt").read_text().splitlines()})
        docs = [a.id for a in read_argsme_dir(SAMPLE / "input")]
        rng = random.Random(1)
        with factory.begin() as session:
            image = Image(archive_sha256="a" * 64, docker_id="sha256:" + "b" * 64, size=1)
            session.add(image)
            session.flush()
            for team in ("team-a", "team-b"):
                who = session.scalar(select(Team).where(Team.name == team))
                sub = Submission(team_id=who.id, task_id=TASK, image_id=image.id, image_name="x", tag="r",
                                 status="done", run_status="success", valid=True)
                session.add(sub)
                session.flush()
                run_dir = data / "runs" / str(sub.id)
                run_dir.mkdir(parents=True)
                lines = [f"{t} Q0 {d} {r} {1000 - r} r" for t in topics
                         for r, d in enumerate(rng.sample(docs, min(args.depth, len(docs))), 1)]
                (run_dir / "run.txt").write_text("\n".join(lines) + "\n")
                sub.run_dir = str(run_dir)
        status, pool = call(f"{server.url}/api/tasks/{TASK}/pools", "POST", org,
                            {"seed": 1, "depths": {"primary": args.depth, "alternate": args.depth}})
        assert status == 201, pool
        work: list[tuple[str, int, str]] = []  # (token, campaign, topic)
        for start in range(0, args.assessors, len(topics)):
            group = list(range(start, min(start + len(topics), args.assessors)))
            status, c = call(f"{server.url}/api/tasks/{TASK}/campaigns", "POST", org,
                             {"pool": pool["id"], "assignments": {topics[k]: f"a{i}" for k, i in enumerate(group)}})
            assert status == 201, c
            work += [(tokens[i], c["id"], topics[k]) for k, i in enumerate(group)]
        print(f"pool: {pool['items']} items over {pool['topics']} topics ({pool['items'] // pool['topics']} a topic); "
              f"{args.assessors} assessors, one topic each")

        pages: list[float] = []
        saves: list[float] = []
        lock = threading.Lock()
        barrier = threading.Barrier(len(work))

        def assessor(token: str, cid: int, topic: str) -> None:
            cookie = sign_in(server.url, token)
            items = call(f"{server.url}/api/assess/campaigns/{cid}/topics/{topic}", token=token)[1]["items"]
            barrier.wait()
            mine_p, mine_s = [], []
            page_url = f"{server.url}/assess/campaigns/{cid}/topics/{topic}"
            think = random.Random(token)
            for n, item in enumerate(items[:args.items]):
                if args.think:
                    time.sleep(think.uniform(0.5, 1.5) * args.think)
                if n % 10 == 0:
                    mine_p.append(page(page_url, cookie))
                start = time.perf_counter()
                status, body = call(f"{server.url}/api/assess/campaigns/{cid}/judgments", "POST", token,
                                    {"topic": topic, "item": item["item"], "grade": n % 4, "quality": n % 4})
                mine_s.append(1000 * (time.perf_counter() - start))
                assert status == 200, body
            with lock:
                pages.extend(mine_p)
                saves.extend(mine_s)

        items_of = call(f"{server.url}/api/assess/campaigns/{work[0][1]}/topics/{work[0][2]}",
                        token=work[0][0])[1]["items"]
        threads = [threading.Thread(target=assessor, args=w) for w in work]
        began = time.perf_counter()
        cpu_before = cpu_seconds(server.process.pid)
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - began
        cpu = cpu_seconds(server.process.pid) - cpu_before
        with factory() as session:
            rows = session.scalar(select(func.count(Judgment.id)).where(Judgment.grade.is_not(None)))
            once = session.scalar(select(func.count(Judgment.id)).where(Judgment.saves == 1))
        assert rows == len(saves) == once, (rows, len(saves), once)
        print(f"{args.assessors} assessors at once, each saving {min(args.items, len(items_of))} judgments, "
              f"reading {args.think:g} s on average before each" if args.think else
              f"{args.assessors} assessors at once, each saving as fast as the server answers (no reading time)")
        page_p95, save_p95 = percentile(pages, 0.95), percentile(saves, 0.95)
        import os

        print(f"load average over the last minute: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
              "(the server, the 20 clients and whatever else runs on the machine)")
        print(f"pages: {len(pages)}, p50 {statistics.median(pages):.1f} ms, p95 {page_p95:.1f} ms "
              f"(bar {PAGE_BAR_MS:.0f} ms: {'met' if page_p95 <= PAGE_BAR_MS else 'NOT met'})")
        print(f"the server's CPU time per request (pages and saves; what load on the machine does not change): "
              f"{1000 * cpu / (len(pages) + len(saves)):.2f} ms")
        print(f"saves: {len(saves)}, p50 {statistics.median(saves):.1f} ms, p95 {save_p95:.1f} ms "
              f"(bar {SAVE_BAR_MS:.0f} ms: {'met' if save_p95 <= SAVE_BAR_MS else 'NOT met'}); "
              f"{len(saves) / wall:.0f} saves/s in all; every save stored exactly once")
    finally:
        stop(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
