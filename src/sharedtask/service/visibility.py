"""What each viewer sees of a submission: the allow-list of ``serve --blind``, and the public's view.

Four viewers (:data:`ORGANIZER`, :data:`TEAM`, :data:`PUBLIC`, :data:`BLIND`):

- the organizer sees everything the database holds;
- a team on a server without ``--blind`` sees everything about its own submissions,
  its logs and the validator's findings included (as before);
- the public leaderboard without ``--blind`` (anyone, teams included) shows the run
  records without logs and without the server's paths (:func:`public_record`);
- with ``--blind``, every page and API answer a team can reach (its submissions, its
  team page, the leaderboards) is built by :func:`blind_view` from :data:`BLIND_FIELDS`
  and from nothing else.

Why an allow-list: on hidden test data anything derived from the run's content can carry
the data out (a container that writes the topics into the tag column reads them back from
the validator's statistics; the exit code, the output size, the peak memory, the log, a
finding's message are channels too). Hiding what one lists leaks whatever was forgotten
or added later; here a field nobody listed is never shown. Each allowed field has its own
rule: its value comes from the team's own input (tag, image, command), from the service
(status, times, attempts), from the organizer (scores of the declared measures, the
reason for hiding a run) or from a closed vocabulary (run status, finding codes of the
catalogue, the service's own fixed notes). docs/service.md lists the same table.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any, Iterable

from sharedtask.findings.codes import CATALOGUE
from sharedtask.findings import Finding, Severity
from sharedtask.service.runs.claims import BROKER_RESUMED_NOTE, RESUMED_NOTE
from sharedtask.service.models import Submission, aware

ORGANIZER, TEAM, PUBLIC, BLIND = "organizer", "team", "public", "blind"

#: Every field of a team's view of a submission in blind mode, and where its value comes from.
BLIND_FIELDS: dict[str, str] = {
    "id": "the submission's number",
    "team": "the team's name",
    "task": "the task id",
    "tag": "the tag the team chose when it submitted (its own input; not the run file's tag column)",
    "image": "the image the team submitted",
    "command": "the command the team submitted",
    "status": "`queued`, `running`, `done` or `failed`",
    "attempts": "how many times a worker started the run",
    "created": "when the team submitted (UTC)",
    "finished": "when the run ended (UTC)",
    "run_status": "the sandbox's status word: `success`, `failed`, `timeout`, `oom`, `output-limit`, "
                  "`disk-limit`, `interrupted` or `error`; never its message",
    "valid": "`true`, `false`, or `null` when the validator did not judge",
    "findings": "the validator's finding codes with their severity, each code once, sorted: "
                "no message, line, path, example or count; only codes of the catalogue (docs/findings.md)",
    "scores": "the task's declared measures (the leaderboard's columns), no per-topic scores",
    "hidden": "the organizer's reason for hiding the run",
    "notes": "only the notes the service writes in fixed words: \"re-run by the organizer at …\" and "
             "\"the server stopped during this run; …\"",
    "worker": "the name of the compute worker the run is on (`sharedtask worker --name`, the organizer's "
              "choice), `server` for the server's own pool; nothing the run wrote",
    "phase": "the name of the phase it was submitted to (the organizer's), or null",
    "selected": "whether the team marked it as one of its final runs (the team's own choice)",
    "input_run": "the name of the published first stage it re-ranks (the organizer's name, the team's pick), "
                 "or null; nothing of the stage's folder, source or text",
}

#: The sandbox's statuses (sharedtask.sandbox.runner) and the pipeline's "error".
RUN_STATUSES = frozenset({"success", "failed", "timeout", "oom", "output-limit", "disk-limit", "interrupted",
                          "error"})
STATUSES = frozenset({"queued", "running", "done", "failed"})
#: The note :func:`sharedtask.service.submissions.rerun` writes, matched whole: nothing else can ride in it.
RERUN_NOTE = re.compile(r"re-run by the organizer at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
HIDDEN_DETAIL = "where and how often: shown to the organizer only, blind mode"
_SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


# ----------------------------------------------------------------------------- blind mode


def blind_view(sub: Submission, team: str) -> dict[str, Any]:
    """A team's view of ``sub`` in blind mode: exactly the keys of :data:`BLIND_FIELDS`.

    Nothing of ``sub.record``, ``sub.validation``, ``sub.per_topic`` or ``sub.run_dir``
    is read except the finding codes of the validator's report.
    """
    view = {
        "id": int(sub.id) if sub.id is not None else None,
        "team": team,
        "task": sub.task_id,
        "tag": sub.tag,
        "image": sub.image_name,
        "command": sub.command,
        "status": sub.status if sub.status in STATUSES else None,
        "attempts": int(sub.attempts or 0),
        "created": aware(sub.created) if sub.created else None,
        "finished": aware(sub.finished) if sub.finished else None,
        "run_status": coarse_status(sub.run_status),
        "valid": sub.valid if isinstance(sub.valid, bool) else None,
        "findings": [{"code": code, "severity": severity.value} for severity, code in finding_codes(sub)],
        "scores": declared_scores(sub.task_id, sub.scores),
        "hidden": sub.hidden_reason,
        "notes": service_notes(sub.notes),
        "worker": sub.worker,
        "phase": sub.phase_name,
        "selected": bool(sub.selected),
        "input_run": sub.input_run,
    }
    assert view.keys() == BLIND_FIELDS.keys()
    return view


def coarse_status(run_status: str | None) -> str | None:
    """The sandbox's status word, or ``error`` for anything outside the vocabulary."""
    if run_status is None:
        return None
    return run_status if run_status in RUN_STATUSES else "error"


