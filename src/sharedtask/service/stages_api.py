"""The API of published first stages (``/api/tasks/{id}/stages``): the organizer publishes, everyone lists.

No ``from __future__ import annotations``: FastAPI reads the annotations at run time.
"""

import json
import secrets
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from sharedtask.service import stages
from sharedtask.service.access import Db, State, ServiceState, authenticate, task_of, viewer
from sharedtask.service.limits import bounded_body

router = APIRouter(prefix="/api")

#: a JSON body ({"submission": ID}) is small
JSON_LIMIT = 64 * 1024


@router.get("/tasks/{task_id}/stages", tags=["tasks"],
            summary="The first stages a re-ranker may pick (`sharedtask submit --input-run NAME`)")
def list_stages(task_id: str, request: Request, session: Db, service: State) -> list[dict[str, Any]]:
    task_of(service, task_id)
    who = viewer(request, session)
    organizer = bool(who is not None and who.organizer)
    return [stages.stage_json(s, organizer=organizer) for s in stages.stages_of(session, task_id)]


@router.put("/tasks/{task_id}/stages/{name}", tags=["organizer"],
            summary="Publish a first stage: a finished valid submission (JSON {\"submission\": ID}) or a run file "
                    "(text/plain body; ?phase= names the phase whose dataset it was run on)")
async def put_stage(task_id: str, name: str, request: Request, service: State,
                    phase: str | None = None) -> dict[str, Any]:
    """Made once per (task, name, dataset), in a worker thread, with no transaction open meanwhile;
    201-like answer ``made: true`` the first time, ``made: false`` when it existed with this run."""
    task = task_of(service, task_id)
    stages.checked_name(name)
    who = await run_in_threadpool(authenticate, service, request)
    if not who.organizer:
        raise HTTPException(403, "only the organizer may publish a first stage")
    is_json = request.headers.get("content-type", "").startswith("application/json")
    body = await bounded_body(request, JSON_LIMIT if is_json else task.output.run_bytes_bound)
    return await run_in_threadpool(_publish, service, task, name, phase, body, is_json)


def _publish(service: ServiceState, task: Any, name: str, phase: str | None, body: bytes,
             is_json: bool) -> dict[str, Any]:
    default = service.config.dataset
    upload: Path | None = None
    with service.sessions() as session:
        if is_json:
            submission = _submission_of(body)
            source = stages.source_of_submission(session, task, submission, default)
            if phase is not None and stages.dataset_of_phase(session, task.id, phase, default) != source.dataset:
                raise HTTPException(422, f"submission {submission} ran on {source.dataset}, not on phase {phase}'s "
                                         "dataset: leave out ?phase=, the submission's own dataset counts")
        else:
            if not body.strip():
                raise HTTPException(422, "send a run file (text/plain) or JSON {\"submission\": ID}")
            dataset = stages.dataset_of_phase(session, task.id, phase, default)
            uploads = Path(service.config.data_dir) / "uploads"
            uploads.mkdir(parents=True, exist_ok=True)
            upload = uploads / f"{secrets.token_hex(8)}-{task.output.file}"
            upload.write_bytes(body)
            source = stages.Source(upload, dataset)
        session.commit()  # ends the read transaction before the stage is made
    try:
        stage, made = stages.publish(service, task, name, source)
    finally:
        if upload is not None:
            upload.unlink(missing_ok=True)
    return {**stages.stage_json(stage, organizer=True), "made": made}


def _submission_of(body: bytes) -> int:
    try:
        data = json.loads(body)
    except ValueError:
        raise HTTPException(422, "not JSON: send {\"submission\": ID}") from None
    value = data.get("submission") if isinstance(data, dict) else None
    if not isinstance(value, int) or isinstance(value, bool):
        raise HTTPException(422, "send {\"submission\": ID} with the number of a finished, valid submission")
    return value
