"""What an upload is held to (sizes, counts) and how a refusal is said (an HTTP status with one line)."""

from __future__ import annotations

from sharedtask.errors import SharedTaskError

CHUNK = 1 << 20
MAX_MEMBERS = 10_000  # docker save writes about 4 per layer and at most 128 layers fit overlayfs
MAX_NAME = 4096
MAX_LAYERS = 1000
MAX_MANIFEST = 1 << 20
MAX_CONFIG = 8 << 20  # an image config is a few KB (its history grows with the layers)

HINT = "send the output of `docker save IMAGE`"
CONFIG_NAME = "config.json"


class UploadError(SharedTaskError):
    """An upload that is refused; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.status = status


def refused(message: str, hint: str = HINT) -> UploadError:
    return UploadError(400, message, hint=hint)
