"""The Dockerfile check (sharedtask/images/dockerfile.py) and the context collector (sharedtask/images/context.py),
without a daemon; tests/test_build_attacks.py runs the attacks against the real dockerd."""

from __future__ import annotations

import os
import tarfile
import time
from pathlib import Path

import pytest

from sharedtask.images.context import ContextLimits, ContextRefused, collect, read_dockerfile
from sharedtask.images.dockerfile import BuildPolicy, check, logical_lines
from sharedtask.errors import SharedTaskError
from sharedtask.manifest import load_manifest

POLICY = BuildPolicy(("sharedtask/base:latest", "sharedtask/baseline-lucene:latest"))
ARGS = {"BASE_IMAGE": "sharedtask/base:latest"}
REPO = Path(__file__).resolve().parent.parent


def codes(text: str, policy: BuildPolicy = POLICY, args: dict[str, str] | None = None) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check(text, policy, ARGS if args is None else args)]


def test_every_dockerfile_of_the_project_passes() -> None:
    manifest = load_manifest()
    seen = set()
    for sw in (*manifest.baselines, manifest.evaluator):
        path = sw.build / (sw.dockerfile or "Dockerfile")
        if path in seen:
            continue
        seen.add(path)
        args = {**ARGS, **sw.build_args}
        assert check(path.read_text(), POLICY, args, str(path)) == [], path


def test_the_scaffold_dockerfiles_pass() -> None:
    found = list((REPO / "src" / "sharedtask" / "scaffold").rglob("Dockerfile*"))
    for path in found:
        assert codes(path.read_text()) == [], path


@pytest.mark.parametrize("text, expected", [
    ("FROM sharedtask/base:latest\nADD http://127.0.0.1:8000/secret /s\n", [(2, "BUILD-ADD-URL")]),
    ("FROM sharedtask/base\nADD [\"https://example.org/x\", \"/x\"]\n", [(2, "BUILD-ADD-URL")]),
    ("FROM sharedtask/base\nADD git@github.com:a/b.git /b\n", [(2, "BUILD-ADD-URL")]),
    ("FROM sharedtask/base\nADD \"http://127.0.0.1/s\" /s\n", [(2, "BUILD-ADD-URL")]),  # dockerd unquotes
    ("FROM sharedtask/base\nADD h'ttp'://127.0.0.1/s /s\n", [(2, "BUILD-ADD-URL")]),
    ("FROM\tother/team\n", [(1, "BUILD-FROM")]),
    ("\ufeffFROM other/team\n", [(1, "BUILD-FROM")]),
    ("FROM sharedtask/base\nARG U=http://127.0.0.1/s\nADD ${U} /s\n", [(3, "BUILD-UNSUPPORTED")]),
    ("FROM other/team:latest\n", [(1, "BUILD-FROM")]),
    ("FROM sharedtask/base\nCOPY --from=other/team:1 /secret /s\n", [(2, "BUILD-COPY-FROM")]),
    ("FROM sharedtask/base\nCOPY --from=0 /x /y\n", [(2, "BUILD-COPY-FROM")]),  # no earlier stage
    ("FROM sharedtask/base\nCOPY --from=$X /x /y\n", [(2, "BUILD-UNSUPPORTED")]),
    ("FROM evil.example:5000/x\n", [(1, "BUILD-REGISTRY")]),
    ("FROM localhost/x\n", [(1, "BUILD-REGISTRY")]),
    ("FROM docker.io/sharedtask/base:latest\n", [(1, "BUILD-REGISTRY")]),
    ("ARG X=evil.example/img\nFROM ${X}\n", [(2, "BUILD-REGISTRY")]),
    ("FROM ${UNDECLARED}\n", [(1, "BUILD-UNSUPPORTED")]),
    ("ARG B\nFROM ${B:-other/team}\n", [(2, "BUILD-FROM")]),
    ("# syntax=docker/dockerfile:1\nFROM sharedtask/base\n", [(1, "BUILD-UNSUPPORTED")]),
    ("FROM sharedtask/base\nRUN --mount=type=bind,from=other/team,target=/m true\n", [(2, "BUILD-UNSUPPORTED")]),
    ("FROM sharedtask/base\nRUN --network=host true\n", [(2, "BUILD-UNSUPPORTED")]),
    # the classic builder reads a heredoc's body as instructions (line 3 is a plain ADD there)
    ("FROM sharedtask/base\nRUN <<EOF\nADD x y\nEOF\n", [(2, "BUILD-UNSUPPORTED"), (4, "BUILD-UNSUPPORTED")]),
    ("FROM sharedtask/base\nCOPY <<EOF /x\nhi\nEOF\n", [(2, "BUILD-UNSUPPORTED"), (3, "BUILD-UNSUPPORTED"),
                                                      (4, "BUILD-UNSUPPORTED")]),
    ("FROM sharedtask/base\nONBUILD ADD http://x/y /y\n", [(2, "BUILD-ADD-URL")]),
    ("FROM sharedtask/base\nFETCH x\n", [(2, "BUILD-UNSUPPORTED")]),
    ("RUN true\n", [(1, "BUILD-UNSUPPORTED")]),  # no FROM
    # continuations: an image name split over lines, a URL split over lines, comments inside
    ("FROM other/\\\nteam\n", [(1, "BUILD-FROM")]),
    ("FROM sharedtask/base\nADD \\\n# a comment inside\n  http://127.0.0.1/x \\\n  /x\n", [(2, "BUILD-ADD-URL")]),
    # the escape directive: ` continues lines, \ is then a plain character
    ("# escape=`\nFROM sharedtask/base\nADD `\n http://127.0.0.1/x /x\n", [(3, "BUILD-ADD-URL")]),
])
def test_what_is_refused_and_where(text: str, expected: list[tuple[int, str]]) -> None:
    assert codes(text) == expected


