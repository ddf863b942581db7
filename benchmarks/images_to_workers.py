"""Bytes moved to a compute worker for images that share one base: whole archives against registry layers.

    python benchmarks/images_to_workers.py [--images 7] [--shared-mb 200] [--own-mb 2]

Builds ``--images`` images on the project's base image (``sharedtask/base:latest``, the
debootstrap image ``setup.sh`` builds): one sizeable layer they all share (``--shared-mb`` of
random bytes, as real baselines share a Java or Python installation) and a small layer of their
own (``--own-mb``). Then measures what reaches a worker that lacks them:

- **archives** (``--images-dir``): the bytes of each image's ``docker save`` stream, counted as it
  is read, which is what a worker fetches and loads per image;
- **registry** (the default of ``serve --broker``): every image pushed to a ``docker-registry``
  started on loopback (images/registry.py), then pulled by digest, as a worker does, by a second
  Docker daemon that this script starts with its own empty data folder in its own network
  namespace (the worker; see WorkerDaemon): the bytes the registry sent, summed from its access
  log (manifests and blobs, 200 answers). Twice: *cold* (the worker has nothing) and *warm* (it
  has the base image, pulled first and not counted).

Each pulled image's id is checked against the organizer's (the worker's check before a run).
Without root, ``dockerd`` or ``unshare`` the second daemon cannot start: the warm figure is then taken on the
shared daemon after ``docker rmi`` of the images (their base stays), and the cold one is skipped.

Needs: Docker, Debian's docker-registry, the base image (``bash setup.sh``), about 3x
(``--shared-mb`` + 450 MB) of free disk. Removes everything it made.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

BASE = "sharedtask/base:latest"


def build(client: Any, folder: Path, parent: str, tag: str, megabytes: float) -> str:
    """``FROM parent`` + one layer of ``megabytes`` of random bytes (incompressible: what is counted is layers)."""
    folder.mkdir(parents=True)
    with open(folder / "blob.bin", "wb") as fh:
        left = int(megabytes * (1 << 20))
        while left > 0:
            fh.write(os.urandom(min(left, 1 << 20)))
            left -= 1 << 20
    (folder / "Dockerfile").write_text(f"FROM {parent}\nCOPY blob.bin /opt/{folder.name}.bin\n")
    client.images.build(path=str(folder), tag=tag, rm=True, forcerm=True)
    shutil.rmtree(folder)
    return tag


def archive_bytes(client: Any, tag: str) -> int:
    """The size of the image's ``docker save`` archive, counted while streaming it (nothing written)."""
    return sum(len(chunk) for chunk in client.images.get(tag).save(named=True))


#: inside the worker's own network namespace: its loopback, its registry (reading the organizer's storage)
WORKER_REGISTRY = "127.0.0.1:5000"


