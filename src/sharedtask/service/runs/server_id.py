"""This server's name in a shared broker: a random id made once and kept in its data folder.

Why: job ids are content hashes (``submission-<id>-<attempt>`` on an image and a dataset), so
two servers sharing one Redis made equal ids for their first submissions, and would share
their results, marks and claims (issue 39). Kept in the data folder, the id survives a
restart, so a restarted server waits for the very jobs it sent before.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

FILE = "server-id"


def server_id(data_dir: Path) -> str:
    """The id in ``data_dir/server-id``, made (atomically: one of two racing starts wins) if missing."""
    path = Path(data_dir) / FILE
    try:
        return path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{FILE}.{os.getpid()}.part")
    part.write_text(f"srv-{secrets.token_hex(8)}\n", encoding="ascii")
    try:
        os.link(part, path)  # fails if another start made it first: theirs is kept
    except FileExistsError:
        pass
    finally:
        part.unlink(missing_ok=True)
    return path.read_text(encoding="ascii").strip()
