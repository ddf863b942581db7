"""Re-rankers in the submission service: a published first stage, two teams re-ranking it at once.

A real server process (``--blind``), real uploads of real images (``FROM scratch`` + busybox,
tests/service_helpers.py), real sandboxed runs reading ``$inputRun``. The first stage is the
organizer's own submission of a run that ranks every judged document by its grade, so the
re-tagged re-ranking of it has nDCG@5 = 1 by construction (service_helpers.perfect_run).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from service_helpers import TASK, call, free_port, images, perfect_run, start_server, stop  # noqa: F401 - fixture

pytestmark = [pytest.mark.docker, pytest.mark.slow]

#: the re-ranker: the first stage's run, re-tagged (every document is a candidate)
RERANK = 'sed "s/ bm25$/ rr/" "$inputRun/run.txt" > "$2/run.txt"\nexit 0'
#: the same plus one document that was not among its topic's candidates
CHEAT = RERANK.replace("\nexit 0", '\nQ=$(head -n 1 "$inputRun/run.txt" | cut -d " " -f 1)\n'
                                   'echo "$Q Q0 not-a-candidate 999 0.001 rr" >> "$2/run.txt"\nexit 0')


def _wait(url: str, token: str, sid: int) -> dict:
    end = time.monotonic() + 300  # a hang bound, not a speed test
    while (sub := call(f"{url}/api/submissions/{sid}", token=token)[1])["status"] not in ("done", "failed"):
        assert time.monotonic() < end, sub
        time.sleep(0.3)
    return sub


def _submit(url: str, token: str, image: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "sharedtask", "submit", "--server", url, "--token", token,
                             "--task", TASK, "--image", image, "--json", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_teams_rerank_one_stage_made_once_and_blind_teams_see_none_of_it(tmp_path: Path, images):
    pid = os.getpid()
    first, reranker, cheat = (images(f"stage-{name}", perfect_run("bm25"), script)
                              for name, script in (("bm25", ""), ("rerank", RERANK), ("cheat", CHEAT)))
    data_dir = tmp_path / "service"
    data_dir.mkdir()
    port = free_port()
    served = start_server(data_dir, f"sqlite:///{data_dir / 'service.db'}", port, "--blind")
    try:
        org, team_a, team_b = served.token(), served.token("team-a"), served.token("team-b")
        url = served.url
        # an unknown stage is refused by the pre-flight: the image named here does not even exist,
        # so the refusal came before any `docker save` and upload
        refused = served.cli("submit", "--server", url, "--token", team_a, "--task", TASK, "--image",
                             f"sharedtask-test/not-built:{pid}", "--input-run", "bm25", check=False)
        assert refused.returncode == 2 and "no published first stage 'bm25'" in refused.stderr, refused.stderr

        done = served.cli("submit", "--server", url, "--token", org, "--task", TASK, "--image", first,
                          "--tag", "bm25", "--json")
        first_id = json.loads(done.stdout)["id"]
        assert _wait(url, org, first_id)["valid"] is True
        with ThreadPoolExecutor(2) as pool:  # two publications at once: one stage
            answers = list(pool.map(lambda _: call(f"{url}/api/tasks/{TASK}/stages/bm25", "PUT", org,
                                                   {"submission": first_id}), range(2)))
        assert [a[0] for a in answers] == [200, 200] and sorted(a[1]["made"] for a in answers) == [False, True]
        stage = answers[0][1]
        folder = Path(stage["path"])

        # two teams submit re-rankers of it at the same time
        runs = [_submit(url, team_a, reranker, "--tag", "rerank", "--input-run", "bm25"),
                _submit(url, team_b, cheat, "--tag", "cheat", "--input-run", "bm25")]
        outs = [p.communicate(timeout=600) for p in runs]
        assert [p.returncode for p in runs] == [0, 0], outs
        ids = [json.loads(out)["id"] for out, _ in outs]
        good, bad = (_wait(url, org, sid) for sid in ids)

        log = (data_dir.parent / f"serve-{port}.log").read_text()
        assert log.count(f"stage bm25 of {TASK} on sample made") == 1, log  # made once, however many read it
        for sub in (good, bad):
            assert sub["input_run"] == "bm25" and sub["record"]["rerank"]["sha256"] == stage["sha256"]
            assert sub["record"]["dataset"]["input_run"] == str(folder.resolve())
        assert good["valid"] is True and good["scores"]["ndcg5_official"] == pytest.approx(1.0)
        assert bad["valid"] is False
        assert "RUN-NOT-CANDIDATE" in {f["code"] for f in bad["record"]["validation"]["report"]["findings"]}
        mine = call(f"{url}/api/submissions/{ids[1]}", token=team_b)[1]
        assert {"code": "RUN-NOT-CANDIDATE", "severity": "error"} in mine["findings"] and mine["input_run"] == "bm25"

        # the leaderboards show the pipeline
        assert call(f"{url}/api/tasks/{TASK}/publish", "POST", org)[0] == 200
        board = call(f"{url}/api/tasks/{TASK}/leaderboard")[1]
        assert {r["run"]: r.get("input_run") for r in board["runs"]}["team-a/rerank"] == "bm25"
        assert "team-a/rerank ← bm25" in call(f"{url}/tasks/{TASK}/leaderboard")[1]

        # blind: nothing of the stage's folder, candidates or texts reaches a team
        with gzip.open(folder / "rerank.jsonl.gz", "rt", encoding="utf-8") as fh:
            lines = [json.loads(line) for line in fh]
        secrets = {str(folder), str(folder.resolve()), str(data_dir.resolve())}
        secrets |= {c["text"][:60] for c in lines if len(c["text"]) >= 20} | {c["query"] for c in lines}
        secrets |= {c["docno"] for c in lines}
        paths = ["/api/submissions", f"/api/tasks/{TASK}/stages", f"/api/tasks/{TASK}/leaderboard", "/team",
                 f"/tasks/{TASK}/leaderboard", f"/api/tasks/{TASK}/submissions/preflight?input_run=bm25"]
        paths += [p for sid in ids for p in (f"/api/submissions/{sid}", f"/submissions/{sid}")]
        organizer_view = json.dumps(call(f"{url}/api/submissions/{ids[1]}", token=org)[1], ensure_ascii=False)
        assert [s for s in secrets if s in organizer_view]  # the check can fail: the organizer sees them
        for token in (team_a, team_b, None):
            for path in paths:
                status, body = call(url + path, token=token)
                text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
                found = [s for s in secrets if s and (s in text or json.dumps(s)[1:-1] in text)]
                assert found == [], (path, status, found[:3])
    finally:
        stop(served)
