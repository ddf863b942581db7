"""Mask a Lean 4 source: comments blanked, string interiors neutralised, docstrings listed.

Why: the declaration reader (``lean.py``) finds commands, brackets and ``:=`` with plain
text searches; those must never match inside a comment or a string. The masked text has
the length of the source (every position means the same character), so a match found in
it is cut from the source itself.

- Comments: ``-- ...`` to the end of the line, and ``/- ... -/`` blocks, which nest in Lean 4
  (the lexer's ``finishCommentBlock`` counts ``/-`` and ``-/``); doc comments (``/-- ... -/``)
  and module docs (``/-! ... -/``) nest the same way. All become spaces (newlines kept).
- Strings ``"..."`` (with ``\\`` escapes), raw strings ``r"..."`` / ``r#"..."#``, and char
  literals ``'a'`` / ``'\\n'``: the interior becomes ``_`` (newlines too, so a line break
  inside a string never looks like the start of a command). A ``'`` right after an
  identifier character is a prime of the name (``add_comm'``), not a char literal.
- Guillemet names ``«...»`` become ``_`` inside as well: they may hold spaces or ``:=``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

#: a doc comment: its span in the source and its text between ``/--`` and ``-/``
@dataclass(frozen=True)
class DocComment:
    start: int
    end: int  # just after the closing -/
    text: str


class LexError(ValueError):
    """The source cannot be masked (an unclosed comment, string or name): refused whole."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


_CHAR_LITERAL = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)|[^\\'\n])'")


def _ident_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_'!?" or "\u2080" <= ch <= "\u209c"  # subscripts are identifier chars


@dataclass
class Masked:
    source: str
    masked: str
    docs: list[DocComment]
    _lines: list[int]

    def line_col(self, pos: int) -> tuple[int, int]:
        """1-based line and column of a source position."""
        line = bisect_right(self._lines, pos)
        return line, pos - self._lines[line - 1] + 1


_NEXT = re.compile(r"--|/-|\"|'|«|r#*\"")
_BLOCK_MARK = re.compile(r"/-|-/")
_STRING_MARK = re.compile(r'\\.|"', re.DOTALL)
_NOT_NEWLINE = re.compile(r"[^\n]")
_RAW_OPEN = re.compile(r'r(#*)"')


def _block_end(src: str, pos: int) -> int:
    """Just after the ``-/`` that closes the block comment opened at ``pos`` (nested)."""
    depth, i = 1, pos + 2
    while m := _BLOCK_MARK.search(src, i):
        depth += 1 if m.group() == "/-" else -1
        i = m.end()
        if depth == 0:
            return i
    raise LexError("a comment opened here is never closed (no matching -/)", pos)


def _string_end(src: str, pos: int) -> int:
    """Just after the closing quote of the string whose opening quote is at ``pos``."""
    i = pos + 1
    while m := _STRING_MARK.search(src, i):
        if m.group() == '"':
            return m.end()
        i = m.end()
    raise LexError("a string opened here is never closed", pos)


def mask(source: str) -> Masked:
    """The masked text of ``source`` and its doc comments, in order."""
    parts: list[str] = []  # the masked text, piece by piece
    docs: list[DocComment] = []
    i = done = 0
    n = len(source)

    def emit(a: int, b: int, fill: str) -> None:
        parts.append(source[done:a])
        parts.append(_NOT_NEWLINE.sub(" ", source[a:b]) if fill == " " else "_" * (b - a))

    while m := _NEXT.search(source, i):
        i, tok = m.start(), m.group()
        if tok == "--":
            j = source.find("\n", i)
            j = n if j < 0 else j
            emit(i, j, " ")
            done = i = j
        elif tok == "/-":
            j = _block_end(source, i)
            if source.startswith("/--", i) and not source.startswith("/--/", i):
                docs.append(DocComment(i, j, source[i + 3:j - 2]))
            emit(i, j, " ")
            done = i = j
        elif tok == '"':
            j = _string_end(source, i)
            emit(i + 1, j - 1, "_")
            done, i = j - 1, j
        elif tok.startswith("r"):
            if i and _ident_char(source[i - 1]):  # the end of a name such as `instr"`: not a raw string
                i += 1
                continue
            close = '"' + tok[1:-1]
            j = source.find(close, m.end())
            if j < 0:
                raise LexError("a raw string opened here is never closed", i)
            emit(m.end(), j, "_")
            done = j
            i = j + len(close)
        elif tok == "'":
            lit = None if (i and _ident_char(source[i - 1])) else _CHAR_LITERAL.match(source, i)
            if lit is None:
                i += 1
                continue
            emit(i + 1, lit.end() - 1, "_")
            done, i = lit.end() - 1, lit.end()
        else:  # «
            j = source.find("»", i)
            if j < 0:
                raise LexError("a «name» opened here is never closed", i)
            emit(i + 1, j, "_")
            done, i = j, j + 1
    parts.append(source[done:])
    masked = "".join(parts)
    assert len(masked) == n
    lines = [0] + [m.end() for m in re.finditer("\n", source)]
    return Masked(source, masked, docs, lines)
