"""Our artefacts carry over to TIRA unchanged (tira 0.0.207), proved as far as offline allows.

1. ``tira-cli code-submission --dry-run`` accepts a participant scaffold
   (``sharedtask new-submission``) and a baseline directory (``baselines/lucene``)
   committed to a temporary git repository whose ``origin`` is a local bare repository.
   The real console script runs in a subprocess; tira itself performs every step of
   its dry run: the git checks (repository, remote, commit, branch, clean tree),
   Dockerfile discovery (``dockerfile_for_architecture``), ``docker build --platform
   linux/amd64`` plus its platform check, entrypoint extraction (scaffold: no
   ``--command``), the resource-tracker probe, the run of the image on the dataset
   with the network disabled, and ``check_format`` of the output as ``run.txt``.

   How it is kept offline (no traffic but loopback and the Docker socket):
   - ``TIRA_INPUT_DATASET`` points to the task's sample input, which tira's
     ``download_dataset`` returns without downloading anything;
   - the dataset's TIRA record (id, default task, ``format: [run.txt]``) is placed in
     tira's own archive cache (``$TIRA_CACHE_DIR/.archived/v1/datasets/all``), which it
     reads instead of https://archive.tira.io;
   - ``$TIRA_CACHE_DIR/.tira-settings.json`` points every TIRA URL at 127.0.0.1:9
     (nothing listens), so a forgotten request fails instead of leaving the machine;
   - a ``sitecustomize`` on ``PYTHONPATH`` refuses every non-loopback ``connect`` and
     name lookup inside tira-cli and logs it; the test asserts the log stays empty (and
     that the guard does refuse, see ``test_network_guard_refuses_the_outside``).

   What cannot run here, and why:
   - everything after tira's dry-run gate: the team registration check, uploading the
     run's metadata and a copy of the code, ``docker push`` to TIRA's registry and the
     software registration (they need tira.io, an account and a token);
   - tira's local run asks for a *privileged* container, which runc on these VMs
     refuses ("unable to apply caps: operation not permitted", docker/README.md,
     "tira-run on these machines"). The test runs the real console script first and
     asserts that it got through git, discovery and build and failed at exactly that
     point; then it runs the same console script once more with the single change that
     ``privileged=True`` is dropped from ``containers.run`` (by the same sitecustomize),
     so that tira's remaining steps (run, format check) are executed by tira's code.
     On a machine that grants privileged containers the first run already passes.

   The run file tira's dry run produced is byte-identical to the one ``sharedtask run``
   (our sandbox) produces from the same image, command and dataset.

2. Outputs of our baselines (sandboxed runs on the bundled samples) against
   ``tira.check_format`` as ``run.txt``: the validator predicts TIRA's verdict exactly.
   Touché runs pass. ARQMath Task 1's official 5-column layout and Task 3's answer
   layout cannot pass TIRA's generic check (it wants 6 whitespace-separated columns):
   the validator says so with the info ``RUN-TIRA-LAYOUT``, and the way out it names
   for Task 1, the 6-column TREC variant, passes TIRA (``RUN-LAYOUT-VARIANT``). The
   Task 2 baseline lists several formulas of one post, which ARQMath allows but TIRA
   reads as duplicate documents (column 3 is the post id): the validator notes it with the
   info ``RUN-TIRA-DUPLICATE-POST``, and its way out (one formula per post) passes TIRA.

3. Provenance: the sandbox writes ir_metadata as ``ir-metadata.yml`` next to the
   output folder, never inside ``run.txt`` (TIRA rejects comment lines, as shown with
   ir_metadata's own in-file header block); its sections cover those of the
   ``.tracking-results.yml`` that TIRA's resource tracker wrote in the dry run.

Not repeated here: our ``evaluation.prototext`` is read by tira's own parsers in
``tests/test_evaluate_outputs.py::test_prototext_is_read_by_tiras_own_parsers`` and,
from the evaluator image, in ``tests/test_evaluate_validator_image.py``; accepted runs
of every TREC layout pass ``tira.check_format`` in ``tests/test_validate_tira.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from sharedtask.findings import Severity
from sharedtask.images.build import ensure_software_image
from sharedtask.manifest import load_manifest
from sharedtask.sandbox.api import run as sandbox_run
from sharedtask.spec import load_task
from sharedtask.validate import validate

tira_check = pytest.importorskip("tira.check_format")

BIN = Path(sys.executable).parent
TIRA_CLI = BIN / "tira-cli"
SHAREDTASK = BIN / "sharedtask"
NOWHERE = "http://127.0.0.1:9"  # discard port: nothing listens, nothing leaves the machine
CAPS_REFUSED = "unable to apply caps"

SITECUSTOMIZE = '''\
"""Test-only guard for tira-cli: loopback and unix sockets only; optionally unprivileged containers."""
import ipaddress
import os
import socket

_LOG = os.environ.get("SHAREDTASK_NET_GUARD_LOG")


def _loopback(host):
    if isinstance(host, bytes):
        host = host.decode()
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _refuse(what):
    if _LOG:
        with open(_LOG, "a") as fh:
            fh.write(what + "\\n")
    raise OSError(f"network guard: {what} refused (only loopback is allowed)")


_connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo


def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
        _refuse(f"connect {address!r}")
    return _connect(self, address)


def connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
        _refuse(f"connect {address!r}")
    return _connect_ex(self, address)


def getaddrinfo(host, *args, **kwargs):
    if host is not None and not _loopback(host):
        _refuse(f"resolve {host!r}")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo

if os.environ.get("SHAREDTASK_DROP_PRIVILEGED"):
    # runc on the project VMs refuses privileged containers; tira-run asks for one.
    import docker.models.containers as _containers

    _run = _containers.ContainerCollection.run

    def _unprivileged(self, image, command=None, **kwargs):
        kwargs.pop("privileged", None)
        return _run(self, image, command, **kwargs)

    _containers.ContainerCollection.run = _unprivileged
'''


# ---------------------------------------------------------------- offline TIRA environment


@pytest.fixture(scope="session")
def guard_dir(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("tira-site")
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return site


@dataclass
class OfflineTira:
    env: dict[str, str]
    guard_log: Path
    dataset: str
    input_dir: Path

    def refused(self) -> list[str]:
        return self.guard_log.read_text().splitlines() if self.guard_log.exists() else []


def offline_tira(tmp_path: Path, guard_dir: Path, task_id: str) -> OfflineTira:
    """Settings, archive cache and environment that let tira-cli work on a local dataset."""
    cache = tmp_path / "tira-cache"
    (cache / ".archived" / "v1" / "datasets").mkdir(parents=True)
    (cache / ".tira-settings.json").write_text(json.dumps(
        {"base_url": NOWHERE, "base_url_api": NOWHERE, "archive_base_url": NOWHERE, "api_key": "no-api-key"}))
    dataset = f"{task_id}-sample"
    record = {"id": dataset, "dataset_id": dataset, "display_name": dataset, "default_task": task_id,
              "format": ["run.txt"], "ir_datasets_id": None,
              "mirrors": {"inputs": {"never-downloaded": f"{NOWHERE}/{dataset}.zip"}}}
    (cache / ".archived" / "v1" / "datasets" / "all").write_text(json.dumps([record]))
    input_dir = load_task(task_id).sample_dir / "input"
    tmp = tmp_path / "tmp"  # tira's temporary output folders land here, not in /tmp
    tmp.mkdir()
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(guard_dir), "TIRA_CACHE_DIR": str(cache), "TIRA_INPUT_DATASET": str(input_dir),
           "TMPDIR": str(tmp), "TERM": "dumb", "SHAREDTASK_NET_GUARD_LOG": str(tmp_path / "refused.log")}
    for key in ("SHAREDTASK_DROP_PRIVILEGED", "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env.pop(key, None)
    return OfflineTira(env, tmp_path / "refused.log", dataset, input_dir)


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", "-c", "user.name=sharedtask test", "-c", "user.email=test@example.invalid",
                           "-c", "init.defaultBranch=main", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def committed_repo(tmp_path: Path, files: Path, subdir: str) -> Path:
    """``files`` committed as ``subdir`` of a new repository and pushed to a local bare ``origin``."""
    remote, repo = tmp_path / "origin.git", tmp_path / "repo"
    remote.mkdir()
    git("init", "--bare", "-q", cwd=remote)
    repo.mkdir()
    git("init", "-q", cwd=repo)
    shutil.copytree(files, repo / subdir, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "submission", cwd=repo)
    git("remote", "add", "origin", str(remote), cwd=repo)
    git("push", "-q", "origin", "main", cwd=repo)
    assert git("status", "--porcelain", cwd=repo) == ""
    return repo


@pytest.fixture
def tira_images(docker_client):
    """Tags that tira-cli built (``<dir>-<uuid5>``), removed after the test."""
    tags: list[str] = []
    yield tags
    for tag in tags:
        try:
            docker_client.images.remove(tag)
        except Exception:  # noqa: BLE001 - still in use or gone: nothing to clean
            pass


def code_submission(offline: OfflineTira, path: Path, task_id: str, *, command: str | None,
                    build_args: str, drop_privileged: bool) -> subprocess.CompletedProcess[str]:
    argv = [str(TIRA_CLI), "code-submission", "--path", str(path), "--task", task_id,
            "--dataset", offline.dataset, "--dry-run", "--build-args", build_args]
    if command:
        argv += ["--command", command]
    env = dict(offline.env)
    if drop_privileged:
        env["SHAREDTASK_DROP_PRIVILEGED"] = "1"
    return subprocess.run(argv, cwd=path, env=env, capture_output=True, text=True, timeout=600)


# ---------------------------------------------------------------- checks shared by the cases


def tira_accepts(output_dir: Path) -> tuple[bool, str]:
    status, message = tira_check.check_format(output_dir, "run.txt")
    return status == tira_check.FormatMsgType.OK, str(message)


def assert_plain_run_file(run_file: Path) -> None:
    """TIRA's run.txt: result lines only (no comments, metadata or blank lines)."""
    lines = run_file.read_text(encoding="utf-8").splitlines()
    assert lines
    assert not [line for line in lines if not line.strip() or line.lstrip().startswith("#")]


