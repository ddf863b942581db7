"""Build software images (baselines, submissions, the evaluator) with the docker SDK.

A build is skipped when the image exists and carries the label
``sharedtask.source-hash`` equal to the hash of its build context, so that the
demo and the tests rebuild only what changed (the same rule as docker/setup.sh).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Callable

from sharedtask.dockerclient import docker_client
from sharedtask.errors import SharedTaskError

HASH_LABEL = "sharedtask.source-hash"
BASE_IMAGE_ENV = "SHAREDTASK_BASE_IMAGE"
DEFAULT_BASE_IMAGE = "sharedtask/base:latest"
_SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".hypothesis", ".venv", "node_modules", "sharedtask-runs", "sharedtask-report", "tests", "benchmarks"}


def base_image() -> str:
    return os.environ.get(BASE_IMAGE_ENV, DEFAULT_BASE_IMAGE)


def context_hash(context: Path, extra: str = "") -> str:
    """Hash of every file (path + bytes) in a build context, in a stable order."""
    digest = hashlib.sha256(extra.encode())
    for root, dirs, files in os.walk(context):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = Path(root, name)
            digest.update(str(path.relative_to(context)).encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:24]


def ensure_image(
    context: Path,
    tag: str,
    *,
    dockerfile: str | None = None,
    build_args: dict[str, str] | None = None,
    client=None,
    force: bool = False,
    on_log: Callable[[str], None] | None = None,
) -> tuple[str, bool]:
    """Build ``context`` as ``tag`` unless an up-to-date build exists.

    Returns (image id, built?). The ids of the base image and of every local image
    named in ``build_args`` (e.g. a parent baseline image) are part of the hash, so a
    new parent triggers a rebuild.
    """
    import docker

    client = client or docker_client()
    if not (context / (dockerfile or "Dockerfile")).is_file():
        raise SharedTaskError(f"no {dockerfile or 'Dockerfile'} in {context}")
    base = base_image()
    try:
        base_id = client.images.get(base).id
    except docker.errors.ImageNotFound:
        raise SharedTaskError(f"the base image {base} is missing", hint="run `sharedtask docker-doctor --fix`") from None
    args = {"BASE_IMAGE": base, **(build_args or {})}
    parents = [base_id]
    for value in sorted(args.values()):
        try:
            parents.append(client.images.get(value).id)
        except (docker.errors.ImageNotFound, docker.errors.APIError):
            parents.append(value)
    wanted = context_hash(context, extra=" ".join(parents) + (dockerfile or ""))
    if not force:
        try:
            existing = client.images.get(tag)
            if existing.labels.get(HASH_LABEL) == wanted:
                return existing.id, False
        except docker.errors.ImageNotFound:
            pass
    image_id = None
    last_lines: list[str] = []
    stream = client.api.build(
        path=str(context),
        dockerfile=dockerfile,
        tag=tag,
        buildargs=args,
        labels={HASH_LABEL: wanted},
        rm=True,
        forcerm=True,
        decode=True,
    )
    for chunk in stream:
        if "stream" in chunk:
            line = chunk["stream"].rstrip()
            if line:
                last_lines = (last_lines + [line])[-15:]
                if on_log:
                    on_log(line)
        if "aux" in chunk and "ID" in chunk["aux"]:
            image_id = chunk["aux"]["ID"]
        if "error" in chunk:
            tail = "\n".join(last_lines[-8:])
            raise SharedTaskError(f"building {tag} from {context} failed: {chunk['error'].strip()}\n{tail}")
    if image_id is None:
        image_id = client.images.get(tag).id
    return image_id, True
