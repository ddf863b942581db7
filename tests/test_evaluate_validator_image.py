"""The evaluator image (validator/Dockerfile) run the TIRA way, offline.

Builds FROM the project's base image, runs with ``--network none`` on a run directory
and a truth folder mounted read-only, and checks that tira's own parser reads the
prototext it writes and that the numbers equal the in-process evaluation.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sharedtask.evaluate import evaluate

FIX = Path(__file__).parent / "fixtures" / "eval"
IMAGE = "sharedtask/evaluator:test"

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def evaluator_image(docker_client, base_image, repo_root) -> str:
    docker_client.images.build(path=str(repo_root), dockerfile="validator/Dockerfile", tag=IMAGE,
                               buildargs={"BASE_IMAGE": base_image}, rm=True)
    return IMAGE


@pytest.mark.parametrize("task, fixture, run_file, truth", [
    ("arqmath-3-task1", "arqmath-task1", "run.tsv", "."),
    ("arqmath-3-task2", "arqmath-task2", "run.tsv", "truth"),
    ("touche-2021-task1", "touche-2021", "run.txt", "."),
])
def test_evaluator_image_writes_prototext_tira_reads(docker_client, evaluator_image, tmp_path,
                                                    task, fixture, run_file, truth):
    from tira.io_utils import load_output_of_directory

    run_dir, out = tmp_path / "run", tmp_path / "out"
    run_dir.mkdir()
    out.mkdir()
    shutil.copy(FIX / fixture / run_file, run_dir / "run.txt")
    truth_dir = (FIX / fixture / truth).resolve()
    docker_client.containers.run(
        evaluator_image, [task, "/tira-data/input-run", "/tira-data/input", "/tira-data/output"],
        network_mode="none", remove=True,
        volumes={str(run_dir): {"bind": "/tira-data/input-run", "mode": "ro"},
                 str(truth_dir): {"bind": "/tira-data/input", "mode": "ro"},
                 str(out): {"bind": "/tira-data/output", "mode": "rw"}},
    )
    loaded = load_output_of_directory(out, evaluation=True)
    direct = evaluate(run_dir / "run.txt", task, truth_dir=truth_dir)
    assert len(loaded) == len(direct.measures)
    for info in direct.measures:
        assert loaded[info.label] == pytest.approx(direct.scores[info.key], abs=1e-9), info.key


def test_evaluator_image_reports_a_broken_run_with_exit_2(docker_client, evaluator_image, tmp_path):
    import docker

    run_dir, out = tmp_path / "run", tmp_path / "out"
    run_dir.mkdir()
    out.mkdir()
    (run_dir / "run.txt").write_text("1 Q0 doc 1 1.0 tag\n")  # a Touché run given to ARQMath
    with pytest.raises(docker.errors.ContainerError) as info:
        docker_client.containers.run(
            evaluator_image, ["arqmath-3-task1", "/r", "/t", "/o"], network_mode="none", remove=True,
            volumes={str(run_dir): {"bind": "/r", "mode": "ro"},
                     str((FIX / "arqmath-task1").resolve()): {"bind": "/t", "mode": "ro"},
                     str(out): {"bind": "/o", "mode": "rw"}})
    assert info.value.exit_status == 2
    assert b"expects an ARQMath Task 1 run" in info.value.stderr
