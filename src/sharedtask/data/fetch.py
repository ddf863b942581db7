"""HTTP download that resumes: bytes go to ``NAME.part``, a cut transfer continues with a
``Range`` request (RFC 9110, section 14.2), and only the caller's checksum check moves
the file into place. Every failure is one line saying what happened and what to do.
"""

from __future__ import annotations

import errno
import http.client
import urllib.error
import urllib.request
from pathlib import Path

from sharedtask.data.progress import byte_progress
from sharedtask.errors import SharedTaskError

TIMEOUT = 60  # seconds without a byte before the transfer counts as cut
BLOCK = 1 << 20


def mirrored(url: str, mirror: str | None) -> str:
    """``url`` served by ``mirror``: the mirror's base URL plus the file's name."""
    if not mirror:
        return url
    return mirror.rstrip("/") + "/" + url.rsplit("/", 1)[-1]


def download(url: str, part: Path, *, size: int | None = None, show_progress: bool = True) -> None:
    """Fetch ``url`` into ``part``, continuing a partial file that is already there.

    On a cut connection the partial file stays (the next call resumes it); on a full
    disk it is removed, since nothing half-written should stay behind a failure the
    user must fix first.
    """
    part.parent.mkdir(parents=True, exist_ok=True)
    have = part.stat().st_size if part.exists() else 0
    if size is not None and have == size:
        return  # complete; the caller verifies the checksum
    request = urllib.request.Request(url, headers={"User-Agent": "sharedtask"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # the range starts at the end: nothing left to send
            return
        raise SharedTaskError(f"{url} answered HTTP {exc.code} {exc.reason}",
                              hint="check the URL or --mirror; the mirror must serve the file under the same name") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise SharedTaskError(f"cannot reach {url}: {reason}",
                              hint="check the network or give --mirror URL, or `sharedtask data import`") from None
    with response:
        resumed = have and response.status == 206
        if not resumed:
            have = 0  # the server ignored the range: start over
        length = response.headers.get("Content-Length")
        total = have + int(length) if length and length.isdigit() else size
        _receive(url, response, part, have, total, resumed, show_progress)


def _receive(url: str, response, part: Path, have: int, total: int | None, resumed: bool,
             show_progress: bool) -> None:
    label = url.rsplit("/", 1)[-1] + (" (resumed)" if resumed else "")
    try:
        with open(part, "ab" if resumed else "wb") as out, \
                byte_progress(label, total, done=have, enabled=show_progress) as advance:
            while True:
                try:
                    block = response.read(BLOCK)
                except (OSError, ValueError, http.client.HTTPException) as exc:  # reset, timeout, IncompleteRead
                    raise _cut(url, part, total) from exc
                if not block:
                    break
                out.write(block)
                advance(len(block))
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            part.unlink(missing_ok=True)
            raise SharedTaskError(f"no space left on the device of {part.parent} while downloading {url}"
                                  + (f" ({total:,} bytes needed)" if total else ""),
                                  hint="free space or point SHAREDTASK_DATA at a bigger disk; the partial file was removed") from None
        raise
    got = part.stat().st_size
    if total is not None and got < total:
        raise _cut(url, part, total)


def _cut(url: str, part: Path, total: int | None) -> SharedTaskError:
    got = part.stat().st_size if part.exists() else 0
    of = f" of {total:,}" if total else ""
    return SharedTaskError(f"the download of {url} was cut after {got:,}{of} bytes",
                           hint="run the same command again to resume it")
