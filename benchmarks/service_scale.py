"""Internet scale, simulated: the real service, PostgreSQL and Redis under 1,000 teams x 10 submissions.

    .venv/bin/python benchmarks/service_scale.py [--teams 1000] [--per-team 10] [--workers 20]
        [--clients 16] [--images 5] [--quick]

Real parts, each its own process on loopback: ``sharedtask serve --broker redis://...`` over a
private PostgreSQL (Debian's initdb/pg_ctl, tests/service_helpers.PostgresServer), a
redis-server (tests/distributed_helpers.RedisServer: append-only file, fsync always) and
``--workers`` compute workers. The workers are ``benchmarks/simulated_worker.py``: the real
Celery worker whose SANDBOX IS SIMULATED (NO CONTAINER): it writes a precomputed valid run
(every judged document ranked by its grade, nDCG@5 = 1) instead of starting a container;
the image check, the dataset checksums, the validator, the run record, the packing and the
server's landing and scoring are the real ones.

The crowd: ``--clients`` threads upload ``docker save`` archives (``POST
/api/tasks/T/submissions``) for TEAMS x PER_TEAM submissions, round-robin over the teams. The
images are ``--images`` distinct tiny images (one file, a few KB; they are never run): the
first upload of each is checked and loaded into Docker, the rest are found by their digest
(the server still spools and hashes every byte). Meanwhile one reader thread loops over the
hot GETs (public leaderboard JSON, the organizer's team list, a team's submissions) until the
last submission is done. A sampler records each second the server's backlog (DB ``queued``),
the broker's queue (Redis LLEN) and the CPU time of every component (/proc).

Prints: submissions accepted per second, p50/p95 of each request kind while the crowd works,
queue delay (accepted -> a worker starts it, from the workers' ``job-running`` events) and
end to end (accepted -> scored), the database size, Redis memory, CPU seconds and cores per
component, and which part saturates first. ``--quick``: 50 teams x 2, 4 workers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import io
import json
import os
import queue
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from distributed_helpers import RedisServer, ensure_installed, wait_for  # noqa: E402
from service_helpers import TASK, PostgresServer, call, free_port, perfect_run, start_server, stop  # noqa: E402

from simulated_worker import SIMULATED  # noqa: E402

QUEUE = "sharedtask"  # the Celery queue (a Redis list) the server sends to
TICK = 1.0  # s between two samples of backlogs and CPU


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


def p50_p95(values: list[float]) -> str:
    return f"p50 {statistics.median(values):8.1f}   p95 {percentile(values, 0.95):8.1f}" if values else "(none)"


# ----------------------------------------------------------------------------- images


def tiny_archives(client: Any, count: int) -> tuple[list[tuple[bytes, str]], list[str]]:
    """``count`` distinct one-file images (``docker import``), each as a ``docker save`` archive and its sha256."""
    import hashlib

    archives, ids = [], []
    for i in range(count):
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w") as tar:
            data = f"{SIMULATED}: image {i} {uuid.uuid4().hex}\n".encode()
            info = tarfile.TarInfo("marker")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        tag = f"sharedtask-bench/scale-{i}:{os.getpid()}"
        client.api.import_image_from_data(raw.getvalue(), repository=tag.split(":")[0], tag=tag.split(":")[1])
        image = client.images.get(tag)
        body = b"".join(image.save(named=True))
        archives.append((body, hashlib.sha256(body).hexdigest()))
        ids.append(image.id)
    return archives, ids


# ----------------------------------------------------------------------------- CPU from /proc


CLOCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (/proc/PID/stat fields 14 and 15), 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK


def children(parent: int) -> list[int]:
    """Direct children of ``parent`` (PostgreSQL's backends and helpers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


@dataclass
class Components:
    server: int
    workers: list[int]
    postgres: int
    redis: int
    #: cumulative CPU of processes that ended meanwhile (PostgreSQL backends of closed connections)
    gone: dict[int, float] = field(default_factory=dict)

    def pids(self) -> dict[str, list[int]]:
        return {"server": [self.server], "workers": self.workers,
                "postgres": [self.postgres, *children(self.postgres)], "redis": [self.redis],
                "load generator (this process)": [os.getpid()]}

    def sample(self) -> dict[str, float]:
        out = {}
        for name, pids in self.pids().items():
            total = 0.0
            for pid in pids:
                value = cpu_seconds(pid)
                if name == "postgres":
                    self.gone[pid] = max(self.gone.get(pid, 0.0), value)
                total += value
            if name == "postgres":  # a backend that exited keeps its last reading
                total = sum(self.gone.values())
            out[name] = total
        return out


# ----------------------------------------------------------------------------- the crowd


@dataclass
class Figures:
    submit: list[float] = field(default_factory=list)
    reads: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    accepted: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def uploader(port: int, work: "queue.Queue[tuple[str, int] | None]", archives: list[tuple[bytes, str]],
             figures: Figures) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    while (item := work.get()) is not None:
        token, n = item
        body, sha = archives[n % len(archives)]
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-tar", "X-Image-Sha256": sha}
        start = time.perf_counter()
        try:
            conn.request("POST", f"/api/tasks/{TASK}/submissions?tag=s{n}", body=body, headers=headers)
            response = conn.getresponse()
            text = response.read()
        except (OSError, http.client.HTTPException) as exc:
            with figures.lock:
                figures.errors.append(f"submit: {exc.__class__.__name__}")
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            continue
        elapsed = time.perf_counter() - start
        with figures.lock:
            if response.status == 201:
                figures.submit.append(elapsed)
                figures.accepted += 1
            else:
                figures.errors.append(f"submit: HTTP {response.status} {text[:200]!r}")


def reader(port: int, organizer: str, tokens: list[str], stop_reading: threading.Event, figures: Figures,
           page: bool) -> None:
    """The hot GETs, one after the other, while the crowd submits and the workers work; ``page``:
    the task's HTML leaderboard too (the report with every run's record, built again after each commit)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    rng = random.Random(3)
    kinds = [("leaderboard (JSON)", f"/api/tasks/{TASK}/leaderboard", None),
             ("leaderboard (page)", f"/tasks/{TASK}/leaderboard", None),
             ("team list (organizer)", "/api/teams", organizer),
             ("a team's submissions", "/api/submissions", "team")]
    if not page:
        kinds = [kind for kind in kinds if kind[0] != "leaderboard (page)"]
    while not stop_reading.is_set():
        for kind, path, who in kinds:
            token = rng.choice(tokens) if who == "team" else who
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            start = time.perf_counter()
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            response.read()
            elapsed = time.perf_counter() - start
            with figures.lock:
                if response.status == 200:
                    figures.reads.setdefault(kind, []).append(elapsed)
                else:
                    figures.errors.append(f"{kind}: HTTP {response.status}")


# ----------------------------------------------------------------------------- the run


def start_workers(count: int, broker: str, folder: Path, run_file: Path) -> list[tuple[subprocess.Popen[bytes], Path]]:
    started = []
    for i in range(count):
        name = f"sim{i:02d}"
        log = folder / f"{name}.log"
        proc = subprocess.Popen([sys.executable, str(REPO / "benchmarks" / "simulated_worker.py"), "--broker", broker,
                                 "--name", name, "--work-dir", str(folder / f"{name}-work"), "--run-file",
                                 str(run_file)], stdout=open(log, "wb"), stderr=subprocess.STDOUT, cwd=folder)
        started.append((proc, log))
    for proc, log in started:
        wait_for(lambda: proc.poll() is not None or "ready" in log.read_text(errors="replace"), 180, 0.5)
        assert proc.poll() is None, log.read_text()
    return started


def worker_events(logs: list[Path]) -> tuple[dict[str, dt.datetime], dict[str, int]]:
    """From the workers' own event lines: when each job started running, and how often each finished."""
    from sharedtask.executor.events import events

    started, finished = {}, {}
    for log in logs:
        text = log.read_text(errors="replace")
        for event in events(text, "job-running"):
            started[event["job"]] = dt.datetime.strptime(event["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
        for event in events(text, "job-finished"):
            finished[event["job"]] = finished.get(event["job"], 0) + 1
    return started, finished


def main() -> None:  # noqa: C901 - one scenario, read top to bottom
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", type=int, default=1000)
    parser.add_argument("--per-team", type=int, default=10)
    parser.add_argument("--workers", type=int, default=20, help="simulated compute workers (processes)")
    parser.add_argument("--clients", type=int, default=16, help="uploading threads of the crowd")
    parser.add_argument("--images", type=int, default=5, help="distinct tiny images")
    parser.add_argument("--scorers", type=int, default=2, help="serve --workers: runs landed and scored at once")
    parser.add_argument("--drain-limit", type=float, default=3600, help="s to wait for the last submission")
    parser.add_argument("--no-page", action="store_true",
                        help="the readers skip the task's HTML leaderboard (the report of every run, rebuilt after "
                             "each commit: the costliest read under a crowd)")
    parser.add_argument("--keep", action="store_true", help="keep the folder with the logs (printed)")
    parser.add_argument("--quick", action="store_true", help="50 teams x 2 submissions, 4 workers")
    args = parser.parse_args()
    if args.quick:
        args.teams, args.per_team, args.workers, args.clients = 50, 2, 4, 8
    total = args.teams * args.per_team

    import docker
    import psycopg
    import redis

    client = docker.from_env(timeout=300)
    binary = ensure_installed("redis-server", "redis-server")
    assert binary, "redis-server is not installed (apt-get install redis-server)"
    folder = Path(tempfile.mkdtemp(prefix="sharedtask-scale-"))
    pg = PostgresServer("max_connections=300")
    broker = RedisServer(binary, folder / "redis")
    broker.start()
    served = None
    workers: list[tuple[subprocess.Popen[bytes], Path]] = []
    archives, image_ids = tiny_archives(client, args.images)
    try:
        db_url = pg.new_database()
        data_dir = folder / "service"
        data_dir.mkdir()
        run_file = folder / "run.txt"
        run_file.write_text(perfect_run("simulated"))
        served = start_server(data_dir, db_url, free_port(), "--broker", broker.url, "--workers", str(args.scorers))
        port = int(served.url.rsplit(":", 1)[1])
        organizer = served.token()
        status, _ = call(f"{served.url}/api/tasks/{TASK}/publish", "POST", organizer)
        assert status == 200
        t0 = time.perf_counter()
        tokens = []
        for t in range(args.teams):
            status, body = call(f"{served.url}/api/teams", "POST", organizer, body={"name": f"team-{t:05d}"})
            assert status == 201, body
            tokens.append(body["token"])
        teams_seconds = time.perf_counter() - t0
        workers = start_workers(args.workers, broker.url, folder, run_file)
        parts = Components(served.process.pid, [p.pid for p, _ in workers], pg.pid, broker.proc.pid)
        print(f"{args.teams} teams x {args.per_team} submissions = {total}; {args.workers} workers with a "
              f"{SIMULATED}; {args.clients} uploading clients; {args.images} distinct images "
              f"({statistics.mean(len(a) for a, _ in archives) / 1024:.0f} KB archives); "
              f"PostgreSQL on 127.0.0.1:{pg.port} (fsync off), "
              f"Redis with AOF fsync always; {args.teams} teams created in {teams_seconds:.1f} s", flush=True)

        rds = redis.Redis(port=broker.port)
        dsn = pg.dsn(db_url.rsplit("/", 1)[1])
        samples: list[dict[str, Any]] = []
        stop_sampling = threading.Event()

        def sampler() -> None:
            with psycopg.connect(dsn, autocommit=True) as conn:
                while not stop_sampling.wait(TICK):
                    counts = dict(conn.execute("select status, count(*) from submissions group by status").fetchall())
                    samples.append({"t": time.perf_counter(), "cpu": parts.sample(), "counts": counts,
                                    "broker": int(rds.llen(QUEUE))})

        work: queue.Queue[tuple[str, int] | None] = queue.Queue()
        for n in range(args.per_team):
            for t, token in enumerate(tokens):
                work.put((token, n * args.teams + t))
        for _ in range(args.clients):
            work.put(None)
        figures = Figures()
        stop_reading = threading.Event()
        cpu0 = parts.sample()
        commands0 = int(rds.info("stats")["total_commands_processed"])
        start = time.perf_counter()
        threads = [threading.Thread(target=sampler, daemon=True),
                   threading.Thread(target=reader, args=(port, organizer, tokens, stop_reading, figures,
                                                           not args.no_page), daemon=True)]
        uploaders = [threading.Thread(target=uploader, args=(port, work, archives, figures), daemon=True)
                     for _ in range(args.clients)]
        for thread in threads + uploaders:
            thread.start()
        for thread in uploaders:
            thread.join()
        submitted = time.perf_counter()
        print(f"accepted {figures.accepted} of {total} in {submitted - start:.1f} s "
              f"({figures.accepted / (submitted - start):.1f} submissions/s); waiting for the last run ...", flush=True)
        with psycopg.connect(dsn, autocommit=True) as conn:
            def finished() -> bool:
                return conn.execute("select count(*) from submissions where status in ('done', 'failed')"
                                    ).fetchone()[0] >= figures.accepted
            wait_for(finished, args.drain_limit, 1.0)
        drained = time.perf_counter()
        stop_reading.set()
        stop_sampling.set()
        for thread in threads:
            thread.join(60)
        cpu1 = parts.sample()

        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute("select id, status, created, finished, job from submissions").fetchall()
            db_size = conn.execute("select pg_database_size(current_database())").fetchone()[0]
            scores = conn.execute("select count(*) from submissions where status = 'done' and "
                                  "(scores->>'ndcg5_official')::float = 1").fetchone()[0]
            why = conn.execute("select run_status, notes, validation from submissions where status = 'failed' "
                               "limit 1").fetchone()
        memory = rds.info("memory")
        commands = int(rds.info("stats")["total_commands_processed"]) - commands0
        running, finished_count = worker_events([log for _, log in workers])
        delays, ends, once = [], [], 0
        for _, state, created, done_at, job in rows:
            job_id = (job if isinstance(job, dict) else json.loads(job or "{}")).get("id")
            once += finished_count.get(job_id) == 1
            if job_id in running:
                delays.append((running[job_id] - created).total_seconds())
            if done_at is not None:
                ends.append((done_at - created).total_seconds())
        states: dict[str, int] = {}
        for row in rows:
            states[row[1]] = states.get(row[1], 0) + 1

        wall = drained - start
        print(f"\nsubmissions: {figures.accepted} accepted ({figures.accepted / (submitted - start):.1f}/s over "
              f"{submitted - start:.1f} s), all scored after {wall:.1f} s ({len(rows) / wall:.1f}/s end to end); "
              f"states {states}; nDCG@5 = 1 on {scores}; run exactly once on a worker (its job-finished "
              f"events): {once}; errors {len(figures.errors)}")
        if why is not None:
            print(f"  a failed one: {str(why)[:600]}")
        for error in sorted(set(figures.errors))[:5]:
            print(f"  error: {error}")
        print("latency while the crowd works, ms:")
        submits = [1000 * v for v in figures.submit]
        print(f"  {'submit (upload + admit)':28} {p50_p95(submits)}   n={len(submits)}")
        for kind, values in figures.reads.items():
            print(f"  {kind:28} {p50_p95([1000 * v for v in values])}   n={len(values)}")
        print("per submission, s:")
        print(f"  {'queue delay (accepted -> running on a worker)':46} {p50_p95(delays)}   n={len(delays)}")
        print(f"  {'end to end (accepted -> scored)':46} {p50_p95(ends)}   n={len(ends)}")
        print(f"database: {db_size / 2**20:.1f} MB (pg_database_size; {db_size / max(1, len(rows)) / 1024:.1f} KB "
              f"per submission); Redis: used_memory {memory['used_memory'] / 2**20:.1f} MB, peak "
              f"{memory['used_memory_peak'] / 2**20:.1f} MB, {commands} commands "
              f"({commands / max(1, len(rows)):.0f} per "
              f"submission, sampling included)")
        used = {name: cpu1[name] - cpu0[name] for name in cpu1}
        busy = sum(used.values())
        print(f"CPU over the {wall:.0f} s (from the first upload to the last score), from /proc:")
        for name, seconds in sorted(used.items(), key=lambda kv: -kv[1]):
            print(f"  {name:30} {seconds:8.1f} s  {seconds / wall:5.2f} cores  {100 * seconds / busy:5.1f} %  "
                  f"{1000 * seconds / max(1, len(rows)):6.1f} ms/submission")
        peak_backlog = max((s["counts"].get("queued", 0) for s in samples), default=0)
        peak_broker = max((s["broker"] for s in samples), default=0)
        at_end = min(samples, key=lambda s: abs(s["t"] - submitted)) if samples else None
        print(f"backlogs: the server's (DB 'queued', not yet sent) peak {peak_backlog}; the broker's queue "
              f"(Redis LLEN) peak {peak_broker}"
              + (f"; when the last upload was accepted: server {at_end['counts'].get('queued', 0)}, broker "
                 f"{at_end['broker']}" if at_end else ""))
        top = max(used, key=lambda name: used[name])
        where = ("the workers (the broker's queue grew)" if peak_broker > max(peak_backlog, args.workers)
                 else "the server's sending (its DB backlog grew)" if peak_backlog > args.workers
                 else "nothing queued up")
        print(f"saturates first: {top} ({used[top] / wall:.2f} of the 2 cores' {busy / wall:.2f} in use); "
              f"the queue that grew: {where}")
    finally:
        for proc, _ in workers:
            if proc.poll() is None:
                proc.terminate()
        for proc, _ in workers:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
        if served is not None:
            stop(served)
        broker.stop()
        pg.stop()
        for image in image_ids:
            try:
                client.images.remove(image, force=True)
            except docker.errors.APIError:
                pass
        if args.keep:
            print(f"logs and data kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
