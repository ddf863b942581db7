"""Every documented command runs as written (issue 31); the documents stay linked and short (issue 36).

README.md and docs/**/*.md mark each shell block with a doc-test marker (docs/contributing.md):
the markers, the synopsis and the quoted benchmark commands are checked here without Docker, and the
`run` blocks are run in order, in a scratch folder, against a real Docker daemon, a real
`sharedtask serve` on loopback and a real PostgreSQL server (the suite's own fixtures).
"""

from __future__ import annotations

import argparse
import re
import secrets
import textwrap
from pathlib import Path

import pytest
from doc_blocks import REPO, Block, MarkerError, blocks, documents, is_shell, shown
from doc_links import Link, anchors, broken, links
from doc_runner import DocFailure, DocumentRun, Services
from service_helpers import free_port, postgres_server  # noqa: F401 - a fixture

from sharedtask.cli import build_parser

ALL_BLOCKS = [block for doc in documents() for block in blocks(doc)]


# ----------------------------------------------------------------------------- markers (no Docker)


def unmarked_shell_blocks(found: list[Block]) -> list[str]:
    return [f"{b.where}: {b.text.splitlines()[0].strip()}" for b in found if is_shell(b) and b.marker is None]


def test_every_shell_block_is_run_or_says_why_not() -> None:
    missing = unmarked_shell_blocks(ALL_BLOCKS)
    assert not missing, ("shell blocks without a doc-test marker (run it, or `<!-- doc-test: skip REASON -->`; "
                         "docs/contributing.md):\n" + "\n".join(missing))
    assert sum(1 for b in ALL_BLOCKS if b.marker and b.marker.action == "run") >= 14  # 12 before issue 36


def test_the_check_finds_an_unmarked_block_and_a_bad_marker(tmp_path: Path) -> None:
    doc = tmp_path / "new.md"
    doc.write_text(textwrap.dedent("""\
        # A new page

        Try this:

            sharedtask tasks

        and this, fenced:

        ```console
        $ sharedtask tasks show touche-2021-task1
        ```
        <!-- doc-test: skip because -->

            MY_VAR=1 docker ps

        Not a command:

            version: 1
        """))
    with pytest.raises(MarkerError, match=r"new\.md:12: `doc-test: skip` needs a reason"):
        blocks(doc)
    doc.write_text(doc.read_text().replace("skip because", "skip the daemon is elsewhere, see above"))
    assert [w.split(": ")[0].rsplit(":", 1)[1] for w in unmarked_shell_blocks(blocks(doc))] == ["5", "10"]
    doc.write_text("Text.\n<!-- doc-test: run -->\n\nMore text.\n")
    with pytest.raises(MarkerError, match="not followed by a code block"):
        blocks(doc)
    doc.write_text("<!-- doc-test: run exit=x -->\n\n    sharedtask tasks\n")
    with pytest.raises(MarkerError, match="exit=x"):
        blocks(doc)


# ----------------------------------------------------------------------------- the synopsis vs argparse


def _all_options(parser: argparse.ArgumentParser) -> set[str]:
    """A command's flags, its own subcommands' included (`data fetch --mirror` counts for `data`)."""
    found = set()
    for action in parser._actions:
        found.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found |= _all_options(child)
    return found


def _options(parser: argparse.ArgumentParser) -> dict[str, set[str]]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: _all_options(p) for name, p in sub.choices.items()}


def _commands(text: str) -> list[tuple[str, str]]:
    """(subcommand, its text) of each `sharedtask SUB ...` in a text; continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", text)
    found = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        for match in re.finditer(r"(?<![\w/-])sharedtask\s+([a-z][a-z-]*)", line):
            rest = line[match.end():]
            # a synopsis line continues on the more-indented lines under it
            for follow in lines[i + 1:]:
                if follow.startswith(" " * 8) and "sharedtask " not in follow:
                    rest += " " + follow
                else:
                    break
            found.append((match[1], rest))
    return found


def _flags(text: str) -> set[str]:
    """The flags of a command's text, leaving out its comment and quoted arguments (a
    `--command "python -m x --mode y"` passes `--mode` to the container, not to sharedtask)."""
    unquoted = re.sub(r'"[^"]*"|\'[^\']*\'', " ", text.split(" # ")[0])
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", unquoted))


SYNOPSES = [b for b in ALL_BLOCKS if b.marker and b.marker.action == "synopsis"]


@pytest.mark.parametrize("block", SYNOPSES, ids=lambda b: b.where)
def test_a_synopsis_names_only_real_commands_and_flags(block: Block) -> None:
    options = _options(build_parser())
    wrong = [f"sharedtask {cmd} {flag}" for cmd, rest in _commands(block.text) for flag in
             sorted(_flags(rest) - options.get(cmd, set()))]
    wrong += [f"sharedtask {cmd} (no such command)" for cmd, _ in _commands(block.text) if cmd not in options]
    assert not wrong, f"{block.where}: not in argparse: {wrong}"


CLI_PAGE = REPO / "docs" / "cli.md"  # the command line's page: its synopsis lists every command


def test_the_cli_synopsis_has_every_command_and_every_flag_the_docs_use() -> None:
    """A flag shown anywhere in README.md or docs/ (blocks or inline code) exists, and is in docs/cli.md's synopsis."""
    options = _options(build_parser())
    synopsis = next(b for b in SYNOPSES if b.path == CLI_PAGE)
    listed: dict[str, set[str]] = {}
    for cmd, rest in _commands(synopsis.text):
        listed.setdefault(cmd, set()).update(_flags(rest))
    assert set(options) - {"help"} <= set(listed), f"commands missing from the synopsis: {set(options) - set(listed)}"
    missing, unknown = set(), set()
    for doc in documents():
        text = doc.read_text(encoding="utf-8")
        spans = re.findall(r"`([^`\n]*sharedtask [^`\n]*)`", text)
        spans += [b.text for b in blocks(doc) if b.marker is None or b.marker.action != "synopsis"]
        for span in spans:
            for cmd, rest in _commands(span):
                if cmd in options:  # (prose such as "sharedtask compute worker" names no command)
                    unknown.update(f"sharedtask {cmd} {flag} ({doc.name})" for flag in _flags(rest) - options[cmd])
                for flag in _flags(rest) & options.get(cmd, set()):
                    if flag not in listed.get(cmd, set()) and flag not in ("--help", "-h"):
                        missing.add(f"sharedtask {cmd} {flag} ({doc.name})")
    assert not unknown, "flags the documents use but argparse does not know:\n" + "\n".join(sorted(unknown))
    assert not missing, "flags the documents use but the synopsis lacks:\n" + "\n".join(sorted(missing))


