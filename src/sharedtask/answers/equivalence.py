"""Are two answers the same number or expression? EQUAL, DIFFERENT or UNEVALUABLE, never a guess.

``equivalent(a, b)`` decides at the first level that applies; the verdict names it (``how``):

1. **identical**: the same text after trimming.
2. **mathqa**: both are written as MathQA option values (``24``, ``1,000``, ``1 / 2``,
   ``3 : 8``, ``4 1 / 2``, ``2 √ 3``, ``16 π``, ``rs . 50``, ``12 cm 2``; words of two or
   more letters are units): read by the suite's rules (:mod:`sharedtask.answers.options`,
   fractions and ratios rounded to 5 decimals) and compared to a relative 1e-9. Where the
   suite would take the first of several numbers (its rule 8, ``3 and 15``) or finds none
   (``none of these``), the answer is UNEVALUABLE.
3. **rounded**: one side is a decimal with five or more places (MathQA writes five): it
   stands for every value that rounds to it, so ``3.14159`` equals ``\\pi``; ``3.14`` does not.
4. **exact**: both are rational (numerals, + - * /, whole powers): compared as fractions.
5. **symbolic** / **numeric**: otherwise both are evaluated with mpmath (at
   five fixed points when they have variables); a difference at any point is DIFFERENT; when
   they agree everywhere, SymPy tries to prove ``simplify(a - b) = 0`` in a worker process
   bounded by ``timeout`` (:mod:`sharedtask.answers.symbolic`): proved is **symbolic**, not
   proved in time is **numeric**. Each value is computed at 50 and again at 90 digits: one
   that shrinks by 1e30 is rounding noise and counts as 0 (``\\sin(\\pi)``), one that grows
   or changes is undefined there; the 90-digit values must agree to 60 significant digits.

Everything the parser refuses (:mod:`sharedtask.answers.expressions`: more than 1,000
characters, 200 parts or 40 levels, an exponent beyond 1,000, a constant beyond a double)
and every value that is undefined (division by zero, ``log(0)``) is UNEVALUABLE with the
reason. ``log`` is the natural logarithm (SymPy's reading).
"""

from __future__ import annotations

import operator
import re
import threading
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any

from sharedtask.answers.expressions import (MAX_CHARS, MAX_DIGITS, ExpressionError, Tree, exact, fold,
                                            parse, variables)
from sharedtask.answers.options import option_value, symbols_to_numbers

DEFAULT_TIMEOUT = 2.0  # seconds for SymPy's proof of one comparison
DIGITS = 50
CHECK_DIGITS = 90  # every value is computed again at 90 digits: noise shrinks, a division by noise grows
NOISE = 30  # shrinks or grows: by a factor 1e30 or more
AGREE = 60  # equal: the same to 60 significant digits at 90 digits (exp(120) + 1 is not exp(120))
ROUNDED_PLACES = 5  # a decimal with at least this many places stands for what rounds to it
_POINTS = ("0.5772156649", "1.4142135623", "-0.7071067811", "2.7182818284", "-3.1415926535")
MIN_POINTS = 3  # an expression with variables must be defined at three of the five points


class Outcome(str, Enum):
    EQUAL = "equal"
    DIFFERENT = "different"
    UNEVALUABLE = "unevaluable"


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    how: str  # identical, mathqa, rounded, exact, symbolic, numeric; "" when unevaluable
    reason: str = ""

    @property
    def equal(self) -> bool:
        return self.outcome is Outcome.EQUAL


def _unevaluable(reason: str) -> Verdict:
    return Verdict(Outcome.UNEVALUABLE, "", reason)


# --------------------------------------------------------------------------- MathQA level

_CURRENCY = re.compile(r"^\s*(?:rs\s*\.?|\$|£|€)\s*")
_UNIT_POWER = re.compile(r"\b([a-z]{2,})\s*[23]\s*$")  # "12 cm 2": cm², not a second number
_MATHQA_CHARS = re.compile(r"[-0-9.,:/%\s]*")
_NUMERAL = re.compile(r"-?[0-9]+\.[0-9]*|-?[0-9]+")