@pytest.mark.parametrize("text", [
    "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nCOPY app /app\nRUN echo $((1<<2)) && cat <<< hi\n",
    "ARG BASE_IMAGE=x\nFROM $BASE_IMAGE AS build\nRUN true\nFROM sharedtask/base\nCOPY --from=build /a /a\n",
    "FROM --platform=linux/amd64 sharedtask/base AS one\nFROM one\nCOPY --from=0 /a /b\n",
    "FROM sharedtask/base\nADD local.tar.gz /opt/\nCOPY --chown=1000:1000 --chmod=644 a b\n",
    "FROM sharedtask/baseline-lucene\n",  # an allowed base, tag implied
    "ARG L=sharedtask/baseline-lucene:latest\nFROM ${L:-other/team}\n",
    "FROM scratch\nCOPY a /a\n",
    "FROM sharedtask/base:lat\\\nest\n",  # continuation inside the name
    "FROM sharedtask/base\nHEALTHCHECK --interval=5s CMD true\n",
])
def test_legitimate_dockerfiles_pass(text: str) -> None:
    assert codes(text) == []


def test_the_message_says_what_is_allowed_and_how_to_fix() -> None:
    (f,) = check("FROM other/team:latest\n", POLICY, {}, "sub/Dockerfile")
    assert f.path == "sub/Dockerfile" and f.line == 1
    assert "sharedtask/base:latest, sharedtask/baseline-lucene:latest" in f.message
    assert "FROM ${BASE_IMAGE}" in f.hint


def test_the_organizers_registry_and_patterns_are_allowed() -> None:
    policy = BuildPolicy(("registry.org.example/bases/*",), registry="registry.org.example")
    assert codes("FROM registry.org.example/bases/py:3\n", policy) == []
    assert codes("FROM registry.org.example/teams/x:1\n", policy) == [(1, "BUILD-FROM")]
    assert codes("FROM other.example/bases/py:3\n", policy) == [(1, "BUILD-REGISTRY")]


def test_a_build_arg_changes_what_from_names() -> None:
    text = "ARG BASE_IMAGE=sharedtask/base\nFROM ${BASE_IMAGE}\n"
    assert codes(text, args={}) == []
    assert codes(text, args={"BASE_IMAGE": "other/team"}) == [(2, "BUILD-FROM")]


def test_logical_lines_join_as_dockerd_does() -> None:
    lines, _ = logical_lines("FROM a\n\nRUN x \\\n  # c\n\n    y\n# end\nCMD z\\\n", "D")
    assert lines == [(1, "FROM a"), (3, "RUN x     y"), (8, "CMD z")]


# ------------------------------------------------------------------ the context


def _context(tmp_path: Path) -> Path:
    ctx = tmp_path / "ctx"
    (ctx / "app").mkdir(parents=True)
    (ctx / "Dockerfile").write_text("FROM sharedtask/base\nCOPY app /app\n")
    (ctx / "app" / "main.py").write_text("print('hi')\n")
    return ctx


