"""The API of phases (``/api/tasks/{id}/phases``): the calendar for everyone, changes for the organizer;
a team's final runs (select / unselect) and each phase's leaderboard (JSON, CSV).

No ``from __future__ import annotations``: FastAPI reads the annotations at run time.
"""

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, Response

from sharedtask.service import phases, selection, submissions
from sharedtask.service.state import naive_utc, task_of, team_names
from sharedtask.service.models import aware, utcnow
from sharedtask.service.teams.tokens import ORGANIZER
from sharedtask.service.web.common import Db, Member, Organizer, PhaseIn, State, kept, phase_board

router = APIRouter(prefix="/api")


@router.get("/tasks/{task_id}/phases", tags=["tasks"], summary="The task's phases in calendar order (UTC)")
def list_phases(task_id: str, session: Db, service: State) -> list[dict[str, Any]]:
    task_of(service, task_id)
    now = utcnow()
    return [phases.phase_json(p, now) for p in phases.phases_of(session, task_id)]


@router.put("/tasks/{task_id}/phases/{name}", tags=["organizer"],
            summary="Make or change a phase: its dataset, dates, limits and what teams see")
def put_phase(task_id: str, name: str, body: PhaseIn, _org: Organizer, session: Db,
              service: State) -> dict[str, Any]:
    task = task_of(service, task_id)
    values = body.model_dump()
    values["opens"], values["closes"] = naive_utc(body.opens), naive_utc(body.closes)
    phase = phases.put_phase(session, task, name, values, phases.manifest_of(service))
    return phases.phase_json(phase, utcnow())


@router.post("/submissions/{submission_id}/select", tags=["submissions"],
             summary="Mark a run as one of your final runs of its phase (up to the phase's max_selected)")
def select_run(submission_id: int, who: Member, session: Db, service: State) -> dict[str, Any]:
    return _selected(service, session, who, submission_id, True)


@router.post("/submissions/{submission_id}/unselect", tags=["submissions"], summary="Unmark a final run")
def unselect_run(submission_id: int, who: Member, session: Db, service: State) -> dict[str, Any]:
    return _selected(service, session, who, submission_id, False)


def _selected(service: Any, session: Any, who: Any, submission_id: int, value: bool) -> dict[str, Any]:
    sub = selection.set_selected(session, who, submission_id, value)
    (shown,) = phases.for_team(session, [sub], who, utcnow())
    return submissions.submission_json(shown, team_names(session)[sub.team_id],
                                       blind=submissions.blind_for(service, who))


def board_json(task: Any, phase: Any, rows: list, names: dict[int, str]) -> dict[str, Any]:
    return {"task": task.id, "phase": phase.name, "primary": task.primary_measure.key,
            "rule": "selected runs (else the latest valid run)" if phase.max_selected else "each team's best run",
            "runs": [{"rank": rank, "team": names[sub.team_id], "run": entry.name, "tag": sub.tag,
                      "submitted": aware(sub.created), "selected": bool(sub.selected), "status": entry.verdict,
                      # the organizer's own runs (its baselines, submitted with its token) are marked
                      "baseline": names[sub.team_id] == ORGANIZER,
                      "input_run": sub.input_run,  # a re-ranker's first stage: "run ← input_run"
                      "scores": entry.scores} for rank, entry, sub in rows]}


@router.get("/tasks/{task_id}/phases/{name}/leaderboard", tags=["tasks"],
            summary="A phase's leaderboard (public when the phase says so; ?format=csv for a spreadsheet)")
def phase_leaderboard(task_id: str, name: str, request: Request, session: Db, service: State,
                      format: str = "json") -> Any:  # noqa: A002 - the query's name
    if format not in ("json", "csv"):
        raise HTTPException(422, f"format {format[:20]!r}: use json or csv")

    def build() -> bytes:
        task, phase, rows = phase_board(task_id, name, request, session, service)
        body = board_json(task, phase, rows, team_names(session))
        return board_csv(task, body).encode() if format == "csv" else bytes(JSONResponse(body).body)

    # kept until the next commit or phase boundary, per viewer (common.kept): a crowd asks for the same board
    body = kept(service, request, ("phase-board", task_id, name, format), build)
    if format == "csv":
        return Response(body, media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{task_id}-{name}.csv"'})
    return Response(body, media_type="application/json")


def board_csv(task: Any, body: dict[str, Any]) -> str:
    """One row per run: rank, team, run, submitted, selected, baseline, status, then every declared measure."""
    import csv
    import io

    keys = [m.key for m in task.measures]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["rank", "team", "run", "submitted", "selected", "baseline", "status", *keys])
    for row in body["runs"]:
        # a team's text starting with = + - @ is data, not a formula (OWASP "CSV injection")
        safe = [("'" + v if isinstance(v, str) and v[:1] in "=+-@" else v)
                for v in (row["team"], row["run"])]
        writer.writerow([row["rank"] or "", *safe, row["submitted"], row["selected"], row["baseline"], row["status"],
                         *(row["scores"].get(k, "") for k in keys)])
    return out.getvalue()
