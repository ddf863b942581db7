"""sharedtask.answers: MathQA option normalisation (one row per rule of the MathQA
evaluation suite, expected values worked out by hand), problem numbers, and the safe
calculator of MathQA programs (values by hand; what must be unevaluable)."""

from __future__ import annotations

import math

import pytest

from sharedtask.answers import Unevaluable, option_value, option_values, problem_numbers, run_program
from sharedtask.answers.programs import MAX_STEPS, OPERATORS, substitute_like_the_suite
from sharedtask.errors import SharedTaskError

# (rule, option text, value as the suite reads it, value with symbols evaluated)
OPTION_RULES = [
    ("4: one numeral", "a ) 24 ", 24, 24),
    ("4: decimal, 5 places kept as written", "b ) 0.00137", 0.00137, 0.00137),
    ("4: units and decorations ignored", "c ) rs . 1540 ", 1540, 1540),
    ("4: a negative number", "d ) -49", -49, -49),
    ("2: thousands separators removed", "e ) 10,123.2", 10123.2, 10123.2),
    ("3: no numeral -> None", "d ) data inadequate ", None, None),
    ("3: none of these -> None", "e ) none of these", None, None),
    ("5: ratio a : b", "a ) 3 : 8", 0.375, 0.375),
    ("5: ratio rounded to 5 decimals", "b ) 2 : 3", 0.66667, 0.66667),
    ("5: ratio over zero -> None", "c ) 3 : 0", None, None),
    ("6: fraction a / b", "d ) 1 / 4", 0.25, 0.25),
    ("7: mixed fraction a b / c", "e ) 4 1 / 2", 4.5, 4.5),
    ("7: mixed fraction rounded", "a ) 2 1 / 3", 2.33333, 2.33333),
    ("7: a b : c splits at position -1, as the suite does (a + b / a)", "b ) 4 1 : 2", 4.25, 4.25),
    ("6: a fraction without its denominator -> None (the suite raises)", "c ) 1 2 / ", None, None),
    ("7: three numerals, one before the / -> None (the suite raises)", "c ) 1 / 2 3", None, None),
    ("5: a ratio without its second term -> None (the suite raises)", "d ) 0 0 :", None, None),
    ("8: several numerals -> the first", "c ) 3 and 15 ", 3, 3),
    ("8: units with a digit (cm 2) -> the first", "d ) 296 cm 2 ", 296, 296),
    ("9: whole float -> int", "e ) 16.0", 16, 16),
    ("symbols: 2 sqrt ( 61 ) is 2 for the suite, 2 * 7.81025 evaluated", "a ) 2 sqrt ( 61 )", 2, 15.6205),
    ("symbols: 2 √ 3", "b ) 2 √ 3", 2, 3.4641),
    ("symbols: 16 π", "c ) 16 π", 16, 50.26548),
    ("symbols: π / 2 -> a fraction once pi is a number", "d ) π / 2", 2, 3.14159 / 2),
]


@pytest.mark.parametrize(("rule", "text", "suite", "symbols"), OPTION_RULES, ids=[r[0] for r in OPTION_RULES])
def test_each_option_rule(rule: str, text: str, suite: float | None, symbols: float | None) -> None:
    assert option_value(text) == (pytest.approx(suite) if suite is not None else None)
    assert option_value(text, symbols=True) == (pytest.approx(symbols, abs=1e-5) if symbols is not None else None)
    if isinstance(suite, int):
        assert isinstance(option_value(text), int)


def test_five_options_in_order_and_rule_1() -> None:
    assert option_values("a ) 24 , b ) 120 , c ) 625 , d ) 720 , e ) 1024") == [24, 120, 625, 720, 1024]
    with pytest.raises(SharedTaskError, match="must be five"):
        option_values("a ) 1 , b ) 2")


