"""The assessor's pages and the organizer's assessment page, as HTML strings.

Every value a team, an assessor or a corpus controls is escaped here (``e``), except the
documents' HTML, which :mod:`sharedtask.service.assessment.documents` cleaned when the campaign
opened. The pages run one script, the service's own (``/assess/static/assess.js``); the
Content-Security-Policy sent with them allows no other.
"""

from __future__ import annotations

import json
from typing import Any

from sharedtask.report.html import e, stylesheet

#: what a page may load: its own script and the service's API, inline styles, no frames, no plugins
CSP = ("default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")

NAV = ('<nav class="site" aria-label="site" style="padding:.5em 2em"><a href="/assess">my topics</a>'
       '<form method="post" action="/assess/logout" style="display:inline"> · <button>sign out</button></form></nav>')

STYLE = """
.item{border:1px solid #ccc;border-radius:6px;padding:.6em 1em;margin:1em 0}
.item:focus,.item.current{outline:3px solid #2563eb}
.item.judged{background:#f0fdf4}
.scale dt{font-weight:bold}.scale dd{margin:0 0 .4em 1em}
fieldset{display:inline-block;border:0;margin:0 1em 0 0;padding:0}
.status{font-weight:bold}
kbd{border:1px solid #999;border-radius:3px;padding:0 .3em}
math{font-size:1.1em}
"""


def page(title: str, body: str, *, script: bool = False, nav: str = NAV) -> str:
    tag = '<script src="/assess/static/assess.js" defer></script>' if script else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(title)} · sharedtask</title><style>{stylesheet()}{STYLE}</style>{tag}</head><body>{nav}"
            f'<header class="page"><h1>{e(title)}</h1></header><main>{body}</main></body></html>\n')


def sign_in_page(message: str) -> str:
    form = ('<form method="post" action="/assess/login"><label for="token">assessor token</label> '
            '<input id="token" name="token" type="password" required> <button>sign in</button></form>')
    return page("assessor sign-in", f'<section class="task"><p>{e(message)}</p>{form}</section>', nav="")


def topics_page(name: str, rows: list[dict[str, Any]]) -> str:
    if not rows:
        body = '<p class="empty">No topic is assigned to you in an open campaign.</p>'
    else:
        lines = "".join(
            f'<tr><td><a href="/assess/campaigns/{r["campaign"]}/topics/{e(r["topic"])}">{e(r["topic"])}</a></td>'
            f'<td>{r["campaign"]}</td><td>{r["judged"]} of {r["items"]}</td></tr>' for r in rows)
        body = ('<table class="topics"><thead><tr><th scope="col">topic</th><th scope="col">campaign</th>'
                f'<th scope="col">judged</th></tr></thead><tbody>{lines}</tbody></table>')
    return page(f"topics of {name}", f'<section class="task">{body}</section>')


def _scale_html(title: str, grades: Any) -> str:
    return (f'<h3>{e(title)}</h3><dl class="scale">'
            + "".join(f"<dt>{g.grade} · {e(g.label)}</dt><dd>{e(g.definition)}</dd>" for g in grades) + "</dl>")


def _choices(name: str, legend: str, grades: Any, current: int | None, uid: str) -> str:
    radios = "".join(
        f'<input type="radio" id="{uid}-{name}-{g.grade}" name="{name}" value="{g.grade}"'
        f'{" checked" if current == g.grade else ""} required>'
        f'<label for="{uid}-{name}-{g.grade}">{g.grade} {e(g.label)}</label> ' for g in grades)
    return f"<fieldset><legend>{e(legend)}</legend>{radios}</fieldset>"


def judging_page(campaign_id: int, topic: str, topic_html: str, rows: list[Any], items: dict[str, str],
                 scales: Any, who: str) -> str:
    """One topic: the topic, the scale(s) with their definitions, every item in display order with
    its judgment form. The first item not judged yet is marked, so a break resumes where it stopped."""
    judged = sum(1 for r in rows if r.grade is not None)
    first_open = next((r.position for r in rows if r.grade is None), None)
    articles = []
    for n, r in enumerate(rows, 1):
        uid = f"i{r.position}"
        quality = (_choices("quality", "quality", scales.quality, r.quality, uid) if scales.quality else "")
        articles.append(
            f'<article class="item{" judged" if r.grade is not None else ""}" id="item-{r.position}" tabindex="-1" '
            f'data-item="{e(r.item)}" data-position="{r.position}"{" data-first-open" if r.position == first_open else ""}>'
            f'<h3>item {n} of {len(rows)} <span class="status">{"judged" if r.grade is not None else "not judged"}</span></h3>'
            f'<div class="document">{items.get(r.item, "<p><em>(document not found in the corpus)</em></p>")}</div>'
            f'<form method="post" action="/assess/campaigns/{campaign_id}/judgments">'
            f'<input type="hidden" name="topic" value="{e(topic)}"><input type="hidden" name="item" value="{e(r.item)}">'
            f'{_choices("grade", "relevance", scales.relevance, r.grade, uid)}{quality}<button>save</button></form>'
            "</article>")
    keys = ("<p class=\"keys\">Keys: <kbd>j</kbd>/<kbd>k</kbd> next/previous item, "
            + "".join(f"<kbd>{g.grade}</kbd> " for g in scales.relevance) + "relevance"
            + (", <kbd>Shift</kbd>+digit quality" if scales.quality else "")
            + "; a judgment is saved at once and can be changed until the campaign closes.</p>")
    scale = _scale_html("relevance", scales.relevance) + (_scale_html("quality", scales.quality) if scales.quality else "")
    config = json.dumps({"campaign": campaign_id, "topic": topic, "quality": scales.quality is not None,
                         "grades": [g.grade for g in scales.relevance]})
    body = (f'<section class="task"><p id="progress" role="status" data-total="{len(rows)}" data-judged="{judged}">'
            f"{judged} of {len(rows)} judged</p>"
            f'<div class="topic">{topic_html}</div><details open><summary>scale</summary>{scale}</details>{keys}'
            f'<p id="message" role="alert"></p>'
            f'<div id="config" hidden data-config="{e(config)}"></div>'
            f'{"".join(articles)}</section>')
    return page(f"topic {topic} · campaign {campaign_id}", body, script=True)


