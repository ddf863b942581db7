"""Server-rendered pages: task list, team page, organizer overview; leaderboards are report pages.

No JavaScript: a page with runs still in progress reloads itself (``<meta refresh>``).
Everything a team controls (tags, commands, logs, findings, notes) goes through
:func:`sharedtask.report.html.e` (``html.escape``) or the report renderer, which
escapes the same way; log text is also stripped of terminal controls on display.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Iterable

from zoneinfo import available_timezones

from sharedtask.report.html import e, fmt_score, fmt_when, render_html, stylesheet
from sharedtask.report.model import RunEntry, TaskSection
from sharedtask.service import phases, selection, visibility
from sharedtask.service.entries import PENDING, tag_label
from sharedtask.service.models import Phase, Submission, TaskSettings, Team, utcnow

REFRESH_SECONDS = 3


def report_page(task: Any, entries: list[RunEntry], title: str, board: Any = None, zone: Any = None) -> str:
    """The same page as ``report.html`` (tables, per-topic charts, findings, records) for these runs;
    ``zone``: the reader's, for the times shown (next to UTC)."""
    return render_html([TaskSection(task=task, runs=entries, board=board, zone=zone)], title=title)


#: the site's navigation, on every page (the report pages get it by :func:`with_nav`)
NAV = ('<nav class="site" aria-label="site" style="padding:.5em 2em"><a href="/">tasks</a> · '
       '<a href="/team">my submissions</a> · <a href="/organizer">organizer</a> · '
       '<a href="/openapi.json">API (OpenAPI)</a></nav>')


def with_nav(page: str, banner: str = "") -> str:
    """A report page (rendered by sharedtask.report) with the site's navigation, and ``banner``
    (HTML, escaped by the caller) at the top of its content, under the page's header."""
    return page.replace("<body>", f"<body>{NAV}", 1).replace("<main>", f"<main>{banner}", 1)


def failure_banner(entry: RunEntry, sub: Submission) -> str:
    """A failed run's reason at the top of its page: the last note this viewer may see (blind
    mode: the service's fixed notes only), else the run's status word."""
    if sub.status != "failed":
        return ""
    reason = entry.notes[-1] if entry.notes else f"the run ended with status {entry.status}"
    return f'<p class="failure" role="alert"><strong>This run failed:</strong> {e(reason)}</p>'


def _page(title: str, body: str, *, refresh: bool = False, who: str | None = None) -> str:
    meta = f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">' if refresh else ""
    signed = (f'<p class="meta">signed in as {e(who)} <form method="post" action="/logout" style="display:inline">'
              '<button>sign out</button></form></p>') if who else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"{meta}<title>{e(title)} · sharedtask</title><style>{stylesheet()}</style></head><body>{NAV}"
            f'<header class="page"><h1>{e(title)}</h1>{signed}</header><main>{body}</main></body></html>\n')


def _local(value: dt.datetime | None) -> str:
    """A UTC time as an ``<input type="datetime-local">`` value."""
    return value.strftime("%Y-%m-%dT%H:%M") if value else ""


def zone_form(path: str, tz: Any, keep: dict[str, str] | None = None) -> str:
    """A small form that sets the reader's zone (a list of the IANA names this machine knows); the
    choice is kept in a cookie that every page with times reads (``web.common.reader_zone``).
    ``keep``: the page's other query parameters, sent again with the zone."""
    current = tz.key if tz else "UTC"
    options = "".join(f'<option{" selected" if name == current else ""}>{e(name)}</option>'
                      for name in ["UTC", *sorted(available_timezones())])
    hidden = "".join(f'<input type="hidden" name="{e(k)}" value="{e(v)}">' for k, v in (keep or {}).items())
    return (f'<form method="get" action="{e(path)}" class="zone">{hidden}<label for="tz">show times also in</label> '
            f'<select id="tz" name="tz">{options}</select> <button>show</button></form>')


def phase_board_link(task_id: str, phase: Phase, now: dt.datetime, tz: Any, *, named: bool = False) -> str:
    """A phase's leaderboard as the public may reach it: a link when it may be seen, "opens <date>"
    while the phase keeps its scores back (it opens when the phase closes), else "not public"."""
    label = f"phase {e(phase.name)}" if named else "leaderboard"
    if selection.may_see(phase, False, now):
        return f'<a href="/tasks/{e(task_id)}/phases/{e(phase.name)}/leaderboard">{label}</a>'
    opens = selection.board_opens(phase, now)
    if opens is not None:
        return f'<span class="opens">{label + " " if named else ""}opens {fmt_when(opens, tz)}</span>'
    return f'<span class="empty">{label + " " if named else ""}not public</span>'


