"""A submission as a row of the report (:class:`~sharedtask.report.model.RunEntry`), as its viewer
may see it: the organizer, its team, the public, or anyone under ``--blind``.

Shared by the leaderboards (:mod:`sharedtask.service.submissions`) and the pages
(:mod:`sharedtask.service.web.pages`); who sees what is :mod:`sharedtask.service.visibility`'s.
"""

from __future__ import annotations

from typing import Any, Iterable

from sharedtask.pipeline import findings_from_validation
from sharedtask.report.model import RunEntry
from sharedtask.service import visibility
from sharedtask.service.models import Submission
from sharedtask.untrusted import printable

PENDING = ("queued", "running")


def tag_label(sub: Any) -> str:
    """The tag, and for a re-ranker the first stage it re-ranks: ``rerank ← bm25``."""
    return f"{sub.tag} ← {sub.input_run}" if getattr(sub, "input_run", None) else sub.tag


def run_name(team: str, sub: Submission) -> str:
    return f"{team}/{sub.tag}"


def status_of(sub: Any) -> str:
    """The run's status word for a report row: the sandbox's, or ``error`` for a failed submission."""
    return sub.run_status or ("error" if sub.status == "failed" else sub.status)


def redact(record: dict[str, Any] | None, *, logs: bool, paths: bool = True,
           roots: Iterable[str] = ()) -> dict[str, Any]:
    """A run record without what this viewer may not see (blind mode does not come here:
    it shows no record at all, see :mod:`sharedtask.service.visibility`).

    ``logs=False``: no log files (a team's logs are its own and the organizer's, never
    the public's). ``paths=False`` (the public leaderboard): no logs either, and none of the
    server's folders (:func:`sharedtask.service.visibility.public_record`; ``roots``:
    further folders to blank, the service's data folder).
    """
    if not paths:
        return visibility.public_record(record, roots)
    out = dict(record or {})
    if not logs:
        out.pop("logs", None)
    return out


def entry_of(sub: Submission, team: str, *, seen_by: str = visibility.ORGANIZER,
             roots: Iterable[str] = ()) -> RunEntry:
    """A report row from what the database holds about a submission so far, as this viewer may see it.

    ``seen_by``: :data:`~sharedtask.service.visibility.ORGANIZER` and ``TEAM`` (a team's own
    run without ``--blind``) see everything; ``PUBLIC`` (the leaderboard without
    ``--blind``) no logs and no server paths (``roots``: the service's data folder);
    ``BLIND`` only what :func:`sharedtask.service.visibility.blind_view` allows.
    """
    name = run_name(team, sub)
    if seen_by == visibility.BLIND:
        view = visibility.blind_view(sub, team)
        status = view["run_status"] or ("error" if view["status"] == "failed" else view["status"] or "error")
        return RunEntry(name=name, image=view["image"], command=view["command"], status=status,
                        valid=view["valid"], findings=visibility.blind_findings(sub),
                        scores={k: v for k, v in view["scores"].items() if v is not None}, per_topic={},
                        record={}, notes=[printable(n) for n in view["notes"]], first_stage=view["input_run"],
                        submitted=sub.created)  # "created" is on the blind allow-list
    if seen_by not in (visibility.ORGANIZER, visibility.TEAM, visibility.PUBLIC):
        raise ValueError(f"no viewer {seen_by!r}")
    public = seen_by == visibility.PUBLIC
    record = redact(sub.record, logs=not public, paths=not public, roots=roots)
    notes = visibility.public_notes(sub.notes, sub.record, roots) if public else list(sub.notes or [])
    status = status_of(sub)
    return RunEntry(name=name, image=sub.image_name, command=sub.command, status=status,
                    valid=sub.valid, findings=findings_from_validation(record.get("validation") or {}),
                    scores=dict(sub.scores or {}), per_topic={k: dict(v) for k, v in (sub.per_topic or {}).items()},
                    record=record, notes=[printable(n) for n in notes], first_stage=sub.input_run,
                    submitted=sub.created)
