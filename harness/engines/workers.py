"""The score columns of one stream pass evaluated side by side, in worker processes.

The pass's own process reads each part and evaluates its first score column; each other
column's copy of the part goes to a worker process, which evaluates it with the same code
(:func:`harness.engines.parts.evaluate_part`) and sends back its per-query table
(:func:`harness.engines.parts.evaluate_score_parts`). The tables
are the ones one process computes, value for value (tests/test_stream_workers.py). Workers
start from a fresh interpreter (``forkserver``: a fork of a process holding Arrow's threads
is unsafe) and tune glibc's allocator as their parent did (:mod:`harness.allocator`).
"""

from __future__ import annotations

import collections
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from harness.allocator import tune_allocator, tuned

__all__ = ["ColumnWorkers", "InOrder", "can_start", "cores", "WORKER_MIN_ROWS"]

#: A pass of fewer rows evaluates every column in its own process when the number of
#: workers is left to the engine: starting a worker costs about a second.
WORKER_MIN_ROWS = 4_000_000


def can_start() -> str | None:
    """None when this process may start column workers; else why not (a daemonic process,
    such as a multiprocessing pool's worker, may have no children, and a process started by
    a start method of its own, such as loky's under hydra's joblib launcher, hands its
    children a method they cannot find)."""
    import multiprocessing

    if multiprocessing.current_process().daemon:
        return "a daemonic process may not start processes"
    method = multiprocessing.get_start_method(allow_none=True)
    if method is not None and method not in multiprocessing.get_all_start_methods():
        return f"its processes are started by {method!r}, which a worker could not import"
    return None


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class ColumnWorkers:
    """A pool of ``n`` worker processes for score columns; a context manager."""

    def __init__(self, n: int) -> None:
        import multiprocessing

        context = multiprocessing.get_context(
            "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn")
        self.n = int(n)
        self._pool = ProcessPoolExecutor(max_workers=self.n, mp_context=context,
                                         initializer=_start, initargs=(tuned(),))

    def __enter__(self) -> ColumnWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """``fn(*args)`` in a worker (``fn`` importable by name, its arguments picklable)."""
        return self._pool.submit(fn, *args)


def _start(tune: bool) -> None:
    if tune:
        tune_allocator()


class InOrder:
    """The per-part results of a pass, computed here or in column workers (futures), handed
    to ``keep(column, table, unjudged, seconds)`` in the order one process computes them:
    part by part, column by column. A result not ready yet is waited for only while more
    than ``limit`` are pending; an error, raised here (stored by :meth:`add`), in a worker
    or by the parts' reader, is raised in its turn, after every earlier result."""

    def __init__(self, keep: Callable[..., None], limit: int) -> None:
        self.keep, self.limit = keep, int(limit)
        self.pending: collections.deque[tuple[Any, Any]] = collections.deque()

    def idle(self) -> bool:
        """Whether every result sent to a worker is in: the workers wait for work."""
        return all(not isinstance(r, Future) or r.done() for _, r in self.pending)

    def add(self, column: Any, result: Any) -> None:
        """A column's result for the current part: a future, a tuple, or an exception."""
        self.pending.append((column, result))
        self._hand_over(self.limit)

    def each(self, parts: Iterable[Any]) -> Iterator[Any]:
        """The parts; an error reading them comes after the earlier parts' results."""
        iterator = iter(parts)
        while True:
            try:
                part = next(iterator)
            except StopIteration:
                break
            except BaseException:
                self.finish()
                raise
            yield part

    def finish(self) -> None:
        """Hand over every pending result, waiting for each."""
        self._hand_over(-1)

    def _hand_over(self, wait_above: int) -> None:
        while self.pending:
            column, result = self.pending[0]
            if isinstance(result, Future):
                if len(self.pending) <= wait_above and not result.done():
                    return
                result = result.result()
            self.pending.popleft()
            if isinstance(result, BaseException):
                raise result
            self.keep(column, *result)
