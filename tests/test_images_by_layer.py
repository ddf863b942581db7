"""Images reach compute workers by layer through the organizer's registry (issue 41).

Real parts: Debian's ``docker-registry`` on a loopback port (started by ``sharedtask.images.registry``,
as ``serve --broker`` starts it), the shared Docker daemon pushing and pulling, the worker's own
``ensure`` (what ``sharedtask worker`` calls before a run). Which blobs travelled is read from the
registry's access log; which blobs an image is made of, from the registry's manifests over HTTP
(not from our code). The daemon is shared with the organizer's side here, so a "worker that lacks
the image" is the daemon after ``docker rmi`` of it.
"""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from distributed_helpers import REFERENCE, build_tiny_image, ensure_installed, free_port, job_for
from sharedtask.errors import SharedTaskError
from sharedtask.executor.job import Job
from sharedtask.images import registry as registries
from sharedtask.images import registry_log
from sharedtask.images.shipping import ensure, push, source_for

pytestmark = [pytest.mark.docker]

MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


@pytest.fixture
def registry(tmp_path: Path):
    if ensure_installed("docker-registry", "docker-registry") is None:
        pytest.skip("Debian's docker-registry is not installed")
    started = registries.start_local(tmp_path / "registry")
    yield started
    started.stop()


def blobs_of(reference: str) -> list[str]:
    """The config and layer digests of ``HOST:PORT/name@sha256:...``, as the registry's manifest lists them."""
    host, _, rest = reference.partition("/")
    name, _, digest = rest.partition("@")
    request = urllib.request.Request(f"http://{host}/v2/{name}/manifests/{digest}", headers={"Accept": MANIFEST})
    with urllib.request.urlopen(request, timeout=30) as response:
        manifest = json.load(response)
    return [manifest["config"]["digest"], *(layer["digest"] for layer in manifest["layers"])]


def fetched(reg: registries.LocalRegistry) -> Counter[str]:
    """How many times each blob was sent whole (GET answered 200), from the registry's access log."""
    return Counter(r.blob for r in registry_log.served(reg.log.read_text()) if r.blob and r.status == 200)


def forget(client: Any, *images: str) -> None:
    """The daemon lacks these images afterwards, as a worker that never had them (best effort; give
    the id too: a pulled image keeps its registry digest when its tag is removed)."""
    for image in images:
        try:
            client.images.remove(image, force=True)
        except Exception:  # noqa: BLE001 - already gone
            pass


def child_image(client: Any, parent: str, folder: Path) -> str:
    """``FROM parent`` plus one small file of its own: a second image sharing the first one's layers."""
    folder.mkdir(parents=True)
    (folder / "own.txt").write_text(folder.name * 100)
    (folder / "Dockerfile").write_text(f"FROM {parent}\nCOPY own.txt /own.txt\n")
    tag = parent.rsplit(":", 1)[0] + "-child:" + folder.name
    client.images.build(path=str(folder), tag=tag, rm=True, forcerm=True)
    return tag


def test_a_second_image_on_the_same_base_pulls_only_its_own_layers(docker_client, registry, tmp_path):
    base = build_tiny_image(docker_client, tmp_path / "base", REFERENCE)
    child = child_image(docker_client, base, tmp_path / "child")
    jobs = [job_for(docker_client, image, "cp /run.txt $outputDir/run.txt") for image in (base, child)]
    try:
        sources = [push(docker_client, image, registry.address) for image in (base, child)]
        base_blobs, child_blobs = blobs_of(sources[0]), blobs_of(sources[1])
        shared = set(base_blobs[1:]) & set(child_blobs[1:])
        assert shared and set(base_blobs[1:]) <= set(child_blobs[1:])  # the child is its parent's layers + one
        forget(docker_client, child, jobs[1].image_id, base, jobs[0].image_id)
        before = fetched(registry)
        for job, source in zip(jobs, sources):
            job = Job(**{**job.__dict__, "image_source": f"registry:{source}"})
            assert ensure(job, docker_client) == job.image_id  # pulled by digest, checked against the id
        pulled = fetched(registry) - before
        assert all(pulled[blob] == 1 for blob in shared), pulled  # the shared layers travelled once
        assert set(pulled) == set(base_blobs) | set(child_blobs)  # and nothing else travelled twice
        assert sum(pulled.values()) == len(set(base_blobs) | set(child_blobs))
    finally:
        forget(docker_client, child, jobs[1].image_id, base, jobs[0].image_id)


def test_a_registry_serving_another_build_is_refused_by_the_image_id(docker_client, registry, tmp_path):
    ours = build_tiny_image(docker_client, tmp_path / "ours", REFERENCE)
    other = build_tiny_image(docker_client, tmp_path / "other", REFERENCE)  # same files, another marker
    job = job_for(docker_client, ours, "cp /run.txt $outputDir/run.txt")
    other_id = docker_client.images.get(other).id
    try:
        wrong = push(docker_client, other, registry.address)  # the registry holds another build under the name
        forget(docker_client, ours, job.image_id)
        job = Job(**{**job.__dict__, "image_source": f"registry:{wrong}"})
        with pytest.raises(SharedTaskError, match="not the organizer's") as refused:
            ensure(job, docker_client)
        assert job.image_id in str(refused.value)
    finally:
        forget(docker_client, ours, job.image_id, other, other_id)


