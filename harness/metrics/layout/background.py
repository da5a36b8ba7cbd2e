"""Validation that runs on the second core while the metrics are computed.

The duplicate (qid, docid) check of a large run hashes every docid and sorts them per query;
its result is needed only to refuse bad input, not to compute a metric. :func:`start` runs
such a check in a worker thread (numpy releases the GIL in its loops, so the two threads
use two cores); :func:`wait` returns when it is done and raises its error, if any. Small
inputs are checked inline: a thread costs more than it saves there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["start", "start_value", "wait", "BACKGROUND_ROWS"]

#: Rows from which a check runs in the background.
BACKGROUND_ROWS = 200_000

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="harness-check")
        return _pool


def start(check: Callable[[], Any], rows: int) -> Future[Any] | None:
    """Run ``check`` now (``rows`` below :data:`BACKGROUND_ROWS`, returns None) or in the
    worker thread (returns its future)."""
    if rows < BACKGROUND_ROWS:
        check()
        return None
    return _executor().submit(check)


def start_value(make: Callable[[], T], rows: int) -> Future[T]:
    """:func:`start` for work whose result a later check needs: a future in any case,
    already done when ``rows`` is below :data:`BACKGROUND_ROWS`. The worker runs tasks in
    the order they were started, so a check started after it may wait on it."""
    if rows >= BACKGROUND_ROWS:
        return _executor().submit(make)
    done: Future[T] = Future()
    try:
        done.set_result(make())
    except Exception as exc:  # raised where the result is read, as in the worker
        done.set_exception(exc)
    return done


def wait(pending: Future[Any] | None) -> None:
    """Block until a check started by :func:`start` is done; raise its error."""
    if pending is not None:
        pending.result()