def finding_codes(sub: Submission) -> list[tuple[Severity, str]]:
    """(severity, code) of each catalogue code the validator reported, once, most severe first."""
    validation = (sub.record or {}).get("validation") if isinstance(sub.record, dict) else None
    if not isinstance(validation, dict):
        validation = sub.validation if isinstance(sub.validation, dict) else {}
    found: dict[str, Severity] = {}

    def add(code: Any, severity: Any) -> None:
        if not isinstance(code, str) or code not in CATALOGUE:
            return
        level = severity if isinstance(severity, Severity) else _severity(severity, CATALOGUE[code].severity)
        if code not in found or _SEVERITY_ORDER[level] < _SEVERITY_ORDER[found[code]]:
            found[code] = level

    report = validation.get("report")
    for raw in (report.get("findings") if isinstance(report, dict) else None) or []:
        if isinstance(raw, dict):
            add(raw.get("code"), raw.get("severity"))
    add(validation.get("code"), None)  # refused before validation (no run file, a link, ...)
    return sorted(((s, c) for c, s in found.items()), key=lambda sc: (_SEVERITY_ORDER[sc[0]], sc[1]))


def _severity(value: Any, default: Severity) -> Severity:
    try:
        return Severity(value)
    except ValueError:
        return default


@lru_cache(maxsize=None)
def _declared(task_id: str) -> frozenset[str]:
    from sharedtask.spec import load_task

    try:
        return frozenset(m.key for m in load_task(task_id).measures)
    except Exception:  # noqa: BLE001 - an unknown task shows no scores rather than an error
        return frozenset()


def declared_scores(task_id: str, scores: dict[str, Any] | None) -> dict[str, float | None]:
    """The scores of the task's declared measures; a non-finite value is null (JSON has no NaN)."""
    out: dict[str, float | None] = {}
    declared = _declared(task_id)
    for key, value in (scores or {}).items():
        if key not in declared or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        out[key] = float(value) if math.isfinite(value) else None
    return out


def service_notes(notes: Iterable[Any] | None) -> list[str]:
    """The notes the service writes in fixed words; every other note (the pipeline's, the evaluator's) is dropped."""
    fixed = (RESUMED_NOTE, BROKER_RESUMED_NOTE)
    return [n for n in notes or [] if isinstance(n, str) and (n in fixed or RERUN_NOTE.fullmatch(n))]


def blind_findings(sub: Submission) -> list[Finding]:
    """The codes as findings for the report page: the catalogue's meaning and hint, nothing of the run."""
    return [Finding(severity, code, f"{CATALOGUE[code].meaning} ({HIDDEN_DETAIL})", hint=CATALOGUE[code].hint)
            for severity, code in finding_codes(sub)]


# ----------------------------------------------------------------------------- the public: no server paths

SERVER_PATH = "<server>"
_ABSOLUTE = re.compile(r"(?<![\w.~:/-])/(?:[^\s/'\"`<>|;:,()\[\]{}]+/)+[^\s/'\"`<>|;:,()\[\]{}]*")


def _paths_in(record: dict[str, Any]) -> list[str]:
    """The server's absolute paths a run record names (folders and files) and the run's record folder."""
    found: list[str] = []

    def add(value: Any, parent: bool = False) -> None:
        if isinstance(value, str) and value.startswith("/") and len(value) > 1:
            found.append(value)
            if parent:  # the run's record folder, next to output/ and the logs
                found.append(os.path.dirname(value.rstrip("/")))

    dataset = record.get("dataset") if isinstance(record.get("dataset"), dict) else {}
    add(dataset.get("input_dir"))
    add(dataset.get("input_run"))
    output = record.get("output") if isinstance(record.get("output"), dict) else {}
    add(output.get("dir"), parent=True)
    logs = record.get("logs") if isinstance(record.get("logs"), dict) else {}
    for value in logs.values():
        add(value, parent=True)
    container = record.get("container") if isinstance(record.get("container"), dict) else {}
    for host in (container.get("mounts") or {}) if isinstance(container.get("mounts"), dict) else ():
        add(host)
    validation = record.get("validation") if isinstance(record.get("validation"), dict) else {}
    add(validation.get("run_file"))
    report = validation.get("report") if isinstance(validation.get("report"), dict) else {}
    add(report.get("path"))
    # a shallow folder (/tmp, /srv) is no one run's: replacing it would blank the container's own paths
    return [p for p in found if len(PurePosixPath(p).parts) > 2]