def mathqa_value(text: str) -> float | None:
    """The value of ``text`` when it is written as a MathQA option value with one reading
    (rules 2-7 and 9 of :mod:`sharedtask.answers.options`, pi and roots evaluated), else None."""
    if len(text) > MAX_CHARS:
        return None
    body = symbols_to_numbers(text.strip().lower().replace(",", ""))
    body = _UNIT_POWER.sub(r"\1", _CURRENCY.sub("", body))
    words = re.findall(r"[a-z]+", body)
    if any(len(w) < 2 for w in words) or re.search(r"[0-9][a-z]", body):
        return None  # a single letter is a variable, not a unit; MathQA writes "12 cm", never "12cm"
    bare = re.sub(r"[a-z]+\s*\.?", " ", body)
    if not _MATHQA_CHARS.fullmatch(bare):
        return None
    numerals = _NUMERAL.findall(bare)
    if not numerals or any(len(n) > MAX_DIGITS for n in numerals) or "-" in bare.replace(numerals[0], "", 1).lstrip():
        return None
    slash_or_colon = "/" in bare or ":" in bare
    if len(numerals) == 1 and not slash_or_colon or len(numerals) in (2, 3) and slash_or_colon:
        value = option_value(bare)
        return None if value is None else float(value)
    return None  # several numbers with no fraction between them: the suite would take the first


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


# --------------------------------------------------------------------------- numeric level

_LOCAL = threading.local()


def _context(digits: int = DIGITS) -> Any:
    """This thread's mpmath context at ``digits``: our own, so the global mpmath precision is
    left alone; one per thread, since mpmath's functions raise and restore its precision
    while they work; made once (1.5 ms each)."""
    contexts = _LOCAL.__dict__.setdefault("contexts", {})
    if digits not in contexts:
        from mpmath import MPContext

        contexts[digits] = MPContext()
        contexts[digits].dps = digits
    return contexts[digits]


MAX_BITS = 100_000  # |value| < 2^100000 at every node; beyond, mpmath's exp and power slow down without bound
MAX_ARGUMENT = 10_000  # of exp, sin, cos, tan and factorial: exp(exp(exp(x))) stops here


class _Beyond(ValueError):
    """A value or argument beyond the bounds at this point: the point tells nothing."""


def _mp(ctx: Any, tree: Tree, env: dict[str, Any]) -> Any:
    """The mpmath value at ``env``; raises ZeroDivisionError where it is undefined and
    _Beyond where a value would grow past the bounds (checked before mpmath works on it)."""

    def bounded(value: Any) -> Any:
        if value != 0 and abs(ctx.mag(abs(value))) > MAX_BITS:
            raise _Beyond("beyond the bounds")
        return value

    def argument(x: Any) -> Any:
        if abs(x) > MAX_ARGUMENT:
            raise _Beyond("an argument beyond the bounds")
        return x

    functions = {"sin": ctx.sin, "cos": ctx.cos, "tan": ctx.tan, "ln": ctx.ln, "log": ctx.ln, "exp": ctx.exp}

    def div(a: Any, b: Any) -> Any:
        if b == 0:
            raise ZeroDivisionError("division by zero")
        return bounded(a / b)

    def power(a: Any, b: Any) -> Any:
        if a == 0:
            if ctx.re(b) < 0:
                raise ZeroDivisionError("zero to a negative power")
            return ctx.power(a, b)
        if abs(b) * (abs(ctx.log(abs(a), 2)) + 1) > MAX_BITS:  # the result's size, before computing it
            raise _Beyond("a power beyond the bounds")
        return bounded(ctx.power(a, b))

    def function(name: str, x: Any) -> Any:
        return bounded(functions[name](argument(x) if name != "ln" else x))

    return fold(tree, {"num": ctx.mpf, "var": env.__getitem__, "pi": lambda: +ctx.pi, "neg": operator.neg,
                       "add": lambda a, b: bounded(a + b), "mul": lambda a, b: bounded(a * b), "div": div,
                       "pow": power, "fact": lambda a: bounded(ctx.factorial(argument(a))), "fn": function,
                       "root": lambda a, n: ctx.sqrt(a) if n == 2 else power(a, 1 / n)})


def _value(ctx: Any, tree: Tree, env: dict[str, Any]) -> Any | None:
    """The value at ``env`` (None where it is undefined or not finite)."""
    try:
        value = _mp(ctx, tree, env)
    except (ArithmeticError, ValueError):
        return None
    return value if ctx.isfinite(value) else None


def _points(ctx: Any, names: list[str]) -> list[dict[str, Any]]:
    """Five fixed points; each variable gets its own coordinate (shifted by its position)."""
    return [{name: ctx.mpf(_POINTS[(j + k) % len(_POINTS)]) + ctx.mpf(k) / 7 for k, name in enumerate(names)}
            for j in range(len(_POINTS) if names else 1)]


