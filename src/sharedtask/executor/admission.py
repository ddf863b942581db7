"""What a worker accepts from a broker: a closed job schema, checked against its own policy.

Anyone who can write to the broker can put a job in the queue, so a worker trusts nothing
a job carries (docs/threat-model.md, "Boundaries"). A job names an image by reference and
id, a dataset by id and sha256 map, a command, and at most *lower* limits than its task's
spec and the worker's own maximum. It cannot name a user, a network, an input run, a
runtime other than its task's, or any path: the worker derives all of those itself. A job
that asks for more is refused with one line saying which field and why, and nothing runs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from sharedtask.errors import SharedTaskError
from sharedtask.executor.job import DatasetRef, Job
from sharedtask.sandbox.options import job_names

#: The keys a job may carry, and the keys of its dataset.
JOB_KEYS = frozenset({"task", "software", "image", "image_id", "command", "dataset", "image_source", "options", "id",
                      "stage", "stage_source"})
STAGE_KEYS = frozenset({"software", "job", "sha256"})
DATASET_KEYS = frozenset({"id", "sha256"})
#: Options a job may set: limits it may only lower, and harmless choices (sandbox/options.py).
LIMIT_OPTIONS = job_names("limit")
CHOICE_OPTIONS = job_names("choice")
#: Options a job must never carry: the worker derives them from its own policy.
FORBIDDEN_OPTIONS = (*job_names("never"), "input_run", "input_dir", "output_dir", "record_dir", "runs_dir",
                     "validate", "observer", "stop", "privileged", "volumes", "mounts", "cap_add", "security_opt",
                     "devices")

MAX_COMMAND = 64 * 1024  # characters of a job's command
MAX_FILES = 1_000_000  # files in a dataset's sha256 map
MAX_PATH = 1024  # characters of one dataset file's relative path
MAX_NAME = 200  # characters of an id, a name, an image reference

_HEX64 = re.compile(r"[0-9a-f]{64}")
_IMAGE_ID = re.compile(r"sha256:[0-9a-f]{64}")
_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_PRINTABLE = re.compile(r"[^\x00-\x1f\x7f]+")  # a label: any text without control characters
# docker's reference grammar, loosely: [host[:port]/]path[:tag][@sha256:hex]
_IMAGE_REF = re.compile(r"[a-z0-9][a-z0-9._/:-]*(@sha256:[0-9a-f]{64})?", re.IGNORECASE)


class JobRefused(SharedTaskError):
    """A job that asks for more than a worker grants: it is reported as refused, never run."""


@dataclass(frozen=True)
class WorkerPolicy:
    """A worker's own maxima (None: the task's spec alone bounds the limit)."""

    memory: int | None = None  # bytes
    cpus: float | None = None
    timeout: float | None = None  # seconds
    pids: int | None = None
    max_output: int | None = None  # bytes
    disk: int | None = None  # bytes


def _refuse(field: str, why: str) -> JobRefused:
    return JobRefused(f"job field {field}: {why}",
                      hint="a job carries an image, a dataset id and checksums, a command and at most "
                           "the task's limits; the worker decides user, network, mounts and runtime")


def _text(raw: Any, field: str, limit: int = MAX_NAME, pattern: re.Pattern[str] | None = None) -> str:
    if not isinstance(raw, str):
        raise _refuse(field, f"must be a string, not {type(raw).__name__}")
    if len(raw) > limit:
        raise _refuse(field, f"is {len(raw)} characters long, more than {limit}")
    if "\x00" in raw:
        raise _refuse(field, "holds a NUL character")
    if pattern is not None and not pattern.fullmatch(raw):
        shown = raw if len(raw) <= 80 else raw[:80] + "…"
        raise _refuse(field, f"{shown!r} is not of the allowed form ({pattern.pattern})")
    return raw


def _dataset_id(raw: Any, field: str) -> str:
    text = _text(raw, field)
    parts = text.split("/")
    if not all(_SEGMENT.fullmatch(p) and p not in (".", "..") for p in parts) or ".." in text:
        raise _refuse(field, f"{text!r} is not a dataset id (names of letters, digits, '._+-' joined by '/', "
                             "no '..', no leading '/')")
    return text


def _relative_path(raw: Any, field: str) -> str:
    text = _text(raw, field, MAX_PATH)
    parts = text.split("/")
    if text.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in text:
        raise _refuse(field, f"{text[:80]!r} is not a plain relative path")
    return text


def _dataset(raw: Any) -> DatasetRef:
    if not isinstance(raw, dict):
        raise _refuse("dataset", f"must be an object, not {type(raw).__name__}")
    extra = sorted(set(map(str, raw)) - DATASET_KEYS)
    if extra:
        raise _refuse(f"dataset.{extra[0][:40]}", "is not a field of a job's dataset (id, sha256)")
    ident = _dataset_id(raw.get("id"), "dataset.id")
    digests = raw.get("sha256", {})
    if not isinstance(digests, dict):
        raise _refuse("dataset.sha256", f"must be an object, not {type(digests).__name__}")
    if len(digests) > MAX_FILES:
        raise _refuse("dataset.sha256", f"names {len(digests)} files, more than {MAX_FILES}")
    checked: dict[str, str] = {}
    for rel, digest in digests.items():
        rel = _relative_path(rel, "dataset.sha256 (a file name)")
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            raise _refuse(f"dataset.sha256[{rel[:80]!r}]", "is not 64 lower-case hex digits")
        checked[rel] = digest
    return DatasetRef(ident, checked)


def _image_source(raw: Any, image_id: str) -> str | None:
    """``archive:<path or URL>`` whose file is ``<64 hex>.tar`` (what ``--images-dir`` writes),
    or ``registry:<name>@sha256:<digest>``: a job cannot make a worker load an arbitrary file."""
    if raw is None:
        return None
    text = _text(raw, "image_source", 2048)
    kind, _, location = text.partition(":")
    if kind == "registry":
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._/:-]*@sha256:[0-9a-f]{64}", location):
            raise _refuse("image_source", "a registry source must be NAME@sha256:DIGEST")
        return text
    if kind == "archive":
        where, _, digest = location.rpartition("#sha256=")
        name = where.rsplit("/", 1)[-1]
        if (not re.fullmatch(r"[0-9a-f]{64}\.tar", name) or not _HEX64.fullmatch(digest) or "/../" in where
                or where.startswith("../")):
            raise _refuse("image_source", "an archive source must be archive:<where>/<image id hex>.tar#sha256=<hex "
                                          "of the archive>, as --images-dir writes it (checked before it is loaded)")
        return text
    raise _refuse("image_source", "must start with archive: or registry:")


def _number(raw: Any, field: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw) or raw <= 0:
        raise _refuse(f"options.{field}", f"must be a positive number, not {raw!r}"[:200])
    return float(raw)


def _limit(field: str, raw: Any) -> float:
    """A limit option in the unit of :class:`~sharedtask.sandbox.policy.Limits` (bytes, s, cores, count)."""
    from sharedtask.sandbox.policy import parse_duration
    from sharedtask.units import parse_size

    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)) or (isinstance(raw, str) and len(raw) > 32):
        raise _refuse(f"options.{field}", f"must be a number or a short string, not {type(raw).__name__}")
    try:
        if field == "timeout":
            return parse_duration(raw)
        if field == "cpus":
            return _number(raw, field)
        if field == "pids":
            if not isinstance(raw, int):
                raise _refuse("options.pids", "must be a whole number")
            return _number(raw, field)
        value = parse_size(raw, field)
        if value <= 0:
            raise _refuse(f"options.{field}", "must be positive")
        return float(value)
    except JobRefused:
        raise
    except SharedTaskError as exc:
        raise _refuse(f"options.{field}", str(exc).splitlines()[0]) from None


def _show(field: str, value: float) -> str:
    from sharedtask.units import format_size

    if field in ("memory", "max_output", "disk"):
        return format_size(int(value))
    return f"{value:g} s" if field == "timeout" else f"{value:g}"


def _options(raw: Any, task: Any, policy: WorkerPolicy) -> dict[str, Any]:
    from sharedtask.sandbox.cpu import PROFILES
    from sharedtask.sandbox.policy import Limits

    if not isinstance(raw, dict):
        raise _refuse("options", f"must be an object, not {type(raw).__name__}")
    for key in raw:
        if not isinstance(key, str) or key not in LIMIT_OPTIONS + CHOICE_OPTIONS:
            why = ("is decided by the worker, never by a job" if key in FORBIDDEN_OPTIONS
                   else f"is not an option a job may carry ({', '.join(LIMIT_OPTIONS + CHOICE_OPTIONS)})")
            raise _refuse(f"options.{str(key)[:40]}", why)
    spec = Limits.from_spec(task.sandbox)
    for field in LIMIT_OPTIONS:
        ceiling = getattr(spec, field)
        own = getattr(policy, field)
        value = _limit(field, raw[field]) if raw.get(field) is not None else float(ceiling)
        if value > ceiling:
            raise _refuse(f"options.{field}", f"{_show(field, value)} is above the task's {field} "
                                               f"({_show(field, ceiling)}); a job may lower a limit, never raise it")
        if own is not None and value > own:
            raise _refuse(f"options.{field}", f"{_show(field, value)} is above this worker's maximum "
                                               f"({_show(field, own)})")
    if raw.get("dataset_id") is not None:
        _text(raw["dataset_id"], "options.dataset_id", pattern=_PRINTABLE)
    if raw.get("cpu") is not None and raw["cpu"] not in PROFILES:
        raise _refuse("options.cpu", f"{str(raw['cpu'])[:40]!r} is not a CPU profile ({', '.join(PROFILES)})")
    if raw.get("read_only_root") is not None and not isinstance(raw["read_only_root"], bool):
        raise _refuse("options.read_only_root", "must be true or false")
    if raw.get("runtime") is not None and raw["runtime"] != task.sandbox.runtime:
        raise _refuse("options.runtime", f"{str(raw['runtime'])[:40]!r} is not the task's runtime "
                                         f"({task.sandbox.runtime})")
    return dict(raw)


def admit(raw: Any, policy: WorkerPolicy | None = None) -> Job:
    """The job in ``raw`` (a broker's payload) if it is one a worker may run; else :class:`JobRefused`."""
    from sharedtask.spec import load_task

    policy = policy or WorkerPolicy()
    if not isinstance(raw, dict):
        raise _refuse("(the job)", f"must be an object, not {type(raw).__name__}")
    extra = sorted(str(k)[:40] for k in raw if k not in JOB_KEYS)
    if extra:
        raise _refuse(extra[0], f"is not a field of a job ({', '.join(sorted(JOB_KEYS))})")
    stage, stage_source = _stage(raw.get("stage"), raw.get("stage_source"))
    task_id = _text(raw.get("task"), "task", pattern=_NAME)
    try:
        task = load_task(task_id)
    except SharedTaskError:
        raise _refuse("task", f"{task_id!r} is not a task this worker knows") from None
    image_id = _text(raw.get("image_id"), "image_id", pattern=_IMAGE_ID)
    command = raw.get("command")
    if command is not None:
        _text(command, "command", MAX_COMMAND)
    job = Job(task=task_id, software=_text(raw.get("software"), "software", pattern=_PRINTABLE),
              image=_text(raw.get("image"), "image", pattern=_IMAGE_REF), image_id=image_id, command=command,
              dataset=_dataset(raw.get("dataset")), image_source=_image_source(raw.get("image_source"), image_id),
              options=_options(raw.get("options", {}), task, policy), stage=stage, stage_source=stage_source)
    if raw.get("id") is not None and raw.get("id") != job.id:
        raise _refuse("id", f"{str(raw.get('id'))[:40]!r} does not match the job's content ({job.id})")
    return job


def _stage(stage: Any, source: Any) -> tuple[dict[str, str] | None, str | None]:
    """A re-ranker's first stage and where to fetch it, checked; a stage with no source is refused."""
    from sharedtask.executor.stages import parse_source

    if stage is None:
        if source is not None:
            raise _refuse("stage_source", "is only for a job that names a stage")
        return None, None
    if source is None:
        raise _refuse("stage", "names a first stage but no stage_source to fetch it from: such a re-ranker "
                               "runs where its stage is (docs/pipelines.md)")
    if not isinstance(stage, dict) or set(stage) != STAGE_KEYS:
        raise _refuse("stage", f"must be an object with exactly {', '.join(sorted(STAGE_KEYS))}")
    _text(stage["software"], "stage.software", pattern=_PRINTABLE)
    _text(stage["job"], "stage.job", MAX_NAME)
    if not isinstance(stage["sha256"], str) or not _HEX64.fullmatch(stage["sha256"]):
        raise _refuse("stage.sha256", "must be 64 lowercase hex digits")
    if not isinstance(source, str):
        raise _refuse("stage_source", "must be a string")
    try:
        parse_source(source)
    except ValueError as exc:
        raise _refuse("stage_source", str(exc)) from None
    return dict(stage), source


def sandbox_options(job: Job) -> dict[str, Any]:
    """The keyword arguments of :func:`sharedtask.sandbox.run` for a job: its limits and choices,
    and the worker's own user (the invoking or the sandbox uid), no network and no input run,
    whatever the job says (:func:`admit` has refused a job that said otherwise)."""
    forbidden = sorted(k for k in job.options if k not in LIMIT_OPTIONS + CHOICE_OPTIONS)
    if forbidden:
        raise _refuse(f"options.{forbidden[0]}", "is not an option a job may carry")
    kwargs = {k: job.options[k] for k in LIMIT_OPTIONS + CHOICE_OPTIONS if job.options.get(k) is not None}
    return {**kwargs, "user": "me", "network": None, "input_run": None}


def safe_job_id(raw: Any) -> str:
    """The payload's job id for a refusal, when it looks like one (else a placeholder)."""
    ident = raw.get("id") if isinstance(raw, dict) else None
    return ident if isinstance(ident, str) and re.fullmatch(r"job-[0-9a-f]{24}", ident) else "job-unreadable"
