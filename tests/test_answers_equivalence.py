"""sharedtask.answers.equivalence: two answers EQUAL, DIFFERENT or UNEVALUABLE.

One row per MathQA normalisation rule (the suite's README and utils.extract_options, as
in test_answers.py), then the symbolic cases, then hostile input. Every expected verdict
is worked out by hand; the level that decides (``how``) is asserted too, so a row cannot
pass by the wrong route. SymPy runs for real in its worker process.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from pathlib import Path

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharedtask.answers import symbolic
from sharedtask.answers.equivalence import (Outcome, candidates, equivalent, find_equivalent, mathqa_value,
                                            numeric_value)
from sharedtask.answers.expressions import ExpressionError, parse

EQ, DIFF, UNEV = Outcome.EQUAL, Outcome.DIFFERENT, Outcome.UNEVALUABLE
_BROKEN_SYMPY = Path(__file__).resolve().parent / "fixtures" / "broken-sympy"

# (case, a, b, outcome, how)
MATHQA_RULES = [
    ("4: one numeral", "24", "24.0", EQ, "mathqa"),
    ("4: units and decorations ignored", "rs . 1540", "1540", EQ, "mathqa"),
    ("4: a unit squared (cm 2) is not a second number", "296 cm 2", "296", EQ, "mathqa"),
    ("4: a negative number", "-49", "-49.0", EQ, "mathqa"),
    ("4: different numbers", "24", "25", DIFF, "mathqa"),
    ("2: thousands separators removed", "10,123.2", "10123.2", EQ, "mathqa"),
    ("3: no numeral: never guessed", "data inadequate", "0", UNEV, ""),
    ("3: none of these: never guessed", "none of these", "5", UNEV, ""),
    ("5: ratio a : b", "3 : 8", "0.375", EQ, "mathqa"),
    ("5: ratio rounded to 5 decimals, as the suite", "2 : 3", "0.66667", EQ, "mathqa"),
    ("5: ratio over zero has no value", "3 : 0", "1", UNEV, ""),
    ("6: fraction a / b", "1 / 4", "0.25", EQ, "mathqa"),
    ("7: mixed fraction a b / c", "4 1 / 2", "4.5", EQ, "mathqa"),
    ("7: mixed fraction rounded", "2 1 / 3", "2.33333", EQ, "mathqa"),
    ("8: several numerals: the suite's first-number guess is not made", "3 and 15", "3", UNEV, ""),
    ("9: a whole float is the integer", "16.0", "16", EQ, "mathqa"),
    ("symbols: 2 √ 3 = 3.46410", "2 √ 3", "3.4641", EQ, "mathqa"),
    ("symbols: 16 π = 50.26548", "16 π", "50.26548", EQ, "mathqa"),
    ("symbols: 2 sqrt ( 61 ) = 15.6205", "2 sqrt ( 61 )", "15.6205", EQ, "mathqa"),
]

SYMBOLIC = [
    ("identical text", "x^2", " x^2 ", EQ, "identical"),
    ("LaTeX fraction = decimal", r"\frac{1}{2}", "0.5", EQ, "exact"),
    ("\\frac12 without braces", r"\frac12", "1/2", EQ, "exact"),
    ("\\dfrac in $...$", r"$\dfrac{3}{4}$", "0.75", EQ, "exact"),
    ("a negative fraction", r"-\frac{1}{2}", "-0.5", EQ, "exact"),
    ("a whole power", "2^10", "1024", EQ, "exact"),
    ("exact rationals that differ", r"\frac{1}{3}", "0.3333", DIFF, "exact"),
    ("MathQA ratio against LaTeX, 5 places", "1 : 3", r"\frac{1}{3}", EQ, "rounded"),
    ("pi to 5 places", "3.14159", r"\pi", EQ, "rounded"),
    ("pi to 2 places is not pi", "3.14", r"\pi", DIFF, "numeric"),
    ("pi/2 rounded to 5 places", "1.57080", r"\frac{\pi}{2}", EQ, "rounded"),
    ("2\\pi against 2*pi", r"2\pi", "2*pi", EQ, "symbolic"),
    ("roots: \\sqrt{8} = 2\\sqrt{2}", r"\sqrt{8}", r"2\sqrt{2}", EQ, "symbolic"),
    ("a cube root", r"\sqrt[3]{27}", "3", EQ, "symbolic"),
    ("unicode root against LaTeX", "2 √ 3", r"2\sqrt{3}", EQ, "symbolic"),
    ("a square", "x^2+2x+1", r"\left(x+1\right)^2", EQ, "symbolic"),
    ("not the same polynomial", "x^2+1", "(x+1)^2", DIFF, "numeric"),
    ("a trigonometric identity", r"\sin^2 x + \cos^2 x", "1", EQ, "symbolic"),
    ("implicit products", "2x y", "x*y*2", EQ, "symbolic"),
    ("a word of several letters is no product", "2xy", "x*y*2", UNEV, ""),
    ("different variables", "2x", "2y", DIFF, "numeric"),
    ("subscripts name variables", "x_1 + x_{2}", "x_{2} + x_1", EQ, "symbolic"),
    ("x_1 is not x_2", "x_1", "x_2", DIFF, "numeric"),
    ("ln and exp", r"\ln(e^{2})", "2", DIFF, "numeric"),  # e is a variable here, not Euler's number
    ("exp and ln", r"\exp(\ln 2)", "2", EQ, "symbolic"),
    ("a factorial", "5!", "120", EQ, "symbolic"),
    ("a tiny number is not zero", "10^{-35}", "0", DIFF, "exact"),
    ("a tiny constant is not zero", r"10^{-35}\pi", "0", DIFF, "numeric"),
    ("sin(pi) is zero despite rounding", r"\sin(\pi)", "0", EQ, "symbolic"),
    ("so is sin(2 pi) - sin(pi)", r"\sin(2\pi)", r"\sin(\pi)", EQ, "symbolic"),
    ("a constant of 1e-304 is not twice itself", r"\pi 1701.0001/170!", r"2\pi 1701.0001/170!", DIFF, "numeric"),
    ("a constant of 1e-300 is not zero", r"10^{-300}\pi", "0", DIFF, "numeric"),
    ("1 more than 1.3e52 is more", r"\exp(120)", r"\exp(120) + 1", DIFF, "numeric"),
    ("a division by rounding noise is undefined", r"\frac{2}{\sin(\pi)}", r"\frac{2}{\sin(\pi)} + 1", UNEV, ""),
    ("a power too large for exact fractions goes to mpmath", "(1.00000001^{1000})^{1000}", "1", DIFF, "numeric"),
    ("division by zero is undefined", "1/0", "1", UNEV, ""),
    ("log of zero is undefined", r"\ln 0", "1", UNEV, ""),
]

HOSTILE = [
    ("a tower of powers", "10**10**10", "1"),
    ("a tower in LaTeX", "10^{10^{10}}", "1"),
    ("a variable to a huge power", "(x+1)^{10^{10}}", "x"),
    ("a power beyond a double", "(10^{300})^{300}", "1"),
    ("a huge factorial", "100000!", "1"),
    ("deep nesting", "(" * 500 + "1" + ")" * 500, "1"),
    ("deep LaTeX nesting", r"\frac{1}{" * 100 + "2" + "}" * 100, "1"),
    ("10,000 characters", "1+" * 5000, "1"),
    ("a 100-digit numeral", "9" * 100, "1"),
    ("python code is not evaluated", "__import__('os').system('false')", "0"),
    ("an unknown LaTeX command", r"\input{/etc/passwd}", "0"),
    ("two numbers side by side", "2 3", "6"),
]


def _check(a: str, b: str, outcome: Outcome, how: str) -> None:
    for x, y in ((a, b), (b, a)):  # symmetric
        verdict = equivalent(x, y)
        assert (verdict.outcome, verdict.how) == (outcome, how), verdict.reason


@pytest.mark.parametrize(("case", "a", "b", "outcome", "how"), MATHQA_RULES, ids=[r[0] for r in MATHQA_RULES])
def test_each_mathqa_rule(case: str, a: str, b: str, outcome: Outcome, how: str) -> None:
    _check(a, b, outcome, how)


@pytest.mark.parametrize(("case", "a", "b", "outcome", "how"), SYMBOLIC, ids=[r[0] for r in SYMBOLIC])
def test_symbolic_cases(case: str, a: str, b: str, outcome: Outcome, how: str) -> None:
    _check(a, b, outcome, how)


@pytest.mark.parametrize(("case", "a", "b"), HOSTILE, ids=[r[0] for r in HOSTILE])
def test_hostile_input_is_unevaluable_before_any_computation(case: str, a: str, b: str) -> None:
    with pytest.raises(ExpressionError):
        parse(a)  # refused by the parser's bounds: neither mpmath nor SymPy sees it
    verdict = equivalent(a, b)
    assert verdict.outcome is UNEV and verdict.reason


def test_a_proof_that_takes_too_long_falls_back_to_the_numeric_verdict() -> None:
    # a timeout shorter than any SymPy simplify (the worker needs at least a pipe round trip):
    # the worker is killed, the verdict is the numeric one, and the next call starts a new worker
    verdict = equivalent("(x+1)^3", "x^3+3x^2+3x+1", timeout=1e-6)
    assert (verdict.outcome, verdict.how) == (EQ, "numeric")
    assert symbolic._WORKER._process is None
    verdict = equivalent("(x+1)^3", "x^3+3x^2+3x+1")
    assert (verdict.outcome, verdict.how) == (EQ, "symbolic")
    assert symbolic._WORKER._process is not None and symbolic._WORKER._process.poll() is None


def test_mpmath_s_global_precision_is_left_alone() -> None:
    before = mpmath.mp.dps
    equivalent(r"\sqrt{2}", "1.41421")
    assert mpmath.mp.dps == before


@pytest.mark.parametrize(("text", "value"), [
    (r"\frac{1}{2}", 0.5), (r"2\sqrt{3}", 2 * 3 ** 0.5), ("3 : 8", 0.375), ("rs . 50", 50.0),
    ("x + 1", None), ("none of these", None), (r"\sqrt{-1}", None), ("1/0", None),
])
def test_numeric_value(text: str, value: float | None) -> None:
    got = numeric_value(text)
    assert got == (pytest.approx(value) if value is not None else None)


def test_mathqa_value_reads_only_one_unambiguous_number() -> None:
    assert mathqa_value("4 1 / 2") == 4.5 and mathqa_value("x + 1") is None and mathqa_value("5 - 3") is None


def test_what_a_text_states() -> None:
    text = r"We find $p = \frac{1}{4}$, so 3/4 of the $n$ cases fail; \(x^2\) too."
    # math spans in order (and both sides of an =), then the numbers of the prose
    assert candidates(text) == [r"p = \frac{1}{4}", "p", r"\frac{1}{4}", "n", "x^2", "3/4"]
    assert find_equivalent(text, "0.25").equal
    assert find_equivalent(text, r"\frac{3}{4}").equal
    assert find_equivalent(text, "0.5").outcome is DIFF
    assert find_equivalent("no value at all", "0.5").outcome is UNEV
    # unclosed spans and endless numbers: at most 64 candidates, each span at most 1,000 characters
    assert candidates("\\(" * 50_000) == []
    assert len(candidates(" ".join(str(i) for i in range(10_000)))) == 64


_ALPHABET = "0123456789.,+-*/^_()[]{}!:=$ xyπ√\\" + "abcdefghijklmnopqrstuvwxyz"
_PIECES = st.sampled_from(["\\frac", "\\sqrt", "\\pi", "\\left(", "\\right)", "\\sin", "\\ln", "sqrt", "pi", "^{", "}",
                           "10", "0", "-", "x", "!", "**", "1/0", " "])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(_ALPHABET, max_size=40), st.lists(_PIECES, max_size=25).map("".join)),
       st.one_of(st.text(_ALPHABET, max_size=12), st.sampled_from(["0", "1", "x", r"\frac12", "2 : 3"])))
def test_any_text_gets_a_verdict_and_no_exception(a: str, b: str) -> None:
    verdict = equivalent(a, b, timeout=0.5)
    assert verdict.outcome in (EQ, DIFF, UNEV)
    assert verdict.outcome is not UNEV or verdict.reason  # unevaluable always says why
    assert equivalent(b, a, timeout=0.5).outcome is verdict.outcome  # symmetric


def test_threads_share_the_worker_and_keep_their_own_precision() -> None:
    pairs = [("(x+1)^2", "x^2+2x+1", EQ), (r"\sqrt{2}", "1.41421", EQ), ("3.14", r"\pi", DIFF), ("1/0", "1", UNEV)]
    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(lambda p: equivalent(p[0], p[1]).outcome, pairs * 5))
    assert outcomes == [p[2] for p in pairs] * 5


def test_without_a_working_sympy_the_verdict_is_numeric(monkeypatch: pytest.MonkeyPatch) -> None:
    # a real child process that cannot import SymPy (an empty module named sympy shadows it):
    # the worker does not start, is not tried again, and the numeric verdict stands
    worker = symbolic._Worker()
    monkeypatch.setattr(symbolic, "_WORKER", worker)
    monkeypatch.setenv("PYTHONPATH", str(_BROKEN_SYMPY))
    verdict = equivalent("(x+1)^2", "x^2+2x+1")
    assert (verdict.outcome, verdict.how) == (EQ, "numeric")
    assert worker.unavailable and worker._process is None


def test_sympy_is_imported_only_in_the_worker() -> None:
    probe = ("import sys; from sharedtask.answers import equivalent; before = sorted({'sympy', 'mpmath'} & set(sys.modules)); "
             "verdict = equivalent('(x+1)^2', 'x^2+2x+1'); "
             "print(before, verdict.how, 'sympy' in sys.modules, 'mpmath' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "symbolic", "False", "True"]
