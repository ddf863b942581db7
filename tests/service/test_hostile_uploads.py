"""Hostile image uploads and archive downloads: each attack found on the service, reproduced on real parts.

The Docker tests go through a real ``sharedtask serve`` process (limit ``--max-upload 8m``)
and a real daemon. Each one lists every tag of the daemon before and after the hostile
request and asserts that no tag moved and that nothing names the hostile image, and that
the server's peak memory (VmHWM) stayed under 512 MB. A victim image of the test's own
stands in for ``sharedtask/base``: were the fix ever undone, the test would re-tag its own
image, not the organizer's.

The other tests check archives directly (``clean_archive``, ``load_archive`` before it
reaches docker, the archive download's file checks) and need no daemon.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from service_helpers import (TASK, Served, build_tiny_image, call, free_port, perfect_run, remove_containers_of,
                             start_server, stop)
from sharedtask.service.archive import add_run_file
from sharedtask.service.uploads import UploadError, clean_archive, load_archive

LIMIT = 8 << 20  # the server's --max-upload, also the limit on unpacked layers
RSS_BOUND_KB = 512 * 1024

Member = tuple[tarfile.TarInfo, "bytes | None"]


# ----------------------------------------------------------------------------- building archives


def regular(name: str, data: bytes) -> Member:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def special(name: str, kind: bytes, linkname: str = "") -> Member:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info, None


def tar_of(members: list[Member], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def members_of(archive: bytes) -> list[Member]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()]


def manifest_of(archive: bytes) -> dict[str, Any]:
    return json.loads(dict((m.name, d) for m, d in members_of(archive))["manifest.json"])[0]


def image_id_of(archive: bytes) -> str:
    config = dict((m.name, d) for m, d in members_of(archive))[manifest_of(archive)["Config"]]
    return "sha256:" + hashlib.sha256(config).hexdigest()


def edited(archive: bytes, edit: Callable[[list[Member]], list[Member]]) -> bytes:
    return tar_of(edit(members_of(archive)))


def small_image(layers: list[bytes], manifest_layers: list[str] | None = None, **manifest: Any) -> bytes:
    """An image archive made by hand: a config whose diff_ids match ``layers`` (plain tars)."""
    names = [f"{n}/layer.tar" for n in range(len(layers))]
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Cmd": ["/bin/sh"]},
                         "rootfs": {"type": "layers", "diff_ids": [
                             "sha256:" + hashlib.sha256(layer).hexdigest() for layer in layers]}}).encode()
    entry = {"Config": "config.json", "RepoTags": None, "Layers": manifest_layers or names, **manifest}
    return tar_of([regular("manifest.json", json.dumps([entry]).encode()), regular("config.json", config),
                   *[regular(name, layer) for name, layer in zip(names, layers)]])


def one_file_layer(name: str = "hello", data: bytes = b"hi\n") -> bytes:
    return tar_of([regular(name, data)])


def gzip_bomb_layer(expanded: int) -> bytes:
    """A layer of one file of ``expanded`` zero bytes, gzip'd in 1 MiB members (each about 1 KB)."""
    header = tarfile.TarInfo("zeros")
    header.size = expanded
    one_mib = gzip.compress(bytes(1 << 20), 9)
    tail = bytes(-expanded % 512) + bytes(1024)
    return gzip.compress(header.tobuf(tarfile.GNU_FORMAT)) + one_mib * (expanded >> 20) + gzip.compress(tail)


def with_manifest_naming(archive: bytes, victim: str) -> list[Member]:
    """The members of a real ``docker save`` without names, and its manifest as it would name ``victim``."""
    members = [(m, d) for m, d in members_of(archive) if m.name not in ("manifest.json", "repositories")]
    clean = {**manifest_of(archive), "RepoTags": None}
    evil = {**clean, "RepoTags": [victim]}
    return [regular("manifest.json", json.dumps([clean]).encode()), regular("evil.json", json.dumps([evil]).encode()),
            *members]


# ----------------------------------------------------------------------------- the daemon and the server


def daemon_tags(client: Any) -> dict[str, str]:
    """Every tag of the daemon and the id it names."""
    return {tag: image["Id"] for image in client.api.images(all=True) for tag in image.get("RepoTags") or []
            if tag != "<none>:<none>"}


