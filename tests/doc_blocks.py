"""The code blocks of README.md and docs/**/*.md, with their doc-test markers (docs/contributing.md).

A block is classified by the HTML comment written just before it:

    <!-- doc-test: run [exit=N] [expect="text"]... [setup="command"] [checkout] -->
    <!-- doc-test: serve -->               (a server: started in the background, stopped at the end)
    <!-- doc-test: file NAME -->           (not a command: the block's text becomes the file NAME)
    <!-- doc-test: skip REASON -->         (a command that cannot run here; REASON says why)
    <!-- doc-test: synopsis -->            (a command synopsis: its flags are checked against argparse)

Markdown is read with markdown-it-py (rich's own dependency), so indented and fenced blocks
are found as a CommonMark renderer finds them, never by our own line rules.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"<!--\s*doc-test:\s*(?P<body>.*?)\s*-->", re.S)
ACTIONS = ("run", "serve", "file", "skip", "synopsis")
# Commands a document may show that this machine may lack; a block starting with one of them is a
# shell block even where `shutil.which` finds nothing (so it must carry a marker too).
KNOWN_COMMANDS = {"sharedtask", "docker", "curl", "python", "python3", "pip", "pytest", "bash", "sh", "git",
                  "sudo", "systemctl", "journalctl", "kubectl", "psql", "runuser", "apt-get", "redis-server",
                  "redis-cli", "tira-cli", "cd", "export", "tar", "cp", "mkdir"}
SHELL_INFO = {"sh", "bash", "shell", "console", "zsh"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")


class MarkerError(ValueError):
    """A doc-test marker that cannot be read: the message names the file and line."""


@dataclass(frozen=True)
class Marker:
    """What the comment before a block says: its action and the action's options."""

    action: str
    reason: str = ""
    name: str = ""
    exit: int = 0
    expect: tuple[str, ...] = ()
    setup: str = ""
    checkout: bool = False


def shown(path: Path) -> str:
    """A document's name in messages: relative to the repository when it is in it."""
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


@dataclass
class Block:
    """One code block of a document, where it starts, and its marker (None: unmarked)."""

    path: Path
    line: int  # 1-based line of the block's first line
    text: str
    info: str = ""  # a fenced block's info string
    marker: Marker | None = None
    marker_line: int = 0
    where: str = field(init=False)

    def __post_init__(self) -> None:
        self.where = f"{shown(self.path)}:{self.line}"


def parse_marker(body: str, where: str) -> Marker:
    """Read ``run exit=1 expect="x"`` etc.; a bad marker is an error naming ``where``."""
    action, _, rest = body.partition(" ")
    if action not in ACTIONS:
        raise MarkerError(f"{where}: doc-test marker action {action!r} is not one of {', '.join(ACTIONS)}")
    rest = rest.strip()
    if action == "skip":
        if len(rest.split()) < 3:
            raise MarkerError(f"{where}: `doc-test: skip` needs a reason of a few words (why it cannot run here)")
        return Marker("skip", reason=rest)
    if action == "synopsis":
        if rest:
            raise MarkerError(f"{where}: `doc-test: synopsis` takes no options")
        return Marker("synopsis")
    if action == "file":
        if not rest or " " in rest:
            raise MarkerError(f"{where}: `doc-test: file NAME` needs one file name")
        return Marker("file", name=rest)
    options: dict[str, object] = {"expect": []}
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise MarkerError(f"{where}: doc-test marker options: {exc}") from None
    for word in words:
        key, eq, value = word.partition("=")
        if key == "checkout" and not eq:
            options["checkout"] = True
        elif key == "exit" and value.isdigit():
            options["exit"] = int(value)
        elif key == "expect" and value:
            options["expect"].append(value)  # type: ignore[union-attr]
        elif key == "setup" and value:
            options["setup"] = value
        else:
            raise MarkerError(f"{where}: doc-test option {word!r} is not one of exit=N, expect=\"TEXT\", "
                              "setup=\"COMMAND\", checkout")
    options["expect"] = tuple(options["expect"])  # type: ignore[arg-type]
    return Marker(action, **options)  # type: ignore[arg-type]


def blocks(path: Path) -> list[Block]:
    """Every code block of one Markdown file, each with the marker just before it (or None).

    A marker followed by anything but a code block is an error: it would silently test nothing.
    """
    from markdown_it import MarkdownIt

    found: list[Block] = []
    pending: tuple[Marker, int] | None = None
    for token in MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8")):
        if token.nesting == -1 or token.type in ("inline",):
            continue
        line = token.map[0] + 1 if token.map else 0
        if token.type == "html_block" and (match := MARKER.search(token.content)):
            if pending is not None:
                raise MarkerError(f"{shown(path)}:{pending[1]}: doc-test marker not followed by a code block")
            pending = (parse_marker(match["body"], f"{shown(path)}:{line}"), line)
            continue
        if token.type in ("code_block", "fence"):
            block = Block(path, line + (1 if token.type == "fence" else 0), token.content, token.info.strip())
            if pending is not None:
                block.marker, block.marker_line = pending
                pending = None
            found.append(block)
        elif pending is not None:
            raise MarkerError(f"{shown(path)}:{pending[1]}: doc-test marker not followed by a code block")
    if pending is not None:
        raise MarkerError(f"{shown(path)}:{pending[1]}: doc-test marker not followed by a code block")
    return found


def first_words(text: str) -> list[str]:
    """The command words of a block's first command line (comments, `$ ` and VAR=value skipped)."""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        words = line.removeprefix("$ ").split()
        while words and ASSIGNMENT.match(words[0]):
            name, _, value = words[0].partition("=")
            if value.startswith("$("):  # VAR=$(command ...): the command is what runs
                return [value[2:], *words[1:]] if value[2:] else words[1:]
            words = words[1:]
        return words
    return []


def is_shell(block: Block) -> bool:
    """Does this block show shell commands? Then it must be run or say why not.

    A fenced block says so by its info string; an indented one by its first word being a command
    (on PATH here, or one of KNOWN_COMMANDS), with `VAR=value` prefixes and `$ ` prompts skipped.
    """
    if block.info:
        return block.info.split()[0].lower() in SHELL_INFO
    words = first_words(block.text)
    if not words:
        return False
    word = words[0].rsplit("/", 1)[-1]  # .venv/bin/pytest, ./setup.sh: the command's own name
    if word in KNOWN_COMMANDS:
        return True
    return bool(re.fullmatch(r"[\w.+-]+", word)) and shutil.which(word) is not None


def documents(root: Path = REPO) -> list[Path]:
    """The documents under test: README.md, then every page under docs/ (docs/tasks/ too) in path order."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
