"""Answer expressions read into a small tree, bounded before anything computes with them.

Reads plain notation (``1/2``, ``2*pi``, ``sqrt(2)``, ``x^2 + 2x``, ``2 √ 3``, ``1,000``) and
the LaTeX that answers use (``\\frac{1}{2}``, ``\\frac12``, ``\\sqrt[3]{8}``, ``2\\pi``,
``\\left( x \\right)``, ``\\cdot``, ``\\sin x``), with a tokenizer and a recursive-descent
parser of our own: nothing is ``eval``-ed (SymPy's ``parse_expr`` calls ``eval``), and
SymPy's LaTeX parser was measured unfit here (sympy 1.14 with lark: 0.1-0.5 s per parse,
and ``\\pi`` is not parsed at all).

A tree is nested tuples (``("num", "0.5")``, ``("var", "x")``, ``("pi",)``, ``("add", a, b)``,
``("mul", a, b)``, ``("div", a, b)``, ``("pow", a, b)``, ``("neg", a)``, ``("fn", "sin", a)``,
``("root", a, n)``, ``("fact", a)``): picklable, so it can cross into the SymPy worker.

Bounds, each an :class:`ExpressionError` (the caller reports the answer unevaluable):
at most :data:`MAX_CHARS` characters, :data:`MAX_NODES` nodes, :data:`MAX_DEPTH` levels of
nesting; every constant part must have a finite double value, an exponent at most
:data:`MAX_EXPONENT` in magnitude and a factorial at most ``170!``. So ``10^{10^{10}}`` is
refused by a few float operations, before SymPy or mpmath could start on it.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

MAX_CHARS = 1000
MAX_NODES = 200
MAX_DEPTH = 40
MAX_EXPONENT = 1000
MAX_DIGITS = 40  # one numeral
MAX_EXACT_BITS = 20_000  # an exact power larger than this is left to mpmath: (1.00000001^{1000})^{1000} has 27M bits

Tree = tuple

FUNCTIONS = frozenset({"sin", "cos", "tan", "ln", "log", "exp"})
GREEK = frozenset({"alpha", "beta", "gamma", "delta", "theta", "lambda", "mu", "phi", "omega", "sigma", "tau"})


class ExpressionError(ValueError):
    """The text is not an expression we read, or it is beyond the bounds."""


# LaTeX that only decorates; `{,}` is a thousands separator (1{,}000)
_DECOR = re.compile(r"\$|\\left\b|\\right\b|\\[,;:! ]|\\displaystyle\b|\\mathrm\{\s*\}|\{,\}")
# \frac12, \frac1{x}, \frac{x}2 and \sqrt2: one-character arguments without braces
_FRAC_TWO = re.compile(r"(\\[dt]?frac)\s*([0-9a-zA-Z])\s*([0-9a-zA-Z])")
_FRAC_FIRST = re.compile(r"(\\[dt]?frac)\s*([0-9a-zA-Z])\s*(?=\{)")
_FRAC_SECOND = re.compile(r"(\\[dt]?frac\s*\{[^{}]*\})\s*([0-9a-zA-Z])")
_SQRT_ONE = re.compile(r"(\\sqrt)\s*([0-9a-zA-Z])")
_TOKEN = re.compile(r"""
    (?P<num>[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?|\.[0-9]+)
  | (?P<cmd>\\[a-zA-Z]+)
  | (?P<word>[a-zA-Z]+)
  | (?P<op>\*\*|[-+*/^_()\[\]{}!×·÷−√π])
  | (?P<space>\s+)
  | (?P<bad>.)
""", re.VERBOSE)
_ALIASES = {"**": "^", "×": "*", "·": "*", "÷": "/", "−": "-", "\\cdot": "*", "\\times": "*", "\\div": "/",
            "\\dfrac": "\\frac", "\\tfrac": "\\frac", "π": "\\pi", "pi": "\\pi", "√": "\\sqrt", "sqrt": "\\sqrt"}


def _classify(kind: str, value: str) -> tuple[str, str]:
    """One lexeme (aliases applied) as num, var, func, cmd (``\\pi \\sqrt \\frac``) or op."""
    if kind == "num":
        value = value.replace(",", "")
        if len(value) > MAX_DIGITS:
            raise ExpressionError(f"a numeral of {len(value)} digits (at most {MAX_DIGITS})")
        return "num", value
    if value in ("\\pi", "\\sqrt", "\\frac"):
        return "cmd", value
    if value in ("*", "/"):  # \cdot, \times, \div
        return "op", value
    if kind == "word":
        if value in FUNCTIONS:
            return "func", value
        if len(value) == 1:
            return "var", value
        # "none of these" is no product n*o*n*e: a word we do not know is not math
        raise ExpressionError(f"the word {value!r} is not math we read")
    if kind == "cmd":
        name = value[1:]
        if name in FUNCTIONS:
            return "func", name
        if name in GREEK:
            return "var", name
        raise ExpressionError(f"the LaTeX command {value} is not one we read")
    return "op", value


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: num, var (a letter or a Greek name), func, cmd, op."""
    if len(text) > MAX_CHARS:
        raise ExpressionError(f"{len(text)} characters (at most {MAX_CHARS})")
    text = _DECOR.sub(" ", text)
    text = _FRAC_SECOND.sub(r"\1{\2}", _FRAC_FIRST.sub(r"\1{\2}", _FRAC_TWO.sub(r"\1{\2}{\3}", text)))
    text = _SQRT_ONE.sub(r"\1{\2}", text)
    out: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or ""
        if kind == "space":
            continue
        if kind == "bad":
            raise ExpressionError(f"unexpected {m.group()!r} at column {m.start() + 1}")
        out.append(_classify(kind, _ALIASES.get(m.group(), m.group())))
    if not out:
        raise ExpressionError("no expression")
    return out


_CLOSE = {"(": ")", "{": "}", "[": "]"}
_STARTS = ("num", "var", "func")


class _Parser:
    """Recursive descent: sum > product (also implicit, ``2x``) > unary minus > power > factorial > atom."""

    def __init__(self, toks: list[tuple[str, str]]) -> None:
        self.toks, self.i, self.depth = toks, 0, 0

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1] != value):
            raise ExpressionError(f"expected {value or 'more'} at token {self.i + 1}")
        self.i += 1
        return tok

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"nested more than {MAX_DEPTH} levels deep")

    def parse(self) -> Tree:
        tree = self.sum()
        if self.peek() is not None:
            raise ExpressionError(f"unexpected {self.peek()[1]!r} at token {self.i + 1}")  # type: ignore[index]
        return tree

    def sum(self) -> Tree:
        self.nested()
        tree = self.product()
        while (tok := self.peek()) is not None and tok[1] in ("+", "-"):
            self.take()
            rhs = self.product()
            tree = ("add", tree, rhs if tok[1] == "+" else ("neg", rhs))
        self.depth -= 1
        return tree

    def starts_atom(self, tok: tuple[str, str] | None) -> bool:
        return tok is not None and (tok[0] in _STARTS or tok[1] in ("(", "{", "[", "\\pi", "\\sqrt", "\\frac"))

    def product(self) -> Tree:
        tree = self.unary()
        while True:
            tok = self.peek()
            if tok is not None and tok[1] in ("*", "/"):
                self.take()
                rhs = self.unary()
                tree = ("mul", tree, rhs) if tok[1] == "*" else ("div", tree, rhs)
            elif self.starts_atom(tok):
                if tok[0] == "num" and _ends_in_numeral(tree):  # "2 3" is no product we would guess
                    raise ExpressionError(f"two numbers side by side at token {self.i + 1}")
                tree = ("mul", tree, self.power())
            else:
                return tree

    def unary(self) -> Tree:
        tok = self.peek()
        if tok is not None and tok[1] in ("-", "+"):
            self.take()
            self.nested()
            operand = self.unary()
            self.depth -= 1
            return ("neg", operand) if tok[1] == "-" else operand
        return self.power()

    def power(self) -> Tree:
        base = self.postfix()
        if (tok := self.peek()) is not None and tok[1] == "^":
            self.take()
            self.nested()
            exponent = self.unary()  # right-associative: 2^3^2 = 2^(3^2); x^-1 allowed
            self.depth -= 1
            return ("pow", base, exponent)
        return base

    def postfix(self) -> Tree:
        tree = self.atom()
        while (tok := self.peek()) is not None and tok[1] == "!":
            self.take()
            tree = ("fact", tree)
        return tree

    def group(self) -> Tree:
        tok = self.take()
        if tok[1] not in _CLOSE:
            raise ExpressionError(f"expected a bracket at token {self.i}")
        tree = self.sum()
        self.take(_CLOSE[tok[1]])
        return tree

    def subscript(self) -> str:
        """``x_1``, ``a_{n}``, ``x_{12}``: part of the variable's name (one numeral or letter)."""
        if (tok := self.peek()) is None or tok[1] != "_":
            return ""
        self.take()
        braced = (nxt := self.peek()) is not None and nxt[1] == "{"
        if braced:
            self.take()
        tok = self.take()
        if tok[0] not in ("num", "var"):
            raise ExpressionError(f"a subscript is one numeral or letter, not {tok[1]!r}")
        if braced:
            self.take("}")
        return "_" + tok[1]

    def atom(self) -> Tree:
        tok = self.peek()
        if tok is None:
            raise ExpressionError("the expression ends too early")
        kind, value = tok
        if kind == "num":
            self.take()
            return ("num", value)
        if kind == "var":
            self.take()
            return ("var", value + self.subscript())
        if value == "\\pi":
            self.take()
            return ("pi",)
        if value in _CLOSE:
            return self.group()
        self.take()
        self.nested()
        try:
            if value == "\\frac":
                return ("div", self.group(), self.group())
            if value == "\\sqrt":
                degree: Tree = ("num", "2")
                if (nxt := self.peek()) is not None and nxt[1] == "[":
                    degree = self.group()
                return ("root", self.group() if self.peek() and self.peek()[1] in _CLOSE else self.power(), degree)  # type: ignore[index]
            if kind == "func":
                exponent = None
                if (nxt := self.peek()) is not None and nxt[1] == "^":  # \sin^2 x = (\sin x)^2
                    self.take()
                    exponent = self.postfix()
                argument = self.group() if self.peek() and self.peek()[1] in _CLOSE else self.power()  # type: ignore[index]
                return ("fn", value, argument) if exponent is None else ("pow", ("fn", value, argument), exponent)
        finally:
            self.depth -= 1
        raise ExpressionError(f"unexpected {value!r} at token {self.i}")


