"""Math Stack Exchange HTML and LaTeX turned into text Lucene can index.

Anserini's default analyzer (StandardTokenizer, lower-casing, English stop words,
Porter stemming) throws away every symbol, so ``x^2 = y_1`` would shrink to
``x 2 y 1``. The official ARQMath TF-IDF baselines kept formulae searchable by
turning LaTeX into words (ARQMath-1 overview, "TF-IDF + Tangent-S" baseline);
we do the same: commands lose their backslash (``\\frac`` -> ``frac``) and
operators become words (``^`` -> ``sup``, ``=`` -> ``eq``). Documents and
queries go through the same function, so they meet in the same vocabulary.

Formulae in posts and topics are ``<span class="math-container" id="...">$...$</span>``
(docs/formats.md, "ARQMath"); ``$`` delimiters are stripped defensively.
"""

from __future__ import annotations

import html
import re

# Operators and symbols -> words the StandardTokenizer keeps (none is an English stop word).
_SYMBOL_WORDS: dict[str, str] = {
    "^": " sup ",
    "_": " sub ",
    "=": " eq ",
    "+": " plus ",
    "-": " minus ",
    "*": " times ",
    "/": " slash ",
    "<": " lt ",
    ">": " gt ",
    "!": " fact ",
    "|": " vbar ",
    "'": " prime ",
}
# Grouping, separators and ``$`` delimiters carry no words of their own. One
# str.translate does all of it: about twice as fast as a regex substitution per class,
# and this runs on every formula of every post (benchmarks/baselines.py).
_TRANSLATE = str.maketrans({**{c: " " for c in "{}[]();,&~:$"}, **_SYMBOL_WORDS})
# \frac -> frac; a backslash before a non-letter (\{ \, \\) is only spacing or escaping.
_COMMAND = re.compile(r"\\([A-Za-z]+)|\\.")
# Layout-only commands that say nothing about the formula's content.
_LAYOUT = frozenset(
    "left right big Big bigg Bigg bigl bigr Bigl Bigr quad qquad displaystyle textstyle "
    "scriptstyle limits nolimits mathrm text textrm operatorname mbox hspace vspace".split()
)

_MATH_SPAN = re.compile(r'<span class="math-container"[^>]*>(.*?)</span>', re.S)
_TAG = re.compile(r"<[^>]+>")


def _command(match: re.Match[str]) -> str:
    name = match.group(1)
    if name is None or name in _LAYOUT:
        return " "
    return f" {name} "


def latex_tokens(latex: str) -> str:
    """LaTeX as space-separated words, e.g. ``\\frac{a}{b}^2`` -> ``frac a b sup 2``."""
    text = _COMMAND.sub(_command, latex) if "\\" in latex else latex
    return " ".join(text.translate(_TRANSLATE).split())


_INLINE_MATH = re.compile(r"\$\$?([^$]+)\$?\$")


def html_to_index_text(body: str) -> str:
    """A post body or title (HTML) as plain words, every formula replaced by its LaTeX tokens.

    Formula spans are replaced before the tags are stripped (their LaTeX is still
    HTML-escaped there, so ``<`` cannot pass for a tag); bare ``$...$`` left after that
    (titles written without spans) get the same treatment.
    """
    text = body
    if "math-container" in text:
        text = _MATH_SPAN.sub(lambda m: " " + latex_tokens(html.unescape(m.group(1))) + " ", text)
    if "<" in text:
        text = _TAG.sub(" ", text)
    if "&" in text:
        text = html.unescape(text)
    if "$" in text:
        text = _INLINE_MATH.sub(lambda m: " " + latex_tokens(m.group(1)) + " ", text)
    return " ".join(text.split())
