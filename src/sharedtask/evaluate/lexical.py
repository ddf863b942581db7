"""Token F1, SQuAD style: the tokenizer of ARQMath-3 Task 3's Lexical Overlap (LO).

reference/evaluation.md ("ARQMath Task 3"): LO = per topic, the maximum token F1
(bag of tokens) between the system answer and each known relevant answer. The
official tokenizer came with a model we cannot download, so we use the SQuAD v1.1
evaluation script's normalisation, which is what "SQuAD style" names:

1. lowercase;
2. remove every ASCII punctuation character (``string.punctuation``; this also drops
   LaTeX syntax such as ``$ \\ { } ^ _``, so ``$x^2$`` becomes the token ``x2``);
3. remove the articles ``a``, ``an``, ``the`` as whole words;
4. split on whitespace.

F1 = 2PR/(P+R) over the multiset intersection of the two token bags; when either
side has no tokens, F1 is 1 if both are empty and 0 otherwise (as in SQuAD).
"""

from __future__ import annotations

import re
import string
from collections import Counter

_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def tokens(text: str) -> list[str]:
    """The SQuAD-normalised tokens of ``text`` (see the module docstring)."""
    text = text.lower().translate(_PUNCT)
    return _ARTICLES.sub(" ", text).split()


def token_f1(candidate: str, reference: str) -> float:
    """Bag-of-tokens F1 between two texts."""
    cand, ref = tokens(candidate), tokens(reference)
    if not cand or not ref:
        return float(cand == ref)
    common = sum((Counter(cand) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision = common / len(cand)
    recall = common / len(ref)
    return 2 * precision * recall / (precision + recall)
