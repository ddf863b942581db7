"""The competition site's pages beyond submissions: a task's page from its spec, a phase's
leaderboard, the organizer's phase form, and times in the reader's own zone.

Everything a team controls is escaped (``e``); the rest comes from the task's spec and the
organizer. No JavaScript: the reader's time zone is a choice on the page (``?tz=``, kept in a
cookie), shown next to UTC, so a date is never ambiguous.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sharedtask.report.html import e, fmt_score, fmt_when
from sharedtask.service import phases, selection
from sharedtask.service.models import Phase, Submission, TaskSettings
from sharedtask.service.entries import tag_label
from sharedtask.service.web.pages import _page, phase_board_link, report_page, with_nav, zone_form

TZ_COOKIE = "sharedtask_tz"


def zone(name: str | None) -> ZoneInfo | None:
    """The IANA zone ``name`` (``Europe/Berlin``), or None for UTC or anything unknown."""
    if not name or name == "UTC" or len(name) > 64:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def when(value: dt.datetime | None, tz: ZoneInfo | None) -> str:
    """A stored (naive UTC) time as ``<time>``, to the second: UTC, and the reader's zone when one is chosen."""
    return fmt_when(value, tz)


def calendar(task_id: str, rows: list[Phase], now: dt.datetime, tz: ZoneInfo | None) -> str:
    if not rows:
        return '<p class="empty">This task has no phases: submissions follow the task\'s dates.</p>'
    body = []
    for p in rows:
        limits = ", ".join(x for x in (f"{p.daily_limit} per day" if p.daily_limit else "",
                                       f"{p.total_limit} in all" if p.total_limit else "") if x) or "none"
        board = phase_board_link(task_id, p, now, tz)
        final = f"up to {p.max_selected} selected run(s)" if p.max_selected else "each team's best run"
        body.append(f'<tr class="phase" data-phase="{e(p.name)}"><th scope="row">{e(p.name)}</th>'
                    f"<td>{phase_now(p, now)}</td><td><code>{e(p.dataset)}</code></td>"
                    f"<td>{when(p.opens, tz)}</td><td>{when(p.closes, tz)}</td><td>{e(limits)}</td>"
                    f"<td>{'yes' if p.scores_visible else 'after it closes'}</td><td>{final}</td><td>{board}</td></tr>")
    return ('<table class="phases"><caption>phases</caption><thead><tr><th scope="col">phase</th>'
            '<th scope="col">now</th><th scope="col">dataset</th><th scope="col">opens</th>'
            '<th scope="col">closes</th><th scope="col">submission limits</th>'
            '<th scope="col">teams see scores</th><th scope="col">ranked</th><th scope="col">leaderboard</th>'
            f"</tr></thead><tbody>{''.join(body)}</tbody></table>")


def phase_now(phase: Phase, now: dt.datetime) -> str:
    """The phase's state with the time left to its next change ("open, closes in 2 d 4 h"): the
    countdown participants of Codabench and EvalAI expect, as of the page's making."""
    state = phases.state(phase, now)
    if state == "open" and phase.closes is not None:
        return f"open, closes in {time_left(phase.closes - now)}"
    if state == "upcoming" and phase.opens is not None:
        return f"upcoming, opens in {time_left(phase.opens - now)}"
    return state