# ----------------------------------------------------------------------------- running the blocks


def _services(request: pytest.FixtureRequest, doc: Path) -> Services:
    services = Services(port=free_port(), owner=f"sharedtask-doctest-{secrets.token_hex(3)}")
    if any("postgresql" in b.text for b in blocks(doc) if b.marker and b.marker.action == "run"):
        url = request.getfixturevalue("postgres_server")()  # postgresql+psycopg://postgres@127.0.0.1:PORT/DB
        services.postgres = url.split("@", 1)[1].split("/", 1)[0]
        host, port = services.postgres.split(":")
        services.env.update(PGHOST=host, PGPORT=port)
    return services


RUNNABLE = [doc for doc in documents() if any(b.marker and b.marker.action == "run" for b in blocks(doc))]


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("doc", RUNNABLE, ids=shown)
def test_every_runnable_block_runs_as_written(doc: Path, request: pytest.FixtureRequest, docker_client,
                                              base_image: str, tmp_path: Path) -> None:
    services = _services(request, doc)
    run = DocumentRun(doc, tmp_path, services)
    try:
        run.run_all()
    finally:
        run.close()
        print("\n".join(f"{where}: {seconds:.1f} s" for where, seconds in run.seconds.items()))
        for image in docker_client.images.list():
            for tag in image.tags:
                if tag.startswith(services.owner):  # only the images these blocks built
                    docker_client.images.remove(tag, force=True)
    runnable = [b.where for b in blocks(doc) if b.marker and b.marker.action in ("run", "serve", "file")]
    assert run.ran == runnable


def test_a_broken_command_fails_the_doc_test(tmp_path: Path) -> None:
    """The harness itself: a wrong flag, a wrong exit status and a missing output each fail, naming the line."""
    doc = tmp_path / "page.md"
    doc.write_text(textwrap.dedent("""\
        Works:
        <!-- doc-test: run expect="touche-2021-task1" -->

            sharedtask tasks [--json]
            TASK=touche-2021-task1

        Fails as documented, with the variable of the block before:
        <!-- doc-test: run exit=2 expect="no-such-task" -->

            sharedtask tasks show no-such-task-$TASK

        Broken:
        <!-- doc-test: run -->

            sharedtask tasks show $TASK --no-such-flag
        """))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    run = DocumentRun(doc, scratch, Services(port=free_port(), owner="unused"))
    with pytest.raises(DocFailure, match=r"page\.md:15: exit status 2, the block expects 0"):
        run.run_all()
    assert run.ran == [f"{doc}:4", f"{doc}:10"]
    doc.write_text(doc.read_text().replace('expect="no-such-task"', 'expect="is not there"'))
    with pytest.raises(DocFailure, match=r"page\.md:10: the output lacks 'is not there'"):
        DocumentRun(doc, scratch, Services(port=free_port(), owner="unused")).run_all()


# ----------------------------------------------------------------------------- Python sessions

SESSIONS = [b for b in ALL_BLOCKS if b.text.lstrip().startswith(">>>")]


