"""Lucene over formula tokens: the fallback engine when pya0 cannot be used.

Each formula is its LaTeX tokens (lucene_baseline.mathtext) plus the pairs of
adjacent tokens joined by ``_`` (``x sup 2`` -> ``x_sup sup_2``), which keep a
little of the structure that a bag of symbols loses. Indexed pre-tokenized
(whitespace analyzer: no stemming, no stop words, so ``a`` and ``sin`` survive).
"""

from __future__ import annotations

from lucene_baseline.mathtext import latex_tokens


def formula_text(latex: str) -> str:
    words = latex_tokens(latex).lower().split()
    pairs = [f"{a}_{b}" for a, b in zip(words, words[1:])]
    return " ".join(words + pairs)
