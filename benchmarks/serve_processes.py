"""The web tier on one and on two processes: throughput of the JSON board and of an uploading crowd.

    .venv/bin/python benchmarks/serve_processes.py [--clients 50] [--seconds 20] [--databases sqlite,postgresql]

For each database (a SQLite file; a private PostgreSQL on loopback, started here as the tests
do) and for ``serve --processes 1`` and ``--processes 2``: a fresh server, one real run on the
published Touché 2021 board, then two crowds of ``--clients`` keep-alive clients (the asyncio
generator of benchmarks/service.py, each sending its next request when its last is answered):

- board: GET the public JSON leaderboard only;
- uploading: GET the board and the team's submissions, every 10th request POST a real 2 MB
  image (five distinct images; a POST after the first of each is found by digest).

Prints requests/s, p50/p95 (ms) and the server's CPU time per request (all its processes),
then the ratios 2 processes / 1 process per database and crowd, all measured in this one run.
The load generator shares the machine's cores with the server: on 2 cores a second server
process competes with the generator and with the runs the uploads queue.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from service_helpers import (TASK, PostgresServer, free_port, tiny_archives,  # noqa: E402
                             start_server, stop)


def _service_bench():
    """benchmarks/service.py (its crowd generator and CPU reading), loaded by path: no package here."""
    spec = importlib.util.spec_from_file_location("bench_service", REPO / "benchmarks" / "service.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _service_bench()


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its children (the forked server processes), dead ones reaped included."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(stat.parent.name) == pid or int(fields[1]) == pid:
            total += bench.cpu_seconds(int(stat.parent.name))
    # children that ended count in the parent's cutime/cstime (fields 16 and 17)
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return total + (int(fields[13]) + int(fields[14])) / 100


def board_crowd(port: int, clients: int, seconds: float, out: dict[str, list[float]], errors: list[str]) -> None:
    """``clients`` keep-alive connections that GET the public JSON board, each as soon as its last answer came."""
    import asyncio
    import socket

    request = bench._request("GET", f"/api/tasks/{TASK}/leaderboard", {})

    async def one(deadline: float) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while time.monotonic() < deadline:
            start = time.perf_counter()
            try:
                status = await bench._exchange(reader, writer, request)
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                errors.append(f"leaderboard: {exc.__class__.__name__}")
                writer.close()
                reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
                continue
            if status != 200:
                errors.append(f"leaderboard: HTTP {status}")
            out["leaderboard"].append(time.perf_counter() - start)
        writer.close()

    async def run() -> None:
        deadline = time.monotonic() + seconds
        await asyncio.gather(*(one(deadline) for _ in range(clients)))

    asyncio.run(run())


def measure(port: int, pid: int, tokens: list[str], archives: list[tuple[bytes, str]], seconds: float,
            every: int) -> dict[str, float]:
    """One crowd: the board alone (``every`` 0), or the uploading mix of benchmarks/service.py."""
    out: dict[str, list[float]] = {"leaderboard": [], "submissions": [], "submit": []}
    errors: list[str] = []
    cpu = tree_cpu(pid)
    start = time.monotonic()
    if every:
        bench.async_crowd(port, tokens, archives, seconds, every, out, errors, f"u{int(start)}")
    else:
        board_crowd(port, len(tokens), seconds, out, errors)
    took = time.monotonic() - start
    cpu = tree_cpu(pid) - cpu
    latencies = [v for values in out.values() for v in values]
    n = len(latencies)
    if errors:
        print(f"  errors: {len(errors)} (first: {errors[0]})")
    return {"rps": n / took, "p50": 1000 * statistics.median(latencies),
            "p95": 1000 * bench.percentile(latencies, 0.95), "cpu_ms": 1000 * cpu / max(n, 1),
            "errors": len(errors)}


def one_server(db: str, processes: int, args: argparse.Namespace, tags: list[str],
               archives: list[tuple[bytes, str]], work: Path) -> dict[str, dict[str, float]]:
    data_dir = work / f"service-{processes}-{db.split(':')[0]}"
    data_dir.mkdir()
    port = free_port()
    server = start_server(data_dir, db, port, "--processes", str(processes))
    try:
        assert server.process is not None
        tokens = bench.ready(server, tags, args.clients)
        figures = {"board": measure(port, server.process.pid, tokens, archives, args.seconds, 0),
                   "uploading": measure(port, server.process.pid, tokens, archives, args.seconds, 10)}
        for crowd, f in figures.items():
            print(f"{db.split(':')[0]:10} processes {processes}  {crowd:9}  {f['rps']:7.0f} req/s  "
                  f"p50 {f['p50']:6.1f} ms  p95 {f['p95']:6.1f} ms  server CPU {f['cpu_ms']:.2f} ms/request"
                  + (f"  errors {f['errors']}" if f["errors"] else ""))
        return figures
    finally:
        stop(server)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--databases", default="sqlite,postgresql")
    args = parser.parse_args()

    import docker

    docker_client = docker.from_env(timeout=300)
    work = Path(tempfile.mkdtemp(prefix="sharedtask-bench-processes-"))
    tags, archives = tiny_archives(docker_client, "sharedtask-bench/processes", work)
    postgres = None
    results: dict[tuple[str, int], dict[str, dict[str, float]]] = {}
    try:
        for name in args.databases.split(","):
            for processes in (1, 2):
                if name == "sqlite":
                    db = f"sqlite:///{work / f'bench-{processes}.db'}"
                else:
                    postgres = postgres or PostgresServer()
                    db = postgres.new_database()
                results[(name, processes)] = one_server(db, processes, args, tags, archives, work)
        print("ratios, 2 processes / 1 process (throughput: higher is better; p95 and CPU: lower is better)")
        for name in args.databases.split(","):
            for crowd in ("board", "uploading"):
                one, two = results[(name, 1)][crowd], results[(name, 2)][crowd]
                print(f"  {name:10} {crowd:9}  req/s {two['rps'] / one['rps']:.2f}x  p50 {two['p50'] / one['p50']:.2f}x  "
                      f"p95 {two['p95'] / one['p95']:.2f}x  CPU/request {two['cpu_ms'] / one['cpu_ms']:.2f}x")
        return 1 if any(f["errors"] for r in results.values() for f in r.values()) else 0
    finally:
        if postgres is not None:
            postgres.stop()
        for tag in tags:
            try:
                docker_client.images.remove(docker_client.images.get(tag).id, force=True)
            except docker.errors.DockerException:
                pass


if __name__ == "__main__":
    sys.exit(main())
