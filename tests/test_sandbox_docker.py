"""Integration tests of the sandbox with real containers: each guarantee of issue 5, proven.

A tiny image is built FROM the offline base image (tag sharedtask-test/sandbox:*)
with a few helper scripts; everything the tests create (images, networks,
containers) is removed at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
import yaml

from sharedtask.sandbox import run
from sharedtask.sandbox.runner import INTERRUPTED

pytestmark = pytest.mark.docker

TASK = "touche-2020-task1"
TEST_IMAGE_REPO = "sharedtask-test/sandbox"
REPO = Path(__file__).resolve().parent.parent

# A deterministic toy ranker: word overlap of topics.tsv with docs.tsv, top 3, TREC format.
RANK_PY = """
import os, sys
inp, out = sys.argv[1], sys.argv[2]
docs = [line.rstrip("\\n").split("\\t", 1) for line in open(os.path.join(inp, "docs.tsv"))]
with open(os.path.join(out, "run.txt"), "w") as fh:
    for line in open(os.path.join(inp, "topics.tsv")):
        qid, text = line.rstrip("\\n").split("\\t", 1)
        words = set(text.lower().split())
        scored = sorted(((len(words & set(t.lower().split())), d) for d, t in docs), key=lambda x: (-x[0], x[1]))
        for rank, (score, doc) in enumerate(scored[:3], 1):
            fh.write(f"{qid} Q0 {doc} {rank} {score} overlap\\n")
"""
ENTRY_PY = """
import json, os, subprocess, sys
out = os.environ["outputDir"]
subprocess.run([sys.executable, "/opt/tools/rank.py", os.environ["inputDataset"], out], check=True)
json.dump({"env": dict(os.environ), "argv": sys.argv}, open(os.path.join(out, "entry.json"), "w"))
"""
CONNECT_PY = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()
except OSError as exc:
    print("connect failed:", exc); sys.exit(3)
print("connected")
"""
HOG_PY = """
import sys
blocks = []
for _ in range(int(sys.argv[1])):
    blocks.append(b"\\1" * (1024 * 1024))  # touched pages: they count
print("allocated", len(blocks), "MiB")
"""
LISTEN_PY = """
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8765)); s.listen(16)
while True:
    c, _ = s.accept(); c.close()
"""


@pytest.fixture(scope="module")
def test_image(docker_client, base_image, tmp_path_factory) -> str:
    ctx = tmp_path_factory.mktemp("sandbox-image")
    tools = ctx / "tools"
    tools.mkdir()
    for name, body in {"rank.py": RANK_PY, "entry.py": ENTRY_PY, "connect.py": CONNECT_PY,
                       "hog.py": HOG_PY, "listen.py": LISTEN_PY}.items():
        (tools / name).write_text(textwrap.dedent(body))
    (ctx / "Dockerfile").write_text(textwrap.dedent("""
        ARG BASE
        FROM ${BASE}
        COPY tools /opt/tools
        ENTRYPOINT ["python", "/opt/tools/entry.py"]
    """))
    tag = f"{TEST_IMAGE_REPO}:{uuid.uuid4().hex[:8]}"
    docker_client.images.build(path=str(ctx), tag=tag, buildargs={"BASE": base_image}, rm=True, forcerm=True)
    yield tag
    docker_client.images.remove(tag, force=True)


def containers_matching(docker_client, **filters: str) -> list[str]:
    """Names of containers (running or not) matching the filters.

    The low-level call only lists: ``containers.list`` also inspects each one, which fails
    with NotFound when the daemon auto-removes a container between the two calls.
    """
    return [summary["Names"][0].lstrip("/") for summary in docker_client.api.containers(all=True, filters=filters)]


@pytest.fixture(scope="module", autouse=True)
def no_leftover_containers(docker_client, test_image):
    yield
    # (other people's sandbox runs may be going on: look only at this module's image).
    # tira-run's containers use the daemon's asynchronous auto-remove: give it a moment.
    for _ in range(40):
        left = containers_matching(docker_client, ancestor=test_image)
        if not left:
            break
        time.sleep(0.25)
    assert not left, f"containers not removed: {left}"


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    d = tmp_path / "toy-dataset"
    d.mkdir()
    (d / "topics.tsv").write_text("1\tshould teachers get tenure\n2\tis climate change real\n")
    (d / "docs.tsv").write_text(
        "d1\tteachers tenure protects teachers\n"
        "d2\tclimate change is real and man made\n"
        "d3\tget real\n"
        "d4\tnothing relevant here\n"
    )
    return d


def sandbox(image: str, dataset: Path, tmp_path: Path, command: str | None, **kw):
    kw.setdefault("timeout", 60)
    kw.setdefault("memory", "512m")
    kw.setdefault("validate", False)
    return run(TASK, image, command=command, input_dir=dataset, output_dir=tmp_path / "run" / "output", **kw)


