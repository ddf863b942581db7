"""Build the mathlib4-search corpus and known-item queries from a user's mathlib4 checkout.

Why built, not shipped: mathlib4's statements and docstrings are its authors' code and
sentences; sharedtask ships none of them. The user clones mathlib4 at the commit the
registry pins and ``sharedtask data build`` derives the files on their machine, byte for
byte what the registry's sha256 say (docs/mathlib4.md).

One pass, streaming: the ``.lean`` files of ``Mathlib/`` in path order, each read, its
theorems and lemmas written to ``corpus.jsonl`` at once; only the names seen (for
duplicates) and the docstrings that may become queries stay in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable

from sharedtask.data.mathlib4.lean import Declaration, Refusal, read_declarations
from sharedtask.errors import SharedTaskError

SOURCE_DIR = "Mathlib"
#: files that say a folder is a mathlib4 checkout (all three are at the root of every commit)
MARKERS = ("Mathlib.lean", "lean-toolchain", "lakefile.lean")
#: known-item queries drawn from the eligible docstrings (see select_queries); 500 keeps a full-depth
#: run (500 x 1,000 lines, ids up to ~150 characters) under TIRA's 75 MB run-file check: 1,000 made
#: the dense run 77.5 MB
QUERY_COUNT = 500
MIN_QUERY_WORDS = 5


@dataclass(frozen=True)
class Candidate:
    """A theorem whose docstring may become a known-item query."""

    key: str  # sha256 of the name: the draw's order, independent of file order
    name: str
    docstring: str


@dataclass
class BuildResult:
    files: int = 0
    bytes: int = 0
    statements: int = 0
    with_docstring: int = 0
    queries: int = 0
    refusals: list[tuple[str, Refusal]] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)  # target -> sha256 of the bytes written

    def refusal_counts(self) -> Counter[str]:
        """Refusals by reason (the reason's text up to its first ": ")."""
        return Counter(r.reason.split(": ")[0] for _, r in self.refusals)


def check_checkout(root: Path) -> None:
    """A clear error unless ``root`` looks like a mathlib4 checkout."""
    if not root.exists():
        raise SharedTaskError(f"{root} does not exist",
                              hint="give the folder made by `git clone https://github.com/leanprover-community/mathlib4`")
    if not root.is_dir():
        raise SharedTaskError(f"{root} is not a folder",
                              hint="give the folder of a mathlib4 checkout (the one holding Mathlib/ and Mathlib.lean)")
    missing = [m for m in (SOURCE_DIR, *MARKERS) if not (root / m).exists()]
    if missing:
        raise SharedTaskError(f"{root} is not a mathlib4 checkout: it has no {', '.join(missing)}",
                              hint="give the top folder of `git clone https://github.com/leanprover-community/mathlib4` "
                                   "(the one holding Mathlib/, Mathlib.lean and lean-toolchain)")


def checkout_commit(root: Path) -> str | None:
    """The commit checked out at ``root`` (None when it is not a git work tree or git is absent)."""
    if not (root / ".git").exists():
        return None
    try:
        proc = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(root), "rev-parse", "--verify", "HEAD"],
                              capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = proc.stdout.strip()
    return out if proc.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", out) else None


def check_commit(root: Path, want: str) -> str | None:
    """Refuse a checkout at another commit; returns the commit read (None: not a git work tree)."""
    got = checkout_commit(root)
    if got is not None and got != want:
        raise SharedTaskError(f"{root} is at commit {got}, the registry pins mathlib4 at {want}",
                              hint=f"git -C {root} checkout {want}, then build again")
    return got


def lean_files(root: Path) -> list[tuple[str, Path, int]]:
    """(module, path, size) of every regular ``.lean`` file under ``Mathlib/``, in path order; links are not
    followed (a link is not part of mathlib's tree)."""
    out: list[tuple[str, Path, int]] = []
    base = root / SOURCE_DIR
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs.sort()
        for name in files:
            if not name.endswith(".lean"):
                continue
            path = Path(folder) / name
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                continue
            rel = path.relative_to(root).with_suffix("")
            out.append((".".join(rel.parts), path, st.st_size))
    out.sort(key=lambda item: item[1].relative_to(root).as_posix())
    return out


