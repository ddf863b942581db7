"""MathQA option strings (``"a ) 24 , b ) 1 / 2 , c ) 3 : 8 , d ) 4 1 / 2 , e ) none"``) to numbers.

The rules of the MathQA evaluation suite (ongzexuan/mathqa-evaluation, utils.extract_options
and its README, "Normalized Option String Representation"); each is one case of
``tests/test_answers.py``:

1. the string holds five options separated by ``", "``; anything else is an error;
2. thousands separators (``,`` inside an option) are removed;
3. numerals are ``-?digits.digits*`` or ``-?digits``; an option without one is None
   ("none of these", "data inadequate"): never guessed;
4. one numeral: its value (units and decorations such as ``cm 2`` or ``rs .`` ignored);
5. two numerals and ``:``: a ratio ``a : b`` -> a / b rounded to 5 decimals (None if b = 0);
6. two numerals and ``/``: a fraction, likewise;
7. three numerals and ``/`` (or ``:``): a mixed fraction ``a b / c`` -> a + b / c, 5 decimals;
8. any other several numerals: the first one (``3 and 15`` -> 3);
9. a whole value is an int (``16.0`` -> 16).

The suite's data files have pi and square roots already replaced by numbers. With
``symbols=True`` (our math-aware normalisation, not the suite's) they are evaluated here:
``π``/``pi`` and ``√x``/``sqrt ( x )`` with an optional factor (``2 √ 3``, ``16 π``).
The suite's own figures are reproduced with ``symbols=False`` (its files are read as it
reads them: ``2 sqrt ( 61 )`` counts as 2 there, by rule 8).
"""

from __future__ import annotations

import math
import re

from sharedtask.errors import SharedTaskError

_NUMERAL = re.compile(r"-?[0-9]+\.[0-9]*|-?[0-9]+")
_NUM = r"[0-9]+(?:\.[0-9]+)?"
# "2 √ 3", "√ 3", "2 sqrt ( 3 )", "sqrt(3)"; "16 π", "π", "16 pi", "pi / 2" is left to rule 6 after pi -> number
_ROOT = re.compile(rf"(?:({_NUM})\s*)?(?:√|sqrt)\s*\(?\s*({_NUM})\s*\)?")
_PI = re.compile(rf"(?:({_NUM})\s*)?(?:π|\bpi\b)")


def _ratio(token: str, sep: str) -> float | None:
    """Rules 5 and 6: the first numeral before the first ``sep`` over the first after it."""
    cut = token.find(sep)
    lhs, rhs = _NUMERAL.findall(token[:cut]), _NUMERAL.findall(token[cut + 1:])
    if not lhs or not rhs or float(rhs[0]) == 0:  # "3 4 :" makes the suite raise: no number here
        return None
    return round(float(lhs[0]) / float(rhs[0]), 5)


def _mixed(token: str) -> float | None:
    """Rule 7 as the suite computes it: split at the first ``/``. (With only ``:`` the suite
    splits at position -1, i.e. reads ``a b : c`` as a + b / a; kept, to give its numbers.)
    Where the suite would raise (``1 / 2 3``, ``1 2 / 0``) there is no number."""
    cut = token.find("/")
    lhs = _NUMERAL.findall(token[:cut])
    rhs = _NUMERAL.findall(token[cut + 1:])
    if len(lhs) < 2 or not rhs or float(rhs[0]) == 0:
        return None
    return round(float(lhs[0]) + float(lhs[1]) / float(rhs[0]), 5)


def symbols_to_numbers(token: str) -> str:
    """Our extension: evaluate square roots, then pi, to 5-decimal numbers in the text."""
    def root(m: re.Match[str]) -> str:
        factor = float(m.group(1)) if m.group(1) else 1.0
        return f"{round(factor * math.sqrt(float(m.group(2))), 5)}"

    def pi(m: re.Match[str]) -> str:
        factor = float(m.group(1)) if m.group(1) else 1.0
        return f"{round(factor * math.pi, 5)}"

    return _PI.sub(pi, _ROOT.sub(root, token))


def option_value(token: str, *, symbols: bool = False) -> int | float | None:
    """The number one option stands for (rules 2-9), None when it holds none."""
    token = token.replace(",", "")
    if symbols:
        token = symbols_to_numbers(token)
    numerals = _NUMERAL.findall(token)
    value: float | None
    if not numerals:
        return None
    if len(numerals) == 1:
        value = float(numerals[0])
    elif len(numerals) == 2 and ":" in token:
        value = _ratio(token, ":")
    elif len(numerals) == 2 and "/" in token:
        value = _ratio(token, "/")
    elif len(numerals) == 3 and ("/" in token or ":" in token):
        value = _mixed(token)
    else:
        value = float(numerals[0])
    if value is not None and value.is_integer():
        return int(value)
    return value


_LABEL = re.compile(r"^\s*[a-e]\s*\)\s*")


def option_texts(options: str) -> list[str]:
    """The five options' texts without their labels (``"a ) 1 / 2 "`` -> ``"1 / 2"``), rule 1 checked."""
    values = option_values(options)  # raises unless there are five
    return [_LABEL.sub("", token).strip() for token in options.split(", ")][:len(values)]


def option_values(options: str, *, symbols: bool = False) -> list[int | float | None]:
    """The five options' numbers, a-e in order (rule 1)."""
    tokens = options.split(", ")
    if len(tokens) != 5:
        raise SharedTaskError(f"MathQA options must be five, separated by ', '; found {len(tokens)} in "
                              f"{options[:80]!r}", hint='write them as "a ) 1 , b ) 2 , c ) 3 , d ) 4 , e ) 5"')
    return [option_value(t, symbols=symbols) for t in tokens]
