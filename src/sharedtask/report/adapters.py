"""Build a :class:`RunEntry` from what the sandbox, validator and evaluator return.

Duck-typed on purpose (no import of those packages): the report must render even
when a stage did not run, e.g. a crashed container has no validation and no scores.
"""

from __future__ import annotations

from typing import Any

from sharedtask.report.model import RunEntry


def run_entry(
    name: str,
    *,
    image: str,
    command: str | None = None,
    sandbox: Any = None,
    validation: Any = None,
    evaluation: Any = None,
    status: str | None = None,
    notes: list[str] | None = None,
) -> RunEntry:
    """One report row from the stage results that exist.

    ``sandbox``: a ``sharedtask.sandbox.SandboxRun`` (its ``record`` and
    ``result.status``/``result.log_tail`` are used); ``validation``: a
    ``ValidationResult`` (``valid``, ``findings``); ``evaluation``: an
    ``EvaluationResult`` (``scores``, ``per_topic``, ``notes``). ``status`` overrides
    the sandbox status (e.g. "error" when the run could not even start).
    """
    record: dict[str, Any] = dict(getattr(sandbox, "record", None) or {})
    result = getattr(sandbox, "result", None)
    tail = getattr(result, "log_tail", None)
    if tail and "log_tail" not in record:
        record["log_tail"] = list(tail)
    final_status = status or getattr(result, "status", None) or record.get("status") or "error"
    return RunEntry(
        name=name,
        image=image,
        command=command,
        status=str(final_status),
        valid=getattr(validation, "valid", None),
        findings=list(getattr(validation, "findings", None) or []),
        scores=dict(getattr(evaluation, "scores", None) or {}),
        per_topic={k: dict(v) for k, v in (getattr(evaluation, "per_topic", None) or {}).items()},
        record=record,
        notes=[*(getattr(evaluation, "notes", None) or []), *(notes or [])],
    )
