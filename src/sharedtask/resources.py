"""Locate the data folders (tasks/, docker/, baselines/, validator/, tira.yml).

In a source checkout (editable install) they sit at the repository root; in a
wheel they are shipped under ``sharedtask/_data``. One lookup serves both.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from sharedtask.errors import SharedTaskError

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def data_root() -> Path:
    installed = _PACKAGE_DIR / "_data"
    if (installed / "tasks").is_dir():
        return installed
    checkout = _PACKAGE_DIR.parent.parent  # src/sharedtask -> repo root
    if (checkout / "tasks").is_dir():
        return checkout
    raise SharedTaskError(
        "cannot find the sharedtask data folder (tasks/)",
        hint="reinstall sharedtask, or run from a source checkout",
    )


def resource(name: str) -> Path:
    """Path of a top-level data item, e.g. ``resource("tasks")``."""
    return data_root() / name


def repo_root() -> Path | None:
    """The source checkout root when running from one (needed to build images)."""
    checkout = _PACKAGE_DIR.parent.parent
    return checkout if (checkout / "pyproject.toml").is_file() else None


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/sharedtask`` (default ``~/.cache/sharedtask``): caches, the data store, worker scratch."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sharedtask"