# ---------------------------------------------------------------- the contract


def test_tira_contract_is_visible_inside(test_image, dataset, tmp_path):
    prev = tmp_path / "prev-stage"
    prev.mkdir()
    (prev / "stage1.txt").write_text("from stage 1\n")
    cmd = ("env > $outputDir/env.txt; cat /proc/mounts > $outputDir/mounts.txt; "
           "echo $inputDataset $outputDir $inputRun > $outputDir/args.txt; "
           "cp $inputRun/stage1.txt $outputDir/; ls $inputDataset > $outputDir/ls.txt")
    out = sandbox(test_image, dataset, tmp_path, cmd, input_run=prev, dataset_id="toy-1")
    assert out.result.status == "success", out.result.message
    output = out.request.output_dir
    env = dict(line.split("=", 1) for line in (output / "env.txt").read_text().splitlines() if "=" in line)
    assert env["inputDataset"] == env["TIRA_INPUT_DATASET"] == "/tira-data/input"
    assert env["outputDir"] == env["TIRA_OUTPUT_DIR"] == "/tira-data/output"
    assert env["inputRun"] == "/tira-data/input-run"
    assert env["TIRA_DATASET_ID"] == "toy-1"
    # substituted before `sh -c`, exactly the container paths
    assert (output / "args.txt").read_text().split() == ["/tira-data/input", "/tira-data/output",
                                                         "/tira-data/input-run"]
    assert (output / "ls.txt").read_text().split() == ["docs.tsv", "topics.tsv"]
    assert (output / "stage1.txt").read_text() == "from stage 1\n"
    mounts = {f[1]: f[3].split(",") for f in (l.split() for l in (output / "mounts.txt").read_text().splitlines())}
    assert "ro" in mounts["/tira-data/input"]
    assert "ro" in mounts["/tira-data/input-run"]
    assert "rw" in mounts["/tira-data/output"]


def test_default_command_is_the_image_entrypoint(test_image, dataset, tmp_path):
    out = sandbox(test_image, dataset, tmp_path, None)
    assert out.result.status == "success", (out.result.message, out.result.log_tail)
    entry = json.loads((out.request.output_dir / "entry.json").read_text())
    assert entry["argv"] == ["/opt/tools/entry.py"]
    assert entry["env"]["inputDataset"] == "/tira-data/input"
    lines = (out.request.output_dir / "run.txt").read_text().splitlines()
    # topic 1: d1 shares "teachers"+"tenure" (2), d3 shares "get" (1), then d2/d4 tie at 0 -> d2
    assert lines[:3] == ["1 Q0 d1 1 2 overlap", "1 Q0 d3 2 1 overlap", "1 Q0 d2 3 0 overlap"]


