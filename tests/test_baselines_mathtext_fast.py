"""The faster LaTeX/HTML -> index text of the Lucene baseline writes the same text as before.

``_before_*`` below is the conversion as it was before it was batched per post (commit
6f21b19, baselines/lucene/lucene_baseline/mathtext.py): one regex callback and one
translate per formula. A differential test compares both on generated bodies built from
the pieces that matter (formula spans, commands, a backslash at a formula's end,
entities, ``$``, tags, line breaks, non-ASCII) and on every post of the bundled and a
synthetic ARQMath collection.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "baselines" / "lucene"))

from lucene_baseline.mathtext import html_to_index_text, latex_tokens  # noqa: E402

from sharedtask.formats import Answer, read_posts  # noqa: E402

# ---------------------------------------------------------------- the conversion before (reference)

_B_SYMBOLS = {"^": " sup ", "_": " sub ", "=": " eq ", "+": " plus ", "-": " minus ", "*": " times ",
              "/": " slash ", "<": " lt ", ">": " gt ", "!": " fact ", "|": " vbar ", "'": " prime "}
_B_TRANSLATE = str.maketrans({**{c: " " for c in "{}[]();,&~:$"}, **_B_SYMBOLS})
_B_COMMAND = re.compile(r"\\([A-Za-z]+)|\\.")
_B_LAYOUT = frozenset(
    "left right big Big bigg Bigg bigl bigr Bigl Bigr quad qquad displaystyle textstyle "
    "scriptstyle limits nolimits mathrm text textrm operatorname mbox hspace vspace".split())
_B_SPAN = re.compile(r'<span class="math-container"[^>]*>(.*?)</span>', re.S)
_B_TAG = re.compile(r"<[^>]+>")
_B_INLINE = re.compile(r"\$\$?([^$]+)\$?\$")


def _before_command(match: re.Match[str]) -> str:
    name = match.group(1)
    return " " if name is None or name in _B_LAYOUT else f" {name} "


def _before_latex_tokens(latex: str) -> str:
    text = _B_COMMAND.sub(_before_command, latex) if "\\" in latex else latex
    return " ".join(text.translate(_B_TRANSLATE).split())


def _before_index_text(body: str) -> str:
    text = body
    if "math-container" in text:
        text = _B_SPAN.sub(lambda m: " " + _before_latex_tokens(html.unescape(m.group(1))) + " ", text)
    if "<" in text:
        text = _B_TAG.sub(" ", text)
    if "&" in text:
        text = html.unescape(text)
    if "$" in text:
        text = _B_INLINE.sub(lambda m: " " + _before_latex_tokens(m.group(1)) + " ", text)
    return " ".join(text.split())


# ---------------------------------------------------------------- generated bodies

_latex_piece = st.sampled_from([
    r"\frac", r"\left", r"\leftarrow", r"\bigl", r"\big", r"\\", "\\", r"\{", r"\,", "\\\n", "12", "x", "^", "_",
    "{", "}", "=", "&lt;", "&gt;", "&amp;", "&amp", "&#92;", "&#x5c;", "&#1;", "&#10;", "&NewLine;", "'", "|",
    "$", "$$", " ", "\n", "\u00e9", "\u2212", "\x01", "<", ">", "a", "\\alpha1", "\\text{if}", "&quot;",
    "</span", "/span>", "<</", "\r",
])
_latex = st.lists(_latex_piece, max_size=8).map("".join)
_span = _latex.map(lambda tex: f'<span class="math-container" id="1">{tex}</span>')
_outside = st.sampled_from(["<p>", "</p>", "word", " ", "\n", "$", "$$", "&amp", "&lt;", "<", ">", "\\", "a\\",
                            "\\left", "<b", "b>", "\u00a0", "x", "1", "&#36;", "\x01",
                            '<span class="math-container" id="2">', "</span>", "</span", "/span>"])
_body = st.lists(st.one_of(_span, _outside), max_size=12).map("".join)


@settings(max_examples=1500, deadline=None)
@given(_body)
def test_index_text_is_the_same_as_before_on_generated_bodies(body: str) -> None:
    assert html_to_index_text(body) == _before_index_text(body)


@settings(max_examples=500, deadline=None)
@given(_latex)
def test_latex_tokens_are_the_same_as_before(latex: str) -> None:
    assert latex_tokens(latex) == _before_latex_tokens(latex)


def test_index_text_is_the_same_as_before_on_whole_collections(tmp_path: Path) -> None:
    from sharedtask.samples.synthetic import write_arqmath

    write_arqmath(tmp_path, answers=3000)
    posts = [REPO / "tasks" / "samples" / "arqmath-task1" / "input" / "Posts.xml", tmp_path / "input" / "Posts.xml"]
    checked = 0
    for path in posts:
        for post in read_posts(path):
            text = post.body if isinstance(post, Answer) else post.title
            assert html_to_index_text(text) == _before_index_text(text), (path, post.id)
            checked += 1
    assert checked > 3000