def _names(collected) -> set[str]:
    with tarfile.open(fileobj=collected.archive) as tar:
        return set(tar.getnames())


def test_a_fifo_a_device_link_and_a_link_outside_are_refused(tmp_path: Path) -> None:
    for make, words in [(lambda p: os.mkfifo(p), "is a FIFO"),
                        (lambda p: p.symlink_to("/dev/zero"), "outside the build context"),
                        (lambda p: p.symlink_to("../../etc/passwd"), "outside the build context")]:
        ctx = _context(tmp_path / words.replace(" ", "-") / str(id(make)))
        make(ctx / "app" / "trap")
        with pytest.raises(ContextRefused, match=words) as info:
            collect(ctx)
        assert info.value.finding.code == "BUILD-CONTEXT" and "app/trap" in info.value.finding.path


def test_a_dockerfile_that_is_a_link_or_a_fifo_is_not_read(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    (ctx / "Dockerfile").unlink()
    (ctx / "Dockerfile").symlink_to("/dev/zero")
    with pytest.raises(ContextRefused):
        read_dockerfile(ctx, "Dockerfile")
    (ctx / "Dockerfile").unlink()
    os.mkfifo(ctx / "Dockerfile")
    with pytest.raises(ContextRefused, match="not a regular file"):
        read_dockerfile(ctx, "Dockerfile")


def test_links_inside_the_context_are_kept_as_links(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    (ctx / "app" / "alias.py").symlink_to("main.py")
    with tarfile.open(fileobj=collect(ctx).archive) as tar:
        member = tar.getmember("app/alias.py")
        assert member.issym() and member.linkname == "main.py"


def test_the_context_is_bounded_in_entries_bytes_and_time(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    for i in range(5):
        (ctx / "app" / f"f{i}").write_bytes(b"x" * 1000)
    with pytest.raises(ContextRefused, match="more than 4 entries"):
        collect(ctx, limits=ContextLimits(max_files=4))
    with pytest.raises(ContextRefused, match="more than 2,500 bytes"):
        collect(ctx, limits=ContextLimits(max_bytes=2500))
    with pytest.raises(SharedTaskError, match="collecting the build context .* timed out after 30 s"):
        collect(ctx, deadline=time.monotonic() - 1, timeout=30)  # the build's deadline has passed


def test_dockerignore_is_honoured_as_the_docker_sdk_does(tmp_path: Path) -> None:
    from docker.utils.build import exclude_paths

    ctx = _context(tmp_path)
    (ctx / "secret.env").write_text("x")
    (ctx / "app" / "keep.env").write_text("x")
    (ctx / "build").mkdir()
    (ctx / "build" / "big.bin").write_bytes(b"0" * 10)
    (ctx / ".dockerignore").write_text("# comment\n*.env\n!app/keep.env\nbuild\n")
    patterns = ["*.env", "!app/keep.env", "build"]
    sdk = set(exclude_paths(str(ctx), patterns, dockerfile="Dockerfile"))
    assert _names(collect(ctx)) == sdk
    assert "secret.env" not in sdk and "app/keep.env" in sdk


def test_the_hash_is_the_one_images_always_had(tmp_path: Path) -> None:
    """Files in os.walk order, skipped folders out: existing images stay up to date."""
    import hashlib

    ctx = _context(tmp_path)
    (ctx / "tests").mkdir()
    (ctx / "tests" / "t.py").write_text("x")
    (ctx / "app" / "m.pyc").write_bytes(b"\0")
    digest = hashlib.sha256(b"extra")
    for rel in ("Dockerfile", "app/main.py"):
        digest.update(rel.encode() + b"\0" + (ctx / rel).read_bytes())
    assert collect(ctx, extra="extra").digest == digest.hexdigest()[:24]


def test_the_context_bounds_come_from_the_manifest(tmp_path: Path) -> None:
    import yaml

    from sharedtask.images.build import BuildSandbox

    subs = tmp_path / "submissions.yml"
    subs.write_text(yaml.safe_dump({"version": 1, "submissions": {"team": {
        "build": ".", "image": "team/x:1", "tasks": ["touche-2020-task1"],
        "build_sandbox": {"context_files": 10, "context_bytes": "1m", "timeout": 60}}}}))
    sw = load_manifest(extra=[subs]).software("team")
    limits = BuildSandbox.for_software(sw.kind, sw.build_sandbox).context_limits()
    assert (limits.max_files, limits.max_bytes) == (10, 1024**2)