# ----------------------------------------------------------------------------- the organizer


def _num(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}" if isinstance(value, float) else e(str(value))


def organizer_page(task_id: str, runs: list[dict[str, Any]], pools: list[dict[str, Any]],
                   campaigns: list[dict[str, Any]]) -> str:
    run_rows = "".join(f"<tr><td>{r['id']}</td><td>{e(r['run'])}</td><td>{e(r['kind'])}</td></tr>" for r in runs)
    runs_html = ('<h2>runs to pool</h2><table class="runs"><thead><tr><th scope="col">id</th><th scope="col">run</th>'
                 f'<th scope="col">kind</th></tr></thead><tbody>{run_rows}</tbody></table>' if runs else
                 '<h2>runs to pool</h2><p class="empty">No finished valid run yet.</p>')
    build = (f'<form method="post" action="/organizer/tasks/{e(task_id)}/pools"><label for="seed">display seed</label> '
             '<input id="seed" name="seed" type="number"> <button>build the pool</button></form>')
    pool_rows = "".join(f"<li>pool {p['id']}: {p['items']} items over {p['topics']} topics</li>" for p in pools)
    open_form = (f'<form method="post" action="/organizer/tasks/{e(task_id)}/campaigns">'
                 '<label for="pool">pool</label> <input id="pool" name="pool" type="number" required> '
                 '<label for="assign">topics (one "topic=assessor" a line)</label> '
                 '<textarea id="assign" name="assign" rows="4" required></textarea> '
                 '<label for="share">share judged twice</label> <input id="share" name="double_share" value="0.2"> '
                 '<label for="cseed">seed</label> <input id="cseed" name="seed" type="number" value="0"> '
                 '<button>open the campaign</button></form>')
    blocks = []
    for c in campaigns:
        prog = "".join(f"<tr><td>{e(p['topic'])}</td><td>{e(p['assessor'])}</td><td>{p['judged']} of {p['items']}</td></tr>"
                       for p in c["progress"])
        a = c.get("agreement")
        agree = ("<p>agreement: not yet (no item judged by two assessors)</p>" if not a else
                 f"<p class=\"agreement\">agreement on {a['judged_by_both']} items judged by two: Cohen's κ "
                 f"{_num(a['cohen_kappa'])} graded, {_num(a['cohen_kappa_binary'])} binarized"
                 + (f", Krippendorff's α {_num(a.get('krippendorff_alpha'))}" if 'krippendorff_alpha' in a else "")
                 + "</p>")
        if a and "confusion" in a:  # two assessors: their confusion matrix (rows: the first, columns: the second)
            first, second = a["assessors"]
            labels, matrix = a["confusion"]["labels"], a["confusion"]["matrix"]
            head = "".join(f'<th scope="col">{e(second)} {g}</th>' for g in labels)
            body_rows = "".join(f'<tr><th scope="row">{e(first)} {g}</th>' + "".join(f"<td>{n}</td>" for n in row)
                                + "</tr>" for g, row in zip(labels, matrix))
            agree += (f'<table class="confusion"><caption>confusion matrix</caption><thead><tr><td></td>{head}'
                      f"</tr></thead><tbody>{body_rows}</tbody></table>")
        actions = ""
        if c["status"] != "closed":
            actions += (f'<form method="post" action="/organizer/campaigns/{c["id"]}/close">'
                        "<button>close and make the qrels the truth</button></form>")
        elif not c["published"]:
            actions += (f'<form method="post" action="/organizer/campaigns/{c["id"]}/publish">'
                        "<button>publish the qrels</button></form>")
        blocks.append(f'<h3>campaign {c["id"]} · {e(c["status"])}</h3>'
                      '<table class="progress"><thead><tr><th scope="col">topic</th><th scope="col">assessor</th>'
                      f'<th scope="col">judged</th></tr></thead><tbody>{prog}</tbody></table>{agree}{actions}')
    body = (f'<section class="task">{runs_html}{build}<h2>pools</h2><ul>{pool_rows}</ul><h2>campaigns</h2>'
            f'{"".join(blocks) or "<p class=empty>No campaign yet.</p>"}{open_form}</section>')
    from sharedtask.service.web.pages import NAV as SITE_NAV

    return page(f"assessment of {task_id}", body, nav=SITE_NAV)
