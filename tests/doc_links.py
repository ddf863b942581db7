"""The relative links of README.md and docs/ and the headings they point at.

Links and headings are read with markdown-it-py, as `doc_blocks` reads code blocks, so a link
inside a code block or an inline code span is not a link. Anchors follow GitHub's rule for
heading ids (the rule of github-slugger, the library GitHub's renderer uses): the heading's text
lower-cased, every character that is not a letter, mark, digit, connector, space or hyphen
dropped, spaces turned into hyphens, and a repeated id numbered `-1`, `-2`, ...
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from doc_blocks import shown


@dataclass(frozen=True)
class Link:
    """One link of a document: where it is written and what it points at."""

    source: Path
    line: int
    target: str  # as written: `docs/cli.md#anchor`, `../README.md`, `#quick-start`

    @property
    def where(self) -> str:
        return f"{shown(self.source)}:{self.line}"

    @property
    def is_relative(self) -> bool:
        """Not a URL (http:, mailto:, ...): a path in the repository, or an anchor of this page."""
        head = self.target.split("#", 1)[0]
        return ":" not in head.split("/", 1)[0] and not self.target.startswith("//")

    def resolved(self) -> tuple[Path, str]:
        """The file (the document itself for `#anchor`) and the anchor ('' when none)."""
        path, _, anchor = self.target.partition("#")
        file = (self.source.parent / unquote(path)).resolve() if path else self.source
        return file, unquote(anchor)


def _tokens(text: str):
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").parse(text)


def links(path: Path) -> list[Link]:
    """Every link and image of one Markdown file, with its line."""
    found = []
    for token in _tokens(path.read_text(encoding="utf-8")):
        if token.type != "inline" or not token.children:
            continue
        line = token.map[0] + 1 if token.map else 0
        for child in token.children:
            if child.type == "link_open":
                found.append(Link(path, line, str(child.attrs.get("href", ""))))
            elif child.type == "image":
                found.append(Link(path, line, str(child.attrs.get("src", ""))))
    return found


def slug(text: str) -> str:
    """A heading's id as GitHub writes it (before numbering repeats)."""
    kept = [c for c in text.lower() if c in " -" or unicodedata.category(c)[0] in "LMN" or unicodedata.category(c) == "Pc"]
    return "".join(kept).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The ids of a Markdown file's headings, repeats numbered as GitHub numbers them."""
    tokens = _tokens(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for i, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        inline = tokens[i + 1]
        text = "".join(child.content for child in inline.children or [] if child.type in ("text", "code_inline"))
        base = slug(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken(link: Link) -> str | None:
    """Why a relative link does not resolve (a missing file or heading), or None when it does."""
    file, anchor = link.resolved()
    if not file.exists():
        return f"{link.where}: {link.target}: no such file ({shown(file)})"
    if anchor and file.suffix == ".md" and anchor not in anchors(file):
        return f"{link.where}: {link.target}: {shown(file)} has no heading with the id {anchor!r}"
    return None