@pytest.mark.parametrize(("text", "numbers"), [
    ("a train 120 m long passes a pole in 6 sec", ["120", "6"]),
    ("the price of 1,000 pens is $ 2.5 each", ["1000", "2.5"]),
    ("$5 and 50% and -3 and 5. are not numbers ; 7 is", ["7"]),
])
def test_problem_numbers(text: str, numbers: list[str]) -> None:
    assert problem_numbers(text) == numbers


@pytest.mark.parametrize(("program", "numbers", "value"), [
    ("add(n1,const_100)|divide(#0,n0)|", ["4", "300"], 100.0),
    ("multiply(n0,const_0_25)|", ["8"], 2.0),
    ("circle_area(n0)", ["2"], 4 * math.pi),
    ("multiply(const_pi,n0)", ["2"], 6.28318),  # const_pi is 3.14159 in the suite
    ("choose(n0,n1)|", ["5", "2"], 10.0),
    ("permutation(n0,n1)", ["5", "2"], 20.0),
    ("reminder(n0,n1)", ["17", "5"], 2.0),
    ("lcm(n0,n1)|gcd(n0,n1)|add(#0,#1)", ["4", "6"], 14.0),
    ("triangle_area_three_edges(n0,n1,n2)", ["3", "4", "5"], 6.0),
    ("original_price_before_loss(n0,n1)", ["20", "400"], 500.0),
    ("power(n0,const_2)|sqrt(#0)", ["7"], 7.0),
    ("negate(n1)|power(n0,#0)|", ["44444444", "88888888"], 0.0),  # underflows to 0, as in Python
    ("floor(n0) factorial(#0)", ["4.5"], 24.0),  # whitespace between steps
])
def test_programs_by_hand(program: str, numbers: list[str], value: float) -> None:
    assert run_program(program, numbers) == pytest.approx(value)


@pytest.mark.parametrize(("program", "numbers", "reason"), [
    ("divide(n0,const_0)", ["1"], "division by zero"),
    ("subtract(n0,n1)|sqrt(#0)", ["1", "5"], "root of the negative number -4"),
    ("power(n0,const_0_5)", ["-4"], "not a real number"),
    ("log(n0)", ["0"], "math domain error"),
    ("factorial(n0)", ["2.5"], "whole number"),
    ("power(n0,n1)", ["10", "400"], "beyond"),
    ("add(n0,n2)", ["1", "2"], "n2: the problem has 2 number(s)"),
    ("add(#1,n0)", ["1"], "#1 refers to a step not computed yet"),
    ("eval(n0)", ["1"], "unknown operator 'eval'"),
    ("add(n0)", ["1"], "add takes 2 argument(s), got 1"),
    ("add(n0,__import__)", ["1"], "is not nK, #K, const_X or a number"),
    ("add(n0,n1", ["1", "2"], "is not op(arg,...)"),
    ("", [], "empty program"),
    ("negate_prob(n0)", ["2"], "not a probability"),
    ("|".join(["add(n0,n0)"] * (MAX_STEPS + 1)), ["1"], "steps (at most"),
])
def test_unevaluable_programs_say_why(program: str, numbers: list[str], reason: str) -> None:
    with pytest.raises(Unevaluable, match=reason.replace("(", r"\(").replace(")", r"\)")):
        run_program(program, numbers)


def test_the_operator_table_has_mathqa_s_53_operators_with_their_arities() -> None:
    # data/operators.txt of the suite, counted by hand: 5 of arity 3, 26 of arity 2, 22 of arity 1
    arities = [op.arity for op in OPERATORS.values()]
    assert len(OPERATORS) == 53 and arities.count(3) == 5 and arities.count(2) == 26 and arities.count(1) == 22


def test_the_suite_s_textual_substitution_quirk() -> None:
    numbers = [str(i) for i in range(100, 111)]  # n0 = 100 ... n10 = 110
    # the suite replaces n1 first, so n10 becomes "101" + "0"
    assert substitute_like_the_suite("add(n10,n1)", numbers) == "add(1010,101)"
    assert run_program("add(n10,n1)", numbers) == 211.0  # resolved exactly
