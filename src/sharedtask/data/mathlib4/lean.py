"""Read the theorems and lemmas of one mathlib4 ``.lean`` file, without a Lean toolchain.

What is read (docs/mathlib4.md, "The reader", says it with examples):

- Commands start at column 0 (mathlib's style, enforced by its linters); their continuation
  lines are indented. A ``theorem`` or ``lemma`` command is kept with its doc comment
  (``/-- ... -/`` right before it), attributes (``@[...]``, any number of lines) and
  modifiers (``protected``, ``noncomputable``, ``nonrec``, ``unsafe``, ``partial``).
- Its name is qualified by the open ``namespace`` scopes (``_root_.`` resets it);
  ``section``/``namespace``/``end`` (and ``public``/``noncomputable``/``meta section``) are
  tracked; an ``end`` that closes no open scope makes the file refused.
- Its statement is the text from the keyword to the first ``:=`` (or ``where``, or a line of
  match alternatives ``| ... =>``) outside brackets; comments are dropped and whitespace
  outside strings is collapsed to one space; nothing else is changed.
- ``variable`` binders in scope (and a ``variable ... in`` prefix) are kept as written, all
  of them: without elaboration the reader cannot tell which ones the statement uses.

What is refused, each with its line and a reason (``Refusal``): ``private`` declarations
(their names are not mathlib's public names), declarations not at column 0 (inside
``mutual`` or a term), a statement with no ``:=`` before the next command, and whole files
that cannot be masked (an unclosed comment or string) or whose scopes do not match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sharedtask.data.mathlib4.mask import LexError, Masked, mask

KEYWORDS = ("theorem", "lemma")
MODIFIERS = ("private", "protected", "noncomputable", "nonrec", "unsafe", "partial")
#: commands that may follow a statement at column 0: meeting one before ``:=`` ends the search
COMMANDS = frozenset(
    "theorem lemma def abbrev instance example structure class inductive opaque axiom alias section namespace end "
    "variable open universe attribute set_option noncomputable private protected public meta mutual macro syntax "
    "elab notation infix infixl infixr prefix postfix initialize include omit irreducible_def export library_note "
    "add_decl_doc assert_not_exists assert_not_imported deriving compile_inductive unseal seal scoped local"
    .split())
#: brackets (not ⌊ ⌋ ⌈ ⌉: mathlib uses ⌊ as an infix operator too, x⌊d in CliffordAlgebra)
OPEN, CLOSE = "([{⦃⟨⟦⦅", ")]}⦄⟩⟧⦆"
_LINE_START = re.compile(r"^(?=\S)", re.MULTILINE)
_INDENTED_DECL = re.compile(r"^[ \t]+(?:(?:private|protected|noncomputable|nonrec)\s+)*(theorem|lemma)\b", re.MULTILINE)
_WORD = re.compile(r"[^\W\d][\w'!?]*|@\[")
_SCOPE = re.compile(r"(?:@\[[^\]\n]*\]\s*)?(?:(?:public|noncomputable|meta)\s+)*(section|namespace)\b[ \t]*([^\s]*)")
_END = re.compile(r"end\b[ \t]*([^\s]*)")
PREFIXES = ("open", "set_option", "include", "omit", "variable")
#: `open X in` (any number of lines) before the command it applies to, on later lines
_PREFIX = re.compile(r"(?:open|set_option|include|omit|variable)\b(.*?)\bin\s*$", re.DOTALL)
#: the same prefix with a declaration after it on its own line
_INLINE_PREFIX = re.compile(r"(?:open|set_option|include|omit|variable)\b([^\n]*?)\bin[ \t]+"
                            r"(?=@\[|(?:private|protected|noncomputable|nonrec|theorem|lemma)\b)")


@dataclass(frozen=True)
class Declaration:
    name: str  # fully qualified
    kind: str  # theorem | lemma
    statement: str  # from the keyword to := , comments dropped, whitespace collapsed
    docstring: str | None  # the doc comment's text, whitespace collapsed
    attributes: str  # the @[...] text, whitespace collapsed ("" when none)
    modifiers: tuple[str, ...]
    variables: tuple[str, ...]  # variable binders in scope, as written
    line: int
    column: int = 1


@dataclass(frozen=True)
class Refusal:
    line: int
    column: int
    reason: str
    name: str | None = None


@dataclass
class _Scope:
    kind: str  # section | namespace | mutual | file (variables before any scope)
    name: str
    variables: list[str] = field(default_factory=list)


def collapse(source: str, masked: str, start: int, end: int) -> str:
    """``source[start:end]`` with comments dropped and whitespace runs outside strings as one space."""
    out: list[str] = []
    pos = start
    for m in re.finditer(r"\s+", masked[start:end]):
        a, b = start + m.start(), start + m.end()
        out.append(source[pos:a])
        out.append(" ")
        pos = b
    out.append(source[pos:end])
    return "".join(out).strip()


def _balanced_end(masked: str, pos: int) -> int:
    """After the bracket closing the one opened at ``pos``; -1 when it never closes."""
    depth = 0
    for i in range(pos, len(masked)):
        ch = masked[i]
        if ch in OPEN:
            depth += 1
        elif ch in CLOSE:
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _is_alternative(masked: str, pos: int) -> bool:
    """``pos`` is a ``|`` opening match alternatives (``| 0 => ...``, on its own line or after the
    type), not an absolute value ``|x|``: its line has ``=>`` outside brackets before any ``:=``
    outside brackets (``| .cons (v := w) h => ...`` is an alternative)."""
    depth, i = 0, pos + 1
    line_end = masked.find("\n", pos)
    line_end = len(masked) if line_end < 0 else line_end
    while i < line_end:
        ch = masked[i]
        if ch in OPEN:
            depth += 1
        elif ch in CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and masked.startswith("=>", i):
            return True
        elif depth == 0 and masked.startswith(":=", i):
            return False
        i += 1
    return False


_STOP_CANDIDATE = re.compile("[" + re.escape(OPEN + CLOSE) + r"|\n]|:=|(?<![\w.'])(?:where|let|have)(?![\w'!?])")


def statement_end(masked: str, pos: int) -> int:
    """Where the statement starting at ``pos`` ends: the first ``:=``, ``where`` or match
    alternative outside brackets; -1 when a command at column 0 (or the end) comes first.
    A ``let``/``have`` in the statement owns the next ``:=`` (``: let x := 2; x = 2 := rfl``)."""
    depth, n, pending = 0, len(masked), 0
    while m := _STOP_CANDIDATE.search(masked, pos):
        i, tok = m.start(), m.group()
        pos = m.end()
        if tok in OPEN:
            depth += 1
        elif tok in CLOSE:
            depth = max(0, depth - 1)
        elif depth > 0:
            continue
        elif tok == ":=":
            if not pending:
                return i
            pending -= 1
        elif tok in ("let", "have"):
            pending += 1
        elif tok == "where" or (tok == "|" and _is_alternative(masked, i)):
            return i
        elif tok == "\n" and i + 1 < n and not masked[i + 1].isspace():
            word = _WORD.match(masked, i + 1)
            if word and word.group() in COMMANDS | {"@["}:
                return -1
    return -1


def _word_char(text: str, i: int) -> bool:
    return 0 <= i < len(text) and (text[i].isalnum() or text[i] in "_'.")


def _read_name(masked: str, source: str, pos: int) -> tuple[str, int]:
    """The declaration name at ``pos`` (after the keyword and spaces) and the position after it."""
    m = re.compile(r"[^\s(){}\[\]⦃⦄:]+").match(masked, pos)
    if not m:
        return "", pos
    return source[m.start():m.end()], m.end()


class _Reader:
    """One pass over the commands of a masked file."""

    def __init__(self, text: Masked) -> None:
        self.text = text
        self.scopes: list[_Scope] = []
        self.doc_at_end = {d.end: d for d in text.docs}
        self.decls: list[Declaration] = []
        self.refusals: list[Refusal] = []

    # -- helpers
    def namespace(self) -> list[str]:
        return [s.name for s in self.scopes if s.kind == "namespace"]

    def variables(self) -> list[str]:
        return [v for s in self.scopes for v in s.variables]

    def doc_for(self, pos: int) -> str | None:
        """The doc comment ending right before ``pos`` (only whitespace or comments between)."""
        masked = self.text.masked
        k = pos
        while k > 0 and masked[k - 1].isspace():
            if k in self.doc_at_end:
                break
            k -= 1
        doc = self.doc_at_end.get(k)
        return None if doc is None else " ".join(doc.text.split())

    # -- commands
    def run(self) -> None:
        masked, source = self.text.masked, self.text.source
        starts = [m.start() for m in _LINE_START.finditer(masked)]
        prefixes: list[str] = []  # variable binders of the `X ... in` prefixes of the next command
        consumed = 0  # lines before this belong to a declaration already read (its attributes, its statement)
        for idx, start in enumerate(starts):
            if start < consumed:
                continue
            end = starts[idx + 1] if idx + 1 < len(starts) else len(masked)
            chunk = masked[start:end]
            first = chunk.split("\n", 1)[0]
            word = _WORD.match(chunk)
            head = word.group() if word else ""
            if head in PREFIXES and (m := _PREFIX.match(chunk.rstrip()) or _INLINE_PREFIX.match(chunk)):
                if head == "variable":
                    prefixes.append(collapse(source, masked, start + m.start(1), start + m.end(1)))
                if m.re is _PREFIX:
                    continue
                start, chunk = start + m.end(), masked[start + m.end():end]
                first = chunk.split("\n", 1)[0]
                word = _WORD.match(chunk)
                head = word.group() if word else ""
            if head in ("section", "namespace", "public", "noncomputable", "meta", "@[") \
                    and (m := _SCOPE.match(first)) and not first[m.end():].strip():
                self.open_scope(m.group(1), m.group(2))
            elif head == "mutual" and first.strip() == "mutual":
                self.scopes.append(_Scope("mutual", ""))
            elif head == "end" and (m := _END.match(first)):
                if not self.close_scope(m.group(1), start):
                    return
            elif head == "variable":
                self.scopes_or_file().variables.append(collapse(source, masked, start + len(head), end))
            elif head in KEYWORDS or head in MODIFIERS or head == "@[":
                consumed = self.declaration(start, prefixes)
            prefixes = []
        kept = {(d.line, d.column) for d in self.decls}
        for m in _INDENTED_DECL.finditer(masked):
            if self.text.line_col(m.start(1)) in kept:  # indented after attributes at column 0: read
                continue
            line, col = self.text.line_col(m.start(1))
            self.refusals.append(Refusal(line, col, "not at column 0 (inside `mutual`, a macro's quotation or a term): "
                                         "the reader reads commands at column 0 only"))

    def scopes_or_file(self) -> _Scope:
        if not self.scopes:
            self.scopes.append(_Scope("file", ""))
        return self.scopes[-1]

    def open_scope(self, kind: str, name: str) -> None:
        parts = [p for p in name.split(".") if p] if name else [""]
        for part in parts:
            self.scopes.append(_Scope(kind, part))

    def close_scope(self, name: str, pos: int) -> bool:
        parts = [p for p in name.split(".") if p] if name else [""]
        for part in reversed(parts):
            open_ = [s for s in self.scopes if s.kind != "file"]
            if not open_ or open_[-1].name != part:
                line, col = self.text.line_col(pos)
                what = f"`end {name}`" if name else "`end`"
                have = f"the open scope is `{open_[-1].kind} {open_[-1].name}`" if open_ else "no scope is open"
                self.refusals.append(Refusal(line, col, f"{what} does not close the scope it names ({have}): "
                                             "the declarations after it cannot be named; the rest of the file is skipped"))
                return False
            self.scopes.pop()
        return True

    def declaration(self, start: int, prefixes: list[str]) -> int:
        """Read the command at ``start`` if it is a theorem or lemma; returns where it was read up to."""
        masked, source = self.text.masked, self.text.source
        pos, attributes = start, ""
        while masked.startswith("@[", pos):
            close = _balanced_end(masked, pos + 1)
            if close < 0:
                return start  # not a declaration we can read; other commands take attributes too
            attributes += (" " if attributes else "") + collapse(source, masked, pos, close)
            pos = close
            while pos < len(masked) and masked[pos].isspace():
                pos += 1
        modifiers: list[str] = []
        while (word := _WORD.match(masked, pos)) and word.group() in MODIFIERS:
            modifiers.append(word.group())
            pos = word.end()
            while pos < len(masked) and masked[pos].isspace():
                pos += 1
        word = _WORD.match(masked, pos)
        if not word or word.group() not in KEYWORDS:
            return pos  # a def, instance, ... with attributes or modifiers
        kind = word.group()
        line, col = self.text.line_col(pos)
        name_pos = word.end()
        while name_pos < len(masked) and masked[name_pos] in " \t":
            name_pos += 1
        short, _ = _read_name(masked, source, name_pos)
        if not short:
            self.refusals.append(Refusal(line, col, f"`{kind}` without a name"))
            return name_pos
        full = short[len("_root_."):] if short.startswith("_root_.") else ".".join(self.namespace() + [short])
        if "private" in modifiers:
            self.refusals.append(Refusal(line, col, "private: its name is local to the file, not a mathlib name", full))
            return name_pos
        stop = statement_end(masked, name_pos)
        if stop < 0:
            self.refusals.append(Refusal(line, col, "no `:=` (or `where`, or `| ... =>`) before the next command", full))
            return name_pos
        docstring = self.doc_for(start)
        variables = self.variables() + prefixes
        self.decls.append(Declaration(
            name=full, kind=kind, statement=collapse(source, masked, pos, stop), docstring=docstring,
            attributes=attributes, modifiers=tuple(modifiers), variables=tuple(variables), line=line, column=col))
        return stop


def read_declarations(source: str) -> tuple[list[Declaration], list[Refusal]]:
    """The theorems and lemmas of one file's text, in order, and what was refused."""
    try:
        text = mask(source)
    except LexError as exc:
        line = source.count("\n", 0, exc.pos) + 1
        col = exc.pos - (source.rfind("\n", 0, exc.pos) + 1) + 1
        return [], [Refusal(line, col, f"{exc}; file skipped")]
    reader = _Reader(text)
    reader.run()
    return reader.decls, reader.refusals