def assert_no_tag_moved(client: Any, before: dict[str, str], hostile_ids: set[str]) -> None:
    """No tag that existed names another image now, and no tag (new or old) names a hostile image.

    Tags that appear or vanish for other images are left alone: other tests may build and
    remove their own images on the same daemon meanwhile.
    """
    after = daemon_tags(client)
    moved = {tag: (before[tag], after[tag]) for tag in before.keys() & after.keys() if before[tag] != after[tag]}
    assert not moved, f"docker tags moved: {moved}"
    named = sorted(tag for tag, image in after.items() if image in hostile_ids and before.get(tag) != image)
    assert not named, f"the hostile image got names: {named}"


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/PID/status")


def remove_image(client: Any, reference: str) -> None:
    try:
        image = client.images.get(reference)
    except Exception:  # noqa: BLE001 - already gone
        return
    remove_containers_of(client, image.id)
    try:  # by id and forced: also the server's sharedtask-submissions:<sha256> tag of the same image
        client.images.remove(image.id, force=True)
    except Exception:  # noqa: BLE001 - in use by a parallel test's container
        pass


@pytest.fixture(scope="module")
def tiny(docker_client, tmp_path_factory) -> Iterator[tuple[str, bytes]]:
    """A real image (FROM scratch + static busybox, the perfect run baked in) and its ``docker save``."""
    tag = f"sharedtask-test/hostile-tiny:{os.getpid()}"
    build_tiny_image(docker_client, tag, perfect_run("tiny"), tmp_path_factory.mktemp("tiny"))
    try:
        yield tag, b"".join(docker_client.api.get_image(tag))
    finally:
        remove_image(docker_client, tag)


@pytest.fixture(scope="module")
def victim(docker_client, tmp_path_factory) -> Iterator[str]:
    """Another image with a name, standing in for sharedtask/base: an attack would re-tag it."""
    tag = f"sharedtask-test/hostile-victim:{os.getpid()}"
    build_tiny_image(docker_client, tag, "the organizer's image\n", tmp_path_factory.mktemp("victim"))
    try:
        yield tag
    finally:
        remove_image(docker_client, tag)


@pytest.fixture(scope="module")
def server(docker_client, tmp_path_factory) -> Iterator[tuple[Served, str, str]]:
    """A real server process (SQLite) with an 8 MiB limit, an organizer token and a team token."""
    data_dir = tmp_path_factory.mktemp("hostile") / "service"
    data_dir.mkdir()
    served = start_server(data_dir, f"sqlite:///{data_dir / 'service.db'}", free_port(), "--max-upload", "8m")
    try:
        yield served, served.token(), served.token("team-h")
    finally:
        stop(served)


def upload(served: Served, token: str, archive: bytes) -> tuple[int, Any]:
    return call(f"{served.url}/api/tasks/{TASK}/submissions", "POST", token, data=archive,
                headers={"Content-Type": "application/x-tar"})


def refused_upload(server: tuple[Served, str, str], docker_client: Any, archive: bytes,
                   hostile_ids: set[str] = frozenset()) -> tuple[int, str]:
    """Upload a hostile archive: refused, nothing queued or kept, no tag moved, memory bounded."""
    served, _, team = server
    before = daemon_tags(docker_client)
    queued = call(f"{served.url}/api/submissions", token=team)[1]
    status, body = upload(served, team, archive)
    assert_no_tag_moved(docker_client, before, set(hostile_ids))
    assert call(f"{served.url}/api/submissions", token=team)[1] == queued
    assert not list((served.data_dir / "uploads").glob("*"))
    assert served.process is not None and peak_rss_kb(served.process.pid) < RSS_BOUND_KB
    return status, body["detail"]


def wait_for(served: Served, token: str, sid: int) -> dict[str, Any]:
    """Poll until the submission is done or failed (a deadline against hanging, not a speed test)."""
    end = time.monotonic() + 600
    while time.monotonic() < end:
        status, sub = call(f"{served.url}/api/submissions/{sid}", token=token)
        assert status == 200, sub
        if sub["status"] in ("done", "failed"):
            return sub
        time.sleep(0.3)
    raise AssertionError(f"submission {sid} stayed {sub['status']}")


# ----------------------------------------------------------------------------- attacks on the upload, real server


