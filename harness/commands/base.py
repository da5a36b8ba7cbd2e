"""What every ``harness <command>`` shares: options, exit codes, one-line errors.

Exit codes: 0 ok, 1 differences or failures, 2 bad input, 3 store unreachable.
An error the user can act on prints one line (``error: ...``) on stderr, never a traceback.

The command line's own process also tunes glibc's allocator (:func:`tune_allocator`): a
study evaluates batch after batch, each allocating and freeing many arrays of a few MB, and
by default glibc gives the freed memory back to the OS (its trim threshold follows its mmap
threshold, raised on the fly up to 32 MB) and faults the same pages in again for the next
batch. Fixed thresholds keep those arrays in the heap: on the 2-ranker, 32-variant study of
an 11M-row ``parquet_run`` the pass took 7.1-7.4 s instead of 9.7-9.8 s (system time 0.7 s
instead of 3 s) at the same peak RSS (0.62 GB; issue 25, docs/scaling.md). Arrays of 64 MB
and more are still mapped, so a 100M-row frame's columns go back to the OS when freed.
Importing :mod:`harness` as a library changes nothing; elsewhere than glibc this does
nothing.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import sys
from collections.abc import Callable

from harness.errors import HarnessError

__all__ = ["OK", "DIFFERENT", "BAD_INPUT", "UNREACHABLE", "add_tracking_uri", "exit_code",
           "report_error", "run_command", "tune_allocator", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

OK, DIFFERENT, BAD_INPUT, UNREACHABLE = 0, 1, 2, 3


def add_tracking_uri(parser: argparse.ArgumentParser, *, help: str | None = None) -> None:
    """Add the ``--tracking-uri`` option every command shares."""
    parser.add_argument("--tracking-uri", default=None,
                        help=help or "MLflow store (default: $MLFLOW_TRACKING_URI, else "
                        "sqlite:///<project>/runs/mlflow.db)")


def exit_code(exc: BaseException) -> int:
    """The exit code of an error: its ``exit_code`` attribute (3 for an unreachable store),
    else 2 (bad input)."""
    return int(getattr(exc, "exit_code", BAD_INPUT))


def report_error(exc: BaseException) -> int:
    """Print ``error: <first line of exc>`` on stderr; return its exit code."""
    text = str(exc).strip().splitlines()
    print(f"error: {text[0] if text else type(exc).__name__}", file=sys.stderr)
    return exit_code(exc)


def run_command(main: Callable[[list[str] | None], int],
                argv: list[str] | None = None) -> int:
    """Run a command's ``main(argv)``, mapping a :class:`HarnessError` to one line and its
    exit code, and ``FileNotFoundError`` (a missing input file) to exit 2. MLflow's
    artifact progress bars are turned off (they would break the one-line stderr).

    Returns
    -------
    int
        The exit code, to pass to :func:`sys.exit`.
    """
    # MLflow's per-download progress bars would turn a one-line error into a dozen lines
    os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"
    try:
        return int(main(argv) or OK)
    except (HarnessError, FileNotFoundError) as exc:
        return report_error(exc)


#: Allocations of at least this many bytes are mapped (glibc's M_MMAP_THRESHOLD).
MMAP_THRESHOLD = 64 * 2**20
#: Free memory at the heap's top above this many bytes goes back to the OS (M_TRIM_THRESHOLD).
TRIM_THRESHOLD = 256 * 2**20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h


def tune_allocator() -> bool:
    """Set glibc's mmap and trim thresholds for this process (once, before the work);
    True when both were accepted, False where there is no glibc ``mallopt``. An explicit
    ``MALLOC_MMAP_THRESHOLD_`` or ``MALLOC_TRIM_THRESHOLD_`` in the environment wins."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    done = True
    for option, value, env in ((_M_MMAP_THRESHOLD, MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_"),
                               (_M_TRIM_THRESHOLD, TRIM_THRESHOLD, "MALLOC_TRIM_THRESHOLD_")):
        if env not in os.environ:
            done = bool(mallopt(option, value)) and done
    return done
