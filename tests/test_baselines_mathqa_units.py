"""The MathQA baseline's program search (no Docker): smallest program first, fixed order,
by hand on tiny problems; every program it writes runs on sharedtask's calculator."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "baselines" / "mathqa-search"))

from mathqa_search.__main__ import search  # noqa: E402

from sharedtask.answers import problem_numbers, run_program  # noqa: E402


def test_one_step_before_two_and_operations_in_order() -> None:
    # 6 + 3 = 9 is an option: add is tried first, before subtract (3) and multiply (18)
    assert search("what is 6 and 3 together ?", "a ) 9 , b ) 3 , c ) 18 , d ) 2 , e ) 1") == "add(n0,n1)|"
    # only 19 is an option: no one-step program gives it; in the fixed order (first steps
    # add, subtract, then multiply; second steps add first) 6 * 3 + 1 comes first
    program = search("what is 6 and 3 ?", "a ) 19 , b ) none , c ) none , d ) none , e ) none")
    assert program == "multiply(n0,n1)|add(#0,const_1)|"
    assert run_program(program, problem_numbers("what is 6 and 3 ?")) == 19.0
    # with 30 also an option, (3 + 2) * 6 = 30 comes earlier (an add first step)
    assert search("what is 6 and 3 ?", "a ) 19 , b ) 30 , c ) 40 , d ) 50 , e ) 60") == \
        "add(n1,const_2)|multiply(#0,n0)|"


def test_no_program_without_numbers_or_options() -> None:
    assert search("what is the answer ?", "a ) 1 , b ) 2 , c ) 3 , d ) 4 , e ) 5") is None
    assert search("what is 6 and 3 ?", "a ) none , b ) none , c ) none , d ) none , e ) none") is None


def test_fractions_and_ratios_are_matched_as_numbers() -> None:
    assert search("two numbers are 12 and 32 .", "a ) 3 : 8 , b ) 2 : 5 , c ) 1 : 3 , d ) 3 : 7 , e ) 4 : 9") == \
        "divide(n0,n1)|"


def test_the_guess_names_only_numbers_the_problem_has() -> None:
    """The fallback when no program hits an option: evaluable on problems with 0, 1 or 2 numbers
    (add(n0,n1) on a one-number problem was RUN-PROGRAM-UNEVALUABLE). By hand: 7 + 1 = 8, 1 + 1 = 2."""
    from mathqa_search.__main__ import _fallback

    assert run_program(_fallback(1), problem_numbers("a box holds 7 apples")) == 8.0
    assert run_program(_fallback(0), problem_numbers("how many apples ?")) == 2.0
    assert run_program(_fallback(2), problem_numbers("6 and 3")) == 9.0