def task_list(tasks: Iterable[Any], settings: dict[str, TaskSettings], now: dt.datetime, tz: Any = None,
              calendars: dict[str, list[Phase]] | None = None) -> str:
    """The home page: each task, whether it takes submissions, and its boards the public may open
    (the task's once published; each phase's by its own rule). "not published" only when none is."""
    rows = []
    for task in tasks:
        s = settings.get(task.id)
        state = "open"
        if s and s.opens and now < s.opens:
            state = f"opens {fmt_when(s.opens, tz)}"
        elif s and s.closes and now >= s.closes:
            state = f"closed {fmt_when(s.closes, tz)}"
        elif s and s.closes:
            state = f"open until {fmt_when(s.closes, tz)}"
        boards = [f'<a href="/tasks/{e(task.id)}/leaderboard">leaderboard</a>'] if s and s.published else []
        boards += [phase_board_link(task.id, p, now, tz, named=True) for p in (calendars or {}).get(task.id, [])
                   if p.leaderboard_public]
        board = " · ".join(boards) or '<span class="empty">not published</span>'
        rows.append(f'<tr class="task-row" data-task="{e(task.id)}"><td><code>{e(task.id)}</code></td>'
                    f'<td><a href="/tasks/{e(task.id)}">{e(task.title)}</a></td><td>{state}</td><td>{board}</td></tr>')
    table = ('<table><thead><tr><th scope="col">task</th><th scope="col">title</th><th scope="col">submissions</th>'
             f'<th scope="col">leaderboards</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')
    return _page("tasks", f'<section class="task">{zone_form("/", tz)}{table}</section>')


def queue_place(sub: Submission, ahead: dict[int, int] | None) -> str:
    """``queued, N ahead of it`` for a queued submission whose place in the line is known, else its status."""
    if sub.status != "queued" or ahead is None or sub.id not in ahead:
        return e(sub.status)
    n = ahead[sub.id]
    return f'queued, <span class="ahead" data-ahead="{n}">{n} ahead of it</span>'


def queue_banner(sub: Submission, ahead: dict[int, int] | None) -> str:
    """A queued run's place in the line at the top of its page."""
    if sub.status != "queued" or ahead is None or sub.id not in ahead:
        return ""
    return f'<p class="queue" role="status"><strong>Waiting to run:</strong> {queue_place(sub, ahead)}.</p>'


def _rows(subs: list[tuple[Submission, str]], primary: dict[str, str], *, organizer: bool,
          blind: bool = False, ahead: dict[int, int] | None = None, tz: Any = None) -> str:
    """One table row per submission; ``blind``: only the fields of the blind allow-list;
    ``ahead``: the queued submissions' places in the line (:func:`queue_place`); ``tz``: the
    reader's zone, shown next to UTC."""
    out = []
    for sub, team in subs:
        key = primary.get(sub.task_id, "")
        if blind:
            view = visibility.blind_view(sub, team)
            scores, valid, run_status = view["scores"], view["valid"], view["run_status"]
        else:
            scores, valid, run_status = sub.scores, sub.valid, sub.run_status
        score = fmt_score((scores or {}).get(key)) if scores else "—"
        verdict = "valid" if valid else "invalid" if valid is False else "—"
        hidden = f'<br><span class="badge warning">hidden: {e(sub.hidden_reason)}</span>' if sub.hidden_reason else ""
        actions = "" if organizer else f"<td>{_final(sub)}</td>"
        if organizer:
            actions = (f'<td><form method="post" action="/organizer/submissions/{sub.id}/rerun">'
                       '<button>re-run</button></form>'
                       f'<form method="post" action="/organizer/submissions/{sub.id}/hide">'
                       f'<input name="reason" placeholder="reason" aria-label="reason to hide run {sub.id}" required>'
                       '<button>hide</button></form></td>')
        out.append(f'<tr class="submission" data-id="{sub.id}" data-status="{e(sub.status)}">'
                   f'<td><a href="/submissions/{sub.id}">#{sub.id}</a></td><td>{e(team)}</td>'
                   f"<td><code>{e(sub.task_id)}</code>{_phase(sub)}</td><td>{e(tag_label(sub))}</td>"
                   f'<td class="status">{queue_place(sub, ahead)}{hidden}</td><td>{e(run_status or "—")}</td>'
                   f"<td>{verdict}</td><td>{score}</td><td>{fmt_when(sub.created, tz)}</td>"
                   f'<td class="worker">{e(sub.worker or "—")}</td>{actions}</tr>')
    head = ("<tr><th>#</th><th>team</th><th>task</th><th>tag</th><th>status</th><th>run</th><th>validation</th>"
            "<th>primary score</th><th>submitted</th><th>worker</th>"
            + ("<th>actions</th>" if organizer else "<th>final run</th>") + "</tr>")
    return f"<table><thead>{head}</thead><tbody>{''.join(out)}</tbody></table>"


def _phase(sub: Submission) -> str:
    return f' <span class="meta">phase {e(sub.phase_name)}</span>' if sub.phase_name else ""


