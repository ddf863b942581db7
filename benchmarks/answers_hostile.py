"""The answers cache under hostile readers: server RSS before and after random tokens and ``?tz=``.

    .venv/bin/python benchmarks/answers_hostile.py [--runs 400] [--requests 1000] [--src DIR]

A real ``sharedtask serve`` (its own process, SQLite) with RUNS scored runs on the public
board and a public phase; then REQUESTS anonymous reads of the JSON board, each with a new
random token, and REQUESTS reads of the phase's board page, each with a new random ``?tz=``.
Prints the server's resident memory (``/proc/<pid>/status`` VmRSS) after a warm-up and after
each crowd. ``--src DIR`` serves another checkout's package (e.g. /work/main/src for "before").
Issue 39 measured 93 -> 136 MB (tokens) and 93 -> 167 MB (zones) before.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import secrets
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

TASK = "touche-2021-task1"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, token: str | None = None, method: str = "GET", body: dict | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers),
                                    timeout=120) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--src", type=Path, help="serve this checkout's src/ (default: this one)")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = str(args.src.resolve())
    with tempfile.TemporaryDirectory(prefix="answers-hostile-") as tmp:
        data, db = Path(tmp) / "data", Path(tmp) / "service.db"
        data.mkdir()
        base = [sys.executable, "-m", "sharedtask", "serve", "--db", f"sqlite:///{db}", "--data-dir", str(data)]
        org = subprocess.run([*base, "--new-organizer-token"], env=env, capture_output=True, text=True,
                             check=True).stdout.strip()
        subprocess.run([*base, "--new-team", "team-a"], env=env, capture_output=True, text=True, check=True)
        with sqlite3.connect(db) as con:
            con.execute("INSERT INTO images (archive_sha256, docker_id, size, created) "
                        f"VALUES ('{'a' * 64}', 'sha256:x', 1, CURRENT_TIMESTAMP)")
            for i in range(args.runs):
                con.execute("INSERT INTO submissions (team_id, task_id, image_id, image_name, tag, status, attempts, "
                            "created, run_status, valid, scores, notes) SELECT t.id, ?, i.id, 'sha256:x', ?, 'done', "
                            "1, CURRENT_TIMESTAMP, 'success', 1, ?, '[]' FROM teams t, images i "
                            "WHERE t.name = 'team-a'",
                            (TASK, f"run{i:04d}", json.dumps({"ndcg5_official": i / args.runs})))
        port = _port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen([*base, "--port", str(port), "--task", TASK], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            end = time.monotonic() + 60
            while True:
                try:
                    if _get(f"{url}/api/tasks") == 200:
                        break
                except OSError:
                    pass
                if time.monotonic() > end:
                    raise SystemExit("the server did not come up")
                time.sleep(0.2)
            now = dt.datetime.now(dt.timezone.utc)
            assert _get(f"{url}/api/tasks/{TASK}/publish", org, "POST") == 200
            assert _get(f"{url}/api/tasks/{TASK}/phases/open", org, "PUT",
                        {"dataset": "sample", "opens": (now - dt.timedelta(days=1)).isoformat(),
                         "closes": (now + dt.timedelta(days=1)).isoformat(), "leaderboard_public": True}) == 200
            for _ in range(20):  # warm-up: the kept answers and the interpreter's caches
                _get(f"{url}/api/tasks/{TASK}/leaderboard")
                _get(f"{url}/tasks/{TASK}/phases/open/leaderboard")
            warm = _rss_mb(server.pid)
            for _ in range(args.requests):
                _get(f"{url}/api/tasks/{TASK}/leaderboard", "st_" + secrets.token_urlsafe(32))
            tokens = _rss_mb(server.pid)
            for _ in range(args.requests):
                _get(f"{url}/tasks/{TASK}/phases/open/leaderboard?tz={secrets.token_hex(8)}")
            zones = _rss_mb(server.pid)
        finally:
            server.terminate()
            server.wait(30)
    print(f"server ({args.src or 'this checkout'}), {args.runs} runs on the board:")
    for label, value, before in (("after warm-up", warm, None),
                                 (f"after {args.requests} random tokens", tokens, warm),
                                 (f"after {args.requests} random ?tz= values", zones, tokens)):
        grew = f"  (+{value - before:.1f})" if before is not None else ""
        print(f"  {label:<34} {value:7.1f} MB{grew}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
