"""The submission service under load: 50 concurrent keep-alive clients on loopback.

    .venv/bin/python benchmarks/service.py [--clients 50] [--seconds 60] [--submit-every 10]
        [--generator asyncio|threads|both] [--get-only] [--rate R ...]

First one keep-alive client alone (GETs, target p50 <= 5 ms), then the crowd (target p95 <=
100 ms, no errors). The load generator runs in this process, on the same 2-core machine as
the server, and the uploads in the mix queue real sandbox runs, which the server's worker
runs on the same cores meanwhile.

Starts ``sharedtask serve`` (SQLite file, one local sandbox worker) in its own process,
publishes the Touché 2021 leaderboard after one real run, then lets every client loop:
GET the public leaderboard, GET its team's submissions, and every ``--submit-every``-th
request POST a small real image (``docker save`` of a FROM-scratch busybox image, 2 MB; five
distinct images, so the first upload of each is loaded into Docker and the rest are found
by digest). Prints requests/s, p50/p95/max latency per kind, the errors (target: none) and
the CPU time per request of the server process (its runs included) and of the generator.

The crowd's definition: each client sends its next request as soon as its last one is
answered (no pause), so by Little's law the latency is clients / throughput. Generators:
``threads`` (one ``http.client`` thread per client: the first version of this benchmark)
and ``asyncio`` (all clients as coroutines of one event loop, each request one write: the
same requests for a fraction of the CPU). ``--get-only`` adds a crowd without uploads, run
first, while no queued run shares the cores;
``--rate R`` adds a paced crowd (asyncio), each client sending R requests a second, its
latency counted from when each request was due. The queued runs go on after the
benchmark; the server is then stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from service_helpers import (TASK, call, free_port, tiny_archives,  # noqa: E402
                             start_server, stop)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def single_client(port: int, token: str, requests: int = 200) -> dict[str, float]:
    """One keep-alive client alone, GETs only: p50 and p95 in ms per kind (target p50 <= 5 ms)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    figures: dict[str, float] = {}
    for kind, path, headers in (("leaderboard", f"/api/tasks/{TASK}/leaderboard", {}),
                                ("submissions", "/api/submissions", {"Authorization": f"Bearer {token}"}),
                                ("tasks", "/api/tasks", {})):
        values = []
        for _ in range(requests):
            start = time.perf_counter()
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            response.read()
            assert response.status == 200, (kind, response.status)
            values.append(time.perf_counter() - start)
        figures[f"{kind} p50"] = 1000 * statistics.median(values)
        figures[f"{kind} p95"] = 1000 * percentile(values, 0.95)
    conn.close()
    return figures


def client(port: int, token: str, archives: list[tuple[bytes, str]], deadline: float, every: int,
           out: dict[str, list[float]], errors: list[str], lock: threading.Lock, seed: int, label: str = "b") -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    auth = {"Authorization": f"Bearer {token}"}
    n = seed
    mine: dict[str, list[float]] = {"leaderboard": [], "submissions": [], "submit": []}
    while time.monotonic() < deadline:
        n += 1
        if n % every == 0:
            body, sha = archives[n % len(archives)]
            kind, method, path = "submit", "POST", f"/api/tasks/{TASK}/submissions?tag={label}{n}"
            headers = {**auth, "Content-Type": "application/x-tar", "X-Image-Sha256": sha}
        elif n % 2:
            kind, method, path, body, headers = "leaderboard", "GET", f"/api/tasks/{TASK}/leaderboard", None, {}
        else:
            kind, method, path, body, headers = "submissions", "GET", "/api/submissions", None, auth
        start = time.perf_counter()
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            ok = response.status in (200, 201)
            if not ok:
                errors.append(f"{kind}: HTTP {response.status}")
        except (OSError, http.client.HTTPException) as exc:
            errors.append(f"{kind}: {exc.__class__.__name__}")
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            continue
        mine[kind].append(time.perf_counter() - start)
    with lock:
        for kind, values in mine.items():
            out[kind].extend(values)