def scrub(value: Any, roots: Iterable[str]) -> Any:
    """``value`` (any JSON) with every occurrence of ``roots`` in its strings replaced by ``<server>``."""
    ordered = sorted({r.rstrip("/") for r in roots if r and r.rstrip("/")}, key=len, reverse=True)
    # whole path components only: the root /data is not replaced inside /database
    patterns = [re.compile(rf"(?<![\w.~-]){re.escape(root)}(?![\w.~-])") for root in ordered]

    def clean(text: str) -> str:
        for pattern in patterns:
            text = pattern.sub(SERVER_PATH, text)
        return text

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return clean(node)
        if isinstance(node, dict):
            return {clean(k) if isinstance(k, str) else k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(value)


def no_paths(text: str) -> str:
    """Free text (a note, a message) with every absolute path of two or more parts replaced."""
    return _ABSOLUTE.sub(SERVER_PATH, text)


def _basename(value: Any) -> Any:
    return PurePosixPath(value).name if isinstance(value, str) and value.startswith("/") else value


def _reproduce(line: str) -> str:
    """The ``docker run`` line with each mount's host folder as ``./<name of the container folder>``."""
    try:
        parts = shlex.split(line)
    except ValueError:
        return SERVER_PATH
    out: list[str] = []
    for i, part in enumerate(parts):
        if i > 0 and parts[i - 1] in ("-v", "--volume") and part.count(":") >= 2:
            _host, bind, mode = part.rsplit(":", 2)
            part = f"./{PurePosixPath(bind).name or 'mount'}:{bind}:{mode}"
        out.append(part)
    return shlex.join(out)


def public_record(record: dict[str, Any] | None, roots: Iterable[str] = ()) -> dict[str, Any]:
    """A run record for the public leaderboard: no logs and none of the server's paths.

    The dataset's and the output's folders and the log files are left out, the run file is
    named by its file name, the mounts and the ``docker run`` line name ``./input`` and
    ``./output`` instead of the server's folders; then every remaining occurrence of those
    folders or of ``roots`` (the service's data folder) becomes ``<server>``, and absolute
    paths in messages and reasons too.
    """
    out = {k: v for k, v in (record or {}).items() if k != "logs"}
    known = [*_paths_in(record or {}), *roots]
    if isinstance(out.get("dataset"), dict):
        out["dataset"] = {k: v for k, v in out["dataset"].items() if k not in ("input_dir", "input_run")}
    if isinstance(out.get("output"), dict):
        out["output"] = {k: v for k, v in out["output"].items() if k != "dir"}
    container = out.get("container")
    if isinstance(container, dict) and isinstance(container.get("mounts"), dict):
        mounts = {}
        for _host, mount in container["mounts"].items():
            bind = mount.get("bind") if isinstance(mount, dict) else None
            mounts[f"./{PurePosixPath(bind).name}" if isinstance(bind, str) else SERVER_PATH] = mount
        out["container"] = {**container, "mounts": mounts}
    if isinstance(out.get("reproduce"), str):
        out["reproduce"] = _reproduce(out["reproduce"])
    validation = out.get("validation")
    if isinstance(validation, dict):
        validation = {**validation}
        if "run_file" in validation:
            validation["run_file"] = _basename(validation["run_file"])
        if isinstance(validation.get("reason"), str):
            validation["reason"] = no_paths(validation["reason"])
        report = validation.get("report")
        if isinstance(report, dict):
            report = {**report, "path": _basename(report.get("path"))}
            report["findings"] = [{**f, "path": _basename(f.get("path"))} if isinstance(f, dict) else f
                                  for f in report.get("findings") or []]
            validation["report"] = report
        out["validation"] = validation
    if isinstance(out.get("message"), str):
        out["message"] = no_paths(out["message"])
    return scrub(out, known)


def public_notes(notes: Iterable[Any] | None, record: dict[str, Any] | None, roots: Iterable[str] = ()) -> list[str]:
    """Notes for the public leaderboard: the server's folders and any absolute path replaced."""
    known = [*_paths_in(record or {}), *roots]
    return [no_paths(scrub(n, known)) for n in notes or [] if isinstance(n, str)]
