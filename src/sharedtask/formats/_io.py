"""Opening official data files: transparent gzip, BOM, no newline translation.

Every reader opens files through here so that "file.gz" works everywhere and
every low-level failure (missing file, bad gzip, bad UTF-8) becomes a
:class:`~sharedtask.errors.FormatError` instead of a traceback.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from sharedtask.errors import FormatError

PathLike = str | os.PathLike[str]

#: Large buffers: the readers are hot paths over multi-GB files.
BUFFER = 1 << 20

#: Exceptions that mean "the bytes are not what the format promises".
DECODE_ERRORS: tuple[type[BaseException], ...] = (
    UnicodeDecodeError,
    gzip.BadGzipFile,
    EOFError,  # truncated gzip stream
    zlib.error,
)


def is_gzip(path: PathLike) -> bool:
    return str(path).endswith(".gz")


def _missing(path: PathLike, exc: OSError) -> FormatError:
    reason = exc.strerror or exc.__class__.__name__
    return FormatError(path, f"cannot open file: {reason}", hint="check the path and permissions")


def open_text(path: PathLike) -> IO[str]:
    """Open for reading as UTF-8 text; a BOM is skipped, line endings are kept as is."""
    try:
        if is_gzip(path):
            return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
        return open(path, encoding="utf-8-sig", newline="", buffering=BUFFER)
    except OSError as exc:
        raise _missing(path, exc) from None


def open_binary(path: PathLike) -> IO[bytes]:
    """Open for reading as bytes (XML parsers detect the encoding themselves)."""
    try:
        if is_gzip(path):
            return gzip.open(path, "rb")  # type: ignore[return-value]
        return open(path, "rb", buffering=BUFFER)
    except OSError as exc:
        raise _missing(path, exc) from None


def decode_error(path: PathLike, exc: BaseException, line: int | None = None) -> FormatError:
    """Turn an encoding/compression failure into a FormatError."""
    if isinstance(exc, UnicodeDecodeError):
        return FormatError(
            path,
            f"invalid UTF-8 ({exc.reason})",
            line=line,
            hint="official files are UTF-8; re-encode the file",
        )
    return FormatError(path, f"corrupt or truncated gzip data ({exc})", line=line,
                       hint="re-compress the file or store it uncompressed")


@contextmanager
def atomic_text_writer(path: PathLike) -> Iterator[IO[str]]:
    """Write a text file atomically: a temporary file in the same folder, renamed on success.

    Why: a crashed or interrupted writer must never leave a half-written run that a
    later validation would mistake for a complete one.
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    os.close(fd)
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes 0600; a run file should get normal permissions
    try:
        if is_gzip(target):
            handle: IO[str] = gzip.open(tmp, "wt", encoding="utf-8", newline="")
        else:
            handle = open(tmp, "w", encoding="utf-8", newline="", buffering=BUFFER)
        with handle:
            yield handle
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