@pytest.mark.docker
def test_symlinked_manifest_cannot_rename_an_image(server, docker_client, tiny, victim):
    """The attack as found: a cleaned manifest.json, evil.json naming the victim, and manifest.json → evil.json.

    Before the fix the link was copied, docker's extraction replaced the manifest by it and
    ``docker load`` moved the victim's tag to the team's image.
    """
    _, archive = tiny
    hostile = tar_of([*with_manifest_naming(archive, victim), special("manifest.json", tarfile.SYMTYPE, "evil.json")])
    status, detail = refused_upload(server, docker_client, hostile, {image_id_of(archive)})
    assert status == 400 and "'manifest.json' as a symbolic link" in detail and "docker save" in detail, detail


@pytest.mark.docker
def test_hard_link_member_is_refused(server, docker_client, tiny, victim):
    _, archive = tiny
    hostile = tar_of([*with_manifest_naming(archive, victim), special("manifest.json", tarfile.LNKTYPE, "evil.json")])
    status, detail = refused_upload(server, docker_client, hostile, {image_id_of(archive)})
    assert status == 400 and "'manifest.json' as a hard link" in detail, detail


@pytest.mark.docker
@pytest.mark.parametrize("kind, word", [(tarfile.FIFOTYPE, "a FIFO"), (tarfile.CHRTYPE, "a character device"),
                                        (tarfile.BLKTYPE, "a block device")])
def test_fifo_and_device_members_are_refused(server, docker_client, tiny, kind, word):
    _, archive = tiny
    device = special("dev/evil", kind)
    device[0].devmajor, device[0].devminor = 1, 3  # /dev/null's numbers: dockerd extracts as root
    hostile = edited(archive, lambda members: [*members, device])
    status, detail = refused_upload(server, docker_client, hostile, {image_id_of(archive)})
    assert status == 400 and f"'dev/evil' as {word}" in detail, detail


@pytest.mark.docker
@pytest.mark.parametrize("name", ["../../etc/cron.d/evil", "/etc/cron.d/evil", "blobs/../../evil"])
def test_member_leaving_the_archive_is_refused(server, docker_client, tiny, name):
    _, archive = tiny
    hostile = edited(archive, lambda members: [*members, regular(name, b"* * * * * root sh -c 'id'\n")])
    status, detail = refused_upload(server, docker_client, hostile, {image_id_of(archive)})
    assert status == 400 and f"member {name!r} leaves the archive" in detail, detail


@pytest.mark.docker
def test_duplicate_manifest_members_are_refused(server, docker_client, tiny, victim):
    """Two regular manifest.json: docker's extraction would keep the last one, which names the victim."""
    _, archive = tiny
    evil = json.dumps([{**manifest_of(archive), "RepoTags": [victim]}]).encode()
    hostile = tar_of([*with_manifest_naming(archive, victim), regular("./manifest.json", evil)])
    status, detail = refused_upload(server, docker_client, hostile, {image_id_of(archive)})
    assert status == 400 and "'manifest.json' twice" in detail, detail


@pytest.mark.docker
def test_manifest_naming_a_missing_layer_is_refused(server, docker_client, tiny):
    _, archive = tiny

    def drop_first_layer(members: list[Member]) -> list[Member]:
        first = manifest_of(archive)["Layers"][0]
        return [(m, d) for m, d in members if m.name != first]

    status, detail = refused_upload(server, docker_client, edited(archive, drop_first_layer), {image_id_of(archive)})
    first = manifest_of(archive)["Layers"][0]
    assert status == 400 and f"names {first!r} as a layer, but the archive has no such file" in detail, detail


@pytest.mark.docker
@pytest.mark.parametrize("expanded", [16 << 20, 2 << 30], ids=["16MiB-in-16KB", "2GiB-in-2MB"])
def test_expanding_gzip_layer_is_413_before_docker_sees_it(server, docker_client, victim, expanded):
    """A few KB of gzip (or the 2 MB archive that made dockerd write 2 GiB) against the 8 MiB limit."""
    layer = gzip_bomb_layer(expanded)
    hostile = small_image([layer], RepoTags=[victim])
    assert len(hostile) < LIMIT < expanded
    hostile_id = image_id_of(hostile)
    status, detail = refused_upload(server, docker_client, hostile, {hostile_id})
    assert status == 413 and f"layers unpack to more than the task's limit of {LIMIT} bytes" in detail, detail
    # refused before `docker load`: the image (its config) never reached the daemon
    assert hostile_id not in {image["Id"] for image in docker_client.api.images(all=True)}


