"""``sharedtask submit``: send an image to a submission service and (optionally) wait for its scores.

The image is written with ``docker save`` to a temporary file (progress, sha256),
then uploaded with its size and sha256, which the server checks. ``--registry``
sends only the name, for an image the server pulls. Exit code: 0 submitted (with
``--wait``: done and not invalid), 1 the run failed or is invalid, 2 the submission
was refused or the server could not be reached (one line with the server's reason).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from sharedtask.cli import LazyConsole, options

from sharedtask.errors import SharedTaskError
from sharedtask.untrusted import markup_safe

console = LazyConsole(highlight=False, soft_wrap=True)  # a URL must not be cut at 80 columns
err_console = LazyConsole(stderr=True, highlight=False, soft_wrap=True)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "submit",
        help="submit an image to a sharedtask service",
        description="Submit IMAGE for TASK to the service at SERVER with your team's token; the server runs it "
                    "sandboxed on the hidden data and shows findings, record and scores on your team page.",
    )
    options.add_server(parser)
    parser.add_argument("--task", required=True, metavar="ID", help="task id, e.g. touche-2021-task1")
    parser.add_argument("--image", required=True, help="a local image (uploaded) or, with --registry, a name")
    parser.add_argument("--command", help="command run via `sh -c` (default: the image's ENTRYPOINT/CMD)")
    parser.add_argument("--tag", help="a name for this run (default: runN)")
    parser.add_argument("--phase", metavar="NAME",
                        help="the task's phase to submit to (default: the one open now; see /api/tasks/ID/phases)")
    parser.add_argument("--input-run", metavar="NAME",
                        help="a re-ranker: the published first stage it re-ranks, its candidates mounted as "
                             "$inputDataset, the stage as $inputRun (see "
                             "/api/tasks/ID/stages)")
    parser.add_argument("--registry", action="store_true", help="send only the image name; the server pulls it")
    parser.add_argument("--wait", action="store_true", help="wait until the run is done and print its scores")
    parser.add_argument("--json", action="store_true", help="print the submission as JSON")
    parser.set_defaults(func=run)


def _estimate(image: str) -> int | None:
    """The image's size as docker reports it (its archive is about as large), or None if unknown."""
    from sharedtask.images.client import docker_client

    try:
        return int(docker_client().images.get(image).attrs.get("Size") or 0) or None
    except Exception:  # noqa: BLE001 - save_image reports a missing image in one line
        return None


def _upload(server: Any, args: argparse.Namespace, path: str) -> Any:
    from rich.progress import BarColumn, Progress

    from sharedtask.data.progress import byte_columns
    from sharedtask.service.client import save_image
    from sharedtask.units import format_size

    estimate = _estimate(args.image) or 0
    with tempfile.TemporaryDirectory(prefix="sharedtask-submit-") as tmp:
        archive = Path(tmp) / "image.tar"
        with Progress("[progress.description]{task.description}", BarColumn(), *byte_columns(),
                      console=err_console, transient=True,
                      disable=args.json or not err_console.is_terminal) as bar:
            saving = bar.add_task("docker save", total=estimate or None)
            size, sha = save_image(args.image, archive, lambda n: bar.advance(saving, n))
            err_console.print(f"image {markup_safe(args.image)}: {format_size(size)}, sha256 {sha}") if not args.json else None
            sending = bar.add_task("upload", total=size)
            with open(archive, "rb") as fh:
                return server.upload(path, fh, size, sha, lambda n: bar.advance(sending, n))