def time_left(delta: dt.timedelta) -> str:
    """A duration in its two largest units, rounded down: "2 d 4 h", "3 h 5 min", "40 s"."""
    seconds = max(int(delta.total_seconds()), 0)
    parts = [(seconds // 86400, "d"), (seconds % 86400 // 3600, "h"), (seconds % 3600 // 60, "min"),
             (seconds % 60, "s")]
    first = next((i for i, (n, _) in enumerate(parts) if n), len(parts) - 1)
    return " ".join(f"{n} {unit}" for n, unit in parts[first:first + 2] if n or unit == parts[first][1])


def participate(task: Any, server: str, rows: list[Phase], now: dt.datetime) -> str:
    """How to take part, as commands to copy: the sample, a scaffold, a sandboxed run, the submission
    to this very server (the token stays a placeholder: the page never shows one)."""
    open_phase = next((p.name for p in rows if phases.state(p, now) == "open"), None)
    phase = f" --phase {open_phase}" if open_phase else ""
    rerank = " --rerank" if task.rerank is not None else ""
    lines = [f"sharedtask sample {task.id} ./sample",
             f"sharedtask new-submission --task {task.id}{rerank} ./my-submission",
             "docker build -t my/system:1 ./my-submission",
             f"sharedtask run --task {task.id} --image my/system:1      # sandboxed, on the sample",
             f'sharedtask submit --server {server} --token "$SHAREDTASK_TOKEN" --task {task.id} --image my/system:1{phase}',
             f'sharedtask status --server {server} --token "$SHAREDTASK_TOKEN" --wait ID']
    return ('<section class="task" aria-labelledby="participate"><h2 id="participate">How to participate</h2>'
            "<p>With <code>pip install sharedtask</code> and Docker, and the token the organizer gave your team in "
            "<code>SHAREDTASK_TOKEN</code>:</p>"
            f'<pre class="commands"><code>{e(chr(10).join(lines))}</code></pre></section>')


def stages_section(task: Any, stages: list[Any]) -> str:
    """A task with a re-ranking stage: the published first stages a re-ranker may pick (names and
    counts only: a stage's folder and text are the organizer's)."""
    if task.rerank is None:
        return ""
    rows = "".join(f'<tr><th scope="row"><code>{e(s.name)}</code></th><td><code>{e(s.dataset)}</code></td>'
                   f"<td>{s.depth}</td><td>{s.topics}</td><td>{s.candidates}</td></tr>" for s in stages)
    table = ('<table><thead><tr><th scope="col">first stage</th><th scope="col">dataset</th><th scope="col">depth'
             '</th><th scope="col">topics</th><th scope="col">candidates</th></tr></thead>'
             f"<tbody>{rows}</tbody></table>") if stages else "<p>None published yet.</p>"
    return ('<section class="task" aria-labelledby="stages"><h2 id="stages">Re-rankers</h2>'
            f"<p>A re-ranker reads a published first stage's top {task.rerank.depth} per topic with their text "
            "(<code>$inputDataset/rerank.jsonl.gz</code>, as TIREx): submit with <code>sharedtask submit ... --input-run NAME"
            f"</code>.</p>{table}</section>")


def task_page(task: Any, settings: TaskSettings | None, rows: list[Phase], now: dt.datetime,
              tz: ZoneInfo | None, stages: list[Any] = (), server: str = "http://HOST:PORT") -> str:
    """The task's page: what it asks, the run format, the measures with their procedure, the data's
    names and the calendar, all from the spec and the organizer's settings."""
    out = task.output
    inputs = "".join(f"<li><code>{e(f.path)}</code> ({e(f.format)}, {e(f.role)})"
                     f"{' — ' + e(f.description) if f.description else ''}</li>" for f in task.input.files)
    measures = "".join(f"<tr><th scope=\"row\">{e(m.label)}{' (primary)' if m.primary else ''}</th>"
                       f"<td><code>{e(m.key)}</code></td><td>{e(m.procedure)}</td></tr>" for m in task.measures)
    datasets = sorted({"sample", *(p.dataset for p in rows)})
    window = ""
    if settings is not None and (settings.opens or settings.closes):
        window = f"<p>Submissions open {when(settings.opens, tz)}, close {when(settings.closes, tz)}.</p>"
    link = f' <a href="{e(task.url)}">official page</a>' if task.url else ""
    board = (f'<p class="board">Leaderboard: <a href="/tasks/{e(task.id)}/leaderboard">one row per team</a> '
             f'(<a href="/tasks/{e(task.id)}/leaderboard?all=1">every run</a>); each phase\'s in the calendar.</p>'
             if settings is not None and settings.published else
             "<p class=\"board\">The task's leaderboard is not published yet; each phase's is in the calendar.</p>")
    edition = task.edition if str(task.year) in task.edition else f"{task.lab} {task.year}, {task.edition}"
    body = (f'<section class="task" aria-labelledby="about"><h2 id="about">About</h2><p>{e(task.description)}</p>'
            f"<p>{e(edition)}.{link}</p>{window}{board}</section>"
            '<section class="task" aria-labelledby="calendar"><h2 id="calendar">Calendar</h2>'
            f"{zone_form(f'/tasks/{task.id}', tz)}{calendar(task.id, rows, now, tz)}</section>"
            '<section class="task" aria-labelledby="format"><h2 id="format">What a run reads and writes</h2>'
            f"<p>Input (<code>$inputDataset</code>):</p><ul>{inputs}</ul>"
            f"<p>Output: <code>$outputDir/{e(out.file)}</code> in the <code>{e(out.format)}</code> format, at most "
            f"{e(out.max_results_per_topic)} results per topic.</p></section>"
            '<section class="task" aria-labelledby="measures"><h2 id="measures">Measures</h2>'
            '<table><thead><tr><th scope="col">measure</th><th scope="col">column</th>'
            f'<th scope="col">procedure</th></tr></thead><tbody>{measures}</tbody></table></section>'
            '<section class="task" aria-labelledby="data"><h2 id="data">Data</h2>'
            f"<p>Datasets: {', '.join(f'<code>{e(d)}</code>' for d in datasets)}. The sample ships with sharedtask "
            f"(<code>sharedtask sample {e(task.id)}</code>); the others stay on the server.</p></section>"
            + participate(task, server, rows, now)
            + stages_section(task, list(stages)))
    return _page(f"{task.id}: {task.title}", body)


def board_page(task: Any, phase: Phase, rows: list[tuple[int | None, Any, Submission]], names: dict[int, str],
               organizer_view: bool, tz: ZoneInfo | None) -> str:
    """A phase's leaderboard: rank, team, run, submission time, selection, every declared measure."""
    keys = [(m.key, m.label) for m in task.measures]
    head = "".join(f'<th scope="col">{e(label)}</th>' for _, label in keys)
    body = []
    for rank, entry, sub in rows:
        scores = "".join(f"<td>{fmt_score(entry.scores.get(key))}</td>" for key, _ in keys)
        body.append(f'<tr class="board-row" data-run="{e(entry.name)}"><td>{rank or "—"}</td>'
                    f"<td>{e(names[sub.team_id])}{_baseline(names[sub.team_id])}</td><td>{e(tag_label(sub))}</td>"
                    f"<td>{when(sub.created, tz)}</td>"
                    f"<td>{'selected' if sub.selected else ''}</td><td>{e(entry.verdict)}</td>{scores}</tr>")
    rule = ("each team's selected runs (a team that selected none: its latest valid run)" if phase.max_selected
            else "each team's best run by the primary measure")
    view = " Organizer's view: every finished run of the phase." if organizer_view else ""
    table = ('<table class="leaderboard"><thead><tr><th scope="col">rank</th><th scope="col">team</th>'
             '<th scope="col">run</th><th scope="col">submitted</th><th scope="col">final</th>'
             f'<th scope="col">status</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
             if body else '<p class="empty">No runs yet.</p>')
    path = f"/tasks/{task.id}/phases/{phase.name}/leaderboard"
    return _page(f"{task.id}, phase {phase.name}: leaderboard",
                 f'<section class="task"><p>Ranked: {rule}.{view} '
                 f'<a href="/api{e(path)}?format=csv">CSV</a> · <a href="/tasks/{e(task.id)}">the task</a></p>'
                 f"{zone_form(path, tz)}{table}</section>")


def _baseline(team: str) -> str:
    """The organizer's own runs (its baselines) are marked as such on a board."""
    from sharedtask.service.teams.tokens import ORGANIZER

    return ' <span class="badge">baseline</span>' if team == ORGANIZER else ""


def phase_form(task_id: str) -> str:
    """The organizer's form that makes or changes a phase (UTC times; the same as the API's PUT)."""
    def field(name: str, label: str, kind: str = "text", extra: str = "") -> str:
        ident = f"{task_id}-{name}"
        return (f'<label for="{e(ident)}">{e(label)}</label> '
                f'<input id="{e(ident)}" name="{name}" type="{kind}" {extra}> ')

    return (f'<form method="post" action="/organizer/tasks/{e(task_id)}/phases" class="phase-form">'
            + field("name", "phase", extra='required pattern="[A-Za-z0-9][A-Za-z0-9._-]{0,63}"')
            + field("dataset", "dataset", extra='required value="sample"')
            + field("opens", "opens (UTC)", "datetime-local") + field("closes", "closes (UTC)", "datetime-local")
            + field("daily_limit", "per day", "number", 'min="1" style="width:5em"')
            + field("total_limit", "in all", "number", 'min="1" style="width:5em"')
            + field("max_selected", "selected runs", "number", 'min="1" style="width:5em"')
            + field("scores_visible", "teams see scores", "checkbox", "checked value=\"1\"")
            + field("leaderboard_public", "public leaderboard", "checkbox", 'value="1"')
            + "<button>save phase</button></form>")


def organizer_phases(session: Any, tasks: list[Any], now: dt.datetime, tz: ZoneInfo | None = None) -> str:
    """The organizer page's phases: each task's calendar and the form that makes or changes a phase."""
    parts = []
    for task in tasks:
        parts.append(f'<h4><a href="/tasks/{e(task.id)}">{e(task.id)}</a></h4>'
                     f"{calendar(task.id, phases.phases_of(session, task.id), now, tz)}{phase_form(task.id)}")
    return f'<section class="task" aria-labelledby="phases"><h3 id="phases">phases</h3>{"".join(parts)}</section>'


def task_board(task: Any, shown: list[tuple[Any, str, int]], *, view: str, team: str | None, total: int,
               organizer_view: bool, tz: ZoneInfo | None) -> str:
    """The task's leaderboard as a report page: ``shown`` is (report row, team, the team's runs on the
    board); ``view``: ``teams`` (one row per team, each with a link to the team's every run), ``all``
    or ``team`` (every run of ``team``). Each row says when it was submitted, in UTC and ``tz``."""
    from urllib.parse import quote

    path = f"/tasks/{task.id}/leaderboard"
    measure = e(task.primary_measure.label)
    per_team = f'<a href="{e(path)}">one row per team</a>'
    if view == "teams":
        for entry, name, runs in shown:
            if runs > 1:
                entry.more = (f"{path}?team={quote(name, safe='')}", f"all {runs} runs of {name}")
        teams = len({name for _, name, _ in shown})
        intro = (f"One row per team ({teams}): its selected run(s), else its best run by {measure}. "
                 f'<a href="{e(path)}?all=1">Every run ({total})</a>')
        keep, suffix = None, ""
    elif view == "all":
        intro = f"Every run ({total}), each with its submission time. Back to {per_team}"
        keep, suffix = {"all": "1"}, ", every run"
    else:
        intro = f"Every run of {e(team)} ({len(shown)}), each with its submission time. Back to {per_team}"
        keep, suffix = {"team": team or ""}, f", team {team}"
    title = f"{task.id}: leaderboard{suffix}" + (" (organizer view)" if organizer_view else "")
    page = report_page(task, [entry for entry, _, _ in shown], title, zone=tz)
    banner = (f'<div class="board-view"><p>{intro} · <a href="/tasks/{e(task.id)}">the task</a></p>'
              f"{zone_form(path, tz, keep)}</div>")
    return with_nav(page, banner)


def closed_board_page(task_id: str, phase: Phase, now: dt.datetime, tz: ZoneInfo | None) -> str:
    """What a phase's board that the public may not see says (status 404): when it opens, if it will.
    Nothing of its runs: no team, no score."""
    opens = selection.board_opens(phase, now)
    if opens is not None:
        text = (f"The leaderboard of phase {e(phase.name)} opens when the phase closes, at {when(opens, tz)}: "
                "until then the phase keeps its scores back.")
    else:
        text = f"The leaderboard of phase {e(phase.name)} is not public."
    path = f"/tasks/{task_id}/phases/{phase.name}/leaderboard"
    return _page(f"{task_id}, phase {phase.name}: leaderboard not open yet" if opens else "not public",
                 f'<section class="task"><p class="closed">{text}</p>'
                 f'<p><a href="/tasks/{e(task_id)}">the task and its calendar</a></p>{zone_form(path, tz)}</section>')