def _ends_in_numeral(tree: Tree) -> bool:
    return tree[0] == "num" or (tree[0] in ("mul", "div") and _ends_in_numeral(tree[2]))


def parse(text: str) -> Tree:
    """The tree of ``text``, checked by :func:`check`; ExpressionError when not read or beyond bounds."""
    tree = _Parser(tokens(text)).parse()
    check(tree)
    return tree


# --------------------------------------------------------------------------- bounds

def size(tree: Tree) -> int:
    return 1 + sum(size(t) for t in tree[1:] if isinstance(t, tuple))


def variables(tree: Tree) -> set[str]:
    if tree[0] == "var":
        return {tree[1]}
    return set().union(*(variables(t) for t in tree[1:] if isinstance(t, tuple)))


def _estimate(tree: Tree) -> float | None:
    """A double estimate of a constant part (None: has a variable, or no real double value).
    Raises ExpressionError when a bound is broken."""
    op = tree[0]
    if op == "num":
        return float(tree[1])
    if op == "pi":
        return math.pi
    if op == "var":
        return None
    # every child is estimated, so a bound deep under a variable (x^{10^{10}}) is found too
    parts = [_estimate(t) for t in tree[1:] if isinstance(t, tuple)]
    if op == "pow" and parts[1] is not None and abs(parts[1]) > MAX_EXPONENT:
        raise ExpressionError(f"an exponent of {parts[1]:.3g} (at most {MAX_EXPONENT})")
    if op == "fact" and parts[0] is not None and not (parts[0].is_integer() and 0 <= parts[0] <= 170):
        raise ExpressionError("a factorial needs a whole number from 0 to 170")
    if any(p is None for p in parts):
        return None
    try:
        value = _float_op(op, tree, parts)
    except OverflowError:
        raise ExpressionError("a constant part is beyond the range of a double") from None
    except (ArithmeticError, ValueError):
        return None  # 1/0, sqrt(-1), log(0): no real double; SymPy and mpmath decide later
    if value is not None and not math.isfinite(value):
        raise ExpressionError("a constant part has no finite value")
    return value