def _final(sub: Submission) -> str:
    """The team's select / unselect button for a run of a phase that ranks selected runs."""
    phase = sub.phase
    if phase is None or phase.max_selected is None:
        return "—"
    if phases.state(phase, utcnow()) == "closed":  # the API answers 403 then: no button that cannot work
        return "selected (final)" if sub.selected else "—"
    if sub.selected:
        return (f'selected <form method="post" action="/submissions/{sub.id}/unselect">'
                f'<button aria-label="unselect run {sub.id}">unselect</button></form>')
    if sub.status != "done" or sub.valid is False:
        return "—"
    return (f'<form method="post" action="/submissions/{sub.id}/select">'
            f'<button aria-label="select run {sub.id} as final">select</button></form>')


def team_page(team: Team, subs: list[tuple[Submission, str]], primary: dict[str, str], *,
              blind: bool = False, ahead: dict[int, int] | None = None,
              left: list[tuple[str, int, int]] = (), tz: Any = None) -> str:
    pending = any(sub.status in PENDING for sub, _ in subs)
    body = (_rows(subs, primary, organizer=False, blind=blind, ahead=ahead, tz=tz) if subs else
            '<p class="empty">No submissions yet: <code>sharedtask submit --server URL --token T --task ID '
            "--image IMAGE</code></p>")
    if left:  # the quota, before the team finds it by a refusal
        body = ('<p class="quota">Submissions left today (UTC): '
                + ", ".join(f'<span data-task="{e(task)}"><code>{e(task)}</code> {max(limit - used, 0)} of {limit}'
                            "</span>" for task, used, limit in left) + "</p>" + body)
    body = zone_form("/team", tz) + body
    return _page(f"submissions of {team.name}", f'<section class="task">{body}</section>', refresh=pending,
                 who=team.name)


def organizer_page(subs: list[tuple[Submission, str]], primary: dict[str, str], tasks: Iterable[Any],
                   settings: dict[str, TaskSettings], teams: list[Team], ahead: dict[int, int] | None = None,
                   tz: Any = None) -> str:
    pending = any(sub.status in PENDING for sub, _ in subs)
    task_rows = []
    for task in tasks:
        s = settings.get(task.id)
        published = bool(s and s.published)
        action = "unpublish" if published else "publish"
        task_rows.append(f'<tr class="task-row" data-task="{e(task.id)}"><td><code>{e(task.id)}</code></td>'
                         f"<td>{'published' if published else 'hidden'}</td>"
                         f"<td>{e(s.daily_limit) if s and s.daily_limit else '—'}</td>"
                         f'<td><form method="post" action="/organizer/tasks/{e(task.id)}/{action}">'
                         f"<button>{action}</button></form></td>"
                         f'<td><form method="post" action="/organizer/tasks/{e(task.id)}/settings">'
                         f'<label for="{e(task.id)}-s-opens">opens</label> <input id="{e(task.id)}-s-opens" '
                         f'type="datetime-local" name="opens" value="{_local(s.opens if s else None)}"> '
                         f'<label for="{e(task.id)}-s-closes">closes</label> <input id="{e(task.id)}-s-closes" '
                         f'type="datetime-local" name="closes" value="{_local(s.closes if s else None)}"> '
                         f'<label for="{e(task.id)}-s-daily">per day</label> <input id="{e(task.id)}-s-daily" '
                         f'type="number" min="1" name="daily_limit" style="width:5em" '
                         f'value="{e(s.daily_limit) if s and s.daily_limit else ""}"> <button>save (UTC)</button>'
                         "</form></td>"
                         f'<td><a href="/api/tasks/{e(task.id)}/archive">runs + records (.tar.gz)</a></td></tr>')
    tasks_html = ("<h3>tasks</h3><table><thead><tr><th>task</th><th>leaderboard</th><th>daily limit</th>"
                  "<th></th><th>submissions open (UTC)</th><th>download</th></tr></thead>"
                  f"<tbody>{''.join(task_rows)}</tbody></table>")
    teams_html = ("<h3>teams</h3><p>" + (", ".join(e(t.name) for t in teams if not t.organizer) or "none yet")
                  + '</p><form method="post" action="/organizer/teams"><input name="name" placeholder="team name" '
                  'aria-label="name of a new team" required><button>create team</button></form>')
    subs_html = "<h3>submissions</h3>" + (_rows(subs, primary, organizer=True, ahead=ahead, tz=tz) if subs else
                                          '<p class="empty">No submissions yet.</p>')
    return _page("organizer overview",
                 f'<section class="task">{zone_form("/organizer", tz)}{tasks_html}{teams_html}{subs_html}</section>',
                 refresh=pending, who="organizer")


def message_page(title: str, text: str, *, login: bool = False) -> str:
    form = ('<form method="post" action="/login"><input name="token" type="password" placeholder="token" '
            'aria-label="your token" required>'
            "<button>sign in</button></form>") if login else ""
    return _page(title, f'<section class="task"><p>{e(text)}</p>{form}</section>')
