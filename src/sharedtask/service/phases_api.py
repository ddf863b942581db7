"""The API of phases (``/api/tasks/{id}/phases``): the calendar for everyone, changes for the organizer.

No ``from __future__ import annotations``: FastAPI reads the annotations at run time.
"""

import datetime as dt
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from sharedtask.service import phases
from sharedtask.service.access import Db, Organizer, State, naive_utc, task_of
from sharedtask.service.models import utcnow

router = APIRouter(prefix="/api")


class PhaseIn(BaseModel):
    dataset: str = Field(min_length=1, max_length=100,
                         description="a dataset of tira.yml (datasets:) that the phase's submissions run on")
    opens: dt.datetime | None = Field(default=None, description="ISO 8601 with a zone; none: open already")
    closes: dt.datetime | None = Field(default=None, description="ISO 8601 with a zone; none: never closes")
    daily_limit: int | None = Field(default=None, ge=1, description="submissions per team and UTC day")
    total_limit: int | None = Field(default=None, ge=1, description="submissions per team in the whole phase")
    scores_visible: bool = Field(default=True, description="false: teams see their scores only once it closed")
    leaderboard_public: bool = Field(default=False, description="the phase's leaderboard is public")
    max_selected: int | None = Field(default=None, ge=1,
                                     description="runs a team may mark as final; none: each team's best run counts")


def manifest_of(service: Any) -> Any:
    from sharedtask.manifest import load_manifest

    return load_manifest(service.config.manifest)


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
    phase = phases.put_phase(session, task, name, values, manifest_of(service))
    return phases.phase_json(phase, utcnow())
