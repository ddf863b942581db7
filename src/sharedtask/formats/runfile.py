"""Find the run file in a TIRA output directory, the way TIRA does.

``tira.check_format`` (format ``run.txt``) looks for ``run.txt`` or
``run.txt.gz`` at the top of ``$outputDir`` and refuses an output with both
(docs/task-contract.md, "The execution contract"). The validator,
the evaluator and the sandbox all use this one lookup.
"""

from __future__ import annotations

from pathlib import Path

from sharedtask.errors import SharedTaskError


def find_run_file(path: Path | str, file_name: str = "run.txt", *, any_single_file: bool = False) -> Path:
    """``path`` itself when it is a file, else ``file_name`` / ``file_name.gz`` inside it.

    ``any_single_file``: a directory whose only visible file has another name (an
    ARQMath run named by the submission convention) yields that file; the TIRA
    evaluator needs this leniency, the validator does not.
    """
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise SharedTaskError(f"{path} does not exist (no such file or directory)")
    txt, gz = path / file_name, path / f"{file_name}.gz"
    if txt.is_file() and gz.is_file():
        raise SharedTaskError(f"{path}: contains both {txt.name} and {gz.name}",
                              hint="TIRA refuses an output with both: keep exactly one")
    for candidate in (txt, gz):
        if candidate.is_file():
            return candidate
    visible = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    if any_single_file and len(visible) == 1:
        return visible[0]
    found = ", ".join(p.name for p in visible[:10]) or "nothing"
    raise SharedTaskError(f"{path}: no {txt.name} or {gz.name} in this directory (found: {found})",
                          hint=f"TIRA looks for $outputDir/{txt.name} or $outputDir/{gz.name}")
