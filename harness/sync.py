"""``python -m harness.sync``: send log plans left pending when MLflow was unreachable.

Each pending file is a :class:`~harness.tracking.LogPlan` saved before the job tried to log.
Runs the job already created are continued, not duplicated. A plan that still cannot be
sent stays pending; the command exits non-zero if any does.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from harness.cli import DIFFERENT, OK, UNREACHABLE, add_tracking_uri, run_command
from harness.paths import project_path
from harness.tracking import LogPlan, configure_requests, execute
from harness.tracking.plan import refused

log = logging.getLogger("harness.sync")


def sync(pending_dir: Path, tracking_uri: str | None = None) -> tuple[int, int]:
    """Replay every plan in ``pending_dir``; returns (sent, still pending)."""
    sent, failed, _ = _replay(pending_dir, tracking_uri)
    return sent, failed


def _replay(pending_dir: Path, tracking_uri: str | None) -> tuple[int, int, int]:
    """(sent, still pending, of those the ones whose store could not be reached)."""
    sent = failed = unreachable = 0
    for marker in sorted(pending_dir.glob("*.json")):
        plan = LogPlan.load(marker)
        if tracking_uri:
            plan.tracking_uri = tracking_uri
        try:
            ids = execute(plan, marker)
        except Exception as exc:  # noqa: BLE001 - report and keep the plan for next time
            failed += 1
            unreachable += not refused(exc)
            log.error("%s: still pending (%s: %s)", marker.name, type(exc).__name__,
                      str(exc).splitlines()[0][:200] if str(exc) else "")
            continue
        sent += 1
        log.info("%s: logged to %s, experiment %r, runs %s", marker.name, plan.tracking_uri,
                 plan.experiment, ", ".join(sorted(set(ids.values()))))
    return sent, failed, unreachable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.sync", description=__doc__)
    parser.add_argument("--pending-dir", default="runs/pending",
                        help="folder of pending log plans (default: runs/pending)")
    add_tracking_uri(parser, help="send to this store instead of the one each plan names")
    parser.add_argument("--timeout", type=int, default=5, help="seconds per HTTP request")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    configure_requests(args.timeout, 1)
    pending = project_path(args.pending_dir)
    if not pending.is_dir() or not any(pending.glob("*.json")):
        log.info("nothing pending in %s", pending)
        return 0
    sent, failed, unreachable = _replay(pending, args.tracking_uri)
    log.info("%d plan(s) sent, %d still pending", sent, failed)
    if failed and unreachable == failed:
        return UNREACHABLE  # every plan waits for a store that did not answer
    return DIFFERENT if failed else OK


if __name__ == "__main__":
    sys.exit(run_command(main))