IR_METADATA_SECTIONS = {"platform", "implementation", "data", "resources"}


def assert_ir_metadata_next_to(output_dir: Path, image: str, task_id: str) -> dict:
    """ir-metadata.yml beside the output folder (not in it), with ir_metadata's sections."""
    assert sorted(p.name for p in output_dir.iterdir()) == ["run.txt"]
    meta = yaml.safe_load((output_dir.parent / "ir-metadata.yml").read_text(encoding="utf-8"))
    assert IR_METADATA_SECTIONS <= set(meta)
    assert meta["tag"].startswith(image)
    assert {"hardware", "operating system", "software"} <= set(meta["platform"])
    assert meta["platform"]["software"]["docker"] not in ("", "unknown")
    assert meta["implementation"]["container"]["image"] == image
    assert meta["implementation"]["container"]["id"].startswith("sha256:")
    assert meta["implementation"]["executable"]["cmd"]
    assert meta["data"]["test collection"]["name"] == task_id
    assert meta["resources"]["exit code"] == 0 and meta["resources"]["status"] == "success"
    assert meta["resources"]["runtime"].endswith(" s")
    return meta


# ---------------------------------------------------------------- 1. tira-cli code-submission --dry-run


def test_network_guard_refuses_the_outside(guard_dir, tmp_path):
    """The guard used for tira-cli refuses name lookups and connections beyond loopback, and logs them."""
    log = tmp_path / "refused.log"
    code = textwrap.dedent("""\
        import socket
        for attempt in (lambda: socket.create_connection(("tira.io", 443), timeout=1),
                        lambda: socket.socket().connect(("192.0.2.1", 80)),
                        lambda: socket.socket().connect(("127.0.0.1", 9))):
            try:
                attempt()
            except OSError as exc:
                print(type(exc).__name__, exc)
    """)
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(guard_dir),
                          "SHAREDTASK_NET_GUARD_LOG": str(log)}, capture_output=True, text=True, timeout=60)
    lines = proc.stdout.splitlines()
    assert len(lines) == 3, proc.stdout + proc.stderr
    assert "network guard" in lines[0] and "network guard" in lines[1]
    assert lines[2].startswith("ConnectionRefusedError")  # loopback goes through (nothing listens on 9)
    assert log.read_text().splitlines() == ["resolve 'tira.io'", "connect ('192.0.2.1', 80)"]