def _decimal_places(tree: Tree) -> int:
    """Places of a bare decimal (``3.14159``, ``-0.33333``); 0 for anything else."""
    if tree[0] == "neg":
        tree = tree[1]
    if tree[0] != "num" or "." not in tree[1]:
        return 0
    return len(tree[1].split(".", 1)[1])


def _rounded(ctx: Any, a: Tree, b: Tree) -> Verdict | None:
    for literal, other in ((a, b), (b, a)):
        places = _decimal_places(literal)
        if places >= ROUNDED_PLACES and not variables(other):
            x, y = _value(ctx, literal, {}), _value(ctx, other, {})
            if y is None or ctx.im(y) != 0:
                return _unevaluable("the expression has no real value")
            # rounds to the literal: within half a unit of its last place (ties count)
            same = abs(y - x) <= ctx.mpf(5) / ctx.mpf(10) ** (places + 1) * (1 + ctx.mpf(10) ** -40)
            return Verdict(Outcome.EQUAL if same else Outcome.DIFFERENT, "rounded")
    return None


def _stable(coarse: Any, fine: Any) -> Any | None:
    """One value at 50 and at 90 digits -> its value, 0 when it is rounding noise (it shrinks
    by 1e30 or more: ``\\sin(\\pi)``), None when it is not stable (it grows by 1e30: a
    division by such noise; or the two differ beyond 30 digits)."""
    scale = 10 ** -NOISE
    if abs(fine) <= abs(coarse) * scale:
        return 0
    if abs(coarse) <= abs(fine) * scale or abs(fine - coarse) > abs(fine) * scale:
        return None
    return fine


def _at(ctx: Any, fine_ctx: Any, tree: Tree, env: dict[str, Any]) -> Any | None:
    coarse = _value(ctx, tree, env)
    if coarse is None:
        return None
    fine = _value(fine_ctx, tree, {name: fine_ctx.mpf(value) for name, value in env.items()})
    return None if fine is None else _stable(coarse, fine)


def _numeric(ctx: Any, a: Tree, b: Tree) -> Verdict:
    """Both sides at each point, at 50 and 90 digits; compared at 90 digits to 60 significant
    digits (a value that is rounding noise counts as 0; an unstable one as undefined)."""
    fine_ctx = _context(CHECK_DIGITS)
    names = sorted(variables(a) | variables(b))
    used = 0
    for env in _points(ctx, names):
        x, y = _at(ctx, fine_ctx, a, env), _at(ctx, fine_ctx, b, env)
        if x is None or y is None:  # undefined here (1/0, log 0, unstable): this point tells nothing
            continue
        used += 1
        if abs(x - y) > fine_ctx.mpf(10) ** -AGREE * max(abs(x), abs(y)):
            return Verdict(Outcome.DIFFERENT, "numeric")
    if used == 0 or (names and used < MIN_POINTS):
        return _unevaluable("undefined, unstable or beyond the bounds at every point (division by zero, "
                            "log of 0, exp of a huge value)")
    return Verdict(Outcome.EQUAL, "numeric")


# --------------------------------------------------------------------------- entry points

def _tree(text: str) -> Tree:
    """The expression of one answer; a MathQA-only form (``3 : 8``, ``rs . 50``) as its value.
    Raises ExpressionError. Remembered: EXAM compares one key with many statements."""
    if len(text) > MAX_CHARS:
        raise ExpressionError(f"{len(text)} characters (at most {MAX_CHARS})")
    read = _read(text)
    if isinstance(read, str):
        raise ExpressionError(read)
    return read


@lru_cache(maxsize=4096)
def _read(text: str) -> Tree | str:
    """The tree of ``text``, or why it cannot be read (at most 1,000 characters: bounded memory)."""
    try:
        return parse(text)
    except ExpressionError as exc:
        value = mathqa_value(text)
        if value is None:
            return str(exc)
        return ("num", repr(value)) if value >= 0 else ("neg", ("num", repr(-value)))


