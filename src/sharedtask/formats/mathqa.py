"""MathQA files (docs/formats.md, "MathQA").

- ``mathqa-problems-jsonl`` (the input): one problem per line,
  ``{"id": "1", "problem": "a train ...", "options": "a ) 24 , b ) 120 , ..."}``; ids are
  the problems' 1-based positions in the suite's file, as strings.
- ``mathqa-json`` (the truth, unchanged from the MathQA evaluation suite,
  ongzexuan/mathqa-evaluation ``data/test.json``, ``data/challenge_test.json``): a JSON
  array of objects with ``Problem``, ``options``, ``correct`` (a-e) and ``linear_formula``.
- ``mathqa-broken-txt``: the suite's 1-based numbers of problems whose gold program has
  no value (one per line).
- ``mathqa-programs`` (the run): the suite's prediction file, one linear program per line
  in problem order, ``beam`` consecutive lines per problem (the first counts); or JSON
  Lines ``{"id": "1", "program": "add(n0,n1)|"}`` (recognised by a first line starting
  with ``{``). A blank line is a problem left unanswered.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from sharedtask.errors import FormatError
from sharedtask.formats._io import DECODE_ERRORS, PathLike, decode_error, open_text
from sharedtask.formats.jsonl import json_objects, text_field, unique_id


class Problem(NamedTuple):
    number: str  # the id, named as topics are
    problem: str
    options: str


class GoldProblem(NamedTuple):
    number: str
    problem: str
    options: str
    correct: str  # a-e
    program: str


def read_problems(path: PathLike) -> list[Problem]:
    """The input's problems in file order; ids unique."""
    out: list[Problem] = []
    seen: set[str] = set()
    for lineno, obj in json_objects(path, '{"id": ..., "problem": ..., "options": ...}'):
        number = unique_id(path, obj, lineno, seen, "problem")
        out.append(Problem(number, text_field(path, obj, "problem", lineno), text_field(path, obj, "options", lineno)))
    return out


def read_gold(path: PathLike) -> list[GoldProblem]:
    """The suite's JSON file; problem ids are 1-based positions."""
    try:
        with open_text(path) as handle:
            data = json.load(handle)
    except json.JSONDecodeError as exc:
        raise FormatError(path, f"not valid JSON ({exc.msg})", line=exc.lineno, column=exc.colno) from None
    except DECODE_ERRORS as exc:
        raise decode_error(path, exc) from None
    if not isinstance(data, list):
        raise FormatError(path, "expected a JSON array of problems", line=1, column=1)
    out = []
    for i, obj in enumerate(data, 1):
        if not isinstance(obj, dict) or not all(isinstance(obj.get(k), str) for k in
                                                  ("Problem", "options", "correct", "linear_formula")):
            raise FormatError(path, "each problem needs the strings Problem, options, correct and linear_formula",
                              record=f"problem {i}")
        correct = obj["correct"].strip()[:1]
        if correct not in ("a", "b", "c", "d", "e"):
            raise FormatError(path, f"correct option {obj['correct']!r} is not a-e", record=f"problem {i}")
        out.append(GoldProblem(str(i), obj["Problem"], obj["options"], correct, obj["linear_formula"]))
    return out


def read_broken(path: PathLike) -> set[str]:
    """The 1-based problem numbers listed as broken."""
    out: set[str] = set()
    try:
        with open_text(path) as handle:
            for lineno, line in enumerate(handle, 1):
                token = line.strip()
                if not token:
                    continue
                if not token.isdigit() or token.startswith("0"):
                    raise FormatError(path, f"expected a problem number, found {token[:20]!r}", line=lineno,
                                      hint="one 1-based problem number per line")
                out.add(token)
    except DECODE_ERRORS as exc:
        raise decode_error(path, exc) from None
    return out


class Programs(NamedTuple):
    """A run: problem id -> its first program ("" when unanswered), and the beam width."""

    programs: dict[str, str]
    beam: int
    lines: int
    form: str  # "lines" or "jsonl"


def read_programs(path: PathLike, problem_ids: list[str] | None = None, beam: int | None = None) -> Programs:
    """Read a run; the line form needs the problems (in order) to know which line is whose.

    The beam is ``beam`` if given, else the number of lines over the number of problems,
    which must divide evenly.
    """
    with open_text(path) as handle:
        try:
            lines = handle.read().splitlines()
        except DECODE_ERRORS as exc:
            raise decode_error(path, exc) from None
    if not any(line.strip() for line in lines):
        raise FormatError(path, "the run holds no program", hint="write one program per problem")
    first = next(line for line in lines if line.strip())
    if first.lstrip().startswith("{"):
        programs: dict[str, str] = {}
        for lineno, obj in json_objects(path, '{"id": ..., "program": ...}'):
            number = text_field(path, obj, "id", lineno)
            program = obj.get("program")
            if not isinstance(program, str):
                raise FormatError(path, "field 'program' must be a string", line=lineno,
                                  hint='write "program": "add(n0,n1)|"')
            programs.setdefault(number, program)  # a beam: the first line of an id counts
        return Programs(programs, 1, len(lines), "jsonl")
    if problem_ids is None:
        raise FormatError(path, "a run of one program per line needs the problems to know their order",
                          hint="give the dataset (--input DIR) or write JSON Lines with ids")
    if not problem_ids:
        raise FormatError(path, "the dataset has no problems")
    if beam is None:
        if len(lines) % len(problem_ids):
            raise FormatError(path, f"{len(lines)} lines for {len(problem_ids)} problems: not a whole number of "
                                    "programs per problem", hint="write one line per problem (or N per problem "
                                                                 "for a beam of N), in problem order")
        beam = len(lines) // len(problem_ids)
    elif len(lines) != beam * len(problem_ids):
        raise FormatError(path, f"{len(lines)} lines, expected {beam} x {len(problem_ids)} problems")
    return Programs({pid: lines[i * beam].strip() for i, pid in enumerate(problem_ids)}, beam, len(lines), "lines")
