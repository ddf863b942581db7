"""Build software images (baselines, submissions, the evaluator) with the docker SDK.

A build is skipped when the image exists and carries the label
``sharedtask.source-hash`` equal to the hash of its build context, so that the
demo and the tests rebuild only what changed (the same rule as docker/setup.sh).

A participant's Dockerfile runs code as hostile as its image, so every build
runs under a :class:`BuildSandbox`: a network (none for submissions), memory
and CPU limits for the build's RUN steps, and a timeout (docs/threat-model.md).
Before dockerd sees anything, the Dockerfile is checked against the organizer's
:class:`~sharedtask.images.dockerfile.BuildPolicy` (allowed base images, registry; no URLs)
and the context is collected by :mod:`sharedtask.images.context` (regular files only,
bounded, within the build's deadline) into the archive dockerd receives.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sharedtask.images.context import ContextLimits, collect, read_dockerfile
from sharedtask.images.client import docker_client
from sharedtask.images.dockerfile import BuildPolicy, check
from sharedtask.errors import SharedTaskError
from sharedtask.findings import Finding

HASH_LABEL = "sharedtask.source-hash"
BASE_IMAGE_ENV = "SHAREDTASK_BASE_IMAGE"
DEFAULT_BASE_IMAGE = "sharedtask/base:latest"
#: Extra allowed base images (comma or space separated; fnmatch patterns allowed) and the
#: organizer's registry host (unset: no registry at all, local images only).
BASES_ENV = "SHAREDTASK_BUILD_BASES"
REGISTRY_ENV = "SHAREDTASK_BUILD_REGISTRY"


@dataclass(frozen=True)
class BuildSandbox:
    """Limits of one image build.

    ``network``: ``"none"`` (no network at all: dependencies come from the base image),
    ``"default"`` (docker's build network, for the organizer's own images) or the name
    of a docker network where a local package mirror answers. The timeout is enforced
    on the build's output stream; a build silent past it is cut when the read times out,
    so the bound is at most twice the timeout.
    """

    network: str = "none"
    memory: int = 4 * 1024**3
    cpus: float = 2.0
    timeout: float = 1800.0
    context_files: int = ContextLimits.max_files
    context_bytes: int = ContextLimits.max_bytes

    @classmethod
    def for_software(cls, kind: str, raw: dict[str, Any] | None) -> "BuildSandbox":
        """Defaults by kind (submissions: no network), overridden by the manifest's ``build_sandbox``."""
        from sharedtask.units import parse_size

        raw = raw or {}
        default = cls(network="none" if kind == "submission" else "default")
        return cls(
            network=str(raw.get("network", default.network)),
            memory=parse_size(raw["memory"], "build memory") if "memory" in raw else default.memory,
            cpus=float(raw.get("cpus", default.cpus)),
            timeout=float(raw.get("timeout", default.timeout)),
            context_files=int(raw.get("context_files", default.context_files)),
            context_bytes=parse_size(raw["context_bytes"], "build context_bytes") if "context_bytes" in raw
            else default.context_bytes,
        )

    def context_limits(self) -> ContextLimits:
        return ContextLimits(max_files=self.context_files, max_bytes=self.context_bytes)

    def build_options(self) -> dict[str, Any]:
        """Keyword arguments of ``APIClient.build`` that apply these limits."""
        cores = max(1, min(os.cpu_count() or 1, int(-(-self.cpus // 1))))
        return {
            "network_mode": self.network,
            # The classic builder runs each RUN step in a container with these limits
            # (the SDK passes memory, memswap, cpushares, cpusetcpus; no CPU quota).
            "container_limits": {"memory": self.memory, "memswap": self.memory,
                                 "cpusetcpus": f"0-{cores - 1}" if cores > 1 else "0"},
        }

    def to_json(self) -> dict[str, Any]:
        return {"network": self.network, "memory": self.memory, "cpus": self.cpus, "timeout": self.timeout,
                "context_files": self.context_files, "context_bytes": self.context_bytes}


def base_image() -> str:
    return os.environ.get(BASE_IMAGE_ENV, DEFAULT_BASE_IMAGE)


def build_policy() -> BuildPolicy:
    """The organizer's policy: the project's base image, the images of the project manifest's
    baselines (submissions may build on them), ``$SHAREDTASK_BUILD_BASES``; the registry of
    ``$SHAREDTASK_BUILD_REGISTRY`` (none by default)."""
    from sharedtask.manifest import load_manifest

    allowed = [base_image()]
    try:
        allowed += [sw.image for sw in load_manifest().baselines if sw.image not in allowed]
    except SharedTaskError:
        pass  # no project manifest: the base image and the environment's list only
    allowed += [ref for ref in os.environ.get(BASES_ENV, "").replace(",", " ").split() if ref not in allowed]
    return BuildPolicy(tuple(allowed), os.environ.get(REGISTRY_ENV) or None)


class BuildRefused(SharedTaskError):
    """The Dockerfile names what the organizer's policy does not allow: every finding, one per line."""

    def __init__(self, tag: str, findings: list[Finding]) -> None:
        lines = [f"{f.path}{'' if f.line is None else f':{f.line}'}: {f.message} [{f.code}]" for f in findings]
        super().__init__(f"building {tag} refused: " + "\n".join(lines), hint=findings[0].hint)
        self.findings = findings


def ensure_image(
    context: Path,
    tag: str,
    *,
    dockerfile: str | None = None,
    build_args: dict[str, str] | None = None,
    client=None,
    force: bool = False,
    on_log: Callable[[str], None] | None = None,
    sandbox: BuildSandbox | None = None,
    policy: BuildPolicy | None = None,
) -> tuple[str, bool]:
    """Build ``context`` as ``tag`` unless an up-to-date build exists.

    Returns (image id, built?). The ids of the base image and of every local image
    named in ``build_args`` (e.g. a parent baseline image) are part of the hash, so a
    new parent triggers a rebuild. ``sandbox`` defaults to a submission's (no network);
    ``policy`` to :func:`build_policy`. Raises BuildRefused before dockerd sees anything
    when the Dockerfile names what the policy does not allow.
    """
    import docker

    client = client or docker_client()
    sandbox = sandbox or BuildSandbox()
    deadline = time.monotonic() + sandbox.timeout  # covers reading the context, not only the build
    name = dockerfile or "Dockerfile"
    try:
        text = read_dockerfile(context, name)
    except FileNotFoundError:
        raise SharedTaskError(f"no {name} in {context}") from None
    base = base_image()
    args = {"BASE_IMAGE": base, **(build_args or {})}
    findings = check(text, policy or build_policy(), args, name=str(context / name))
    if findings:
        raise BuildRefused(tag, findings)
    collected = collect(context, dockerfile=name, extra=_parents(client, args) + (dockerfile or ""),
                        limits=sandbox.context_limits(), deadline=deadline, timeout=sandbox.timeout)
    wanted = collected.digest
    try:
        if not force:
            try:
                existing = client.images.get(tag)
                if existing.labels.get(HASH_LABEL) == wanted:
                    return existing.id, False
            except docker.errors.ImageNotFound:
                pass
        try:
            image_id = _stream_build(collected.archive, context, tag, sandbox, on_log, deadline, dockerfile=name,
                                     buildargs=args, labels={HASH_LABEL: wanted})
        except SharedTaskError:
            _forget(client, tag, wanted)
            raise
    finally:
        collected.archive.close()
    if image_id is None:
        image_id = client.images.get(tag).id
    return image_id, True


def _parents(client: Any, args: dict[str, str]) -> str:
    """The ids of the base image and of every local image a build arg names (part of the hash)."""
    import docker

    base = args["BASE_IMAGE"]
    try:
        parents = [client.images.get(base).id]
    except docker.errors.ImageNotFound:
        raise SharedTaskError(f"the base image {base} is missing", hint="run `sharedtask docker-doctor --fix`") from None
    for value in sorted(args.values()):
        try:
            parents.append(client.images.get(value).id)
        except (docker.errors.ImageNotFound, docker.errors.APIError):
            parents.append(value)
    return " ".join(parents)


def up_to_date(software: Any, client: Any = None) -> bool:
    """Whether a manifest entry's image exists with the hash a build would give it now (its
    Dockerfile checked and its context collected as for a build, nothing sent to dockerd)."""
    import docker

    client = client or docker_client()
    name = software.dockerfile or "Dockerfile"
    args = {"BASE_IMAGE": base_image(), **software.build_args}
    findings = check(read_dockerfile(software.build, name), build_policy(), args, name=str(software.build / name))
    if findings:
        raise BuildRefused(software.image, findings)
    sandbox = BuildSandbox.for_software(software.kind, software.build_sandbox)
    collected = collect(software.build, dockerfile=name, extra=_parents(client, args) + (software.dockerfile or ""),
                        limits=sandbox.context_limits(), deadline=time.monotonic() + sandbox.timeout,
                        timeout=sandbox.timeout)
    collected.archive.close()
    try:
        return client.images.get(software.image).labels.get(HASH_LABEL) == collected.digest
    except docker.errors.ImageNotFound:
        return False


def _stream_build(archive: Any, context: Path, tag: str, sandbox: BuildSandbox, on_log: Callable[[str], None] | None,
                  deadline: float, **options: Any) -> str | None:
    """Send ``archive`` (the collected context) and follow the build under ``sandbox`` until
    ``deadline``; raises SharedTaskError on failure."""
    import docker
    import requests
    import urllib3

    # A client of its own: its read timeout is the build's timeout, and closing it (when
    # the deadline passes) makes the daemon cancel the build.
    left = max(1, int(deadline - time.monotonic()))
    client = docker.from_env(timeout=left)
    image_id = None
    last_lines: list[str] = []

    def failed(reason: str) -> SharedTaskError:
        tail = "\n".join(last_lines[-8:])
        return SharedTaskError(f"building {tag} from {context} failed: {reason}" + (f"\n{tail}" if tail else ""))

    try:
        stream = client.api.build(fileobj=archive, custom_context=True, tag=tag, rm=True, forcerm=True, decode=True,
                                  timeout=left, **options, **sandbox.build_options())
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
                raise failed(chunk["error"].strip())
            if time.monotonic() > deadline:
                raise failed(f"timed out after {sandbox.timeout:g} s (build limit)")
    except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError) as exc:
        if time.monotonic() >= deadline - 1:
            raise failed(f"timed out after {sandbox.timeout:g} s (build limit)") from None
        raise failed(f"the connection to the docker daemon broke ({exc.__class__.__name__})") from None
    except docker.errors.APIError as exc:
        raise failed(str(exc.explanation or exc)) from None
    finally:
        client.close()
    return image_id


def _forget(client: Any, tag: str, wanted: str) -> None:
    """A cancelled build can still commit its last step and tag it: such an image must not
    pass for an up-to-date build next time (measured on docker 20.10's classic builder)."""
    import docker

    try:
        image = client.images.get(tag)
        if image.labels.get(HASH_LABEL) == wanted:
            client.images.remove(image.id, force=True)
    except docker.errors.APIError:
        pass


def ensure_software_image(software: Any, *, force: bool = False,
                          on_log: Callable[[str], None] | None = None) -> tuple[str, bool]:
    """Build a manifest entry's image under its build sandbox (see :class:`BuildSandbox`)."""
    if software.kind == "submission" and software.build is not None:
        policy = build_policy()
        if policy.allows(software.image):
            from sharedtask.findings.codes import finding

            raise BuildRefused(software.image, [finding(
                "BUILD-TAG", f"the submission {software.name!r} would be tagged {software.image}, one of the "
                f"organizer's base images (allowed bases: {policy.describe()})", str(software.build))])
    return ensure_image(software.build, software.image, dockerfile=software.dockerfile,
                        build_args=software.build_args, force=force, on_log=on_log,
                        sandbox=BuildSandbox.for_software(software.kind, software.build_sandbox))