class _GoWhenSampled:
    """Lets the container go on once the sandbox has taken its first memory sample.

    The sandbox samples right after ``start`` and then calls ``started``; a container that
    waits for ``.go`` is therefore alive at that sample, however busy the machine is (a short
    run could otherwise end before any sample, and its peak is then unknown)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def started(self, request, container_id: str) -> None:
        (self.folder / ".go").touch()

    def log(self, stream: str, line: str) -> None:
        pass

    def tick(self, snapshot) -> None:
        pass

    def finished(self, result) -> None:
        pass


def test_run_record_and_ir_metadata_are_written(test_image, dataset, tmp_path):
    out = sandbox(test_image, dataset, tmp_path, "while [ ! -e $inputDataset/.go ]; do sleep 0.05; done; "
                  "echo hello-out; echo hello-err >&2; python /opt/tools/rank.py $inputDataset $outputDir",
                  validate=True, observer=_GoWhenSampled(dataset))
    record = json.loads(out.record_path.read_text())
    assert out.record_path == tmp_path / "run" / "run-record.json"
    assert record["status"] == "success" and record["exit_code"] == 0
    assert record["task"] == TASK
    assert record["image"]["id"].startswith("sha256:")
    assert record["policy"]["network"] == "none"
    assert record["policy"]["limits"]["memory"] == 512 * 1024**2
    assert record["peak_memory"]["bytes"] > 0
    assert record["validation"]["status"] in {"valid", "invalid", "not available", "error"}
    assert Path(record["logs"]["stdout"]).read_text() == "hello-out\n"
    assert Path(record["logs"]["stderr"]).read_text() == "hello-err\n"
    assert record["reproduce"].startswith("docker run --rm")
    meta = yaml.safe_load((tmp_path / "run" / "ir-metadata.yml").read_text())
    assert set(meta) >= {"platform", "implementation", "data", "resources"}
    assert meta["implementation"]["container"]["id"] == record["image"]["id"]


# ---------------------------------------------------------------- the sandbox


@pytest.fixture()
def listener(docker_client, test_image):
    """A TCP listener in a container on a docker network created for this test."""
    net = docker_client.networks.create(f"sharedtask-test-net-{uuid.uuid4().hex[:8]}", internal=True)
    box = docker_client.containers.run(test_image, ["/opt/tools/listen.py"], entrypoint="python",
                                       detach=True, network=net.name, remove=True)
    try:
        box.reload()
        ip = box.attrs["NetworkSettings"]["Networks"][net.name]["IPAddress"]
        yield net.name, ip
    finally:
        box.remove(force=True)
        net.remove()


def test_network_is_off_by_default_and_on_when_allowed(test_image, dataset, tmp_path, listener):
    net, ip = listener
    cmd = f"ls /sys/class/net; python /opt/tools/connect.py {ip} 8765"
    closed = sandbox(test_image, dataset, tmp_path / "a", cmd)
    assert closed.result.exit_code == 3, closed.result.log_tail
    assert closed.result.log_tail[0] == "lo"  # no interface but loopback: --network none
    assert any("connect failed" in line for line in closed.result.log_tail)
    opened = sandbox(test_image, dataset, tmp_path / "b", cmd, network=net)
    assert opened.result.status == "success", opened.result.log_tail
    assert "connected" in opened.result.log_tail
    assert "eth0" in opened.result.log_tail


def test_writing_into_the_input_dataset_fails(test_image, dataset, tmp_path):
    before = sorted(p.name for p in dataset.iterdir())
    for user in ("me", "0:0"):  # also as root inside the container
        out = sandbox(test_image, dataset, tmp_path / user.replace(":", "-"),
                      "touch $inputDataset/intruder && echo WROTE; rm -f $inputDataset/docs.tsv; "
                      "echo x >> $inputDataset/topics.tsv", user=user)
        assert out.result.status == "failed"
        assert "WROTE" not in out.result.log_tail
        assert any("Read-only file system" in line for line in out.result.log_tail)
    assert sorted(p.name for p in dataset.iterdir()) == before
    assert (dataset / "topics.tsv").read_text().count("\n") == 2


def test_timeout_kills_and_reports(test_image, dataset, tmp_path):
    out = sandbox(test_image, dataset, tmp_path, "echo started; sleep 120", timeout=2)
    assert out.result.status == "timeout"
    assert out.result.message == "timed out after 2 s"
    assert out.result.wall_seconds < 60  # the sleep did not run to its end
    assert json.loads(out.record_path.read_text())["status"] == "timeout"


def test_memory_hog_is_reported_as_out_of_memory(test_image, dataset, tmp_path):
    out = sandbox(test_image, dataset, tmp_path, "python /opt/tools/hog.py 600", memory="128m")
    assert out.result.status == "oom", (out.result.status, out.result.message, out.result.log_tail)
    assert out.result.message == "killed: out of memory at 128 MiB"
    assert out.result.oom_killed and out.result.exit_code == 137
    assert not any("allocated" in line for line in out.result.log_tail)


def test_nonzero_exit_is_a_failure_even_with_a_run_file(test_image, dataset, tmp_path):
    out = sandbox(test_image, dataset, tmp_path,
                  "python /opt/tools/rank.py $inputDataset $outputDir; exit 3")
    assert (out.request.output_dir / "run.txt").stat().st_size > 0
    assert out.result.status == "failed" and out.result.exit_code == 3
    assert out.result.message == "exited with code 3"
    assert not out.ok


def test_output_size_limit(test_image, dataset, tmp_path):
    out = sandbox(test_image, dataset, tmp_path,
                  "head -c 3000000 /dev/zero > $outputDir/run.txt", max_output="1m")
    assert out.result.status == "output-limit"
    assert "1 MiB" in out.result.message


def test_writes_outside_the_output_dir_leave_no_trace(docker_client, test_image, dataset, tmp_path):
    marker = f"sharedtask-trace-{uuid.uuid4().hex}"
    targets = ["/tmp", "/", "/app", "/tira-data", "/root", "/opt/venv", "/etc"]
    cmd = "; ".join(f"echo x > {t}/{marker}" for t in targets) + f"; echo x > $outputDir/{marker}; ls /tmp"
    out = sandbox(test_image, dataset, tmp_path, cmd, user="0:0")
    assert out.result.status == "success", out.result.log_tail
    assert marker in out.result.log_tail  # the writes did happen inside
    found = [p for p in tmp_path.rglob(marker)]
    assert found == [out.request.output_dir / marker]  # only the one in $outputDir
    assert not list(dataset.rglob(marker))
    assert not list(Path("/tmp").glob(marker))
    assert not containers_matching(docker_client, id=out.result.container_id)
    overlay = Path("/var/lib/docker/overlay2")
    if os.access(overlay, os.R_OK | os.X_OK):  # the container's layer is gone with it
        hits = subprocess.run(["find", str(overlay), "-maxdepth", "4", "-name", marker],
                              capture_output=True, text=True).stdout.split()
        assert hits == []


def test_output_files_belong_to_the_chosen_user(test_image, dataset, tmp_path):
    mine = sandbox(test_image, dataset, tmp_path / "me", "id -u > $outputDir/uid; mkdir $outputDir/sub")
    # "me": the invoking user, except that root gets the unprivileged sandbox uid 10001.
    expected = 10001 if os.getuid() == 0 else os.getuid()
    assert (mine.request.output_dir / "uid").read_text().strip() == str(expected)
    assert (mine.request.output_dir / "uid").stat().st_uid == expected
    assert (mine.request.output_dir / "sub").stat().st_uid == expected
    other = sandbox(test_image, dataset, tmp_path / "other", "id -u > $outputDir/uid; echo $HOME > $outputDir/home",
                    user="4321:4321")
    assert other.result.status == "success", other.result.log_tail
    assert (other.request.output_dir / "uid").stat().st_uid == 4321
    assert (other.request.output_dir / "home").read_text().strip() == "/tmp"


def test_ctrl_c_stops_and_removes_the_container(docker_client, test_image, dataset, tmp_path):
    class Interrupt:
        def started(self, request, container_id):
            self.container_id = container_id

        def log(self, stream, line):
            pass

        def tick(self, snapshot):
            raise KeyboardInterrupt

        def finished(self, result):
            pass

    observer = Interrupt()
    out = sandbox(test_image, dataset, tmp_path, "sleep 120", observer=observer)
    assert out.result.status == INTERRUPTED
    assert not containers_matching(docker_client, id=observer.container_id)


def test_cli_json_and_exit_codes(test_image, dataset, tmp_path):
    base = [sys.executable, "-m", "sharedtask", "run", "--task", TASK, "--image", test_image,
            "--input", str(dataset), "--json", "--no-validate", "--memory", "256m"]
    good = subprocess.run([*base, "--output", str(tmp_path / "g" / "output"),
                           "--command", "python /opt/tools/rank.py $inputDataset $outputDir"],
                          capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    record = json.loads(good.stdout)
    assert record["status"] == "success"
    assert Path(record["record_path"]).is_file()
    bad = subprocess.run([*base, "--output", str(tmp_path / "b" / "output"), "--command", "exit 5"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and json.loads(bad.stdout)["exit_code"] == 5
    missing = subprocess.run([*base, "--image", "sharedtask-test/does-not-exist:0", "--command", "true"],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "not available locally" in missing.stderr
    assert "Traceback" not in missing.stderr


# ---------------------------------------------------------------- tira-run parity

TIRA_PRIVILEGED_REFUSED = "unable to apply caps"


def _tira_run_in_process(image: str, command: str, input_dir: Path, output_dir: Path,
                         monkeypatch) -> None:
    """tira-run's own code path (tira.local_client → local_execution_integration.run)
    with one change: ``privileged=True`` dropped, because this VM's runc refuses
    privileged containers ("unable to apply caps: operation not permitted")."""
    import docker.models.containers as containers
    from tira.local_client import Client

    original = containers.ContainerCollection.run

    def unprivileged(self, image, command=None, **kwargs):
        kwargs.pop("privileged", None)
        return original(self, image, command, **kwargs)

    monkeypatch.setattr(containers.ContainerCollection, "run", unprivileged)
    Client().local_execution.run(image=image, command=command, input_dir=str(input_dir),
                                 output_dir=str(output_dir))


def test_same_run_file_as_tira_run(test_image, dataset, tmp_path, monkeypatch):
    command = "python /opt/tools/rank.py $inputDataset $outputDir"
    ours = sandbox(test_image, dataset, tmp_path / "ours", command)
    assert ours.result.status == "success", ours.result.log_tail
    tira_out = tmp_path / "tira" / "output"
    tira_out.mkdir(parents=True)
    cli = subprocess.run([str(Path(sys.executable).parent / "tira-run"), "--image", test_image,
                          "--command", command, "--input-directory", str(dataset),
                          "--output-directory", str(tira_out)], capture_output=True, text=True, timeout=300)
    if cli.returncode != 0:
        # tira-run always asks for a privileged container; where runc cannot grant
        # that (this VM), run tira's identical code path minus `privileged`.
        assert TIRA_PRIVILEGED_REFUSED in cli.stdout + cli.stderr, cli.stdout[-2000:] + cli.stderr[-2000:]
        _tira_run_in_process(test_image, command, dataset, tira_out, monkeypatch)
    assert (tira_out / "run.txt").read_bytes() == (ours.request.output_dir / "run.txt").read_bytes()
    assert (tira_out / "run.txt").read_text().count("\n") == 6
