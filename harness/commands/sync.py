"""``harness sync``: send log plans left pending when MLflow was unreachable.

Each pending file is a :class:`~harness.tracking.LogPlan` saved before the job tried to log
(see :mod:`harness.tracking.pending`). A plan that still cannot be sent stays pending; the
command exits non-zero if any does. ``--drop NAME`` (or ``--drop-missing``) moves a plan
whose result files were deleted to ``dropped/``, marking the runs it had started FAILED.
A file that is not a log plan is moved to ``corrupt/`` (sync exits non-zero). Several syncs
(and jobs) at once send each plan once: a plan being sent elsewhere is left to its sender.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from harness.commands.base import DIFFERENT, OK, UNREACHABLE, add_tracking_uri, keyword_default
from harness.paths import PENDING_DIR, project_path
from harness.tracking import LogPlan, configure_requests
from harness.tracking.log_plan import missing_files
from harness.tracking.pending import CORRUPT, drop, replay

log = logging.getLogger("harness.sync")


def parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    p = argparse.ArgumentParser(prog="harness sync", description=__doc__)
    p.add_argument("--pending-dir", default=PENDING_DIR,
                   help="folder of pending log plans (default: %(default)s)")
    add_tracking_uri(p, help="send to this store instead of the one each plan names")
    p.add_argument("--timeout", type=int, default=keyword_default(configure_requests,
                                                                  "timeout_s"),
                   help="seconds per HTTP request (default: %(default)s)")
    p.add_argument("--drop", nargs="+", metavar="NAME", default=[],
                   help="move these pending plans to dropped/ instead of sending them")
    p.add_argument("--drop-missing", action="store_true",
                   help="drop every plan whose result files are gone")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    configure_requests(args.timeout)
    pending = project_path(args.pending_dir)
    if args.drop or args.drop_missing:
        names = list(args.drop)
        if args.drop_missing and pending.is_dir():
            names += [m.name for m in sorted(pending.glob("*.json"))
                      if _misses_files(m) and m.name not in names]
        if not names:
            log.info("no plan in %s has missing result files", pending)
        drop(pending, names, args.tracking_uri)
        return OK
    if not pending.is_dir() or not any(pending.glob("*.json")):
        log.info("nothing pending in %s", pending)
        return 0
    done = replay(pending, args.tracking_uri)
    log.info("%d plan(s) sent, %d still pending%s%s", done.sent, done.failed,
             f", {done.busy} left to the process sending them" if done.busy else "",
             f", {done.corrupt} not a log plan (moved to {pending / CORRUPT})"
             if done.corrupt else "")
    if done.failed and done.unreachable == done.failed and not done.corrupt:
        return UNREACHABLE  # every plan waits for a store that did not answer
    return DIFFERENT if done.failed or done.corrupt else OK


def _misses_files(marker: Path) -> bool:
    """Whether the plan in ``marker`` can never complete (a plan sent or unreadable meanwhile
    is not one to drop)."""
    try:
        return bool(missing_files(LogPlan.load(marker)))
    except (OSError, ValueError, TypeError, KeyError):
        return False
