"""Where the data store lives: the one folder the store, the registry of this machine's own
datasets and reproduction all resolve against (``SHAREDTASK_DATA``, else the user cache)."""

from __future__ import annotations

import os
from pathlib import Path

from sharedtask.resources import cache_root


def store_root() -> Path:
    own = os.environ.get("SHAREDTASK_DATA")
    if own:
        return Path(own)
    return cache_root() / "data"