def test_a_worker_pulls_only_from_its_own_registry(docker_client, registry, tmp_path):
    from sharedtask.executor.fetch import Origin

    image = build_tiny_image(docker_client, tmp_path / "img", REFERENCE)
    job = job_for(docker_client, image, "cp /run.txt $outputDir/run.txt")
    try:
        source = push(docker_client, image, registry.address)
        forget(docker_client, image, job.image_id)
        job = Job(**{**job.__dict__, "image_source": f"registry:{source}"})
        before = len(registry_log.served(registry.log.read_text()))
        with pytest.raises(SharedTaskError, match="not in this worker's registry"):
            ensure(job, docker_client, Origin(registry="registry.example.org:5000"))  # another one named
        assert registry_log.served(registry.log.read_text())[before:] == []  # the daemon never asked
        assert ensure(job, docker_client, Origin(registry=registry.address)) == job.image_id  # its own: pulled
    finally:
        forget(docker_client, image, job.image_id)


def test_a_worker_with_a_malformed_registry_does_not_start(tmp_path):
    from test_cli_errors import assert_one_line_error, cli

    assert_one_line_error(cli("worker", "--broker", "redis://127.0.0.1:1/0", "--images-registry", "https://r.example/",
                              cwd=tmp_path), "--images-registry", "expected HOST[:PORT]")


@pytest.mark.parametrize("address, expected", [
    ("http://127.0.0.1:5000/", "expected HOST[:PORT]"),
    ("registry.example.org/team", "expected HOST[:PORT]"),
    (None, "does not answer as a registry"),  # a free port: nothing listens
])
def test_a_wrong_or_absent_registry_is_one_line_and_exit_2(tmp_path, address, expected):
    from test_cli_errors import assert_one_line_error, cli

    address = address or f"127.0.0.1:{free_port()}"
    line = assert_one_line_error(cli("serve", "--broker", "redis://127.0.0.1:1/0", "--images-registry", address,
                                     "--data-dir", tmp_path / "svc", cwd=tmp_path), "--images-registry", expected)
    assert address in line


def test_a_web_server_that_is_not_a_registry_is_refused(tmp_path):
    from sharedtask.executor.images_server import serve_in_thread

    web = serve_in_thread(tmp_path, "t" * 20)  # answers HTTP, but 401 without the registry's header
    try:
        with pytest.raises(SharedTaskError, match="does not answer as a registry"):
            registries.check_answers(f"127.0.0.1:{web.server_address[1]}")
    finally:
        web.shutdown()


def test_the_access_log_is_read_line_by_line():
    # two lines as docker-registry 2.8 writes them (one structured, one access line), by hand
    log = ('time="2026-11-27T05:09:21Z" level=info msg="response completed" http.request.method=GET '
           'http.request.uri="/v2/x/blobs/sha256:' + "a" * 64 + '" http.response.written=895\n'
           '127.0.0.1 - - [27/Nov/2026:05:09:21 +0000] "GET /v2/team/x/blobs/sha256:' + "a" * 64
           + ' HTTP/1.1" 200 895 "" "docker/20.10"\n'
           '127.0.0.1 - - [27/Nov/2026:05:09:21 +0000] "HEAD /v2/x/manifests/1 HTTP/1.1" 200 527 "" "docker"\n')
    assert registry_log.served(log) == [registry_log.Served("GET", "/v2/team/x/blobs/sha256:" + "a" * 64, 200, 895),
                                        registry_log.Served("HEAD", "/v2/x/manifests/1", 200, 527)]
    assert [r.blob for r in registry_log.served(log)] == ["sha256:" + "a" * 64, None]


def test_the_local_registry_keeps_its_port_and_blobs_across_restarts(registry, docker_client, tmp_path):
    image = build_tiny_image(docker_client, tmp_path / "img", REFERENCE)
    image_id = docker_client.images.get(image).id
    try:
        source = push(docker_client, image, registry.address)
        registry.stop()
        again = registries.start_local(registry.folder)
        try:
            assert again.port == registry.port  # jobs stored before the restart name this address
            assert blobs_of(source)  # and the manifest is still served
        finally:
            again.stop()
    finally:
        forget(docker_client, image, image_id)



def test_without_docker_registry_serve_ships_archives_and_says_how_to_get_layers(docker_client, tmp_path,
                                                                                 monkeypatch, capsys):
    import argparse

    from sharedtask.cli import serve

    # Stands in for a machine without Debian's docker-registry (it is installed here): the lookup says no.
    monkeypatch.setattr(registries, "available", lambda: None)
    image = build_tiny_image(docker_client, tmp_path / "img", REFERENCE)
    image_id = docker_client.images.get(image).id
    try:
        args = argparse.Namespace(images_registry=None, images_dir=None, images_url=None)
        address, images_dir, stage_source = serve._image_shipping(args, tmp_path / "data")
        notice = capsys.readouterr().out.strip().splitlines()
        assert len(notice) == 1 and "whole archives" in notice[0] and "docker-registry is not installed" in notice[0]
        assert "--images-registry" in notice[0] and address is None
        # what each server process then makes of it (cli/serve.py, make_pool)
        source = source_for(docker_client, registry=address, images_dir=images_dir, images_url=None)(image)
        assert source.startswith(f"archive:{(tmp_path / 'data' / 'images').resolve()}/{image_id.split(':')[1]}.tar#")
        assert stage_source is not None  # published stages travel the same way
    finally:
        forget(docker_client, image, image_id)
