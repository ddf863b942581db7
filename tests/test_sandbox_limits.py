"""Output and disk limits held by the kernel (sandbox/limitfs.py, sandbox/bounds.py).

Real containers, real loop-mounted ext4 images, under runc and gVisor (runsc). The
attacks are the ones a walk of $outputDir and of the writable layer could not see:
files 10,000 levels deep, a volume the image declares, a burst between two polls.
The copy of an output tree (deep, sparse, links, FIFOs, hard links) is tested on
plain folders without Docker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from sharedtask.sandbox import limitfs, run
from sharedtask.sandbox.bounds import wait_released
from sharedtask.sandbox.outputs import copy_tree, remove_tree

TASK = "touche-2020-task1"
MiB = 1024**2
IMAGE_REPO = "sharedtask-test/limits"

# Goes down `depth` levels below a folder, then writes up to `mib` MiB in 64 KiB writes.
DEEP_WRITER_PY = """
import os, sys
os.chdir(sys.argv[1])
for _ in range(int(sys.argv[2])):
    os.mkdir("d"); os.chdir("d")
written = 0
with open("big", "wb") as fh:
    try:
        while written < int(sys.argv[3]) * 1024**2:
            fh.write(b"\\1" * 65536); fh.flush(); written += 65536
    except OSError as exc:
        print("stopped:", exc.strerror, written)
        sys.exit(1)
print("wrote", written)
"""


@pytest.fixture(autouse=True)
def _remove_deep_trees(tmp_path):
    """pytest's own clean-up (shutil.rmtree) recurses per level and fails on these trees."""
    yield
    for child in tmp_path.iterdir():
        remove_tree(child)


