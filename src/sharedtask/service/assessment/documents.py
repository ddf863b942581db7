"""What an assessor reads: each topic as its readers see it and each pooled item, as safe HTML.

Made once when a campaign opens (``documents.json`` in the campaign's folder), for the pooled
items only: a page then reads a small file kept in memory instead of scanning a corpus of
gigabytes per request.

Safety: a document's HTML (ARQMath posts are Math Stack Exchange HTML) is cleaned by Ammonia
(``nh3``): only formatting tags and plain ``http(s)``/``mailto`` links survive; scripts, event
handlers, ``javascript:`` URLs, styles and frames are removed. Formulae become MathML from their
LaTeX (``latex2mathml``, which builds the tree with ElementTree, so a formula's text is escaped);
browsers render MathML natively, no script and no CDN. Everything else is text, escaped. The
pages add a Content-Security-Policy that runs only the service's own script, a second wall.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any, Iterable

#: tags a post may keep (formatting only); attributes: links' href and title
TAGS = {"p", "br", "hr", "a", "b", "strong", "i", "em", "u", "s", "sub", "sup", "code", "pre", "blockquote",
        "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
        "span", "div", "dl", "dt", "dd", "kbd", "details", "summary"}
#: the MathML latex2mathml writes (Presentation MathML), and the attributes that shape it
MATH_TAGS = {"math", "mrow", "mi", "mo", "mn", "ms", "msup", "msub", "msubsup", "mfrac", "msqrt", "mroot", "mtext",
             "mspace", "mtable", "mtr", "mtd", "mover", "munder", "munderover", "mstyle", "menclose", "mpadded",
             "mphantom", "merror"}
ATTRIBUTES = {"a": {"href", "title"}, "th": {"scope"}, "p": {"class"}, "code": {"class"},
              "math": {"display"}, "mi": {"mathvariant"}, "mn": {"mathvariant"}, "mtext": {"mathvariant"},
              "mo": {"stretchy", "fence", "separator", "lspace", "rspace", "form", "movablelimits", "minsize",
                     "maxsize", "symmetric"},
              "mstyle": {"displaystyle", "scriptlevel", "mathvariant"}, "mspace": {"width"},
              "mtable": {"columnalign", "rowspacing", "columnspacing", "columnlines", "rowlines"},
              "mtd": {"columnalign"}, "menclose": {"notation"}, "mfrac": {"linethickness"}}
URL_SCHEMES = {"http", "https", "mailto"}


def clean(markup: str) -> str:
    """Ammonia's clean with the tags above: nothing that runs survives (module docstring).

    Why the MathML goes through it too: latex2mathml copies ``\\text{...}`` into ``<mtext>``
    unescaped, so a formula can carry markup (``\\text{<img onerror=...>}``).
    """
    import nh3

    return nh3.clean(markup, tags=TAGS | MATH_TAGS, attributes=ATTRIBUTES, url_schemes=URL_SCHEMES,
                     link_rel="noopener noreferrer nofollow")


def _mathml(latex: str, *, display: bool = False) -> str:
    """A formula as (uncleaned) MathML; LaTeX that latex2mathml cannot read is shown as code."""
    import latex2mathml.converter

    try:
        return latex2mathml.converter.convert(latex, display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - a post's LaTeX is often broken; it is shown as text then
        return f'<code class="latex">{html.escape(latex)}</code>'


def mathml(latex: str, *, display: bool = False) -> str:
    """A formula as cleaned MathML, which browsers render natively (no script, no CDN)."""
    return clean(_mathml(latex, display=display))


def safe_html(body: str) -> str:
    """A post's HTML with its formulae as MathML and nothing that could run (module docstring)."""
    from sharedtask.formats.html import replace_formula_spans

    return clean(replace_formula_spans(body, lambda _formula_id, latex: _mathml(latex)))


def text_html(text: str) -> str:
    """Plain text (an argument, a Touché topic) as escaped paragraphs."""
    return "".join(f"<p>{html.escape(part)}</p>" for part in re.split(r"\n\s*\n", text.strip()) if part.strip())


def answer_text_html(text: str) -> str:
    """A written answer (ARQMath-3 Task 3): its text escaped, its ``$...$``, ``$$...$$``,
    ``\\(...\\)`` and ``\\[...\\]`` formulae as MathML, as Task 3 answers are written
    (ARQMath-3 Task 3 guidelines: LaTeX between dollar signs)."""
    from sharedtask.answers.equivalence import math_spans

    out, cursor = [], 0
    for start, end, latex in math_spans(text):
        out.append(html.escape(text[cursor:start]))
        out.append(_mathml(latex, display=text.startswith(("$$", "\\["), start)))
        cursor = end
    out.append(html.escape(text[cursor:]))
    return f'<p class="answer">{clean("".join(out))}</p>'


