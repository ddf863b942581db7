"""MathQA: a run's programs executed by the safe calculator (``sharedtask.answers``) and
scored both ways of the MathQA evaluation suite (ongzexuan/mathqa-evaluation;
docs/evaluation.md, "MathQA"):

- ``published``: the check of the suite's notebook ``evaluate_test_correctness.ipynb``,
  whose figures (test 2035 / 2975, challenge 435 / 601 for the gold programs) it
  publishes: the value, as an int if whole or else rounded to 5 decimals, is correct when
  it equals the gold option's value or is within 0.5 of it; problems on the suite's broken
  list are left out. Its quirk is kept and named: a value or gold option of 0 counts as
  wrong (the notebook tests them for truth). The notebook puts the problem's numbers into
  the program textually (``n1`` also inside ``n10``); we do the same for this measure only.
- ``option``: the option matching of the suite's ``evaluate.py`` (delta 1, its default):
  the options within delta of the value are the candidates (an exact hit alone); one
  candidate, the gold one: 1; several including the gold one: 1 / their number (the
  script adds their number, which we take for a slip); no value (unanswered or
  unevaluable): a guess, 1 / 5; else 0. Where the suite's rules read an option as no
  number (``none of these``, but also an option written in LaTeX, ``\\frac{3}{4}``, which
  its rule 8 would read as 3), the option is read by the math-aware normalisation of
  ``sharedtask.answers.equivalence`` (a number, or still none: never guessed); the suite's
  own files have no LaTeX options and none of their word options has a value, so their
  figures are unchanged. The note "options read as math" counts these options.

A program that has no value is never guessed as a number: it is counted as unevaluable
(the result's notes give the counts and the first reasons).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from sharedtask.answers import Unevaluable, numeric_value, option_values, problem_numbers, run_program
from sharedtask.answers.options import option_texts
from sharedtask.answers.programs import parse_program, substitute_like_the_suite
from sharedtask.formats.mathqa import GoldProblem

PUBLISHED_DELTA = 0.5  # the notebook's DELTA
OPTION_DELTA = 1.0  # evaluate.py's --delta default


@dataclass
class MathqaInput:
    gold: list[GoldProblem]
    broken: set[str]
    programs: dict[str, str]  # problem id -> program ("" unanswered)
    counts: Counter = field(default_factory=Counter)
    math_options: int = 0  # options without a value under the suite's rules that the math reading gave one
    reasons: dict[str, str] = field(default_factory=dict)  # problem id -> why unevaluable
    _values: dict[tuple[str, bool], float | None] = field(default_factory=dict)

    def value(self, problem: GoldProblem, like_the_suite: bool) -> float | None:
        """The program's value (None: unanswered or unevaluable, the reason kept)."""
        key = (problem.number, like_the_suite)
        if key not in self._values:
            program = self.programs.get(problem.number, "").strip()
            value = None
            if program:
                numbers = problem_numbers(problem.problem)
                try:
                    if like_the_suite:
                        value = run_program(substitute_like_the_suite(program, numbers))
                    else:
                        value = run_program(parse_program(program), numbers)
                except Unevaluable as exc:
                    self.reasons.setdefault(problem.number, str(exc))
            self._values[key] = value
        return self._values[key]


def _suite_number(value: float) -> float:
    return float(int(value)) if value.is_integer() else round(value, 5)


def _gold_value(problem: GoldProblem) -> float | None:
    return option_values(problem.options)["abcde".index(problem.correct)]


def published(inp: MathqaInput) -> dict[str, float]:
    """Per problem not listed broken: 1.0 when the notebook's check passes, else 0.0."""
    out: dict[str, float] = {}
    for problem in inp.gold:
        if problem.number in inp.broken:
            continue
        value, gold = inp.value(problem, True), _gold_value(problem)
        ok = False
        if value is not None and gold is not None:
            solution = _suite_number(value)
            ok = bool(solution) and bool(gold) and abs(float(gold) - solution) <= PUBLISHED_DELTA
        out[problem.number] = 1.0 if ok else 0.0
    return out


def _option_numbers(problem: GoldProblem, inp: MathqaInput) -> list[float | None]:
    """The suite's option values; an option it reads as none, or that is LaTeX, read as math."""
    options: list[float | None] = list(option_values(problem.options))
    for i, text in enumerate(option_texts(problem.options)):
        if options[i] is None or "\\" in text:
            value = numeric_value(text)
            if value is not None:
                inp.math_options += 1
            options[i] = value
    return options


def option_score(inp: MathqaInput) -> dict[str, float]:
    """Per problem: the suite's option matching (module docstring); outcome counts in ``inp.counts``."""
    out: dict[str, float] = {}
    for problem in inp.gold:
        options = _option_numbers(problem, inp)
        value = inp.value(problem, False)
        gold = "abcde".index(problem.correct)
        if value is None:
            inp.counts["guess"] += 1
            out[problem.number] = 1 / len(options)
            continue
        exact = [i for i, o in enumerate(options) if o is not None and abs(value - o) == 0.0]
        candidates = exact[:1] or [i for i, o in enumerate(options) if o is not None and abs(value - o) <= OPTION_DELTA]
        if candidates == [gold]:
            inp.counts["exact" if exact else "single candidate"] += 1
            out[problem.number] = 1.0
        elif len(candidates) > 1 and gold in candidates:
            inp.counts["several candidates"] += 1
            out[problem.number] = 1 / len(candidates)
        else:
            inp.counts["wrong"] += 1
            out[problem.number] = 0.0
    return out