def _kernel_or_skip() -> None:
    reason = limitfs.unavailable()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test kernel-enforced limits, but {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def limits_image(docker_client, base_image, tmp_path_factory) -> str:
    """The base image with the writer and a declared volume (``VOLUME /scratch``)."""
    _kernel_or_skip()
    ctx = tmp_path_factory.mktemp("limits-image")
    (ctx / "deep_writer.py").write_text(textwrap.dedent(DEEP_WRITER_PY))
    (ctx / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nCOPY deep_writer.py /opt/deep_writer.py\n"
                                    "RUN mkdir /scratch && chmod 1777 /scratch\nVOLUME /scratch\n")
    tag = f"{IMAGE_REPO}:{uuid.uuid4().hex[:8]}"
    docker_client.images.build(path=str(ctx), tag=tag, buildargs={"BASE": base_image}, rm=True, forcerm=True)
    yield tag
    docker_client.images.remove(tag, force=True)


@pytest.fixture(params=["runc", "runsc"])
def runtime(request, docker_client) -> str:
    if request.param == "runsc" and "runsc" not in (docker_client.info().get("Runtimes") or {}):
        if os.environ.get("CI"):
            pytest.fail("CI must test runsc, but dockerd does not know it (run docker/setup.sh)")
        pytest.skip("dockerd has no runsc runtime (docker/setup.sh registers it)")
    return request.param


def _run(image: str, tmp_path: Path, command: str, **kw):
    kw.setdefault("timeout", 300)
    kw.setdefault("memory", "512m")
    return run(TASK, image, command=command, output_dir=tmp_path / "run" / "output", validate=False, **kw)


def _loops_of(pid: int) -> list[str]:
    """Backing files of loop devices made by process ``pid`` (see limitfs.create's names)."""
    found = []
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            text = backing.read_text()
        except OSError:
            continue
        if f"{limitfs.PREFIX}-{pid}-" in text:
            found.append(text.strip())
    return found


# ------------------------------------------------------------ the three places a container writes


@pytest.mark.docker
def test_the_output_limit_holds_10000_levels_deep(limits_image, tmp_path, runtime):
    outcome = _run(limits_image, tmp_path, "python /opt/deep_writer.py $outputDir 10000 1500",
                   max_output="50m", runtime=runtime)
    assert outcome.result.status == "output-limit", (outcome.result.message, outcome.result.log_tail)
    output = outcome.record["output"]
    assert output["enforcement"].startswith("enforced by the kernel")
    assert 50 * MiB < output["disk_bytes"] <= 51 * MiB
    # The copy kept the whole tree: the file at the bottom holds what the kernel let through.
    fd = os.open(tmp_path / "run" / "output", os.O_RDONLY)
    try:
        for _ in range(10000):
            fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
            os.close(old)
        bottom = os.stat("big", dir_fd=fd).st_size
    finally:
        os.close(fd)
    assert bottom > 0  # 10,000 folders take 40 MiB of the 50: what is left went into the file


@pytest.mark.docker
def test_the_disk_limit_holds_10000_levels_deep_in_the_writable_layer(limits_image, tmp_path, runtime):
    outcome = _run(limits_image, tmp_path, "python /opt/deep_writer.py /var/tmp 10000 1500",
                   disk="100m", runtime=runtime)
    assert outcome.result.status == "disk-limit", (outcome.result.message, outcome.result.log_tail)
    disk = outcome.record["disk"]
    assert disk["enforcement"].startswith("enforced by the kernel")
    assert 100 * MiB < disk["bytes"] <= 101 * MiB


@pytest.mark.docker
def test_a_declared_volume_is_bounded_and_no_docker_volume_is_made(docker_client, limits_image, tmp_path, runtime):
    mounts: list[list[dict]] = []

    class Inspect:  # the container's mounts, read from the daemon while it runs
        def started(self, request, container_id):
            mounts.append(docker_client.api.inspect_container(container_id)["Mounts"])

        def log(self, stream, line): ...
        def tick(self, snapshot): ...
        def finished(self, result): ...

    outcome = run(TASK, limits_image, command="python /opt/deep_writer.py /scratch 0 1500", disk="100m",
                  memory="512m", runtime=runtime, timeout=300, output_dir=tmp_path / "run" / "output",
                  validate=False, observer=Inspect())
    assert outcome.result.status == "disk-limit", (outcome.result.message, outcome.result.log_tail)
    assert "stopped: No space left on device" in "\n".join(outcome.result.log_tail)
    assert "/scratch" in outcome.record["disk"]["enforcement"]
    assert 100 * MiB < outcome.record["disk"]["bytes"] <= 101 * MiB
    [seen] = mounts
    scratch = [m for m in seen if m["Destination"] == "/scratch"]
    assert [m["Type"] for m in scratch] == ["bind"]  # a folder of the bounded image, not a docker volume
    assert not any(m["Type"] == "volume" for m in seen)


# ------------------------------------------------------------ tight and fair


@pytest.mark.docker
def test_the_overshoot_past_the_output_limit_is_at_most_1_mib(limits_image, tmp_path):
    outcome = _run(limits_image, tmp_path, "dd if=/dev/zero of=$outputDir/big bs=1M count=3000", max_output="50m")
    assert outcome.result.status == "output-limit", outcome.result.message
    landed = (tmp_path / "run" / "output" / "big").stat()
    assert landed.st_blocks * 512 - 50 * MiB <= MiB
    assert outcome.record["output"]["disk_bytes"] - 50 * MiB <= MiB


@pytest.mark.docker
def test_a_run_writing_just_under_the_limit_succeeds(limits_image, tmp_path):
    # 50 MiB less 64 KiB, in one file: data blocks plus a few blocks of metadata fit.
    outcome = _run(limits_image, tmp_path, "dd if=/dev/zero of=$outputDir/run.txt bs=64k count=799",
                   max_output="50m", disk="100m")
    assert outcome.result.status == "success", outcome.result.message
    assert (tmp_path / "run" / "output" / "run.txt").stat().st_size == 799 * 65536
    assert outcome.record["output"]["disk_bytes"] <= 50 * MiB


@pytest.mark.docker
def test_without_the_kernel_the_walk_holds_and_the_record_says_so(limits_image, tmp_path, monkeypatch):
    monkeypatch.setenv("SHAREDTASK_KERNEL_LIMITS", "0")
    outcome = _run(limits_image, tmp_path, "echo hello > $outputDir/run.txt")
    assert outcome.result.status == "success", outcome.result.message
    assert "not kernel-enforced: turned off by SHAREDTASK_KERNEL_LIMITS=0" in outcome.record["output"]["enforcement"]
    assert "not kernel-enforced" in outcome.record["disk"]["enforcement"]
    assert outcome.record["output"]["disk_bytes"] is None


# ------------------------------------------------------------ nothing stays mounted


@pytest.mark.docker
def test_a_sigkilled_cli_leaves_no_mount_or_loop_device_after_the_next_run(docker_client, limits_image, tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "sharedtask", "run", "--task", TASK, "--image", limits_image, "--json",
         "--command", "echo started; sleep 300", "--output", str(tmp_path / "killed" / "output"),
         "--timeout", "600", "--disk", "100m"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):  # until the container runs: its layer and output are mounted by then
            running = docker_client.api.containers(filters={"label": "sharedtask.owner", "status": "running"})
            if any(f"/{proc.pid}/" in c["Labels"]["sharedtask.owner"] for c in running):
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)  # poll interval of the wait for the event above, not a synchronisation
        mine = _loops_of(proc.pid)
        assert len(mine) == 3, mine  # output, writable layer, declared volume
    finally:
        proc.send_signal(signal.SIGKILL)  # cannot be caught: everything stays behind for now
        proc.communicate(timeout=60)
    assert len(_loops_of(proc.pid)) == 3
    outcome = _run(limits_image, tmp_path, "true")  # the next run reaps first
    assert outcome.result.status == "success"
    assert _loops_of(proc.pid) == []
    mountinfo = Path("/proc/self/mountinfo").read_text()
    assert f"{limitfs.PREFIX}-{proc.pid}-" not in mountinfo
    assert not [p for p in limitfs.base_dir().iterdir() if f"-{proc.pid}-" in p.name]
    # and this run's own file systems are gone too, once their unmount (in a thread) is done
    wait_released()
    assert _loops_of(os.getpid()) == []


