"""``sharedtask demo --serve``: the whole loop on loopback for a newcomer.

Starts the service in this process (SQLite under the demo's folder), makes one team
per baseline or submission, submits each one's image by name for each of its tasks
through the HTTP API (as ``sharedtask submit --registry`` would), waits for the
sandboxed runs, publishes the leaderboards and keeps serving, with the organizer's
sign-in link printed, until Ctrl-C.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

from sharedtask.service.client import Server, submission_path

Say = Callable[[str], None]


def serve_demo(tasks: list[Any], manifest: Any, out_dir: Path, port: int, say: Say, *,
               dataset: str = "sample", stay: bool = True) -> dict[str, Any]:
    """Serve, submit every piece of software as a team, publish; returns the organizer's link and leaderboards."""
    import uvicorn

    from sharedtask.service.app import ServiceConfig, create_app
    from sharedtask.service.db import make_engine, migrate, sessions, sqlite_url
    from sharedtask.service.runs.claims import RunSettings
    from sharedtask.service.runs.pool import LocalPool
    from sharedtask.service.teams.tokens import create_team, organizer_token

    data_dir = (out_dir / "service").resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "service.db").unlink(missing_ok=True)  # every demo starts from an empty service
    engine = make_engine(sqlite_url(data_dir / "service.db"))
    migrate(engine)
    factory = sessions(engine)
    softwares = {sw.name: sw for t in tasks for sw in manifest.for_task(t.id)}
    with factory.begin() as session:
        org = organizer_token(session)
        team_tokens = {name: create_team(session, name)[1] for name in softwares}
    runs = LocalPool(factory, RunSettings(data_dir=data_dir, dataset=dataset, manifest=manifest.path))
    app = create_app(factory, runs, ServiceConfig(data_dir=data_dir, allow_local_images=True,
                                                      task_ids=[t.id for t in tasks]))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="sharedtask-demo-service", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    while not server.started:
        if not thread.is_alive():
            from sharedtask.errors import SharedTaskError

            raise SharedTaskError(f"the service could not start on port {port}", hint="choose another --port")
        time.sleep(0.05)
    say(f"service on {url}")
    pending: list[tuple[Server, int]] = []
    for task in tasks:
        for sw in manifest.for_task(task.id):
            client = Server(url, team_tokens[sw.name])
            sub = client.request("POST", submission_path(task.id, None, None),
                                 {"image": sw.image, "command": sw.command_for(task.id), "tag": "run1"})
            say(f"{sw.name} submitted {sw.image} for {task.id} (#{sub['id']})")
            pending.append((client, int(sub["id"])))
    for client, sid in pending:
        while (sub := client.request("GET", f"/api/submissions/{sid}"))["status"] not in ("done", "failed"):
            say(f"#{sid} {sub['team']}/{sub['task']}: {sub['status']}")
            time.sleep(1)
    organizer = Server(url, org)
    boards = {}
    for task in tasks:
        organizer.request("POST", f"/api/tasks/{task.id}/publish")
        boards[task.id] = organizer.request("GET", f"/api/tasks/{task.id}/leaderboard")
    link = f"{url}/login?token={org}&next=/organizer"
    if stay:
        say(f"organizer page: {link}")
        try:
            while thread.is_alive():
                thread.join(0.5)
        except KeyboardInterrupt:
            pass
    server.should_exit = True
    thread.join(30)
    runs.shutdown()
    return {"url": url, "organizer": link, "leaderboards": boards}
