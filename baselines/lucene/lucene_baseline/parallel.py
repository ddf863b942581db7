"""An order-keeping parallel map with bounded memory, for the document conversion.

Why not ``multiprocessing.Pool.imap``: its feeder thread drains the input as fast as
it can, so when the workers are slower than the reader the whole corpus ends up
queued in memory. Here at most ``window`` batches are in flight; the caller's
iterator (the XML parser) runs in this process meanwhile, so parsing and converting
use two cores. Results come back in input order, which keeps runs byte-identical.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


def ordered_map(func: Callable[[In], Out], items: Iterable[In], workers: int,
                window: int = 0) -> Generator[Out, None, None]:
    """``map(func, items)`` on ``workers`` processes (in this one when ``workers < 1``).

    ``func`` must be a module-level function (it is pickled by name); ``window``
    (default ``4 * workers``) bounds how many items are submitted but not yet yielded.
    """
    if workers < 1:
        yield from map(func, items)
        return
    window = window or 4 * workers
    # fork: the workers inherit the imported modules, no re-import per worker.
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        pending: deque[Future[Out]] = deque()
        for item in items:
            pending.append(pool.submit(func, item))
            if len(pending) >= window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
