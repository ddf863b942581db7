"""What an assessor reads: safe HTML of posts, formulae as MathML, topics as their readers see them.

No server: the functions the campaign calls when it opens, on the shipped samples and on
hostile markup. The cleaner's verdicts are checked by parsing its output with the standard
library's HTMLParser (independent of Ammonia), looking for anything that could run.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from sharedtask.service.assessment import documents
from sharedtask.service.assessment.scale import scales_of
from sharedtask.spec import load_task

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "tasks" / "samples"


class Runnable(HTMLParser):
    """Counts what could run in a browser: script/style/iframe/object/embed/img/svg elements,
    event-handler attributes, and URLs that are not http(s), mailto or relative."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "iframe", "object", "embed", "img", "svg", "link", "meta", "base", "form"):
            self.found.append(tag)
        for name, value in attrs:
            if name.startswith("on") or name in ("style", "srcdoc", "formaction"):
                self.found.append(f"{tag}@{name}")
            if name in ("href", "src", "action") and value and ":" in value.split("/")[0] \
                    and not value.lower().startswith(("http:", "https:", "mailto:")):
                self.found.append(f"{tag}@{name}={value}")


def runnable(markup: str) -> list[str]:
    parser = Runnable()
    parser.feed(markup)
    return parser.found


HOSTILE = [
    '<script>alert(1)</script>',
    '<img src=x onerror="alert(1)">',
    '<a href="javascript:alert(1)">x</a>',
    '<a href="JaVaScRiPt:alert(1)">x</a>',
    '<a href="data:text/html,<script>alert(1)</script>">x</a>',
    '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    '<svg><script>alert(1)</script></svg>',
    '<math><mtext><img src=x onerror=alert(1)></mtext></math>',
    '<p style="background:url(javascript:alert(1))" onclick="alert(1)">x</p>',
    '<form action="javascript:alert(1)"><button>x</button></form>',
    '<span class="math-container" id="1">$\\text{<img src=y onerror=alert(1)>} x$</span>',
    '<span class="math-container" id="2">$\\text{<script>alert(1)</script>}$</span>',
]


@pytest.mark.parametrize("markup", HOSTILE)
def test_nothing_that_could_run_survives_the_cleaner(markup):
    cleaned = documents.safe_html(f"<p>before</p>{markup}<p>after</p>")
    assert runnable(cleaned) == [], cleaned
    assert "before" in cleaned and "after" in cleaned


def test_formulae_become_mathml_and_formatting_stays():
    cleaned = documents.safe_html('<p>Let <span class="math-container" id="5">$\\frac{a}{b}$</span> be '
                                  '<strong>small</strong>, see <a href="https://math.stackexchange.com/q/1">this</a>.</p>')
    assert "<math" in cleaned and "<mfrac>" in cleaned and "<mi>a</mi>" in cleaned
    assert "<strong>small</strong>" in cleaned and 'href="https://math.stackexchange.com/q/1"' in cleaned


def test_every_sample_topic_and_item_is_shown_as_its_readers_see_it():
    task1 = load_task("arqmath-3-task1")
    topics = documents.topics_html(task1, SAMPLES / "arqmath-task1" / "input")
    assert "A.301" in topics and "<math" in topics["A.301"] and "geometric series" in topics["A.301"]
    items = documents.items_html(task1, SAMPLES / "arqmath-task1" / "input", {"12", "16", "11"})
    assert set(items) == {"12", "16"}  # answers only: 11 is a question
    assert all("<math" in html for html in items.values())

    task2 = load_task("arqmath-3-task2")
    topics2 = documents.topics_html(task2, SAMPLES / "arqmath-task2" / "input")
    assert 'class="query-formula"' in topics2["B.301"]
    items2 = documents.items_html(task2, SAMPLES / "arqmath-task2" / "input", {"768", "1001"})
    assert set(items2) == {"768", "1001"}  # a visual id and a formula id
    assert all('<p class="formula"><math' in html for html in items2.values())

    touche2020 = documents.topics_html(load_task("touche-2020-task1"), SAMPLES / "touche-2020" / "input")
    assert "tenure" in touche2020["1"] and "<h3>Description</h3>" in touche2020["1"]
    assert "<h3>Narrative</h3>" in touche2020["1"]
    touche = load_task("touche-2021-task1")  # its topics are titles only
    topics3 = documents.topics_html(touche, SAMPLES / "touche-2021" / "input")
    assert topics3["51"] == '<h2 class="topic-title">Do we need sex education in schools?</h2>'
    first = next(line.split()[2] for line in (SAMPLES / "touche-2021" / "truth" / "qrels.txt").read_text().splitlines())
    assert 'class="conclusion"' in documents.items_html(touche, SAMPLES / "touche-2021" / "input", {first})[first]


def test_scales_come_from_the_spec_and_refuse_grades_outside_them():
    from sharedtask.errors import SharedTaskError

    touche = scales_of(load_task("touche-2021-task1"))
    assert [g.grade for g in touche.relevance] == [3, 2, 1, 0] and touche.quality is not None
    touche.check(2, 3)
    with pytest.raises(SharedTaskError, match="quality too"):
        touche.check(2, None)
    arq = scales_of(load_task("arqmath-3-task1"))
    assert arq.quality is None and arq.relevance[0].label == "High"
    with pytest.raises(SharedTaskError, match="not on the relevance scale"):
        arq.check(4, None)
    with pytest.raises(SharedTaskError, match="declares no judging scale"):
        scales_of(load_task("mathqa-test"))