# ----------------------------------------------------------------------------- topics


def topics_html(task: Any, input_dir: Path) -> dict[str, str]:
    """Each topic as its readers see it (the family's ``assessment_topics``)."""
    return _hook(task, "assessment_topics")(task, input_dir)


def _hook(task: Any, name: str) -> Any:
    from sharedtask import families

    family = families.get(task.family)
    hook = getattr(family, name)
    if hook is None:
        raise NotImplementedError(f"assessment pages for {family.title} tasks")
    return families.resolve(hook)


def arqmath_topics_html(task: Any, input_dir: Path) -> dict[str, str]:
    """ARQMath: the question with its formulae (Task 2: and the query formula marked)."""
    from sharedtask.formats.arqmath import read_arqmath_topics

    out: dict[str, str] = {}
    for t in read_arqmath_topics(input_dir / "topics.xml"):
        parts = [f'<h2 class="topic-title">{safe_html(t.title)}</h2>', f'<div class="question">{safe_html(t.question)}</div>']
        if t.latex:
            parts.insert(1, f'<p class="query-formula">Query formula: {mathml(t.latex, display=True)}</p>')
        if t.tags:
            parts.append(f'<p class="tags">tags: {html.escape(", ".join(t.tags))}</p>')
        out[t.number] = "".join(parts)
    return out


def touche_topics_html(task: Any, input_dir: Path) -> dict[str, str]:
    """Touché: title, description and narrative."""
    from sharedtask.formats.touche import read_touche_topics

    return {t.number: (f'<h2 class="topic-title">{html.escape(t.title)}</h2>'
                       + (f'<h3>Description</h3>{text_html(t.description)}' if t.description else "")
                       + (f'<h3>Narrative</h3>{text_html(t.narrative)}' if t.narrative else ""))
            for t in read_touche_topics(input_dir / "topics.xml")}


# ----------------------------------------------------------------------------- items


def items_html(task: Any, input_dir: Path, wanted: Iterable[str]) -> dict[str, str]:
    """The pooled items (and only those), one scan of the corpus (the family's ``assessment_items``)."""
    return _hook(task, "assessment_items")(task, input_dir, set(wanted))


def answer_items_html(task: Any, input_dir: Path, wanted: set[str]) -> dict[str, str]:
    """ARQMath Task 1 (and Task 3, judged in its pool): answer posts."""
    from sharedtask.formats.arqmath import Answer, read_posts

    return {p.id: safe_html(p.body) for p in read_posts(input_dir / "Posts.xml")
            if isinstance(p, Answer) and p.id in wanted}


def formula_items_html(task: Any, input_dir: Path, wanted: set[str]) -> dict[str, str]:
    """ARQMath Task 2: formulae (by formula id or visual id) with the post they appear in."""
    return _formulae(input_dir, wanted)


def argument_items_html(task: Any, input_dir: Path, wanted: set[str]) -> dict[str, str]:
    """Touché: arguments, conclusion first."""
    from sharedtask.formats.argsme import read_argsme_dir

    out: dict[str, str] = {}
    for arg in read_argsme_dir(input_dir):
        if arg.id in wanted:
            premises = "".join(f'<p class="premise">{html.escape(p.stance or "")}{" " if p.stance else ""}'
                               f'{html.escape(p.text)}</p>' for p in arg.premises)
            out[arg.id] = (f'<p class="conclusion"><strong>{html.escape(arg.conclusion)}</strong></p>{premises}'
                           + (f'<p class="source">{html.escape(arg.discussion_title)}</p>'
                              if arg.discussion_title else ""))
    return out


def _formulae(input_dir: Path, wanted: set[str]) -> dict[str, str]:
    """Task 2 items: a formula (id or visual id) rendered, and the post it was found in."""
    from sharedtask.formats.arqmath import read_posts
    from sharedtask.formats.formulas import read_formula_index

    found: dict[str, tuple[str, str]] = {}  # item -> (latex, post id)
    for rec in read_formula_index(input_dir / "formulas"):
        for key in (rec.id, rec.visual_id):
            if key in wanted and key not in found:
                found[key] = (rec.formula, rec.post_id)
    posts = {post_id for _, post_id in found.values()}
    bodies = {p.id: safe_html(p.body) for p in read_posts(input_dir / "Posts.xml") if p.id in posts}
    return {item: (f'<p class="formula">{mathml(latex, display=True)}</p>'
                   + (f'<details><summary>the post it appears in</summary>{bodies[post]}</details>'
                      if post in bodies else ""))
            for item, (latex, post) in found.items()}


def write_documents(path: Path, topics: dict[str, str], items: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"topics": topics, "items": items}), encoding="utf-8")
    tmp.replace(path)