def equivalent(a: str, b: str, *, timeout: float = DEFAULT_TIMEOUT) -> Verdict:
    """Whether answers ``a`` and ``b`` are equal (the levels of the module docstring)."""
    if a.strip() == b.strip() and a.strip():
        return Verdict(Outcome.EQUAL, "identical")
    x, y = mathqa_value(a), mathqa_value(b)
    if x is not None and y is not None:
        return Verdict(Outcome.EQUAL if _close(x, y) else Outcome.DIFFERENT, "mathqa")
    try:
        ta, tb = _tree(a), _tree(b)
    except ExpressionError as exc:
        return _unevaluable(str(exc))
    ctx = _context()
    rounded = _rounded(ctx, ta, tb)
    if rounded is not None:
        return rounded
    ea, eb = exact(ta), exact(tb)
    if ea is not None and eb is not None:
        return Verdict(Outcome.EQUAL if ea == eb else Outcome.DIFFERENT, "exact")
    verdict = _numeric(ctx, ta, tb)
    if not verdict.equal:
        return verdict
    from sharedtask.answers.symbolic import proves_equal

    return Verdict(Outcome.EQUAL, "symbolic" if proves_equal(ta, tb, timeout) else "numeric")


def numeric_value(text: str) -> float | None:
    """The real value of an answer without variables (``\\frac{1}{2}``, ``2\\sqrt{3}``), or None."""
    value = mathqa_value(text)
    if value is not None:
        return value
    try:
        tree = _tree(text)
    except ExpressionError:
        return None
    if variables(tree):
        return None
    ctx = _context()
    result = _value(ctx, tree, {})
    if result is None or ctx.im(result) != 0:
        return None
    return float(ctx.re(result))


# --------------------------------------------------------------------------- in a text

_OPENERS = re.compile(r"\$\$|\$|\\\(|\\\[")
_CLOSERS = {"$$": "$$", "$": "$", "\\(": "\\)", "\\[": "\\]"}
_PLAIN_NUMBER = re.compile(r"-?[0-9][0-9,]*(?:\.[0-9]+)?(?:\s*[/:]\s*[0-9]+(?:\.[0-9]+)?)?")
MAX_CANDIDATES = 64
MAX_TEXT = 100_000  # characters of a text searched


def math_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, inner text) of the math spans, left to right. Linear: an opener whose
    closer is nowhere after it means no later opener of its kind can close either."""
    out: list[tuple[int, int, str]] = []
    cursor, exhausted = 0, set()
    for m in _OPENERS.finditer(text):
        opener = m.group()
        if m.start() < cursor or opener in exhausted:
            continue
        close = text.find(_CLOSERS[opener], m.end())
        if close < 0:
            exhausted.add(opener)
            continue
        cursor = close + len(_CLOSERS[opener])
        if 0 < close - m.end() <= MAX_CHARS:  # longer is no answer we read
            out.append((m.start(), cursor, text[m.end():close]))
    return out


def candidates(text: str) -> list[str]:
    """What a text states as values: its math spans (``$...$``, ``\\(...\\)``, ``\\[...\\]``)
    and each side of an ``=`` in them, then its plain numbers and fractions; at most 64,
    from the first 100,000 characters."""
    text = text[:MAX_TEXT]
    out: dict[str, None] = {}  # ordered, unique

    def add(value: str) -> bool:
        if value.strip():
            out[value.strip()] = None
        return len(out) >= MAX_CANDIDATES

    spans = math_spans(text)
    for _, _, span in spans:
        if add(span) or any(add(side) for side in (span.split("=") if "=" in span else ())):
            return list(out)
    ends = [0] + [end for _, end, _ in spans]
    starts = [start for start, _, _ in spans] + [len(text)]
    prose = " ".join(text[end:start] for end, start in zip(ends, starts))
    for m in _PLAIN_NUMBER.finditer(prose):
        if add(m.group()):
            break
    return list(out)


def find_equivalent(text: str, key: str, *, timeout: float = DEFAULT_TIMEOUT) -> Verdict:
    """Whether ``text`` states a value equal to ``key`` (the first EQUAL candidate); DIFFERENT
    when some candidate could be compared and none is equal; else UNEVALUABLE."""
    try:
        _tree(key)
    except ExpressionError as exc:  # a key in words ("polar coordinates"): nothing to compare
        return _unevaluable(f"the key is not math we read: {exc}")
    compared = False
    last = _unevaluable("the text states no value that can be compared")
    for candidate in candidates(text):
        verdict = equivalent(candidate, key, timeout=timeout)
        if verdict.equal:
            return Verdict(Outcome.EQUAL, verdict.how, f"the text states {candidate[:60]!r}")
        if verdict.outcome is Outcome.DIFFERENT:
            compared = True
        else:
            last = verdict
    return Verdict(Outcome.DIFFERENT, "", "no statement in the text equals the key") if compared else last
