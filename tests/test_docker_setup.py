"""docker/setup.sh and the base image: standard Dockerfile, idempotent set-up, content, cache."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SETUP = REPO / "docker" / "setup.sh"
DOCKERFILE = REPO / "docker" / "base" / "Dockerfile"


def test_setup_script_is_valid_bash():
    assert subprocess.run(["bash", "-n", str(SETUP)]).returncode == 0


def test_dockerfile_stays_standard_for_real_users():
    text = DOCKERFILE.read_text()
    assert "ARG BASE_IMAGE=python:3.12-slim-trixie" in text
    assert "/opt/venv" in text and "openjdk-21-jre-headless" in text
    # The offline machines' proxy CA belongs only to the locally made OS image.
    for local_only in ("PIP_CERT", "host-ca-bundle", "REQUESTS_CA_BUNDLE", "ca-certificates.crt"):
        assert local_only not in text


def _setup(env_extra: dict[str, str] | None = None, script: Path = SETUP) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, **(env_extra or {})}
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=900)


@pytest.mark.docker
def test_setup_is_idempotent(docker_client, base_image):
    # Colleagues edit src/ at the same time: a pair of runs counts only when no
    # source changed in between (then the second run must not build).
    for _attempt in range(3):
        first = _setup()
        assert first.returncode == 0, first.stderr
        image_id = docker_client.images.get(base_image).id
        again = _setup()
        assert again.returncode == 0, again.stderr
        assert "nothing to do for the daemon" in again.stdout
        if "is stale" not in again.stdout:
            break
    assert "is up to date" in again.stdout and "docker build" not in again.stdout
    assert docker_client.images.get(base_image).id == image_id


@pytest.mark.docker
def test_base_image_content(docker_client, base_image):
    script = (
        "import shutil, sys, importlib.util as u, sharedtask.formats, yaml, jsonschema, rich;"
        "print(sys.prefix);"
        "print(shutil.which('java'));"
        "print(','.join(m for m in ('tira', 'docker', 'pytrec_eval', 'torch') if u.find_spec(m)))"
    )
    out = docker_client.containers.run(base_image, ["python", "-c", script], network_mode="none",
                                       remove=True).decode().splitlines()
    assert out[0] == "/opt/venv"
    assert out[1]  # java on PATH
    assert out[2] == ""  # host-side tools are not baked into the base image
    java = docker_client.containers.run(base_image, ["sh", "-c", "java -version 2>&1"], network_mode="none",
                                        remove=True).decode()
    assert 'version "21' in java
    labels = docker_client.images.get(base_image).labels
    assert len(labels["sharedtask.source-hash"]) == 16


@pytest.mark.docker
def test_source_change_triggers_rebuild_and_label(docker_client, base_image, tmp_path):
    """A copy of the checkout with its own image name: built, cached, rebuilt after a source edit."""
    root = tmp_path / "checkout"
    (root / "docker" / "base").mkdir(parents=True)
    shutil.copy(SETUP, root / "docker" / "setup.sh")
    shutil.copy(DOCKERFILE, root / "docker" / "base" / "Dockerfile")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    shutil.copy(REPO / "README.md", root / "README.md")
    shutil.copytree(REPO / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "tasks", root / "tasks", ignore=shutil.ignore_patterns("__pycache__"))
    name = f"sharedtask-test/base:{uuid.uuid4().hex[:8]}"
    labels = docker_client.images.get(base_image).labels
    env = {"SHAREDTASK_BASE_IMAGE": name, "SHAREDTASK_BUILD_FROM": labels["sharedtask.built-from"]}
    try:
        built = _setup(env, root / "docker" / "setup.sh")
        assert built.returncode == 0, built.stdout + built.stderr
        assert "missing or unlabelled" in built.stdout
        first_hash = docker_client.images.get(name).labels["sharedtask.source-hash"]
        cached = _setup(env, root / "docker" / "setup.sh")
        assert "is up to date" in cached.stdout
        (root / "src" / "sharedtask" / "added_module.py").write_text("VALUE = 42\n")
        rebuilt = _setup(env, root / "docker" / "setup.sh")
        assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
        assert "is stale" in rebuilt.stdout
        second_hash = docker_client.images.get(name).labels["sharedtask.source-hash"]
        assert second_hash != first_hash
        value = docker_client.containers.run(name, ["python", "-c", "import sharedtask.added_module as m; print(m.VALUE)"],
                                             network_mode="none", remove=True).decode().strip()
        assert value == "42"
    finally:
        try:
            docker_client.images.remove(name, force=True)
        except Exception:  # noqa: BLE001
            pass


@pytest.mark.docker
def test_docker_doctor_reports_ok(docker_client, base_image):
    out = subprocess.run([sys.executable, "-m", "sharedtask", "docker-doctor", "--json"],
                         capture_output=True, text=True, timeout=120)
    checks = {c["name"]: c for c in json.loads(out.stdout)}
    assert set(checks) == {"docker CLI", "docker daemon", "base image", "sandboxed start"}
    assert all(c["ok"] for c in checks.values()), checks
    assert out.returncode == 0