@pytest.mark.parametrize("block", SESSIONS, ids=lambda b: b.where)
def test_a_python_session_gives_the_output_it_shows(block: Block) -> None:
    """A `>>>` block is a doctest: each statement runs and prints what the document says it prints."""
    import doctest

    test = doctest.DocTestParser().get_doctest(block.text, {}, block.where, str(block.path), block.line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    runner.run(test, out=report.append)
    assert runner.summarize(verbose=False).failed == 0, "".join(report)
    assert test.examples, f"{block.where}: no statement found"


# ----------------------------------------------------------------------------- benchmark commands


def test_every_benchmark_the_documents_quote_exists_with_its_flags() -> None:
    """`python benchmarks/NAME.py --flag ...`, as quoted with a figure, names a script and flags it has.

    Read from the script's source (its argparse calls), not run: a benchmark's --help may import
    what only the `bench` extra installs.
    """
    wrong = []
    for doc in documents():
        for match in re.finditer(r"benchmarks/([a-z0-9_]+)\.py([^`);]*)", doc.read_text(encoding="utf-8")):
            script = REPO / "benchmarks" / f"{match[1]}.py"
            if not script.exists():
                wrong.append(f"{doc.name}: benchmarks/{match[1]}.py does not exist")
                continue
            source = script.read_text(encoding="utf-8")
            for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", match[2]):
                if not re.search(rf"""add_argument\(\s*(["'][^"']*["']\s*,\s*)*["']{flag}["']""", source):
                    wrong.append(f"{doc.name}: benchmarks/{match[1]}.py has no {flag}")
    assert not wrong, "\n".join(sorted(set(wrong)))


# ----------------------------------------------------------------------------- the README and the pages (issue 36)

README_MAX_LINES = 400  # a front page: the pitch, the two commands, a quick start, the loops, links


def test_the_readme_is_a_front_page() -> None:
    """The rest belongs on a page under docs/ (benchmarks, tasks, guides), routed by docs/index.md."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (f"README.md has {lines} lines, more than {README_MAX_LINES}: move the "
                                       "detail to a page under docs/ and link it")


def test_ci_runs_the_two_commands_the_readme_gives() -> None:
    """`.ci/run` calls the set-up and the test command exactly as the README writes them."""
    readme = blocks(REPO / "README.md")
    commands = [line.split("#")[0].strip() for b in readme for line in b.text.splitlines()
                if line.strip().startswith("bash setup.sh")]
    assert commands == ["bash setup.sh", "bash setup.sh --test"], commands
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if not line.lstrip().startswith("#")]
    assert "bash setup.sh" in ci and "exec bash setup.sh --test" in ci


def unlinked_pages(docs: Path) -> list[str]:
    """The pages under ``docs`` that ``docs/index.md`` does not link (the index itself aside)."""
    index = docs / "index.md"
    linked = {link.resolved()[0] for link in links(index) if link.is_relative}
    return [shown(page) for page in sorted(docs.rglob("*.md")) if page != index and page.resolve() not in linked]


def test_the_index_links_every_page() -> None:
    """docs/index.md routes a reader to every page under docs/ (a new page names itself here until it is linked)."""
    missing = unlinked_pages(REPO / "docs")
    assert not missing, "pages docs/index.md does not link (add each under its readers):\n" + "\n".join(missing)


def test_every_relative_link_resolves() -> None:
    """Every relative link of README.md and docs/ names an existing file, and with #anchor one of its headings."""
    found = [link for doc in documents() for link in links(doc) if link.is_relative]
    assert len(found) >= 50  # the index alone has more: a parser that finds none would pass vacuously
    wrong = [problem for link in found if (problem := broken(link))]
    assert not wrong, "links that lead nowhere:\n" + "\n".join(wrong)


def test_the_link_checks_find_a_broken_link_and_an_unlinked_page(tmp_path: Path) -> None:
    """The checks themselves, on a small tree: a missing file, a missing heading, an unlinked page."""
    docs = tmp_path / "docs"
    (docs / "tasks").mkdir(parents=True)
    (docs / "index.md").write_text("# Index\n\n- [guide](guide.md#the-loop)\n- [gone](gone.md)\n"
                                   "- [web](https://example.org/x.md)\n\n```\n[in code](nowhere.md)\n```\n")
    (docs / "guide.md").write_text("# Guide\n\n## The `run` loop\n\n## Quick start (five minutes)\n\n"
                                   "## Quick start (five minutes)\n\n[back](index.md#index) [up](#quick-start-five-minutes-1)\n")
    (docs / "tasks" / "new.md").write_text("# A new page\n")
    assert anchors(docs / "guide.md") == {"guide", "the-run-loop", "quick-start-five-minutes",
                                          "quick-start-five-minutes-1"}
    index_links = links(docs / "index.md")
    assert [link.target for link in index_links] == ["guide.md#the-loop", "gone.md", "https://example.org/x.md"]
    assert [link.is_relative for link in index_links] == [True, True, False]
    problems = [broken(link) for link in index_links[:2]]
    assert problems[0] is not None and "has no heading with the id 'the-loop'" in problems[0]
    assert problems[1] is not None and "gone.md: no such file" in problems[1]
    assert [broken(link) for link in links(docs / "guide.md")] == [None, None]
    assert unlinked_pages(docs) == [str(docs / "tasks" / "new.md")]


def test_the_documents_include_the_pages_under_docs_subfolders() -> None:
    """docs/tasks/ is read like docs/: its blocks are marked, run and counted."""
    names = {shown(doc) for doc in documents()}
    assert {"README.md", "docs/index.md", "docs/benchmarks.md", "docs/tasks/arqmath.md"} <= names
