"""Run a document's `doc-test: run` blocks in order, as a reader would, in one scratch folder.

The conventions (markers, placeholders, what the harness fills in) are in docs/contributing.md.
Each block runs as one `bash` script with `set -eo pipefail`; the variables a block sets
(`ORG=$(...)`; `set -a` exports them) are kept for the blocks after it, as in a reader's terminal.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from doc_blocks import REPO, Block, blocks

OPTIONAL = re.compile(r"[ \t]*\[--[^\[\]\n]*\]")  # `[--json]`: an optional part of a command, left out
RUN_PLACEHOLDER = re.compile(r"(?P<parent>[\w./-]*)/<run>(?=/)")
# Image owners the documents use for a reader's own images; renamed so that a test never touches
# an image someone else on this Docker daemon named so.
IMAGE_OWNER = re.compile(r"(?<![\w./-])(?P<owner>me|team-a|team-b)/(?=[\w.-]+:)")
DOC_PORT = "8000"
DOC_POSTGRES = "127.0.0.1:5432"
NEWEST = "doc_test_newest_run"
PRELUDE = f"""set -a -eo pipefail
trap 'env -0 > "$DOCTEST_ENV"' EXIT
{NEWEST}() {{
    local found
    found=$(ls -1td -- "$1"/*/ 2>/dev/null | head -n 1) || true
    [ -n "$found" ] || echo "doc-test: <run> stands for a run folder under $1/, but there is none" >&2
    printf '%s' "${{found%/}}"
}}
"""
KEEP_OUT = {"PWD", "OLDPWD", "SHLVL", "_", "DOCTEST_ENV"}


class DocFailure(AssertionError):
    """A documented command did not do what its block says: where, what ran, what came out."""


@dataclass
class Services:
    """What the harness puts in place of the documents' fixed addresses and names."""

    port: int  # the real `sharedtask serve` port, for 8000
    owner: str  # prefix of the image owners me/, team-a/, team-b/
    postgres: str | None = None  # host:port of the test's PostgreSQL server, for 127.0.0.1:5432
    env: dict[str, str] = field(default_factory=dict)


def fill(text: str, services: Services) -> str:
    """The block's text with optional parts dropped and placeholders filled."""
    text = OPTIONAL.sub("", text)
    text = IMAGE_OWNER.sub(lambda m: f"{services.owner}-{m['owner']}/", text)
    text = text.replace(f"127.0.0.1:{DOC_PORT}", f"127.0.0.1:{services.port}")
    text = text.replace(f"--port {DOC_PORT}", f"--port {services.port}")
    if services.postgres:
        text = text.replace(DOC_POSTGRES, services.postgres)

    # `<run>` is the newest folder under its parent when the command runs (an earlier command of
    # the same block may make it): a shell function of the prelude finds it.
    return RUN_PLACEHOLDER.sub(lambda m: f"$({NEWEST} {m['parent'] or '.'})", text)


def checkout_view(scratch: Path) -> Path:
    """A folder that looks like a checkout (the repository's tracked top-level entries, linked).

    What a block writes there (out/, sharedtask-demo/) stays in the scratch folder.
    """
    view = scratch / "checkout"
    if view.exists():
        return view
    view.mkdir()
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False).stdout
    names = {name.split("/")[0] for name in tracked.decode().split("\0") if name} or \
        {p.name for p in REPO.iterdir() if not p.name.startswith(".")}
    for name in sorted(names):
        (view / name).symlink_to(REPO / name)
    return view


class DocumentRun:
    """One document's blocks, run in order in ``scratch``; servers it starts are stopped by close()."""

    def __init__(self, path: Path, scratch: Path, services: Services) -> None:
        self.path, self.scratch, self.services = path, scratch, services
        self.env = {**os.environ, **services.env}
        self.env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), self.env.get("PATH", "")])
        # the blocks' own data store: what they place is theirs, and nothing another test placed leaks in
        self.env["SHAREDTASK_DATA"] = str(scratch / ".data")
        self.servers: list[subprocess.Popen[bytes]] = []
        self.ran: list[str] = []
        self.seconds: dict[str, float] = {}  # wall time per block, printed for whoever tunes the test's cost

    def run_all(self) -> None:
        for block in blocks(self.path):
            if block.marker is None or block.marker.action in ("skip", "synopsis"):
                continue
            self.run(block)

    def run(self, block: Block) -> None:
        start = time.monotonic()
        try:
            self._run(block)
        finally:
            self.seconds[block.where] = time.monotonic() - start

    def _run(self, block: Block) -> None:
        marker = block.marker
        assert marker is not None
        cwd = checkout_view(self.scratch) if marker.checkout else self.scratch
        if marker.action == "file":
            (cwd / marker.name).write_text(fill(block.text, self.services), encoding="utf-8")
            self.ran.append(block.where)
            return
        if marker.action == "serve":
            self._serve(block, cwd)
            return
        setup = fill(marker.setup, self.services) + "\n" if marker.setup else ""
        script = fill(block.text, self.services)
        state = self.scratch / ".doc-test-env"
        env = {**self.env, "DOCTEST_ENV": str(state)}
        try:
            done = subprocess.run(["bash", "-c", PRELUDE + setup + script], cwd=cwd, env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=1800)
        except subprocess.TimeoutExpired as exc:  # a hang guard, not a timing check
            raise DocFailure(f"{block.where}: still running after {exc.timeout} s:\n{script}") from None
        self._keep_variables(state)
        problems = []
        if done.returncode != marker.exit:
            problems.append(f"exit status {done.returncode}, the block expects {marker.exit}")
        problems += [f"the output lacks {text!r}" for text in marker.expect if text not in done.stdout]
        if problems:
            raise DocFailure(f"{block.where}: {'; '.join(problems)}\n--- ran (in {cwd}):\n{setup}{script}"
                             f"--- output (last 4000 characters):\n{done.stdout[-4000:]}")
        self.ran.append(block.where)

    def _keep_variables(self, state: Path) -> None:
        if not state.exists():
            return
        for item in state.read_bytes().decode("utf-8", "replace").split("\0"):
            name, eq, value = item.partition("=")
            if eq and name not in KEEP_OUT and self.env.get(name) != value and name != "DOCTEST_ENV":
                self.env[name] = value
        state.unlink()

    def _serve(self, block: Block, cwd: Path) -> None:
        from service_helpers import wait_until_up

        script = fill(block.text, self.services)
        log = open(self.scratch / f"serve-{len(self.servers)}.log", "wb")
        process = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=self.env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        self.servers.append(process)
        try:
            wait_until_up(f"http://127.0.0.1:{self.services.port}")
        except AssertionError:
            raise DocFailure(f"{block.where}: the server did not answer on port {self.services.port}:\n{script}\n"
                             + (self.scratch / f"serve-{len(self.servers) - 1}.log").read_text()) from None
        self.ran.append(block.where)

    def close(self) -> None:
        """Stop the servers this run started (their own process groups, by id)."""
        for process in self.servers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