async def _exchange(reader: "asyncio.StreamReader", writer: "asyncio.StreamWriter", request: bytes) -> int:
    """One request on a keep-alive connection; the response's status (its body is read and dropped)."""
    writer.write(request)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length = next((int(line.split(":", 1)[1]) for line in lines[1:] if line.lower().startswith("content-length:")),
                  None)
    if length is None:
        raise ConnectionError(f"a response without Content-Length: {lines[0]}")
    await reader.readexactly(length)
    return status


def _request(method: str, path: str, headers: dict[str, str], body: bytes | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


async def _async_client(port: int, token: str, archives: list[tuple[bytes, str]], deadline: float, every: int,
                        out: dict[str, list[float]], errors: list[str], seed: int, label: str,
                        rate: float = 0.0) -> None:
    """The same loop as :func:`client`, on one asyncio connection: each request is one write."""
    import socket

    async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return reader, writer

    auth = {"Authorization": f"Bearer {token}"}
    board = _request("GET", f"/api/tasks/{TASK}/leaderboard", {})
    mine = _request("GET", "/api/submissions", auth)
    reader, writer = await connect()
    n = seed
    # --rate: each client sends a request every 1/rate s (phases spread over the clients); its
    # latency counts from when it was due, so a slow answer that delays the next request is
    # charged to that request too (no coordinated omission)
    due = time.monotonic() + (seed % 50) / 50 / rate if rate else 0.0
    while time.monotonic() < deadline:
        if rate:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            if time.monotonic() >= deadline:
                break
        n += 1
        if every and n % every == 0:
            body, sha = archives[n % len(archives)]
            kind = "submit"
            request = _request("POST", f"/api/tasks/{TASK}/submissions?tag={label}{n}",
                               {**auth, "Content-Type": "application/x-tar", "X-Image-Sha256": sha}, body)
        elif n % 2:
            kind, request = "leaderboard", board
        else:
            kind, request = "submissions", mine
        start = time.perf_counter() - max(0.0, time.monotonic() - due) if rate else time.perf_counter()
        due += 1 / rate if rate else 0.0
        try:
            status = await _exchange(reader, writer, request)
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            errors.append(f"{kind}: {exc.__class__.__name__}")
            writer.close()
            reader, writer = await connect()
            continue
        if status not in (200, 201):
            errors.append(f"{kind}: HTTP {status}")
        out[kind].append(time.perf_counter() - start)
    writer.close()


def async_crowd(port: int, tokens: list[str], archives: list[tuple[bytes, str]], seconds: float, every: int,
                out: dict[str, list[float]], errors: list[str], label: str, rate: float = 0.0) -> None:
    """All clients as coroutines of one event loop: far less CPU than 50 threads for the same requests."""

    async def run() -> None:
        deadline = time.monotonic() + seconds
        await asyncio.gather(*(_async_client(port, token, archives, deadline, every, out, errors, i, label, rate)
                               for i, token in enumerate(tokens)))

    asyncio.run(run())


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (``/proc/PID/stat``, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def crowd(args: argparse.Namespace, generator: str, every: int, port: int, server_pid: int, tokens: list[str],
          archives: list[tuple[bytes, str]], rate: float = 0.0) -> bool:
    """One crowd of ``--clients`` keep-alive clients for ``--seconds``; prints its table; True on errors."""
    # each crowd its own tags: a team may use a tag once per task
    label = f"{generator[0]}{every}r{rate:g}x".replace(".", "_")
    load_before = os.getloadavg()[0]
    out: dict[str, list[float]] = {"leaderboard": [], "submissions": [], "submit": []}
    errors: list[str] = []
    server_cpu, own_cpu = cpu_seconds(server_pid), time.process_time()
    started = time.monotonic()
    if generator == "asyncio":
        async_crowd(port, tokens, archives, args.seconds, every, out, errors, label, rate)
    else:
        lock = threading.Lock()
        deadline = time.monotonic() + args.seconds
        threads = [threading.Thread(target=client, args=(port, tokens[i], archives, deadline, every or 10**9,
                                                         out, errors, lock, i, label)) for i in range(len(tokens))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    elapsed = time.monotonic() - started
    server_cpu, own_cpu = cpu_seconds(server_pid) - server_cpu, time.process_time() - own_cpu
    total = sum(len(v) for v in out.values())
    mix = (f"an upload every {every}th request" if every else "GETs only") + (
        f", each client {rate:g} requests/s (latency from when each was due)" if rate else
        ", each client's next request as soon as its last is answered")
    print(f"\n{len(tokens)} clients ({generator} load generator in this process, on the same 2 cores), {mix}, "
          f"{elapsed:.1f} s, load average before {load_before:.2f}, after {os.getloadavg()[0]:.2f}"
          + (" (the server's sandbox worker runs the queued images meanwhile)" if every else ""))
    print(f"{'kind':<12} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for kind, values in [*out.items(), ("all", [v for vs in out.values() for v in vs])]:
        if values:
            print(f"{kind:<12} {len(values):>9} {len(values) / elapsed:>8.1f} "
                  f"{1000 * statistics.median(values):>8.1f} {1000 * percentile(values, 0.95):>8.1f} "
                  f"{1000 * max(values):>8.1f}")
    print(f"total {total} requests, {total / elapsed:.1f} req/s, errors: {len(errors)}"
          + (f" (first: {errors[:3]})" if errors else ""))
    if total:
        print(f"CPU per request: server process {1000 * server_cpu / total:.2f} ms (with its runs), "
              f"load generator {1000 * own_cpu / total:.2f} ms")
    return bool(errors)


def ready(server: Any, tags: list[str], clients: int) -> list[str]:
    """The crowd's start: a token per client's team, the first image's run done, the board published."""
    org = server.token()
    tokens = [call(f"{server.url}/api/teams", "POST", org, {"name": f"team-{i}"})[1]["token"] for i in range(clients)]
    first = server.cli("submit", "--server", server.url, "--token", tokens[0], "--task", TASK, "--image",
                       tags[0], "--wait", "--json")
    assert json.loads(first.stdout)["status"] == "done", first.stdout
    assert call(f"{server.url}/api/tasks/{TASK}/publish", "POST", org)[0] == 200
    return tokens


def main() -> int:  # noqa: C901 - one linear script
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--submit-every", type=int, default=10)
    parser.add_argument("--generator", choices=("asyncio", "threads", "both"), default="asyncio",
                        help="asyncio: all clients in one event loop (cheap); threads: one http.client thread "
                             "per client (the first version of this benchmark)")
    parser.add_argument("--get-only", action="store_true", help="also a crowd that only GETs")
    parser.add_argument("--rate", type=float, action="append", default=[],
                        help="also a paced crowd (asyncio): each client sends RATE requests/s; repeatable")
    args = parser.parse_args()

    import docker

    docker_client = docker.from_env(timeout=300)
    work = Path(tempfile.mkdtemp(prefix="sharedtask-bench-service-"))
    tags, archives = tiny_archives(docker_client, "sharedtask-bench/service", work)
    data_dir = work / "service"
    data_dir.mkdir()
    port = free_port()
    server = start_server(data_dir, f"sqlite:///{data_dir / 'service.db'}", port)
    try:
        tokens = ready(server, tags, args.clients)
        alone = single_client(port, tokens[0])
        print("one keep-alive client, 200 GETs per kind (ms): "
              + ", ".join(f"{k} {v:.1f}" for k, v in alone.items()))
        failed = False
        for generator in (["threads", "asyncio"] if args.generator == "both" else [args.generator]):
            if args.get_only:  # first: after an uploading crowd its queued runs would still share the cores
                failed |= crowd(args, generator, 0, port, server.process.pid, tokens, archives)
            failed |= crowd(args, generator, args.submit_every, port, server.process.pid, tokens, archives)
        for rate in args.rate:
            failed |= crowd(args, "asyncio", args.submit_every, port, server.process.pid, tokens, archives, rate)
        return 1 if failed else 0
    finally:
        stop(server)
        for tag in tags:
            try:
                docker_client.images.remove(docker_client.images.get(tag).id, force=True)
            except docker.errors.DockerException:
                pass
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