class WorkerDaemon:
    """A second dockerd with its own empty data folder, in its own network namespace: a worker's daemon.

    Why a namespace: a dockerd started with ``--bridge none`` deletes the host's ``docker0`` (moby's
    daemon_unix.go removes the default bridge interface when the bridge is disabled), and any second
    dockerd on the host's network would share or fight over it. In a fresh namespace (``unshare --net``)
    it only sees its own loopback. The organizer's registry listens on the host's loopback, so a second
    ``docker-registry`` serves the same storage folder inside the namespace; the bytes the worker pulled
    are that registry's, from its own access log. The shell refuses to start dockerd unless its network
    namespace differs from this process's."""

    def __init__(self, folder: Path, storage: Path) -> None:
        import docker

        self.folder = folder
        folder.mkdir(parents=True)
        self.socket = folder / "docker.sock"
        self.log = folder / "registry.log"
        config = folder / "registry.yml"
        config.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {storage}\n"
                          f"http:\n  addr: {WORKER_REGISTRY}\n")
        host_ns = os.readlink("/proc/self/ns/net")
        script = (f'[ "$(readlink /proc/self/ns/net)" != "{host_ns}" ] || exit 3\n'
                  "ip link set lo up\n"
                  f"docker-registry serve {config} > {self.log} 2>&1 &\n"
                  f"echo $! > {folder / 'registry.pid'}\n"
                  f"exec dockerd --data-root {folder / 'data'} --exec-root {folder / 'exec'} "
                  f"--pidfile {folder / 'docker.pid'} -H unix://{self.socket} --bridge none --iptables=false "
                  "--ip6tables=false --ip-masq=false\n")
        self.process = subprocess.Popen(["unshare", "--net", "--", "sh", "-c", script],
                                        stdout=open(folder / "dockerd.log", "wb"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60  # a hang bound: it answers in a few seconds
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                self.client = docker.DockerClient(base_url=f"unix://{self.socket}")
                self.client.ping()
                return
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"dockerd did not start: {(folder / 'dockerd.log').read_text()[-300:]}")

    def empty(self) -> None:
        for image in self.client.images.list(all=True):
            self.client.images.remove(image.id, force=True)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(60)
        pid = self.folder / "registry.pid"
        if pid.is_file():
            try:
                os.kill(int(pid.read_text()), 15)
            except (ProcessLookupError, ValueError):
                pass


def pulled_bytes(log: Path, client: Any, references: list[str], ids: list[str]) -> tuple[int, int]:
    """Pull each reference by digest into ``client``; (bytes the registry sent, blobs sent), from the
    registry's access log ``log``. Each pulled image's id is checked against the organizer's."""
    from sharedtask.images.registry_log import served

    before = len(served(log.read_text()))
    for reference, ident in zip(references, ids):
        client.images.pull(reference)
        got = client.images.get(reference).id
        if got != ident:
            raise SystemExit(f"{reference} pulled as {got}, not the organizer's {ident}")
    sent = [r for r in served(log.read_text())[before:] if r.method == "GET" and r.status == 200]
    return sum(r.bytes for r in sent), sum(1 for r in sent if r.blob)


def gb(n: int) -> str:
    return f"{n / 1e9:.3f} GB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=7)
    parser.add_argument("--shared-mb", type=float, default=200, help="the layer every image shares (default: 200)")
    parser.add_argument("--own-mb", type=float, default=2, help="each image's own layer (default: 2)")
    args = parser.parse_args()

    import docker
    from rich.console import Console
    from rich.table import Table

    from sharedtask.images.registry import start_local
    from sharedtask.images.shipping import push

    console = Console(width=110)
    client = docker.from_env()
    try:
        client.images.get(BASE)
    except docker.errors.ImageNotFound:
        raise SystemExit(f"{BASE} is not here: build it with `bash setup.sh`") from None
    if shutil.which("docker-registry") is None:
        raise SystemExit("docker-registry is not installed (apt-get install docker-registry)")
    folder = Path(tempfile.mkdtemp(prefix="images-to-workers-"))
    run = uuid.uuid4().hex[:8]
    made: list[str] = []
    worker = registry = None
    try:
        t0 = time.perf_counter()
        shared = build(client, folder / "shared", BASE, f"bench-images/shared:{run}", args.shared_mb)
        made.append(client.images.get(shared).id)
        tags = [build(client, folder / f"team{i}", shared, f"bench-images/team{i}:{run}", args.own_mb)
                for i in range(args.images)]
        ids = [client.images.get(tag).id for tag in tags]
        made += ids
        console.print(f"built {args.images} images on {BASE} in {time.perf_counter() - t0:.0f} s")

        archives = [archive_bytes(client, tag) for tag in tags]
        registry = start_local(folder / "registry")
        t0 = time.perf_counter()
        references = [push(client, tag, registry.address) for tag in tags]
        base_reference = push(client, BASE, registry.address)
        console.print(f"pushed to {registry.address} in {time.perf_counter() - t0:.0f} s")

        rows: list[tuple[str, int, int | None]] = [("archives (--images-dir): docker save of each", sum(archives),
                                                    None)]
        cold = warm = None
        can_daemon = os.geteuid() == 0 and all(shutil.which(b) for b in ("dockerd", "unshare", "ip"))
        if can_daemon:
            worker = WorkerDaemon(folder / "worker", registry.folder / "data")
            at_worker = [WORKER_REGISTRY + r[len(registry.address):] for r in references]
            cold, cold_blobs = pulled_bytes(worker.log, worker.client, at_worker, ids)
            worker.empty()
            base_id = client.images.get(BASE).id
            pulled_bytes(worker.log, worker.client, [WORKER_REGISTRY + base_reference[len(registry.address):]],
                         [base_id])  # the worker has the base: not counted
            warm, warm_blobs = pulled_bytes(worker.log, worker.client, at_worker, ids)
            worker.empty()
            one_cold, _ = pulled_bytes(worker.log, worker.client, at_worker[:1], ids[:1])
            rows += [("registry, worker has nothing (cold)", cold, cold_blobs),
                     ("registry, worker has the base (warm)", warm, warm_blobs)]
        else:
            console.print("no second Docker daemon (needs root, dockerd, unshare and ip): the warm pull is "
                          "measured on the shared daemon, the cold one is skipped")
            for ident in ids:
                client.images.remove(ident, force=True)
            client.images.remove(made[0], force=True)  # the shared layer goes too; the base stays
            warm, warm_blobs = pulled_bytes(registry.log, client, references, ids)
            rows.append(("registry, worker has the base (warm)", warm, warm_blobs))
            one_cold = None

        table = Table(title=f"{args.images} images: base {BASE} + {args.shared_mb:g} MB shared + "
                            f"{args.own_mb:g} MB each")
        for column in ("path", "bytes to the worker", "blobs", "archives / this"):
            table.add_column(column, justify="left" if column == "path" else "right")
        for name, size, blobs in rows:
            table.add_row(name, gb(size), "" if blobs is None else str(blobs), f"{sum(archives) / size:.1f}x")
        console.print(table)
        console.print(f"one image: archive {gb(archives[0])}" +
                      (f", cold pull {gb(one_cold)} (compression alone: {archives[0] / one_cold:.2f}x; "
                       f"sharing the base across {args.images}: {args.images * one_cold / cold:.2f}x more)"
                       if one_cold and cold else ""))
    finally:
        if worker is not None:
            worker.stop()
        if registry is not None:
            registry.stop()
        for ident in reversed(made):
            try:
                client.images.remove(ident, force=True)
            except docker.errors.APIError:
                pass
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
