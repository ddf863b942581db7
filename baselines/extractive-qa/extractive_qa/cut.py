"""Answer text: readable text + LaTeX, cut at a sentence boundary within the length limit.

ARQMath-3 Task 3 answers are at most 1,200 Unicode characters and should not break a
formula: the validator warns on an odd number of unescaped ``$``
(docs/formats.md). We cut after the last sentence end (``.``, ``!``,
``?`` followed by a space) that lies outside any formula; failing that, at the last
space outside a formula; failing that, before the formula that crosses the limit.
"""

from __future__ import annotations

import re

from sharedtask.formats.html import html_to_text

_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_SPACE = re.compile(r"\s")


def answer_text(body_html: str) -> str:
    """One line of text: formulae as ``$LaTeX$``, tabs and line breaks as spaces."""
    return " ".join(html_to_text(body_html, math="dollars").split())


def _outside_math(text: str) -> list[bool]:
    """For each position, True when it is not inside ``$...$`` (escaped ``\\$`` ignored)."""
    flags, inside, prev = [], False, ""
    for ch in text:
        if ch == "$" and prev != "\\":
            inside = not inside
            flags.append(False)
        else:
            flags.append(not inside)
        prev = ch
    return flags


def cut(text: str, limit: int) -> str:
    """``text`` if short enough, else its longest prefix ending at a sentence boundary."""
    if len(text) <= limit:
        return text
    outside = _outside_math(text[: limit + 1])
    ends = [m.end() for m in _SENTENCE_END.finditer(text, 0, limit + 1)
            if m.end() <= limit and outside[m.start()]]
    if ends:
        return text[: ends[-1]].rstrip()
    spaces = [m.start() for m in _SPACE.finditer(text, 0, limit + 1) if outside[m.start()]]
    if spaces:
        return text[: spaces[-1]].rstrip()
    # One giant formula or word: stop before the formula that crosses the limit.
    head = text[:limit]
    last_open = head.rfind("$") if head.count("$") % 2 else -1
    return (head[:last_open] if last_open >= 0 else head).rstrip()