def _float_op(op: str, tree: Tree, parts: list[float | None]) -> float | None:
    a = parts[0] if parts else None
    if op == "neg":
        return -a  # type: ignore[operator]
    if op == "add":
        return a + parts[1]  # type: ignore[operator]
    if op == "mul":
        return a * parts[1]  # type: ignore[operator]
    if op == "div":
        return a / parts[1]  # type: ignore[operator]
    if op == "pow":
        value = a ** parts[1]  # type: ignore[operator]
        return value if isinstance(value, float | int) else None  # a complex power: no real double
    if op == "root":
        return math.pow(a, 1 / parts[1])  # type: ignore[operator,arg-type]
    if op == "fact":
        return float(math.factorial(int(a)))  # type: ignore[arg-type]
    if op == "fn":
        return {"sin": math.sin, "cos": math.cos, "tan": math.tan, "ln": math.log, "log": math.log,
                "exp": math.exp}[tree[1]](a)  # type: ignore[arg-type]
    raise ExpressionError(f"unknown node {op}")


def check(tree: Tree) -> None:
    """Raise ExpressionError unless the tree is within the bounds (module docstring)."""
    if size(tree) > MAX_NODES:
        raise ExpressionError(f"more than {MAX_NODES} parts")
    _estimate(tree)


# --------------------------------------------------------------------------- evaluation

