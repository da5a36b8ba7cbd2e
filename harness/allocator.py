"""glibc's allocator thresholds for a process that evaluates batch after batch.

A study evaluates batch after batch, each allocating and freeing many arrays of a few MB, and
by default glibc gives the freed memory back to the OS (its trim threshold follows its mmap
threshold, raised on the fly up to 32 MB) and faults the same pages in again for the next
batch. Fixed thresholds keep those arrays in the heap: on the 2-ranker, 32-variant study of
an 11M-row ``parquet_run`` the pass took 7.1-7.4 s instead of 9.7-9.8 s (system time 0.7 s
instead of 3 s) at the same peak RSS (0.62 GB; issue 25, docs/scaling.md). Arrays of 64 MB
and more are still mapped, so a 100M-row frame's columns go back to the OS when freed.

The command line tunes its own process (:mod:`harness.commands.dispatch`) and the stream
engine's column workers follow their parent; importing :mod:`harness` as a library changes
nothing. Elsewhere than glibc this does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
from collections.abc import Iterator
from typing import Any

__all__ = ["BOUNDED_MMAP", "MMAP_THRESHOLD", "TRIM_THRESHOLD", "bounded_memory", "map_from",
           "tune_allocator", "tuned"]

#: Allocations of at least this many bytes are mapped (glibc's M_MMAP_THRESHOLD).
MMAP_THRESHOLD = 64 * 2**20
#: Free memory at the heap's top above this many bytes goes back to the OS (M_TRIM_THRESHOLD).
TRIM_THRESHOLD = 256 * 2**20
#: Within :func:`bounded_memory`, while blocks are evaluated, allocations of at least this
#: many bytes are mapped (:func:`map_from`).
BOUNDED_MMAP = 8 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
_GLIBC_DEFAULTS = (128 * 1024, 128 * 1024)  # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD at start
_TUNED: list[bool] = []


def _mallopt() -> Any:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt


@contextlib.contextmanager
def bounded_memory(map_from: int = 1 << 20) -> Iterator[bool]:
    """While inside, thresholds for work whose memory must follow its current block, not
    its largest (``harness eval`` on a run read block by block): buffers of ``map_from``
    bytes and more are mapped, so each goes back to the OS when freed (a column let go
    among live small objects would otherwise leave holes the heap cannot give back), free
    memory above 16 MB at the heap's top goes back too, and Arrow allocates from the same
    heap (its system pool). :func:`map_from` changes the first threshold inside. On
    leaving, Arrow's pool and glibc's thresholds are what they were (the command line's,
    :func:`tune_allocator`, or glibc's defaults), so a process that goes on (a test
    session, a notebook) is not left changed. Yields False where there is no glibc."""
    mallopt = _mallopt()
    previous = None
    try:
        import pyarrow as pa

        previous = pa.default_memory_pool()
        pa.set_memory_pool(pa.system_memory_pool())
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        pa = None
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, map_from)
        mallopt(_M_TRIM_THRESHOLD, 16 << 20)
    try:
        yield mallopt is not None
    finally:
        if pa is not None and previous is not None:
            pa.set_memory_pool(previous)
        if mallopt is not None:
            mmap, trim = (MMAP_THRESHOLD, TRIM_THRESHOLD) if tuned() else _GLIBC_DEFAULTS
            mallopt(_M_MMAP_THRESHOLD, mmap)
            mallopt(_M_TRIM_THRESHOLD, trim)


def map_from(nbytes: int) -> bool:
    """Within :func:`bounded_memory`: map allocations of ``nbytes`` and more from now on.
    ``harness eval`` reads the qrels with 1 MB (their columns, mapped, go back to the OS
    when the query ids are let go), then evaluates blocks with :data:`BOUNDED_MMAP`: a
    block's per-row arrays stay in the heap, where mapped each would be faulted in afresh
    (on the 10M-line run, 1 MB cost 6.6 s of system time against 3.0 s)."""
    mallopt = _mallopt()
    return mallopt is not None and bool(mallopt(_M_MMAP_THRESHOLD, nbytes))


def tune_allocator() -> bool:
    """Set glibc's mmap and trim thresholds for this process (once, before the work);
    True when both were accepted, False where there is no glibc ``mallopt``. An explicit
    ``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_TRIM_THRESHOLD_`` in the environment wins."""
    mallopt = _mallopt()
    if mallopt is None:
        return False
    done = True
    for option, value, env in ((_M_MMAP_THRESHOLD, MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_"),
                               (_M_TRIM_THRESHOLD, TRIM_THRESHOLD, "MALLOC_TRIM_THRESHOLD_")):
        if env not in os.environ:
            done = bool(mallopt(option, value)) and done
    if done:
        _TUNED.append(True)
    return done


def tuned() -> bool:
    """Whether :func:`tune_allocator` set this process's thresholds."""
    return bool(_TUNED)
