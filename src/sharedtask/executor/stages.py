"""A re-ranker's first stage travels to a worker as images do: one archive, named by content, checked.

The coordinator makes a stage once (``run.txt`` and ``rerank.jsonl.gz``, docs/pipelines.md)
and packs it into ``stage-<sha256 of rerank.jsonl.gz>.tar`` beside the image archives
(``--images-dir``, served at ``--images-url``). The job names that archive with the sha256
of its bytes (``stage_source``: ``archive:<path or URL>#sha256=<hex>``), outside the job's
id: where a stage lies does not change what the run computes. A worker trusts neither the
archive nor the way it came: it checks the archive's sha256 before reading a member, takes
exactly the two regular files and nothing else, and keeps the stage in its own cache, under
the candidates' sha256, which :func:`sharedtask.executor.base.execute_in` checks again.
"""

from __future__ import annotations

import os
import re
import shutil
import tarfile
import uuid
from pathlib import Path
from typing import Any, Callable

from sharedtask.errors import SharedTaskError
from sharedtask.executor.job import Job
from sharedtask.rerank import RERANK_FILE

#: The files of a stage folder (the run file of every task with a stage is run.txt), the only
#: members a stage archive may hold.
STAGE_FILES = ("run.txt", RERANK_FILE)
#: The folder under a worker's ``--work-dir`` that keeps the stages it fetched (no ``.owner``
#: mark: the scratch clean-up leaves it alone, and every worker sharing the folder may use it).
STAGE_CACHE = "stages"
#: Bytes of one stage archive a worker reads at most (a run of 75 MB, TIRA's bound, and its candidates' texts).
MAX_STAGE_ARCHIVE = 2 << 30
#: Bytes the members of one stage archive may expand to on the worker's disk, together.
MAX_STAGE_EXPANDED = 2 << 30
#: ``archive:<where>#sha256=<archive>`` and, since issue 39, ``&run=<sha256 of run.txt>``: every
#: member is checked, not only the candidates (which the job's ``stage.sha256`` names)
_SOURCE = re.compile(r"archive:(?P<location>[^#\s]{1,2000})#sha256=(?P<sha>[0-9a-f]{64})(?:&run=(?P<run>[0-9a-f]{64}))?")


