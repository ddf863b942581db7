"""The API of published first stages (``/api/tasks/{id}/stages``): the organizer publishes, everyone lists.

No ``from __future__ import annotations``: FastAPI reads the annotations at run time.
"""

import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from sharedtask.service import stages
from sharedtask.service.limits import bounded_body, stream_to
from sharedtask.service.state import ServiceState, task_of
from sharedtask.service.uploads import Spool, UploadError, spool_path
from sharedtask.service.web.common import Db, State, authenticate, viewer

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
    if request.headers.get("content-type", "").startswith("application/json"):
        body = await bounded_body(request, JSON_LIMIT)
        return await run_in_threadpool(_publish, service, task, name, phase, _submission_of(body), None)
    upload = await _spool_run(request, service, task.output.run_bytes_bound)
    try:
        return await run_in_threadpool(_publish, service, task, name, phase, None, upload)
    finally:
        upload.unlink(missing_ok=True)


async def _spool_run(request: Request, service: ServiceState, limit: int) -> Path:
    """The run file of the body in ``DATA_DIR/uploads/`` (removed at the next start if a kill cuts it),
    written as it arrives (:func:`limits.stream_to`) and refused past the task's run size bound."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"the run file is larger than the task's bound of {limit} bytes (max_run_bytes)")
    spool = Spool(spool_path(Path(service.config.data_dir) / "uploads", "-run.txt"), limit)
    try:
        await stream_to(request, spool)  # a chunk per idle bound, a MiB per trip to the thread pool
    except UploadError:
        raise HTTPException(413, f"the run file is larger than the task's bound of {limit} bytes "
                                 "(max_run_bytes)") from None
    spool.close()
    if spool.size == 0:
        spool.path.unlink(missing_ok=True)
        raise HTTPException(422, "send a run file (text/plain) or JSON {\"submission\": ID}")
    return spool.path


def _publish(service: ServiceState, task: Any, name: str, phase: str | None, submission: int | None,
             upload: Path | None) -> dict[str, Any]:
    default = service.config.dataset
    with service.sessions() as session:
        if submission is not None:
            source = stages.source_of_submission(session, task, submission, default)
            if phase is not None and stages.dataset_of_phase(session, task.id, phase, default) != source.dataset:
                raise HTTPException(422, f"submission {submission} ran on {source.dataset}, not on phase {phase}'s "
                                         "dataset: leave out ?phase=, the submission's own dataset counts")
        else:
            assert upload is not None
            source = stages.Source(upload, stages.dataset_of_phase(session, task.id, phase, default))
        session.commit()  # ends the read transaction before the stage is made
    stage, made = stages.publish(service, task, name, source)
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
