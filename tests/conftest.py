"""Shared fixtures.

Docker tests are marked ``docker``: they skip on a developer machine without a
daemon, but fail in CI (``CI=true``), where ``.ci/run`` starts the daemon and
builds the base image first, so that a broken set-up can never pass as "skipped".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# `PYTHONPATH=src pytest` (a worktree's source before an installed copy) names a folder relative
# to here; a server or CLI the tests start in another folder would import another copy. Absolute
# from now on, for every subprocess.
if os.environ.get("PYTHONPATH"):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        str(Path(part).resolve()) if part else part for part in os.environ["PYTHONPATH"].split(os.pathsep))
BASE_IMAGE = os.environ.get("SHAREDTASK_BASE_IMAGE", "sharedtask/base:latest")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the Docker tests, but {reason} (run docker/setup.sh)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_client():
    """A docker SDK client for a live daemon."""
    import docker

    try:
        client = docker.from_env(timeout=300)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means "no daemon"
        _unavailable(f"no Docker daemon is reachable ({exc.__class__.__name__})")
    return client


@pytest.fixture(scope="session")
def base_image(docker_client) -> str:
    """Name of the project's base image (built by docker/setup.sh)."""
    import docker

    try:
        docker_client.images.get(BASE_IMAGE)
    except docker.errors.ImageNotFound:
        _unavailable(f"the base image {BASE_IMAGE} is missing")
    return BASE_IMAGE


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO
