"""The parts of one stream pass over several score columns evaluated side by side, in worker
processes.

The pass's own process reads each part; while the workers have fewer than two parts each in
hand, the part goes whole to one of them, which evaluates every score column of it with the
same code (:func:`harness.engines.parts.evaluate_part_columns`) and sends back the
per-query tables; otherwise the pass's process evaluates it
(:func:`harness.engines.parts.evaluate_score_parts`). The tables are the ones one process
computes, value for value (tests/test_stream_workers.py). Workers
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

__all__ = ["ColumnWorkers", "InOrder", "Meanwhile", "can_start", "cores", "WORKER_MIN_ROWS"]

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
    """The per-part results of a pass, computed here or in workers (futures), handed to
    ``keep(key, result)`` in the order one process computes them: part by part. A result
    not ready yet is waited for only while more than ``limit`` are pending; an error,
    raised here (stored by :meth:`add`), in a worker or by the parts' reader, is raised in
    its turn, after every earlier result."""

    def __init__(self, keep: Callable[..., None], limit: int) -> None:
        self.keep, self.limit = keep, int(limit)
        self.pending: collections.deque[tuple[Any, Any]] = collections.deque()

    def busy(self) -> int:
        """How many results sent to workers are not in yet: the work the workers have."""
        return sum(isinstance(r, Future) and not r.done() for _, r in self.pending)

    def add(self, key: Any, result: Any) -> None:
        """A result for the current part: a future, a value, or an exception."""
        self.pending.append((key, result))
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
            key, result = self.pending[0]
            if isinstance(result, Future):
                if len(self.pending) <= wait_above and not result.done():
                    return
                result = result.result()
            self.pending.popleft()
            if isinstance(result, BaseException):
                raise result
            self.keep(key, result)


class Meanwhile:
    """Work of the pass's process that needs nothing from the pass (a study's sklearn check
    of a sample, say): one task at a time, run where the process would otherwise evaluate a
    part itself while its workers have theirs in hand, so it costs the pass about half its
    time on two cores rather than all of it after the pass; what is left runs at the end."""

    def __init__(self, tasks: Iterable[Callable[[], Any]] = ()) -> None:
        self.tasks = collections.deque(tasks)

    def run_one(self) -> bool:
        """Run the next task; False when none was left."""
        if not self.tasks:
            return False
        self.tasks.popleft()()
        return True

    def run_while(self, busy: Callable[[], bool]) -> None:
        """Run tasks, one at a time, while ``busy()`` holds (the workers' hands full)."""
        while busy() and self.run_one():
            continue

    def run_all(self) -> None:
        self.run_while(lambda: True)
