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
# Grouping, separators and ``$`` delimiters carry no words of their own: one str.translate
# to spaces (1:1 ASCII mappings stay on CPython's fast path); the symbols that become
# words are replaced one by one (str.replace per symbol is several times faster than
# a translate table with multi-character values, which looks up every character).
# No replacement word contains a mapped character, so the order does not matter.
_TO_SPACE = str.maketrans({c: " " for c in "{}[]();,&~:$"})
# Layout-only commands that say nothing about the formula's content.
_LAYOUT = frozenset(
    "left right big Big bigg Bigg bigl bigr Bigl Bigr quad qquad displaystyle textstyle "
    "scriptstyle limits nolimits mathrm text textrm operatorname mbox hspace vspace".split()
)
# \frac -> frac; a backslash before a non-letter (\{ \, \\) is only spacing or escaping.
_COMMAND = re.compile(r"\\([A-Za-z]+)|\\.")


def _commands_to_words(latex: str) -> str:
    """Each match of _COMMAND replaced by " name " (a content command) or " " (layout, escape).

    ``re.split`` and one comprehension instead of ``re.sub`` with a callback: no Match
    object and no Python call per command (about four per formula).
    """
    parts = _COMMAND.split(latex)  # text, name or None, text, name or None, ..., text
    parts[1::2] = [" " if name is None or name in _LAYOUT else f" {name} " for name in parts[1::2]]
    return "".join(parts)


def _latex_words(latex: str) -> str:
    """LaTeX as words with uneven spacing (callers split on whitespace)."""
    text = _commands_to_words(latex) if "\\" in latex else latex
    for symbol, word in _SYMBOL_WORDS.items():
        if symbol in text:
            text = text.replace(symbol, word)
    return text.translate(_TO_SPACE)


def latex_tokens(latex: str) -> str:
    """LaTeX as space-separated words, e.g. ``\\frac{a}{b}^2`` -> ``frac a b sup 2``."""
    return " ".join(_latex_words(latex).split())


# The LaTeX runs to the first ``</span>``: the "unrolled loop" ``[^<]*(?:<(?!/span>)[^<]*)*``
# (Friedl, Mastering Regular Expressions, ch. 6) matches what the lazy ``(.*?)</span>`` with
# re.S matched, in about half the time, since it tests for ``</span>`` only at a ``<``.
_MATH_SPAN = re.compile(r'<span class="math-container"[^>]*>([^<]*(?:<(?!/span>)[^<]*)*)</span>')
_TAG = re.compile(r"<[^>]+>")


_INLINE_MATH = re.compile(r"\$\$?([^$]+)\$?\$")


def html_to_index_text(body: str) -> str:
    """A post body or title (HTML) as plain words, every formula replaced by its LaTeX tokens.

    Formula spans are replaced before the tags are stripped (their LaTeX is still
    HTML-escaped there, so ``<`` cannot pass for a tag); bare ``$...$`` left after that
    (titles written without spans) get the same treatment.
    """
    text = _spans_tags_entities(body, tidy=False)
    if "$" in text:  # the one step that reads the formulae's words again: they must be tidy
        text = _spans_tags_entities(body, tidy=True)
        text = _INLINE_MATH.sub(lambda m: " " + latex_tokens(m.group(1)) + " ", text)
    return " ".join(text.split())


def _spans_tags_entities(body: str, tidy: bool) -> str:
    """Formula spans to words, tags to spaces, entities unescaped (see :func:`_formulas_to_words`)."""
    text = body
    if "math-container" in text:
        text = _formulas_to_words(text, tidy)
    if "<" in text:
        text = _TAG.sub(" ", text)
    if "&" in text:
        text = html.unescape(text)
    return text


# Joins a post's formulae so that each step runs once per post, not once per formula
# (~10 per answer). No step can act across it: html.unescape ends an entity at a line
# break as at the end of a string, a backslash before one matches no branch of _COMMAND
# (as at the end), translate works per character; \x01 is no character of XML 1.0 and
# html.unescape never produces it, so splitting on it finds the formulae again.
_JOIN = "\n\x01\n"


def _formulas_to_words(text: str, tidy: bool = True) -> str:
    """Every formula span replaced by ``" " + latex_tokens(its unescaped LaTeX) + " "``.

    ``tidy=False``: by whitespace, then the formula's words with their own uneven
    spacing, then whitespace; the same words once whitespace is collapsed. Enough
    wherever nothing reads inside the words before that: they hold no ``<``, ``>``,
    ``&`` or ``$`` (all became words or spaces), and an entity or a tag next to a
    formula ends at a line break as at a space. Saves a split and a join per formula.
    """
    parts = _MATH_SPAN.split(text)  # outside, LaTeX, outside, LaTeX, ..., outside
    latex = parts[1::2]
    if not latex:
        return text
    if any("\x01" in tex for tex in latex):  # not from XML; keep the joiner unambiguous
        words = [_latex_words(html.unescape(tex)) for tex in latex]
    else:
        joined = _latex_words(html.unescape(_JOIN.join(latex)))
        if not tidy:  # w1 "\n\x01\n" w2 ...: every piece framed by whitespace already
            parts[1::2] = (" " + joined + " ").split("\x01")
            return "".join(parts)
        words = joined.split("\x01")
    parts[1::2] = [" " + " ".join(w.split()) + " " for w in words]
    return "".join(parts)