def record(decl: Declaration, module: str) -> dict[str, object]:
    """The corpus line of a declaration: its docstring is not in it (it may be a query)."""
    return {"id": decl.name, "name": decl.name, "formal": decl.statement, "informal": "", "module": module,
            "kind": decl.kind, "line": decl.line, "variables": list(decl.variables)}


def eligible(decl: Declaration) -> bool:
    """Whether a docstring may be a query: enough words, and not naming its own declaration
    (a query quoting the name would be found by the name alone)."""
    doc = decl.docstring or ""
    if len(doc.split()) < MIN_QUERY_WORDS:
        return False
    short = decl.name.rsplit(".", 1)[-1]
    return not re.search(r"(?<![\w.'])" + re.escape(short) + r"(?![\w'])", doc) and decl.name not in doc


def select_queries(candidates: list[Candidate], docstring_uses: Counter[str], count: int) -> list[Candidate]:
    """The known-item queries: among eligible docstrings used by one declaration only (a
    docstring shared by several would have several right answers), the ``count`` whose
    name has the smallest sha256: a fixed draw that does not depend on file order."""
    unique = [c for c in candidates if docstring_uses[c.docstring] == 1]
    return sorted(unique, key=lambda c: (c.key, c.name))[:count]


class _HashedWriter:
    """A text file written as UTF-8 with ``\\n`` line ends, hashed as it is written."""

    def __init__(self, path: Path) -> None:
        self.handle: IO[bytes] = open(path, "wb")
        self.sha = hashlib.sha256()

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        self.handle.write(data)
        self.sha.update(data)

    def close(self) -> str:
        self.handle.close()
        return self.sha.hexdigest()


def _json_line(obj: dict[str, object]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": ")) + "\n"


def build(root: Path, out: dict[str, Path], *, query_count: int = QUERY_COUNT,
          files: list[tuple[str, Path, int]] | None = None,
          progress: Callable[[int], None] | None = None) -> BuildResult:
    """Write ``corpus.jsonl``, ``queries.jsonl`` and ``qrels.txt`` to the paths ``out`` gives
    (keys ``input/corpus.jsonl``, ``input/queries.jsonl``, ``truth/qrels.txt``); ``files``:
    ``lean_files(root)`` when the caller already listed them (for a progress total)."""
    check_checkout(root)
    result = BuildResult()
    seen: set[str] = set()
    candidates: list[Candidate] = []
    uses: Counter[str] = Counter()
    corpus = _HashedWriter(out["input/corpus.jsonl"])
    try:
        for module, path, size in (lean_files(root) if files is None else files):
            rel = path.relative_to(root).as_posix()
            result.files += 1
            result.bytes += size
            data = path.read_bytes()
            try:
                source = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                line = data.count(b"\n", 0, exc.start) + 1
                result.refusals.append((rel, Refusal(line, exc.start - data.rfind(b"\n", 0, exc.start),
                                                     "not UTF-8: file skipped")))
                continue
            decls, refused = read_declarations(source)
            result.refusals.extend((rel, r) for r in refused)
            for decl in decls:
                if decl.name in seen:
                    result.refusals.append((rel, Refusal(decl.line, decl.column,
                                                         "duplicate name: an earlier file or line declares it", decl.name)))
                    continue
                seen.add(decl.name)
                corpus.write(_json_line(record(decl, module)))
                result.statements += 1
                if decl.docstring:
                    result.with_docstring += 1
                    uses[decl.docstring] += 1
                    if eligible(decl):
                        candidates.append(Candidate(hashlib.sha256(decl.name.encode()).hexdigest(), decl.name,
                                                    decl.docstring))
            if progress is not None:
                progress(size)
    finally:
        result.digests["input/corpus.jsonl"] = corpus.close()
    chosen = select_queries(candidates, uses, query_count)
    queries, qrels = _HashedWriter(out["input/queries.jsonl"]), _HashedWriter(out["truth/qrels.txt"])
    try:
        for number, cand in enumerate(chosen, 1):
            queries.write(_json_line({"id": str(number), "query": cand.docstring}))
            qrels.write(f"{number} 0 {cand.name} 2\n")  # the one relevant statement: an exact match (grade 2)
    finally:
        result.digests["input/queries.jsonl"] = queries.close()
        result.digests["truth/qrels.txt"] = qrels.close()
    result.queries = len(chosen)
    return result