#: The arithmetic nodes as Python operators; a table for :func:`fold` adds the rest.
ARITHMETIC: dict[str, Callable[..., Any]] = {"neg": operator.neg, "add": operator.add, "mul": operator.mul,
                                              "div": operator.truediv, "pow": operator.pow}


def fold(tree: Tree, table: Mapping[str, Callable[..., Any]]) -> Any:
    """Evaluate bottom-up with one function per node kind: ``num`` and ``var`` get the text,
    ``pi`` nothing, ``fn`` the name and the argument's value, the others their children's values."""
    op = tree[0]
    if op in ("num", "var"):
        return table[op](tree[1])
    if op == "pi":
        return table["pi"]()
    if op == "fn":
        return table["fn"](tree[1], fold(tree[2], table))
    return table[op](*(fold(t, table) for t in tree[1:]))


# --------------------------------------------------------------------------- exact values

def exact(tree: Tree) -> Fraction | None:
    """The exact rational value of a tree of numerals, + - * / and whole powers (None otherwise,
    also for a power of more than :data:`MAX_EXACT_BITS` bits)."""
    op = tree[0]
    if op == "num":
        return Fraction(tree[1])
    if op not in ("neg", "add", "mul", "div", "pow"):
        return None
    parts = [exact(t) for t in tree[1:]]
    if any(p is None for p in parts):
        return None
    a = parts[0]
    assert a is not None
    if op == "neg":
        return -a
    b = parts[1]
    assert b is not None
    if op == "add":
        return a + b
    if op == "mul":
        return a * b
    if op == "div":
        return None if b == 0 else a / b
    if b.denominator != 1 or (a == 0 and b < 0):
        return None
    if max(a.numerator.bit_length(), a.denominator.bit_length()) * abs(int(b)) > MAX_EXACT_BITS:
        return None  # a finite double can still be a fraction of millions of digits
    return a ** int(b)