# ------------------------------------------------------------ the copy out of the bounded image


def _deep(root: Path, depth: int) -> int:
    fd = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    return fd


def test_copy_tree_keeps_a_10000_level_tree_links_fifos_and_holes(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    (src / "run.txt").write_text("1 Q0 doc 1 1.0 x\n")
    os.symlink("/etc/passwd", src / "link")
    os.mkfifo(src / "fifo")
    with open(src / "sparse", "wb") as fh:
        fh.truncate(10 * 1024**3)  # 10 GiB, all hole but one block
        fh.seek(5 * 1024**3)
        fh.write(b"x")
    fd = _deep(src, 10000)
    os.close(os.open("bottom", os.O_WRONLY | os.O_CREAT, 0o640, dir_fd=fd))
    os.close(fd)

    copied = copy_tree(src, dst, max_bytes=MiB)
    assert copied.complete and copied.error is None
    assert copied.entries == 4 + 10000 + 1
    assert (dst / "run.txt").read_text() == "1 Q0 doc 1 1.0 x\n"
    assert os.readlink(dst / "link") == "/etc/passwd"  # a link stays a link, never followed
    assert (dst / "fifo").is_fifo()
    sparse = (dst / "sparse").stat()
    assert sparse.st_size == 10 * 1024**3 and sparse.st_blocks * 512 < MiB  # holes stay holes
    fd = os.open(dst, os.O_RDONLY)
    for _ in range(10000):
        fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    assert oct(os.stat("bottom", dir_fd=fd).st_mode & 0o777) == oct(0o640)
    os.close(fd)


def test_copy_tree_stops_when_hard_links_would_multiply_the_bytes(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    (src / "one").write_bytes(b"\1" * 300_000)
    for n in range(10):
        os.link(src / "one", src / f"link{n}")  # 11 names, one file of 300 KB on disk
    copied = copy_tree(src, dst, max_bytes=MiB)
    assert not copied.complete  # 11 x 300 KB > 1 MiB: the copy stops instead of filling the host
    assert copied.bytes > MiB and sum(f.stat().st_size for f in dst.iterdir()) <= MiB + 300_000



def test_require_refuses_to_run_where_the_kernel_cannot_hold_the_limits(tmp_path):
    """Not root here is a real unprivileged process (seteuid in a child), not a mock."""
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to an unprivileged uid")
    code = textwrap.dedent("""
        import os
        os.environ["SHAREDTASK_KERNEL_LIMITS"] = "require"
        from sharedtask.errors import SharedTaskError
        from sharedtask.sandbox.bounds import kernel_unavailable
        os.seteuid(65534)
        try:
            kernel_unavailable()
        except SharedTaskError as exc:
            print("refused:", exc)
        os.environ["SHAREDTASK_KERNEL_LIMITS"] = "1"
        print("auto:", kernel_unavailable())
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "refused: the kernel cannot hold the output and disk limits here: not root" in proc.stdout
    assert "auto: not root" in proc.stdout  # the default falls back, and the record will say why