@pytest.mark.docker
def test_a_normal_docker_save_is_accepted_and_runs(server, docker_client, tiny):
    """The happy path through the same server: loaded by id, tagged in our namespace only, run and scored."""
    served, _, team = server
    tag, archive = tiny
    image_id = docker_client.images.get(tag).id
    before = daemon_tags(docker_client)
    status, sub = upload(served, team, archive)
    assert status == 201, sub
    sha = sub["archive_sha256"]
    after = daemon_tags(docker_client)
    assert {t for t in after.items() if t not in before.items() and t[1] == image_id} == {
        (f"sharedtask-submissions:{sha}", image_id)}
    assert_no_tag_moved(docker_client, before, set())
    done = wait_for(served, team, sub["id"])
    assert done["status"] == "done" and done["valid"] is True and done["scores"]["ndcg5_official"] == pytest.approx(1)
    assert peak_rss_kb(served.process.pid) < RSS_BOUND_KB


# ----------------------------------------------------------------------------- the archive download, real server


@pytest.mark.docker
def test_sparse_run_txt_is_left_out_of_the_archive_download(server, docker_client, tmp_path):
    """A run that leaves a sparse 10 GB run.txt (killed at its output limit): the download names it, reads none of it."""
    served, org, team = server
    tag = f"sharedtask-test/hostile-sparse:{os.getpid()}"
    build_tiny_image(docker_client, tag, "unused\n", tmp_path, script='truncate -s 10G "$2/run.txt"\nexit 0')
    try:
        archive = b"".join(docker_client.api.get_image(tag))
        status, sub = upload(served, team, archive)
        assert status == 201, sub
        done = wait_for(served, team, sub["id"])
        assert done["run_status"] == "output-limit", done
        status, raw = call_bytes(f"{served.url}/api/tasks/{TASK}/archive", org)
        assert status == 200
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
            names = set(tar.getnames())
            index = json.load(tar.extractfile(f"{TASK}/submissions.json"))
        folder = f"{TASK}/team-h/{sub['id']}-{done['tag']}"
        assert f"{folder}/run-record.json" in names and f"{folder}/run.txt" not in names
        entry = next(s for s in index if s["id"] == sub["id"])
        assert entry["archive_notes"] == [
            f"output/run.txt was left out: it is {10 << 30} bytes long, more than the task's output limit of 1 GiB"]
        assert peak_rss_kb(served.process.pid) < RSS_BOUND_KB
    finally:
        remove_image(docker_client, tag)


def call_bytes(url: str, token: str) -> tuple[int, bytes]:
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return response.status, response.read()


# ----------------------------------------------------------------------------- archive checks, no daemon


def refused(archive: bytes, tmp_path: Path, max_size: int | None = None) -> UploadError:
    source, target = tmp_path / "in.tar", tmp_path / "out.tar"
    source.write_bytes(archive)
    with pytest.raises(UploadError) as caught:
        clean_archive(source, target, max_size)
    assert not target.exists()
    return caught.value


def test_a_hand_made_image_archive_is_cleaned_and_only_ours_goes_to_docker(tmp_path):
    layer = one_file_layer()
    source = tmp_path / "in.tar"
    source.write_bytes(small_image([layer, layer], RepoTags=["sharedtask/base:latest"], Parent="sha256:" + "1" * 64))
    clean_archive(source, tmp_path / "out.tar", 1 << 20)
    with tarfile.open(tmp_path / "out.tar") as tar:
        members = tar.getmembers()
        manifest = json.load(tar.extractfile("manifest.json"))
    assert [m.name for m in members] == ["manifest.json", "config.json", "layer-0.tar", "layer-1.tar"]
    assert all(m.isfile() for m in members)
    assert manifest == [{"Config": "config.json", "RepoTags": None, "Layers": ["layer-0.tar", "layer-1.tar"]}]


@pytest.mark.parametrize("kind, word", [(tarfile.SYMTYPE, "a symbolic link"), (tarfile.LNKTYPE, "a hard link"),
                                        (tarfile.FIFOTYPE, "a FIFO"), (tarfile.CHRTYPE, "a character device"),
                                        (tarfile.BLKTYPE, "a block device"), (tarfile.CONTTYPE, "a contiguous file")])
def test_every_member_that_is_not_a_file_or_folder_is_refused_by_name(tmp_path, kind, word):
    archive = edited(small_image([one_file_layer()]), lambda m: [*m, special("odd", kind, "config.json")])
    error = refused(archive, tmp_path)
    assert error.status == 400 and f"'odd' as {word}; only regular files and folders are accepted" in str(error)


