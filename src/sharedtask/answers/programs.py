"""MathQA operation programs, parsed and run by a safe calculator.

A program in MathQA's linear form is a sequence of steps ``op(arg,arg)|op(arg)|...``;
an argument is ``nK`` (the K-th number of the problem text, ``answers.numbers``), ``#K``
(the result of step K), ``const_X`` (``const_100``, ``const_0_25`` = 0.25, ``const_pi`` =
3.14159) or, once ``nK`` are substituted, a number. The value of the last step is the
answer (MathQA, Amini et al., NAACL 2019; the operator table with arities and the
calculator of the MathQA evaluation suite, ongzexuan/mathqa-evaluation, data/operators.txt
and solver.py, whose functions the table below follows, quirks included, each named).

Safety: nothing is ``eval``-ed. A step is matched by a regular expression, its operator
looked up in :data:`OPERATORS` (name -> arity, function), its arguments resolved to
floats; programs have at most :data:`MAX_STEPS` steps, factorials and binomials take whole
arguments up to :data:`MAX_FACTORIAL`, and every intermediate value must be a finite real
of magnitude at most :data:`MAX_MAGNITUDE`. Whatever breaks a rule (division by zero, the
square root of a negative, a complex power, an unknown operator, a wrong arity, a missing
number) raises :class:`Unevaluable` with the step and the reason, so the caller counts it
apart instead of guessing a value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

MAX_STEPS = 100
MAX_MAGNITUDE = 1e100
MAX_FACTORIAL = 1000  # factorial(1000) has 2,568 digits: instant; larger would not be a MathQA answer
PI_CONSTANT = 3.14159  # const_pi as the suite reads it (its functions use math.pi)


class Unevaluable(ValueError):
    """A program (or step) that has no real value; ``step`` is 0-based, None for the whole."""

    def __init__(self, reason: str, step: int | None = None) -> None:
        self.reason, self.step = reason, step
        super().__init__(reason if step is None else f"step {step + 1}: {reason}")


def _whole(x: float, what: str) -> int:
    if not float(x).is_integer() or not 0 <= x <= MAX_FACTORIAL:
        raise Unevaluable(f"{what} needs a whole number from 0 to {MAX_FACTORIAL}, got {x:g}")
    return int(x)


def _factorial(x: float) -> float:
    # solver.py refuses above 50, but the suite's published figures count factorial(58)
    # and factorial(59) (test problems 1402, 1958): the bound here is MAX_FACTORIAL
    return float(math.factorial(_whole(x, "factorial")))


def _choose(n: float, k: float) -> float:
    # n! / k! / (n - k)! as the suite's published run computed it (a float, not math.comb)
    return math.factorial(_whole(n, "choose")) / math.factorial(_whole(k, "choose")) / math.factorial(
        _whole(n - k, "choose"))


def _permutation(n: float, k: float) -> float:
    if n - k < 0:
        raise Unevaluable(f"permutation({n:g}, {k:g}) with n < k")
    return math.factorial(_whole(n, "permutation")) / math.factorial(_whole(n - k, "permutation"))


def _root(x: float, degree: float) -> float:
    """x ** (1 / degree) for x >= 0; Python gives a complex number for x < 0: no real value."""
    if x < 0:
        raise Unevaluable(f"root of the negative number {x:g}")
    return x ** (1 / degree)


def _power(a: float, b: float) -> float:
    if a < 0 and not float(b).is_integer():
        raise Unevaluable(f"power({a:g}, {b:g}) is not a real number")
    if a == 0 and b < 0:
        raise Unevaluable("zero to a negative power")
    if a != 0 and b * math.log10(abs(a)) > math.log10(MAX_MAGNITUDE):  # a tiny result underflows to 0
        raise Unevaluable(f"power({a:g}, {b:g}) is beyond {MAX_MAGNITUDE:g}")
    return a ** b


def _heron(a: float, b: float, c: float) -> float:
    s = (a + b + c) / 2
    return _root(s * (s - a) * (s - b) * (s - c), 2)


def _price_before_loss(loss: float, price: float) -> float:
    if not 0 < 100 - loss <= 100:  # the suite asserts this
        raise Unevaluable(f"a loss of {loss:g} % is not between 0 and 100")
    return 100 / (100 - loss) * price


def _negate_prob(p: float) -> float:
    if not 0 <= p <= 1:  # the suite asserts this
        raise Unevaluable(f"{p:g} is not a probability")
    return 1 - p


def _gcd(a: float, b: float) -> float:
    return float(math.gcd(int(a), int(b)))  # int(): the suite truncates


def _lcm(a: float, b: float) -> float:
    return abs(a * b) // _gcd(a, b)


@dataclass(frozen=True)
class Operator:
    arity: int
    function: Callable[..., float]


#: MathQA's 53 operators (data/operators.txt of the suite) -> arity and function.
OPERATORS: dict[str, Operator] = {
    "add": Operator(2, lambda a, b: a + b),
    "subtract": Operator(2, lambda a, b: a - b),
    "multiply": Operator(2, lambda a, b: a * b),
    "divide": Operator(2, lambda a, b: a / b),
    "power": Operator(2, _power),
    "speed": Operator(2, lambda a, b: a / b),
    "choose": Operator(2, _choose),
    "permutation": Operator(2, _permutation),
    "rectangle_perimeter": Operator(2, lambda a, b: 2 * (a + b)),
    "surface_cylinder": Operator(2, lambda r, h: 2 * math.pi * r * (r + h)),
    "reminder": Operator(2, lambda a, b: divmod(a, b)[1]),  # MathQA's spelling; Python's modulo
    "original_price_before_loss": Operator(2, _price_before_loss),
    "original_price_before_gain": Operator(2, lambda gain, price: 100 / (100 + gain) * price),
    "lcm": Operator(2, _lcm),
    "gcd": Operator(2, _gcd),
    "rectangle_area": Operator(2, lambda a, b: a * b),
    "rhombus_area": Operator(2, lambda a, b: a * b / 2),
    "triangle_area": Operator(2, lambda a, b: a * b / 2),
    "volume_cylinder": Operator(2, lambda r, h: math.pi * r * r * h),
    "volume_cone": Operator(2, lambda r, h: math.pi / 3 * r * r * h),
    "p_after_gain": Operator(2, lambda a, b: a / 100 * b),  # "contentious definition" in the suite
    "max": Operator(2, max),
    "min": Operator(2, min),
    "diagonal": Operator(2, lambda a, b: _root(a ** 2 + b ** 2, 2)),
    "stream_speed": Operator(2, lambda a, b: (a + b) / 2),
    "speed_in_still_water": Operator(2, lambda a, b: a * b * 2),  # "contentious definition" in the suite
    "volume_rectangular_prism": Operator(3, lambda a, b, c: a * b * c),
    "triangle_area_three_edges": Operator(3, _heron),
    "quadrilateral_area": Operator(3, lambda a, b, c: a * (b + c) / 2),
    "triangle_perimeter": Operator(3, lambda a, b, c: a + b + c),
    "surface_rectangular_prism": Operator(3, lambda a, b, c: 2 * (a * b + b * c + a * c)),
    "sqrt": Operator(1, lambda a: _root(a, 2)),
    "floor": Operator(1, lambda a: float(math.floor(a))),
    "log": Operator(1, math.log),
    "square_area": Operator(1, lambda a: a * a),
    "circle_area": Operator(1, lambda r: math.pi * r * r),
    "circumface": Operator(1, lambda r: 2.0 * math.pi * r),  # MathQA's spelling
    "inverse": Operator(1, lambda a: 1.0 / a),
    "negate": Operator(1, lambda a: -a),
    "cube_edge_by_volume": Operator(1, lambda v: _root(v, 3)),
    "volume_cube": Operator(1, lambda a: a ** 3),
    "surface_cube": Operator(1, lambda a: 6 * a * a),
    "factorial": Operator(1, _factorial),
    "square_perimeter": Operator(1, lambda a: 4 * a),
    "square_edge_by_perimeter": Operator(1, lambda p: p / 4),
    "square_edge_by_area": Operator(1, lambda a: _root(a, 2)),
    "surface_sphere": Operator(1, lambda r: 4 * math.pi * r * r),
    "volume_sphere": Operator(1, lambda r: 4 / 3 * math.pi * r ** 3),
    "rhombus_perimeter": Operator(1, lambda a: 4 * a),
    "negate_prob": Operator(1, _negate_prob),
    "tangent": Operator(1, math.tan),
    "sine": Operator(1, math.sin),
    "cosine": Operator(1, math.cos),
}

_STEP = re.compile(r"([a-z_]+)\(([^()]*)\)")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_CONST = re.compile(r"const_([0-9]+(?:[_.][0-9]+)?|pi)")
_NARG = re.compile(r"n([0-9]+)")
_REF = re.compile(r"#([0-9]+)")


@dataclass(frozen=True)
class Step:
    op: str
    args: tuple[str, ...]


def parse_program(program: str) -> list[Step]:
    """Steps of a linear program (``|`` or whitespace between steps); Unevaluable if malformed."""
    pieces = [p for p in re.split(r"[|\s]+", program.strip()) if p]
    if not pieces:
        raise Unevaluable("empty program")
    if len(pieces) > MAX_STEPS:
        raise Unevaluable(f"{len(pieces)} steps (at most {MAX_STEPS})")
    steps = []
    for i, piece in enumerate(pieces):
        m = _STEP.fullmatch(piece)
        if m is None:
            raise Unevaluable(f"{piece[:40]!r} is not op(arg,...)", i)
        op, args = m.group(1), tuple(a.strip() for a in m.group(2).split(","))
        if op not in OPERATORS:
            raise Unevaluable(f"unknown operator {op!r}", i)
        if len(args) != OPERATORS[op].arity:
            raise Unevaluable(f"{op} takes {OPERATORS[op].arity} argument(s), got {len(args)}", i)
        steps.append(Step(op, args))
    return steps


def _arg(token: str, numbers: Sequence[str], memory: list[float], step: int) -> float:
    if m := _REF.fullmatch(token):
        k = int(m.group(1))
        if k >= len(memory):
            raise Unevaluable(f"#{k} refers to a step not computed yet", step)
        return memory[k]
    if m := _CONST.fullmatch(token):
        return PI_CONSTANT if m.group(1) == "pi" else float(m.group(1).replace("_", "."))
    if m := _NARG.fullmatch(token):
        k = int(m.group(1))
        if k >= len(numbers):
            raise Unevaluable(f"n{k}: the problem has {len(numbers)} number(s)", step)
        return _checked(float(numbers[k]), step)
    if _NUMBER.fullmatch(token):
        return float(token)
    raise Unevaluable(f"argument {token[:20]!r} is not nK, #K, const_X or a number", step)


def _checked(value: object, step: int) -> float:
    if isinstance(value, complex):
        raise Unevaluable("the value is not a real number", step)
    value = float(value)  # type: ignore[arg-type]
    if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        raise Unevaluable(f"the value {value:g} is beyond {MAX_MAGNITUDE:g}", step)
    return value


def substitute_like_the_suite(program: str, numbers: Sequence[str]) -> str:
    """The suite's published run puts the numbers in textually, ``n0`` first
    (solver.fill_n_args): with ten or more numbers ``n1`` is also replaced inside ``n10``.
    Only for reproducing its figures; :func:`run_program` resolves ``nK`` exactly."""
    for i, value in enumerate(numbers):
        program = program.replace(f"n{i}", str(value))
    return program


def run_program(program: str | list[Step], numbers: Sequence[str] = ()) -> float:
    """The value of ``program`` with ``numbers`` as n0, n1, ...; raises Unevaluable."""
    steps = parse_program(program) if isinstance(program, str) else program
    memory: list[float] = []
    for i, step in enumerate(steps):
        args = [_arg(a, numbers, memory, i) for a in step.args]
        try:
            value = OPERATORS[step.op].function(*args)
        except Unevaluable as exc:
            raise Unevaluable(exc.reason, i) from None
        except (ArithmeticError, ValueError) as exc:  # ZeroDivisionError, OverflowError, math domain error
            raise Unevaluable(f"{step.op}({', '.join(f'{a:g}' for a in args)}): {exc}", i) from None
        memory.append(_checked(value, i))
    return memory[-1]
