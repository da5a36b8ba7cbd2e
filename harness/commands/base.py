"""What every ``harness <command>`` shares: options, exit codes, one-line errors.

Exit codes: 0 ok, 1 differences or failures, 2 bad input, 3 store unreachable.
An error the user can act on prints one line (``error: ...``) on stderr, never a traceback.

The command line's own process also tunes glibc's allocator
(:func:`harness.allocator.tune_allocator`, re-exported here).
"""

from __future__ import annotations

import argparse
import errno
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

from harness.allocator import MMAP_THRESHOLD, TRIM_THRESHOLD, tune_allocator
from harness.errors import HarnessError

__all__ = ["OK", "DIFFERENT", "BAD_INPUT", "UNREACHABLE", "add_tracking_uri", "exit_code",
           "report_error", "run_command", "tune_allocator", "MMAP_THRESHOLD", "TRIM_THRESHOLD",
           "keyword_default"]

OK, DIFFERENT, BAD_INPUT, UNREACHABLE = 0, 1, 2, 3


def add_tracking_uri(parser: argparse.ArgumentParser, *, help: str | None = None) -> None:
    """Add the ``--tracking-uri`` option every command shares."""
    parser.add_argument("--tracking-uri", default=None,
                        help=help or "MLflow store (default: $MLFLOW_TRACKING_URI, else "
                        "sqlite:///<project>/runs/mlflow.db)")


def keyword_default(function: Callable[..., Any], name: str) -> Any:
    """The default of ``function``'s parameter ``name``: an option that hands its value to
    that parameter takes its default from there, so the two cannot drift apart."""
    return inspect.signature(function).parameters[name].default


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
        code = int(main(argv) or OK)
        sys.stdout.flush()  # a write that fails fails here, not in Python's exit
        return code
    except (HarnessError, FileNotFoundError) as exc:
        return report_error(exc)
    except BrokenPipeError:  # the reader left (harness eval ... | head): stop quietly
        _drop_stdout()
        return OK
    except OSError as exc:
        if exc.filename is not None or exc.errno not in _WRITE_ERRORS:
            raise
        _drop_stdout()  # a full disk or device, an I/O error writing the output: one line
        print(f"error: writing the output failed: [Errno {exc.errno}] {exc.strerror}; what "
              "was written is incomplete", file=sys.stderr)
        return BAD_INPUT


#: Errors of a write without a file name (standard output, an open file): no space, a
#: quota, a file too large, an I/O error, a read-only file system.
_WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS)


def _drop_stdout() -> None:
    """Point standard output at the null device: Python's own flush at exit then fails
    silently (and what the buffer held is dropped)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
