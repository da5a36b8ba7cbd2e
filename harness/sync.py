"""``python -m harness.sync``: send log plans left pending when MLflow was unreachable.

Each pending file is a :class:`~harness.tracking.LogPlan` saved before the job tried to log.
Runs the job already created are continued, not duplicated, even when the job was killed
between creating a run and recording its id. A plan that still cannot be sent stays
pending; the command exits non-zero if any does. A plan whose result files were deleted can
never complete: sync says so, and ``--drop NAME`` (or ``--drop-missing``) moves it to
``dropped/`` beside the pending plans, marking the runs it had started FAILED.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from harness.cli import DIFFERENT, OK, UNREACHABLE, add_tracking_uri, run_command
from harness.errors import InputError
from harness.paths import project_path
from harness.tracking import LogPlan, configure_requests, execute
from harness.tracking.plan import close_open_runs, missing_files, refused

log = logging.getLogger("harness.sync")


def sync(pending_dir: Path, tracking_uri: str | None = None) -> tuple[int, int]:
    """Replay every plan in ``pending_dir``; returns (sent, still pending)."""
    sent, failed, _ = _replay(pending_dir, tracking_uri)
    return sent, failed


def drop(pending_dir: Path, names: list[str], tracking_uri: str | None = None) -> list[Path]:
    """Move the named plans (file names, with or without ``.json``) to ``dropped/``; runs
    they had created but not finished are marked FAILED when the store answers."""
    moved = []
    for name in names:
        marker = pending_dir / (name if name.endswith(".json") else f"{name}.json")
        if not marker.is_file():
            known = ", ".join(p.name for p in sorted(pending_dir.glob("*.json"))) or "none"
            raise InputError(f"no pending plan {marker.name!r} in {pending_dir}; pending: "
                             f"{known}", key="--drop")
        plan = LogPlan.load(marker)
        if tracking_uri:
            plan.tracking_uri = tracking_uri
        if any(r.run_id and not r.done for r in plan.runs):
            try:
                close_open_runs(plan)
            except Exception as exc:  # noqa: BLE001 - dropping must not need the store
                log.warning("%s: could not mark its unfinished runs FAILED (%s)", marker.name,
                            type(exc).__name__)
        target = pending_dir / "dropped" / marker.name
        target.parent.mkdir(exist_ok=True)
        marker.replace(target)
        log.info("%s: dropped (kept in %s)", marker.name, target)
        moved.append(target)
    return moved


def _replay(pending_dir: Path, tracking_uri: str | None) -> tuple[int, int, int]:
    """(sent, still pending, of those the ones whose store could not be reached)."""
    sent = failed = unreachable = 0
    for marker in sorted(pending_dir.glob("*.json")):
        plan = LogPlan.load(marker)
        if tracking_uri:
            plan.tracking_uri = tracking_uri
        gone = missing_files(plan)
        if gone:
            failed += 1
            folders = sorted({str(Path(p).parent) for p in gone})
            log.error("%s: can never be sent: %d result file(s) are gone (%s%s). Drop it "
                      "with: python -m harness.sync --drop %s", marker.name, len(gone),
                      ", ".join(folders[:2]), ", ..." if len(folders) > 2 else "",
                      marker.stem)
            continue
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
    parser.add_argument("--drop", nargs="+", metavar="NAME", default=[],
                        help="move these pending plans to dropped/ instead of sending them")
    parser.add_argument("--drop-missing", action="store_true",
                        help="drop every plan whose result files are gone")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    configure_requests(args.timeout, 1)
    pending = project_path(args.pending_dir)
    if args.drop or args.drop_missing:
        names = list(args.drop)
        if args.drop_missing and pending.is_dir():
            names += [m.name for m in sorted(pending.glob("*.json"))
                      if missing_files(LogPlan.load(m)) and m.name not in names]
        if not names:
            log.info("no plan in %s has missing result files", pending)
        drop(pending, names, args.tracking_uri)
        return OK
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