@dataclass(frozen=True)
class Submission:
    id: str
    task: str
    command: str | None  # None: TIRA's default, the image's entrypoint

    def files(self, tmp_path: Path, repo_root: Path) -> tuple[Path, str]:
        """The directory to commit and its path inside the repository."""
        if self.id.startswith("scaffold"):
            target = tmp_path / "scaffold"
            proc = subprocess.run([str(SHAREDTASK), "new-submission", "--task", self.task, str(target)],
                                  capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0, proc.stderr
            return target, "my-submission"
        return repo_root / "baselines" / "lucene", "baselines/lucene"


SUBMISSIONS = [
    Submission("scaffold-touche", "touche-2021-task1", None),
    Submission("scaffold-arqmath-task2", "arqmath-3-task2", None),
    Submission("baselines-lucene", "touche-2021-task1", "python -m lucene_baseline --model bm25"),
]


@pytest.mark.docker
@pytest.mark.parametrize("submission", SUBMISSIONS, ids=lambda s: s.id)
def test_tira_cli_code_submission_dry_run(submission, docker_client, base_image, guard_dir, tira_images,
                                          tmp_path, repo_root):
    files, subdir = submission.files(tmp_path, repo_root)
    if subdir == "baselines/lucene":
        # the project's cached build (content hash) warms the layer cache for tira's `docker build`
        sw = load_manifest().software("lucene-bm25")
        ensure_software_image(sw)
    repo = committed_repo(tmp_path, files, subdir)
    offline = offline_tira(tmp_path, guard_dir, submission.task)
    build_args = f"--build-arg BASE_IMAGE={base_image}"

    first = code_submission(offline, repo / subdir, submission.task, command=submission.command,
                            build_args=build_args, drop_privileged=False)
    tira_images.extend(re.findall(r"Successfully tagged (\S+)", first.stdout))
    out = first.stdout + first.stderr
    for step in ("The dataset", "The code is in a git repository", f"The git repository {repo} is clean",
                 "Image build successfully", "The code is embedded into the docker image", "Test Docker image"):
        assert step in first.stdout, (step, out[-3000:])
    # discovery found our Dockerfile: its instructions are the build's steps, in order
    instructions = [line.split("#")[0].strip() for line in (repo / subdir / "Dockerfile").read_text().splitlines()
                    if line.strip() and not line.startswith((" ", "#"))]
    steps = re.findall(r"^Step \d+/\d+ : (\S+)", first.stdout, flags=re.M)
    assert steps == [i.split()[0] for i in instructions], (steps, instructions)
    if first.returncode == 0:
        final = first
    else:
        # exactly the privileged-container refusal, after everything before the run passed
        assert CAPS_REFUSED in out, out[-3000:]
        final = code_submission(offline, repo / subdir, submission.task, command=submission.command,
                                build_args=build_args, drop_privileged=True)
        tira_images.extend(re.findall(r"Successfully tagged (\S+)", final.stdout))
    assert final.returncode == 0, (final.stdout + final.stderr)[-3000:]
    assert f"The docker image produced valid outputs on the dataset {offline.dataset}" in final.stdout
    assert offline.refused() == []

    # the output tira checked, checked again here
    where = re.search(r"You can verify them at (\S+?)\)", final.stdout)
    assert where, final.stdout[-2000:]
    tira_out = Path(where.group(1))
    assert tira_out.is_relative_to(tmp_path)  # TMPDIR was honoured: nothing left in /tmp
    accepted, message = tira_accepts(tira_out)
    assert accepted, message
    assert_plain_run_file(tira_out / "run.txt")
    task = load_task(submission.task)
    verdict = validate(tira_out / "run.txt", task, input_dir=offline.input_dir)
    assert verdict.valid, [f.to_json() for f in verdict.findings if f.severity is Severity.ERROR]
    assert not {c for c in verdict.codes() if c.startswith("RUN-TIRA")}

    # the same image, command and dataset in our sandbox: the same run file, provenance beside it
    image = tira_images[-1]
    ours = sandbox_run(task, image, command=submission.command, input_dir=offline.input_dir,
                       output_dir=tmp_path / "ours" / "output")
    assert ours.ok, ours.result.message
    assert (ours.request.output_dir / "run.txt").read_bytes() == (tira_out / "run.txt").read_bytes()
    meta = assert_ir_metadata_next_to(ours.request.output_dir, image, task.id)

    # TIRA's resource tracker (when bundled) writes ir_metadata as a separate hidden YAML too
    tracked = tira_out / ".tracking-results.yml"
    if tracked.exists():
        sections = {k for k in yaml.safe_load(tracked.read_text()) if k != "schema version"}
        assert sections <= set(meta), sections - set(meta)


# ---------------------------------------------------------------- 2. baseline outputs vs tira.check_format


@dataclass(frozen=True)
class BaselineCase:
    task: str
    software: str
    tira_finding: str | None  # the validator's finding that predicts TIRA's rejection; None: TIRA accepts
    severity: Severity | None = None


BASELINE_CASES = [
    BaselineCase("touche-2021-task1", "lucene-dirichlet", None),
    # Task 2 may list several formulas of one post; TIRA reads column 3 (the post) as docno
    # legal for Task 2, like Task 1's layout: a note about TIRA's generic check (info), not a fault of the run
    BaselineCase("arqmath-3-task2", "formula-lucene", "RUN-TIRA-DUPLICATE-POST", Severity.INFO),
    BaselineCase("arqmath-3-task1", "lucene-bm25", "RUN-TIRA-LAYOUT", Severity.INFO),  # official 5 columns
    BaselineCase("arqmath-3-task3", "extractive-qa", "RUN-TIRA-LAYOUT", Severity.INFO),  # answers hold spaces
]


@pytest.fixture(scope="module")
def built_baselines(docker_client, base_image) -> None:
    from sharedtask.pipeline import with_parents

    manifest = load_manifest()
    for sw in with_parents([manifest.software(c.software) for c in BASELINE_CASES], manifest):
        ensure_software_image(sw)


def _rows(run: Path, ncol: int) -> list[list[str]]:
    rows = [line.split("\t") for line in run.read_text(encoding="utf-8").splitlines()]
    assert rows and all(len(r) == ncol for r in rows)
    return rows


def _write_rows(target: Path, rows: list[list[str]]) -> Path:
    target.parent.mkdir(parents=True)
    target.write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return target


def as_trec_variant(arqmath_task1_run: Path, target: Path) -> Path:
    """ARQMath Task 1's 5 columns (Topic Post Rank Score Tag) as the 6-column TREC variant
    (Topic Q0 Post Rank Score Tag) that the RUN-TIRA-LAYOUT hint names."""
    return _write_rows(target, [[t, "Q0", p, r, s, g] for t, p, r, s, g in _rows(arqmath_task1_run, 5)])


def one_formula_per_post(task2_run: Path, target: Path) -> Path:
    """The way out the RUN-TIRA-DUPLICATE-POST hint names: the best formula of each post, re-ranked."""
    seen: set[tuple[str, str]] = set()
    rank: dict[str, int] = {}
    kept = []
    for topic, formula, post, _, score, tag in _rows(task2_run, 6):
        if (topic, post) not in seen:
            seen.add((topic, post))
            rank[topic] = rank.get(topic, 0) + 1
            kept.append([topic, formula, post, str(rank[topic]), score, tag])
    return _write_rows(target, kept)


@pytest.mark.docker
@pytest.mark.parametrize("case", BASELINE_CASES, ids=lambda c: f"{c.task}:{c.software}")
def test_baseline_output_against_tira_check_format(case, built_baselines, tmp_path):
    task = load_task(case.task)
    sw = load_manifest().software(case.software)
    outcome = sandbox_run(task, sw.image, command=sw.command_for(task.id), output_dir=tmp_path / case.software / "output")
    assert outcome.ok, outcome.result.message
    output = outcome.request.output_dir
    assert_plain_run_file(output / "run.txt")
    assert_ir_metadata_next_to(output, sw.image, task.id)

    inputs = task.sample_dir / "input"
    verdict = validate(output / "run.txt", task, input_dir=inputs)
    assert verdict.valid, [f.to_json() for f in verdict.findings if f.severity is Severity.ERROR]
    accepted, message = tira_accepts(output)
    # the validator predicts TIRA's verdict, and says why when TIRA will say no
    assert accepted is (case.tira_finding is None), message
    assert {c for c in verdict.codes() if c.startswith("RUN-TIRA")} == ({case.tira_finding} - {None})
    if case.tira_finding is None:
        return
    finding = next(f for f in verdict.findings if f.code == case.tira_finding)
    assert finding.severity is case.severity
    way_out = tmp_path / "way-out" / "run.txt"
    if case.tira_finding == "RUN-TIRA-LAYOUT":
        assert "expected 6 columns" in message and "6 TREC columns" in finding.message
        if task.family != "arqmath-task1":
            return  # Task 3 answers: no TREC form; TIRA needs the task's own checker
        assert "6-column TREC variant" in (finding.hint or "")
        as_trec_variant(output / "run.txt", way_out)
        expected_info = "RUN-LAYOUT-VARIANT"
    else:
        assert "duplicate documents" in message and "one formula per post" in (finding.hint or "")
        one_formula_per_post(output / "run.txt", way_out)
        expected_info = None
    assert tira_accepts(way_out.parent)[0] is True, tira_accepts(way_out.parent)[1]
    again = validate(way_out, task, input_dir=inputs)
    assert again.valid and not {c for c in again.codes() if c.startswith("RUN-TIRA")}
    assert expected_info is None or expected_info in again.codes()


# ---------------------------------------------------------------- 3. metadata stays out of run.txt


IR_METADATA_IN_FILE = textwrap.dedent("""\
    # ir_metadata.start
    # tag: sharedtask-bm25
    # implementation:
    #   executable: {cmd: python -m lucene_baseline --model bm25}
    # ir_metadata.end
""")


def test_in_file_ir_metadata_is_rejected_by_tira_and_the_validator(tmp_path):
    """Why the provenance is a separate YAML: ir_metadata's in-file header (comment lines at
    the top of the run) makes TIRA's run.txt check fail, and the validator says so first."""
    task = load_task("touche-2021-task1")
    docs = [line.split()[2] for line in (task.sample_dir / "truth" / "qrels.txt").read_text().splitlines()[:6]]
    body = "".join(f"{t} Q0 {d} {r} {20 - r}.5 sharedtask-bm25\n" for t in ("51", "52", "53") for r, d in
                   enumerate(docs, 1))
    plain, annotated = tmp_path / "plain", tmp_path / "annotated"
    plain.mkdir()
    annotated.mkdir()
    (plain / "run.txt").write_text(body)
    (annotated / "run.txt").write_text(IR_METADATA_IN_FILE + body)

    assert tira_accepts(plain)[0] is True
    accepted, message = tira_accepts(annotated)
    assert accepted is False and "ir_metadata.start" in message
    assert validate(plain / "run.txt", task).valid
    verdict = validate(annotated / "run.txt", task)
    assert not verdict.valid and "RUN-COMMENT" in verdict.codes()