def pack_stage(stage_dir: Path, folder: Path) -> tuple[Path, str]:
    """``stage_dir``'s two files as ``folder/stage-<candidates' sha256>.tar`` (byte-stable: mtime 0,
    owner 0) and the archive's sha256, hashed as it is written.

    Written every time, never taken as found: a file already at that name was sent as it was,
    whoever put it there (issue 39). Replaced atomically: a worker reading the old one keeps it."""
    from sharedtask.data.checksum import sha256

    candidates = stage_dir / STAGE_FILES[1]
    target = folder / f"stage-{sha256(candidates)}.tar"
    folder.mkdir(parents=True, exist_ok=True)
    part = target.with_name(f"{target.name}.{uuid.uuid4().hex[:8]}.part")
    with tarfile.open(part, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in STAGE_FILES:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = (stage_dir / name).stat().st_size, 0o644, 0
            with open(stage_dir / name, "rb") as fh:
                tar.addfile(info, fh)
    digest = sha256(part)
    os.replace(part, target)
    return target, digest


def stage_source_for(images_dir: Path | None, images_url: str | None = None) -> Callable[[Path], str] | None:
    """How workers get a stage (a job's ``stage_source``): packed into ``images_dir``, read from
    there or from ``images_url``; None without a folder to ship through (re-rankers then run here)."""
    if images_dir is None:
        return None
    folder = images_dir.resolve()

    def source(stage_dir: Path) -> str:
        from sharedtask.data.checksum import sha256

        path, digest = pack_stage(stage_dir, folder)
        location = f"{images_url.rstrip('/')}/{path.name}" if images_url else str(path)
        return f"archive:{location}#sha256={digest}&run={sha256(stage_dir / STAGE_FILES[0])}"
    return source


def parse_source(source: str) -> tuple[str, str]:
    """``(location, sha256)`` of a stage source, or ValueError saying what one looks like."""
    match = _SOURCE.fullmatch(source)
    if match is None:
        raise ValueError("must be archive:<path or http(s) URL>#sha256=<64 hex digits>[&run=<64 hex digits>]")
    return match["location"], match["sha"]


def fetch_stage(job: Job, cache: Path, origin: Any = None) -> Path:
    """The job's first stage as a folder of this worker's own: from its cache, or fetched and checked."""
    from sharedtask.executor.fetch import Origin, fetch_to

    assert job.stage is not None and job.stage_source is not None
    wanted = job.stage["sha256"]
    named = _SOURCE.fullmatch(job.stage_source)
    run_sha = named["run"] if named else None
    folder = cache / wanted
    if _holds(folder, wanted, run_sha):
        return folder
    location, digest = parse_source(job.stage_source)
    cache.mkdir(parents=True, exist_ok=True)
    part = cache / f".{wanted}.{uuid.uuid4().hex[:8]}"
    archive = part.with_name(part.name + ".tar")  # beside the folder: never inside the mounted stage
    part.mkdir()
    try:
        if fetch_to(location, archive, MAX_STAGE_ARCHIVE, origin or Origin(), "the first stage's archive") != digest:
            raise SharedTaskError(f"the first stage's archive {location} is not the one the job names (sha256)",
                                  hint="the coordinator packs it again when it plans the re-ranker")
        _extract(archive, part, location)
        if not _holds(part, wanted, run_sha):
            raise SharedTaskError(f"the first stage's archive {location} holds other files than the published "
                                  "stage's (sha256 of rerank.jsonl.gz and run.txt)",
                                  hint="the first stage changed: plan the re-ranker again")
        try:
            os.rename(part, folder)
        except OSError:  # another delivery on this worker landed it first
            if not _holds(folder, wanted, run_sha):
                raise
    finally:
        archive.unlink(missing_ok=True)
        shutil.rmtree(part, ignore_errors=True)
    return folder


def _holds(folder: Path, wanted: str, run_sha: str | None = None) -> bool:
    """The folder holds the two files, the candidates with sha256 ``wanted`` and (when the job
    names it) the run file with ``run_sha``."""
    from sharedtask.data.checksum import sha256

    files = [folder / name for name in STAGE_FILES]
    return (folder.is_dir() and not folder.is_symlink() and all(f.is_file() and not f.is_symlink() for f in files)
            and sha256(files[1]) == wanted and (run_sha is None or sha256(files[0]) == run_sha))


def _extract(archive: Path, folder: Path, location: str) -> None:
    """Exactly the stage's two regular files, written by us; anything else refuses the archive.

    Bounded by what the members expand to, not the archive's bytes: a sparse member (a 10 KB
    archive whose ``run.txt`` is 2 GiB of holes) is refused by its type, and the members'
    declared sizes together may not pass :data:`MAX_STAGE_EXPANDED` (issue 39)."""
    seen: set[str] = set()
    budget = MAX_STAGE_EXPANDED
    try:
        with tarfile.open(archive, mode="r:") as tar:
            for member in tar:
                if (member.name not in STAGE_FILES or not member.isreg() or member.issparse()
                        or member.name in seen):
                    kind = "the sparse file " if member.issparse() else ""
                    raise SharedTaskError(f"the first stage's archive {location} holds {kind}{member.name[:100]!r}",
                                          hint=f"a stage archive holds the regular files {', '.join(STAGE_FILES)}")
                budget -= member.size
                if budget < 0:
                    raise SharedTaskError(f"the first stage's archive {location} expands to more than "
                                          f"{MAX_STAGE_EXPANDED} bytes ({member.name} alone is {member.size})")
                seen.add(member.name)
                source = tar.extractfile(member)
                assert source is not None
                with source, open(folder / member.name, "xb") as out:
                    shutil.copyfileobj(source, out)
    except tarfile.TarError as exc:
        raise SharedTaskError(f"the first stage's archive {location} is not a readable tar ({exc})") from None
    if seen != set(STAGE_FILES):
        raise SharedTaskError(f"the first stage's archive {location} lacks {sorted(set(STAGE_FILES) - seen)}")