@pytest.mark.parametrize("name", ["manifest.json", "repositories", "index.json"])
def test_a_folder_named_like_a_name_file_is_refused(tmp_path, name):
    folder = tarfile.TarInfo(name)
    folder.type = tarfile.DIRTYPE
    archive = edited(small_image([one_file_layer()]), lambda m: [(folder, None), *m])
    error = refused(archive, tmp_path)
    assert error.status == 400 and f"{name!r} as a folder; it must be a regular file" in str(error)


def test_duplicates_are_found_whatever_the_spelling(tmp_path):
    archive = edited(small_image([one_file_layer()]), lambda m: [*m, regular("0//./layer.tar", b"x")])
    assert "'0/layer.tar' twice" in str(refused(archive, tmp_path))


def test_a_member_below_a_file_is_refused(tmp_path):
    archive = edited(small_image([one_file_layer()]), lambda m: [*m, regular("config.json/x", b"x")])
    assert "'config.json/x' under 'config.json', which is a file" in str(refused(archive, tmp_path))


def test_manifest_paths_outside_the_archive_or_to_folders_are_refused(tmp_path):
    layer = one_file_layer()
    assert "names '../0/layer.tar' as a layer, a path outside the archive" in str(
        refused(small_image([layer], manifest_layers=["../0/layer.tar"]), tmp_path))
    assert "names '0' as a layer, but the archive has no such file" in str(
        refused(edited(small_image([layer], manifest_layers=["0"]),
                       lambda m: [special("0", tarfile.DIRTYPE), *m]), tmp_path))


def test_a_cut_archive_is_refused(tmp_path):
    archive = edited(small_image([one_file_layer()]), lambda m: [*m, regular("tail", os.urandom(5000))])
    ended = archive.rstrip(b"\x00")  # up to the last member's data (random bytes): no end block
    for cut in (ended, ended[:-100], archive[:700]):  # no end block; in a member's data; in a header
        assert "it ends in the middle" in str(refused(cut, tmp_path))


def test_oversized_extended_headers_are_refused_without_reading_them(tmp_path):
    """A pax header claiming 1 GiB: refused on its size field, as Go's reader does (1 MiB at most)."""
    header = tarfile.TarInfo("PaxHeaders/x")
    header.type, header.size = tarfile.XHDTYPE, 1 << 30
    archive = header.tobuf(tarfile.USTAR_FORMAT) + bytes(4096)
    assert "an extended tar header of 1073741824 bytes" in str(refused(archive, tmp_path))


@pytest.mark.parametrize("how", ["gnu-S", "pax"])
def test_a_sparse_entry_in_a_layer_is_refused(tmp_path, how):
    """A few bytes that dockerd would expand to 10 GiB of zeros on disk."""
    info = tarfile.TarInfo("big")
    if how == "gnu-S":
        info.type = tarfile.GNUTYPE_SPARSE
        layer = tar_of([(info, None)], tarfile.GNU_FORMAT)
    else:
        info.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "big",
                            "GNU.sparse.realsize": str(10 << 30)}
        layer = tar_of([(info, b"")])
    source, target = tmp_path / "in.tar", tmp_path / "out.tar"
    source.write_bytes(small_image([layer]))
    clean_archive(source, target)  # the archive itself is fine; the layer's content is checked with the limit
    with pytest.raises(UploadError) as caught:
        load_archive(target, 1 << 30, "0" * 64)
    assert caught.value.status == 400 and "holds 'big' as a sparse file" in str(caught.value)


@pytest.mark.parametrize("magic, what", [(b"BZh91AY&SY", "bzip2"), (b"\xfd7zXZ\x00\x00\x04", "xz"),
                                         (b"\x28\xb5\x2f\xfd\x00", "zstd"), (b"\x50\x2a\x4d\x18\x00", "zstd")])
def test_layers_in_compressions_we_cannot_measure_are_refused(tmp_path, magic, what):
    error = refused(small_image([magic + bytes(600)]), tmp_path, max_size=1 << 30)
    assert error.status == 400 and f"is compressed with {what}; the server takes layers as plain tar or gzip" in str(
        error)


