"""The numbers of a MathQA problem text: the values of ``n0``, ``n1``, ... in its programs.

Rule of the MathQA evaluation suite (ongzexuan/mathqa-evaluation, utils.extract_nargs):
the text is split on whitespace; in each token commas are removed (``1,000`` -> ``1000``);
a token of digits, or of digits, one point and digits (``2.5``), is a number, in order of
appearance. Anything else (``$5``, ``5.``, ``-3``, ``50%``) is not. MathQA's problems are
tokenised with spaces around punctuation, so ``$ 5`` and ``50 %`` give their numbers.
"""

from __future__ import annotations


def _is_number(token: str) -> bool:
    if token.isdigit():
        return True
    left, point, right = token.partition(".")
    return bool(point) and left.isdigit() and right.isdigit()


def problem_numbers(text: str) -> list[str]:
    """The problem's numbers as written (strings: ``n0`` is substituted textually)."""
    out = []
    for token in text.split():
        token = token.strip().replace(",", "")
        if _is_number(token):
            out.append(token)
    return out
