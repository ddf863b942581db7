"""Math-aware answers: MathQA option strings to numbers, MathQA's operation programs run
by a safe calculator, and numeric equivalence.

Used by the MathQA evaluation (and meant for EXAM and Task 3 answer checking). Nothing
here evaluates a string as Python: programs are parsed into (operator, arguments) steps
and run through a table of operator -> arity -> function with bounded numbers; option
strings are read with regular expressions. A value that cannot be computed is reported
as unevaluable (``Unevaluable``), never guessed. ``equivalent(a, b)`` decides whether two
answers (numbers, fractions, ratios, LaTeX, expressions) are EQUAL, DIFFERENT or
UNEVALUABLE (:mod:`sharedtask.answers.equivalence`; SymPy and mpmath load on first use).
"""

from sharedtask.answers.equivalence import Outcome, Verdict, equivalent, find_equivalent, numeric_value
from sharedtask.answers.numbers import problem_numbers
from sharedtask.answers.options import option_value, option_values
from sharedtask.answers.programs import OPERATORS, Unevaluable, parse_program, run_program

__all__ = ["OPERATORS", "Outcome", "Unevaluable", "Verdict", "equivalent", "find_equivalent", "numeric_value",
           "option_value", "option_values", "parse_program", "problem_numbers", "run_program"]
