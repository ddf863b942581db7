"""Graders for EXAM (the EXam Answerability Metric, Sander and Dietz, DESIRES 2021): does
a text answer an exam question? A grader is anything with ``grade(question, text) -> bool``
(:class:`Grader`); one that can grade many pairs at once (an HTTP model, concurrently) also
has ``grade_many``, and :func:`grade_all` uses it when it is there.
:class:`sharedtask.answers.llm.HttpGrader` asks any OpenAI-compatible endpoint.

:class:`OfflineGrader` needs no model and no network: a question counts as answered when
the text states its answer key, found in this order:

1. **exact**: the key occurs in the text as written;
2. **normalised**: after removing ``$`` delimiters, LaTeX spacing (``\\,`` ``\\;`` ``\\!``
   ``\\left`` ``\\right``) and all whitespace, and lower-casing a key without a backslash
   (plain words; LaTeX is case-sensitive);
3. **numeric**: a key that is a number (``0.5``, ``3 : 8``, ``2 √ 3``, read by the MathQA
   option rules of :mod:`sharedtask.answers.options`) equals a number written in the text,
   to a relative 1e-9.

4. **math-equivalent**: a value the text states (a ``$...$`` span, a side of an ``=`` in
   one, a number or fraction in the prose) equals the key by
   :func:`sharedtask.answers.equivalence.find_equivalent` (``\\frac12`` = ``0.5``,
   ``(x+1)^2`` = ``x^2+2x+1``); an unevaluable comparison counts as unanswered, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from sharedtask.answers.equivalence import find_equivalent
from sharedtask.answers.options import option_value
from sharedtask.formats.jsonl import ExamQuestion

_SPACING = re.compile(r"\\[,;!]|\\left|\\right|\$|\s+")
_TEXT_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_NUMERIC_KEY = re.compile(r"(?:[-0-9.,:/√π()\s]|sqrt|pi)+")  # 0.5, 1,000, 3 : 8, 4 1 / 2, 2 √ 3, sqrt ( 2 )


class Grader(Protocol):
    def grade(self, question: ExamQuestion, text: str) -> bool: ...


def grade_all(grader: Grader, pairs: Sequence[tuple[ExamQuestion, str]]) -> list[bool]:
    """Grade (question, text) pairs in order; in one batch when the grader can (``grade_many``)."""
    many = getattr(grader, "grade_many", None)
    if many is not None:
        return list(many(pairs))
    return [grader.grade(question, text) for question, text in pairs]


def _normalised(text: str, lower: bool) -> str:
    text = _SPACING.sub("", text)
    return text.lower() if lower else text


class OfflineGrader:
    """Answer-key matching (module docstring); ``how`` records which rule answered."""

    def __init__(self) -> None:
        self.how: dict[str, str] = {}

    def grade(self, question: ExamQuestion, text: str) -> bool:
        key = question.answer.strip()
        if key and key in text:
            self.how[question.id] = "exact"
            return True
        lower = "\\" not in key
        norm = _normalised(key, lower)
        if norm and norm in _normalised(text, lower):
            self.how[question.id] = "normalised"
            return True
        value = option_value(key, symbols=True) if _NUMERIC_KEY.fullmatch(key) and _TEXT_NUMBER.search(key) else None
        if value is not None:
            for found in _TEXT_NUMBER.findall(text.replace(",", "")):
                if abs(float(found) - value) <= 1e-9 * max(1.0, abs(value)):
                    self.how[question.id] = "numeric"
                    return True
        if find_equivalent(text, key).equal:  # level 4 (sharedtask.answers.equivalence)
            self.how[question.id] = "math-equivalent"
            return True
        return False
