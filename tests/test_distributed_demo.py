"""The organizer's batch on compute workers: `sharedtask demo --broker URL` with two real workers,
and the embedded local pool (`--parallel 2`); both rank the same runs with the same scores."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
import yaml

from distributed_helpers import (REPO, TASK, broker, build_tiny_image, redis_binary,  # noqa: F401 - fixtures
                                 tiny_image, workers)
from sharedtask.cli import main

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def second_image(docker_client, tmp_path_factory) -> str:
    run = REPO / "baselines" / "reference-runs" / TASK / "lucene-dirichlet.txt"
    tag = build_tiny_image(docker_client, tmp_path_factory.mktemp("tiny2"), run)
    yield tag
    docker_client.images.remove(tag, force=True)


@pytest.fixture()
def submissions(tmp_path, tiny_image, second_image) -> Path:
    path = tmp_path / "submissions.yml"
    path.write_text(yaml.safe_dump({"version": 1, "submissions": {
        "team-a": {"image": tiny_image, "command": "sleep 2; cp /run.txt $outputDir/run.txt", "tasks": [TASK]},
        "team-b": {"image": second_image, "command": "sleep 2; cp /run.txt $outputDir/run.txt", "tasks": [TASK]},
        "team-c": {"image": tiny_image, "command": "echo broken >&2; exit 3", "tasks": [TASK]},
    }}))
    return path


def board(out: Path) -> dict:
    return json.loads((out / TASK / "leaderboard.json").read_text())


def test_demo_on_two_workers_ranks_like_the_local_pool(broker, workers, submissions, tmp_path, capsys):
    workers(broker, "alpha")
    workers(broker, "beta")
    remote = tmp_path / "remote"
    args = ["demo", "--task", TASK, "--submissions", str(submissions), "--no-baselines"]
    assert main([*args, "--broker", broker.url, "--output", str(remote)]) == 1  # team-c failed
    shown = capsys.readouterr().out
    assert "running on alpha" in shown or "running on beta" in shown
    local = tmp_path / "local"
    assert main([*args, "--parallel", "2", "--output", str(local)]) == 1
    remote_board, local_board = board(remote), board(local)
    assert [r["run"] for r in remote_board["runs"]] == [r["run"] for r in local_board["runs"]]
    assert sorted(r["run"] for r in remote_board["runs"]) == ["team-a", "team-b"]  # each counted once
    for a, b in zip(remote_board["runs"], local_board["runs"]):
        assert a["scores"] == pytest.approx(b["scores"])
    assert [(r["run"], r["status"]) for r in remote_board["not_scored"]] == [("team-c", "failed")]
    workers_used = {json.loads((remote / TASK / name / "run-record.json").read_text())["executor"]["worker"]
                    for name in ("team-a", "team-b", "team-c")}
    assert workers_used <= {"alpha", "beta"}
    assert "broken" in (remote / TASK / "team-c" / "stderr.log").read_text()
    assert (remote / "report.html").is_file()

    # The coordinator started again on the same folder: every result is taken, nothing runs again.
    stamps = {p: p.stat().st_mtime_ns for p in (remote / TASK).glob("*/job-result.json")}
    assert main([*args, "--broker", broker.url, "--output", str(remote)]) == 1
    assert {p: p.stat().st_mtime_ns for p in (remote / TASK).glob("*/job-result.json")} == stamps
    assert board(remote)["runs"] == remote_board["runs"]


def test_local_pool_runs_side_by_side(submissions, tmp_path):
    out = tmp_path / "pool"
    assert main(["demo", "--task", TASK, "--submissions", str(submissions), "--no-baselines",
                 "--parallel", "3", "--output", str(out)]) == 1
    records = [json.loads((out / TASK / n / "run-record.json").read_text()) for n in ("team-a", "team-b")]
    # Both sleep 2 s: in a pool of three, each starts before the other ends.
    assert records[0]["started_at"] < records[1]["ended_at"] and records[1]["started_at"] < records[0]["ended_at"]
    # --resume keeps what finished (team-c's failure too: a failed run is reported once, not retried).
    stamps = {p: p.stat().st_mtime_ns for p in (out / TASK).glob("*/job-result.json")}
    assert len(stamps) == 3
    assert main(["demo", "--task", TASK, "--submissions", str(submissions), "--no-baselines",
                 "--parallel", "3", "--resume", "--output", str(out)]) == 1
    assert {p: p.stat().st_mtime_ns for p in (out / TASK).glob("*/job-result.json")} == stamps
    # Without it, every run is made again.
    assert main(["demo", "--task", TASK, "--submissions", str(submissions), "--no-baselines",
                 "--parallel", "3", "--output", str(out)]) == 1
    assert all(p.stat().st_mtime_ns != stamp for p, stamp in stamps.items())


def test_demo_renders_kubernetes_jobs_by_digest_in_a_restricted_namespace_and_runs_nothing(
        docker_client, submissions, tmp_path, tiny_image):
    from distributed_helpers import ensure_installed
    from sharedtask.executor.kubernetes import POD_SECURITY
    from sharedtask.images.registry import start_local

    out, manifests = tmp_path / "out", tmp_path / "k8s"
    # without a registry the images have no digest a cluster could pull: one line, nothing written
    assert main(["demo", "--task", TASK, "--submissions", str(submissions), "--no-baselines",
                 "--kubernetes", str(manifests / "tags"), "--output", str(out)]) == 2
    assert not list((manifests / "tags").glob("team-*.yaml"))
    if ensure_installed("docker-registry", "docker-registry") is None:
        pytest.skip("Debian's docker-registry is not installed")
    registry = start_local(tmp_path / "registry")
    try:
        assert main(["demo", "--task", TASK, "--submissions", str(submissions), "--no-baselines",
                     "--kubernetes", str(manifests), "--images-registry", registry.address, "--output", str(out)]) == 0
        name, _, tag = tiny_image.rpartition(":")  # the registry's own word on what the push stored
        request = urllib.request.Request(f"http://{registry.address}/v2/{name}/manifests/{tag}", method="HEAD",
                                         headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            digest = [f"{name}@{response.headers['Docker-Content-Digest']}"]
    finally:
        registry.stop()
        for image in docker_client.images.list():  # the tags the push added (the registry's name)
            for tag in image.tags:
                if tag.startswith(registry.address + "/"):
                    docker_client.images.remove(tag)
    namespace = yaml.safe_load((manifests / "namespace.yaml").read_text())
    assert namespace["kind"] == "Namespace" and namespace["metadata"]["labels"].items() >= POD_SECURITY.items()
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    docs = [d for p in sorted(manifests.glob("*.yaml")) if p.name != "namespace.yaml"
            for d in yaml.safe_load_all(p.read_text())]
    jobs = [d for d in docs if d["kind"] == "Job"]
    assert len(jobs) == 3 and sum(d["kind"] == "NetworkPolicy" for d in docs) == 3
    containers = [d["spec"]["template"]["spec"]["containers"][0] for d in jobs]
    assert all(c["image"].startswith(registry.address + "/") and "@sha256:" in c["image"] for c in containers)
    assert {c["image"].split("@")[1] for c in containers} & {d.split("@")[1] for d in digest}
    assert all(c["securityContext"]["readOnlyRootFilesystem"] is True for c in containers)
    claims = {d["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] for d in jobs}
    assert claims == {f"sample-{TASK}"}
    assert not (out / TASK / "team-a").exists()  # nothing ran


def test_demo_ships_images_as_archives_named_by_id(docker_client, broker, workers, submissions, tmp_path,
                                                     tiny_image, second_image):
    workers(broker, "gamma")
    out, images = tmp_path / "out", tmp_path / "images"
    assert main(["demo", "--task", TASK, "--submissions", str(submissions), "--no-baselines",
                 "--broker", broker.url, "--images-dir", str(images), "--output", str(out)]) == 1
    ids = {docker_client.images.get(tag).id.split(":")[1] for tag in (tiny_image, second_image)}
    assert {p.name for p in images.iterdir()} == {f"{i}.tar" for i in ids}  # each image once, no .part left
    assert sorted(r["run"] for r in board(out)["runs"]) == ["team-a", "team-b"]


def test_a_reranker_runs_on_a_worker_with_its_first_stage_shipped(broker, workers, tiny_image, tmp_path):
    """`demo --broker --images-dir`: the first stage on a worker, its stage made once here and
    shipped beside the images, the re-ranker on a worker reading it as $inputRun, and its re-rank
    dataset as $inputDataset."""
    from sharedtask.data.checksum import sha256

    worker = workers(broker, "delta")
    manifest = tmp_path / "pipeline.yml"
    manifest.write_text(yaml.safe_dump({"version": 1, "baselines": {
        # named as a first stage the task's stage admits (its spec's first_stages)
        "lucene-bm25": {"image": tiny_image, "command": "cp /run.txt $outputDir/run.txt", "tasks": [TASK]},
        # the first stage's own ranks, cut to 50: every line is a candidate (the stage hands over 100)
        "rerank": {"image": tiny_image, "command": "/bin/busybox awk '$4 <= 50' $inputRun/run.txt > $outputDir/run.txt"
                   "; /bin/busybox ls $inputDataset > $outputDir/dataset.txt",
                   "tasks": [TASK], "input_run": "lucene-bm25"},
    }}))
    out, images = tmp_path / "out", tmp_path / "images"
    assert main(["demo", "--task", TASK, "--manifest", str(manifest), "--broker", broker.url,
                 "--images-dir", str(images), "--output", str(out)]) == 0
    stage = out / TASK / "lucene-bm25" / "stage"
    candidates = sha256(stage / "rerank.jsonl.gz")
    assert (images / f"stage-{candidates}.tar").is_file()
    record = json.loads((out / TASK / "rerank" / "run-record.json").read_text())
    assert record["executor"]["worker"] == "delta"  # ran on the worker, not here
    assert record["rerank"]["sha256"] == candidates
    assert (worker.work_dir / "stages" / candidates / "rerank.jsonl.gz").is_file()  # the worker's own copy
    received = {e["software"] for e in worker.events("job-received")}
    assert received == {"lucene-bm25", "rerank"}
    rows = {r["run"]: r for r in board(out)["runs"]}
    assert rows["rerank"].get("input_run") == "lucene-bm25" and board(out)["not_scored"] == []  # valid, scored
    ranked = (out / TASK / "rerank" / "output" / "run.txt").read_text().splitlines()
    assert ranked and all(int(line.split()[3]) <= 50 for line in ranked)
    # on the worker too, $inputDataset is the re-rank dataset (TIREx's layout), not the corpus
    seen = (out / TASK / "rerank" / "output" / "dataset.txt").read_text().split()
    assert seen == ["queries.jsonl", "queries.xml", "rerank.jsonl.gz"]
