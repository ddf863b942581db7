"""Math Stack Exchange HTML as used in ARQMath posts and topics: formula spans and plain text.

Each formula is ``<span class="math-container" id="FORMULA_ID">LATEX</span>``
(docs/formats.md); the LaTeX may still carry ``$``/``$$``
delimiters, which are stripped defensively.
"""

from __future__ import annotations

import html as _html
import re
from typing import Callable

# The tag's attributes in group 1, the (HTML-escaped) LaTeX in group 2.
_SPAN = re.compile(
    r"<span(\s[^>]*?\bclass\s*=\s*[\"']math-container[\"'][^>]*)>(.*?)</span\s*>",
    re.S | re.I,
)
_ID = re.compile(r"\bid\s*=\s*[\"']([^\"']*)[\"']", re.I)
_BLOCK = re.compile(r"<\s*(?:br|hr)\b[^>]*>|</\s*(?:p|div|li|h[1-6]|pre|blockquote|tr|ol|ul)\s*>", re.I)
_TAG = re.compile(r"<[^>]*>")
_SPACES = re.compile(r"[ \t\f\v\r\xa0]+")


def strip_dollars(latex: str) -> str:
    """Remove one pair of ``$$…$$`` or ``$…$`` delimiters around a formula, if present."""
    tex = latex.strip()
    if len(tex) >= 4 and tex.startswith("$$") and tex.endswith("$$"):
        return tex[2:-2].strip()
    if len(tex) >= 2 and tex.startswith("$") and tex.endswith("$"):
        return tex[1:-1].strip()
    return tex


def formula_spans(html: str) -> list[tuple[str | None, str]]:
    """All ``(formula_id, latex)`` pairs of an HTML body, in document order.

    The LaTeX is HTML-unescaped and stripped of ``$`` delimiters; a span without an
    ``id`` attribute yields ``None`` as its id.
    """
    out: list[tuple[str | None, str]] = []
    if "math-container" not in html:
        return out
    for m in _SPAN.finditer(html):
        ident = _ID.search(m.group(1))
        out.append((ident.group(1) if ident else None, strip_dollars(_html.unescape(m.group(2)))))
    return out


def replace_formula_spans(html: str, replace: Callable[[str | None, str], str]) -> str:
    """``html`` with each formula span replaced by ``replace(formula_id, latex)`` (the LaTeX
    unescaped and stripped of ``$`` delimiters, as :func:`formula_spans` gives it)."""
    if "math-container" not in html:
        return html

    def one(m: re.Match[str]) -> str:
        ident = _ID.search(m.group(1))
        return replace(ident.group(1) if ident else None, strip_dollars(_html.unescape(m.group(2))))

    return _SPAN.sub(one, html)


def html_to_text(html: str, *, math: str = "dollars") -> str:
    """Plain text of an HTML body with its formulae kept as LaTeX.

    ``math="dollars"`` writes each formula as ``$latex$`` (readable answers),
    ``math="raw"`` as bare LaTeX (indexing). Block tags become line breaks; runs of
    spaces collapse; blank lines are dropped.
    """
    if math not in ("dollars", "raw"):
        raise ValueError("math must be 'dollars' or 'raw'")
    fmt = "${}$" if math == "dollars" else " {} "

    def formula(m: re.Match[str]) -> str:
        # still HTML-escaped here, so '<' in LaTeX cannot be mistaken for a tag below
        return fmt.format(strip_dollars(m.group(2)))

    text = _SPAN.sub(formula, html) if "math-container" in html else html
    text = _BLOCK.sub("\n", text)
    text = _TAG.sub("", text)
    text = _html.unescape(text)
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line)
