"""``sharedtask status``: look a submission up later (after a closed terminal, a server restart).

Exit code: 0 done and valid (or still pending without ``--wait``), 1 failed or invalid,
2 the server refused (unknown id, another team's submission, bad token) or cannot be reached.
"""

from __future__ import annotations

import argparse
import json

from sharedtask.cli import options
from sharedtask.errors import SharedTaskError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "status",
        help="a submission's status, validity and scores (with --wait: until it ends)",
        description="Ask the service at SERVER about submission ID (as `sharedtask submit --wait` does); with "
                    "--wait, poll until it is done or failed, waiting out a server that restarts meanwhile.",
    )
    options.add_server(parser)
    parser.add_argument("id", type=int, metavar="ID", help="the submission's number (submit prints it)")
    parser.add_argument("--wait", action="store_true", help="wait until the run ends")
    parser.add_argument("--json", action="store_true", help="print the submission as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sharedtask.cli.submit import _print_result, _wait, console, err_console, resume_line
    from sharedtask.untrusted import markup_safe

    if args.id < 1:
        raise SharedTaskError(f"no submission {args.id}: submission numbers start at 1",
                              hint="use the number `sharedtask submit` printed")
    server = options.server(args)
    try:
        sub = (_wait(server, args.id, quiet=args.json) if args.wait
               else server.request("GET", f"/api/submissions/{args.id}"))
    except KeyboardInterrupt:
        err_console.print(resume_line(server.url, args.id), soft_wrap=True)
        return 130
    if args.json:
        print(json.dumps(sub, indent=2, default=str))
    else:
        where = f", phase {sub['phase']}" if sub.get("phase") else ""
        worker = f" on {sub['worker']}" if sub.get("worker") else ""
        console.print(markup_safe(f"#{sub['id']} {sub.get('team')}/{sub.get('tag')} ({sub.get('task')}{where}): "
                                  f"{sub['status']}{worker}", None))
        if sub["status"] == "queued":
            line = server.request("GET", "/api/queue")
            place = next((p["position"] for p in line["positions"] if p["id"] == sub["id"]), None)
            if place is not None:
                console.print(f"  place in the line: {place} of {line['queued']} ({line['running']} running)")
        if sub["status"] in ("done", "failed"):
            _print_result(sub)
    if sub["status"] in ("queued", "running"):
        return 0
    return 0 if sub["status"] == "done" and sub.get("valid") is not False else 1