def run(args: argparse.Namespace) -> int:
    from sharedtask.service.client import submission_path

    from sharedtask.spec import load_task

    load_task(args.task)  # an unknown id is one line, before a large image is written
    server = options.server(args)
    path = submission_path(args.task, args.command, args.tag, args.phase, args.input_run)
    # Before any byte moves: token, dates, quota, tag, size and stage (a refusal costs no docker save).
    ready = server.preflight(args.task, args.tag, None if args.registry else _estimate(args.image), args.phase,
                             args.input_run)
    if not isinstance(ready, dict) or ready.get("task") != args.task or "max_upload" not in ready:
        # another web server that answers 200 to any path: nothing is uploaded, no quota used
        raise SharedTaskError(f"{server.url} is not a sharedtask server (its answer to the submission check is not "
                              "sharedtask's)", hint="give the address `sharedtask serve` printed, e.g. "
                              "http://127.0.0.1:8000")
    if not args.json and ready.get("remaining_today") is not None:
        err_console.print(f"{markup_safe(args.task)}: {ready['remaining_today']} submission(s) left today")
    if args.registry:
        sub = server.request("POST", path, {"image": args.image, "command": args.command, "tag": args.tag})
    else:
        sub = _upload(server, args, path)
    if not args.json:
        console.print(f"submission #{sub['id']} ({markup_safe(sub['tag'])}) for {markup_safe(sub['task'])}: "
                      f"{sub['status']}; your page: {markup_safe(server.url)}/team")
    if args.wait:
        try:
            sub = _wait(server, int(sub["id"]), quiet=args.json)
        except KeyboardInterrupt:  # the submission is the server's now: only the waiting stops
            err_console.print(resume_line(server.url, int(sub["id"])), soft_wrap=True)
            return 130
    if args.json:
        print(json.dumps(sub, indent=2, default=str))
    elif args.wait:
        _print_result(sub)
    if not args.wait:
        return 0
    return 0 if sub["status"] == "done" and sub.get("valid") is not False else 1


def resume_line(url: str, submission_id: int) -> str:
    """What Ctrl-C while waiting says: the run goes on on the server, and how to follow it again."""
    return (f"[bold red]interrupted[/]: submission #{submission_id} goes on on the server; follow it with "
            f"`sharedtask status --server {markup_safe(url)} --wait {submission_id}`")


def _wait(server: Any, submission_id: int, *, quiet: bool) -> Any:
    """Poll until the submission ends; a server that stops answering (a restart, a proxy's 502/503)
    is waited for, and the same submission is asked again (``sharedtask status --wait`` later
    picks it up too)."""
    from sharedtask.service.client import ServiceError, Unreachable

    last, away = None, False
    while True:
        try:
            sub = server.request("GET", f"/api/submissions/{submission_id}")
        except (Unreachable, ServiceError) as exc:
            if isinstance(exc, ServiceError) and exc.status not in (502, 503, 504):
                raise
            if not away and not quiet:
                err_console.print(f"#{submission_id}: the server does not answer ({str(exc).splitlines()[0]}); "
                                  "waiting for it")
            away = True
            time.sleep(2)
            continue
        away = False
        if sub["status"] != last and not quiet:
            err_console.print(f"#{submission_id}: {sub['status']}")
            last = sub["status"]
        if sub["status"] in ("done", "failed"):
            return sub
        time.sleep(1)


def failure_reasons(sub: Any) -> list[str]:
    """Why a run failed or is invalid, from what the server lets this team see."""
    reasons: list[str] = []
    record = sub.get("record") or {}
    if record.get("exit_code") not in (None, 0):
        reasons.append(f"exit code {record['exit_code']}")
    message = str(record.get("message") or "")
    if message and sub.get("run_status") not in (None, "success") and not message.startswith("exited with code"):
        reasons.append(message)
    validation = sub.get("validation") or {}
    codes: list[Any] = []
    # the validator's findings (a blind server sends their codes only, as "findings")
    for finding in [*(sub.get("findings") or []), *((validation.get("report") or {}).get("findings") or [])]:
        if isinstance(finding, dict) and finding.get("severity") == "error" and finding.get("code") not in codes:
            codes.append(finding.get("code"))
    if not codes and validation.get("code"):
        codes.append(validation["code"])
    if codes:
        reasons.append("findings: " + ", ".join(str(c) for c in codes))
    if validation.get("reason"):
        reasons.append(str(validation["reason"]))
    tail = [str(line) for line in (sub.get("log_tail") or record.get("log_tail") or []) if str(line).strip()]
    if tail:
        reasons.append("log: " + " | ".join(tail[-5:]))
    return reasons


def _print_result(sub: Any) -> None:
    verdict = {True: "valid", False: "invalid", None: "not validated"}[sub.get("valid")]
    console.print(f"run: {markup_safe(str(sub.get('run_status')))}, {verdict}")
    if sub.get("status") == "failed" or sub.get("valid") is False:
        for reason in failure_reasons(sub):
            console.print(f"  why: {markup_safe(reason)}")
    for key, value in sorted((sub.get("scores") or {}).items()):
        console.print(f"  {markup_safe(key)}: {value:.4f}" if isinstance(value, float) else f"  {markup_safe(key)}: {value}")
    for note in sub.get("notes") or []:
        console.print(f"  note: {markup_safe(note)}")