def test_gzip_layers_are_measured_unpacked_and_must_match_the_config(tmp_path):
    layer = one_file_layer(data=os.urandom(1000) + bytes(200_000))
    packed = gzip.compress(layer)
    source = tmp_path / "in.tar"
    source.write_bytes(small_image([layer]))  # diff_ids are of the plain tar, as docker computes them
    archive = edited(source.read_bytes(), lambda m: [(regular(i.name, packed) if i.name == "0/layer.tar" else (i, d))
                                                     for i, d in m])
    source.write_bytes(archive)
    clean_archive(source, tmp_path / "out.tar", max_size=len(layer))
    assert refused(archive, tmp_path, max_size=len(layer) - 1).status == 413
    wrong = small_image([layer])
    wrong = edited(wrong, lambda m: [(regular(i.name, one_file_layer()) if i.name == "0/layer.tar" else (i, d))
                                     for i, d in m])
    assert "layer 1 ('0/layer.tar') does not match the image config" in str(refused(wrong, tmp_path, 1 << 20))
    corrupt = edited(archive, lambda m: [(regular(i.name, packed[:-9]) if i.name == "0/layer.tar" else (i, d))
                                         for i, d in m])
    assert "layer '0/layer.tar' is not valid gzip" in str(refused(corrupt, tmp_path, 1 << 20))


def test_a_layer_listed_twice_counts_twice(tmp_path):
    layer = one_file_layer(data=bytes(100_000))
    archive = small_image([layer, layer], manifest_layers=["0/layer.tar", "0/layer.tar"])
    source = tmp_path / "in.tar"
    source.write_bytes(archive)
    clean_archive(source, tmp_path / "out.tar", max_size=2 * len(layer))
    assert refused(archive, tmp_path, max_size=2 * len(layer) - 1).status == 413


def test_load_archive_loads_only_what_clean_archive_wrote(tmp_path):
    source = tmp_path / "in.tar"
    source.write_bytes(small_image([one_file_layer()]))
    with pytest.raises(ValueError, match="not written by clean_archive"):
        load_archive(source, 1 << 20, "0" * 64)


# ----------------------------------------------------------------------------- the archive download's file checks


def _added(tmp_path: Path, run_dir: Path, relative: str, limit: int) -> tuple[str | None, dict[str, bytes]]:
    out = tmp_path / "out.tar"
    with tarfile.open(out, "w") as tar:
        note = add_run_file(tar, run_dir, relative, "x/run.txt", limit)
    with tarfile.open(out) as tar:
        return note, {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def test_archive_download_adds_regular_files_and_notes_every_other(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "output").mkdir(parents=True)
    run = run_dir / "output" / "run.txt"
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    assert _added(tmp_path, run_dir, "output/run.txt", 1 << 20) == (None, {"x/run.txt": run.read_bytes()})
    assert _added(tmp_path, run_dir, "run-record.json", 1 << 20) == (None, {})  # missing: skipped, no note

    note, added = _added(tmp_path, run_dir, "output/run.txt", 10)
    assert not added and note == ("output/run.txt was left out: it is 17 bytes long, more than the task's output "
                                  "limit of 10 B")

    with open(run, "r+b") as fh:  # sparse, below the limit: a hole before its end
        fh.truncate(64 << 20)
    note, added = _added(tmp_path, run_dir, "output/run.txt", 1 << 30)
    assert not added and note is not None and "it is sparse (67108864 bytes long" in note

    run.unlink()
    secret = tmp_path / "secret"
    secret.write_text("the organizer's")
    run.symlink_to(secret)
    note, added = _added(tmp_path, run_dir, "output/run.txt", 1 << 20)
    assert not added and note == "output/run.txt was left out: it is a symbolic link"

    run.unlink()
    os.mkfifo(run)  # opened without blocking: nobody writes to it
    note, added = _added(tmp_path, run_dir, "output/run.txt", 1 << 20)
    assert not added and note == "output/run.txt was left out: it is not a regular file (a FIFO)"

    run.unlink()
    (run_dir / "output").rmdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "run.txt").write_text("not the run's\n")
    (run_dir / "output").symlink_to(tmp_path / "elsewhere")
    note, added = _added(tmp_path, run_dir, "output/run.txt", 1 << 20)
    assert not added and note == "output/run.txt was left out: output above it is a symbolic link"


def test_a_pax_size_of_a_million_digits_is_refused_not_a_crash(tmp_path):
    info = tarfile.TarInfo("big")
    info.pax_headers = {"size": "9" * 100_000}
    header = info.tobuf(tarfile.PAX_FORMAT)
    error = refused(small_image([header + bytes(1024)]), tmp_path, max_size=1 << 30)
    assert error.status == 400 and "a pax header gives a size that is not a number" in str(error)
