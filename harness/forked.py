"""A function run in a forked copy of this process, its result sent back pickled.

``harness eval`` evaluates a large run's second half in a fork while this process evaluates
the first: the fork shares the qrels already read and the modules already imported (no
second start, no second read), and, a process of its own, it is not held by this one's GIL
(two threads in one process made about 1.1 cores' worth of progress; two processes make
two). Only where ``os.fork`` is safe to use this way (Linux): :func:`available` says;
the caller decides whether the work is worth a fork.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import warnings
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Forked", "available"]

T = TypeVar("T")


def available() -> bool:
    """Whether :class:`Forked` may be used: Linux (elsewhere a fork of a process with
    threads is not safe, and macOS's Python starts processes by spawning them)."""
    return sys.platform == "linux" and hasattr(os, "fork")


class Forked(Generic[T]):
    """``work()`` running in a forked child from construction; :meth:`result` waits for it
    and returns its value or raises its exception (a child that dies without answering:
    :class:`ChildProcessError` naming its exit status). :meth:`cancel` kills it. Either
    must be called: the child is reaped there."""

    def __init__(self, work: Callable[[], T]) -> None:
        read, write = os.pipe()
        with warnings.catch_warnings():  # Python >= 3.12 warns on a fork beside threads
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: answer through the pipe, then leave without cleanup
            os.close(read)
            _answer(work, write)
        os.close(write)
        self.pid, self.fd = pid, read

    def result(self) -> T:
        with os.fdopen(self.fd, "rb") as pipe:
            payload = pipe.read()
        _, status = os.waitpid(self.pid, 0)
        if not payload:
            raise ChildProcessError(f"the forked evaluation (pid {self.pid}) ended without "
                                    f"an answer: {_status(status)}")
        ok, value = pickle.loads(payload)
        if not ok:
            raise value
        return value

    def cancel(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(self.fd)
        os.waitpid(self.pid, 0)


def _answer(work: Callable[[], object], fd: int) -> None:
    """In the child: ``work()``'s value or exception, pickled to ``fd``; never returns."""
    code = 0
    try:
        try:
            payload = pickle.dumps((True, work()), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
            try:
                payload = pickle.dumps((False, exc), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # an exception that does not pickle: its text does
                payload = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(payload)
    except BaseException:  # noqa: BLE001 - the parent reports a child with no answer
        code = 1
    finally:
        os._exit(code)  # no atexit handlers, no flush of the parent's buffers


def _status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
