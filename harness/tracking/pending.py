"""Send log plans left pending when MLflow was unreachable (``harness sync``).

Each pending file is a :class:`~harness.tracking.LogPlan` saved before the job tried to log.
Runs the job already created are continued, not duplicated, even when the job was killed
between creating a run and recording its id. A plan that still cannot be sent stays
pending; the command exits non-zero if any does. A plan whose result files were deleted can
never complete: sync says so, and ``--drop NAME`` (or ``--drop-missing``) moves it to
``dropped/`` beside the pending plans, marking the runs it had started FAILED.

Each plan is claimed before it is read (:func:`~harness.tracking.log_plan.claimed`): a plan
another sync or a job is sending is left to it, so syncs run at once send each plan once. A
file that is not a log plan (invalid JSON, fields missing) is named in one line and moved to
``corrupt/`` beside the pending plans; the others are sent, and sync exits non-zero.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import NamedTuple

from harness.errors import InputError
from harness.tracking.log_plan import (
    EXPERIMENT_ID,
    LogPlan,
    claimed,
    close_open_runs,
    execute,
    missing_files,
    refused,
)

__all__ = ["sync", "drop", "replay", "Replayed", "CORRUPT"]

#: Where files of the pending folder that are not log plans are moved.
CORRUPT = "corrupt"

log = logging.getLogger("harness.sync")


class Replayed(NamedTuple):
    """What :func:`replay` did with the pending folder's plans."""

    sent: int
    failed: int  # still pending
    unreachable: int  # of those, the ones whose store did not answer
    busy: int = 0  # being sent by another process: left to it
    corrupt: int = 0  # not log plans: moved to corrupt/


def sync(pending_dir: Path, tracking_uri: str | None = None) -> tuple[int, int]:
    """Replay every plan in ``pending_dir``; returns (sent, still pending)."""
    done = replay(pending_dir, tracking_uri)
    return done.sent, done.failed


def drop(pending_dir: Path, names: list[str], tracking_uri: str | None = None) -> list[Path]:
    """Move the named plans (file names, with or without ``.json``) to ``dropped/``; runs
    they had created but not finished are marked FAILED when the store answers."""
    moved = []
    for name in names:
        marker = pending_dir / (name if name.endswith(".json") else f"{name}.json")
        _must_exist(pending_dir, marker)
        with claimed(marker) as mine:
            if not mine:
                raise InputError(f"pending plan {marker.name!r} is being sent by another "
                                 "process; not dropped", key="--drop")
            moved.append(_drop_one(pending_dir, marker, tracking_uri))
    return moved


def _must_exist(pending_dir: Path, marker: Path) -> None:
    if not marker.is_file():
        known = ", ".join(p.name for p in sorted(pending_dir.glob("*.json"))) or "none"
        raise InputError(f"no pending plan {marker.name!r} in {pending_dir}; pending: "
                         f"{known}", key="--drop")


def _drop_one(pending_dir: Path, marker: Path, tracking_uri: str | None) -> Path:
    _must_exist(pending_dir, marker)  # still there now that it is claimed
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
    return target


def replay(pending_dir: Path, tracking_uri: str | None) -> Replayed:
    """Send every plan of ``pending_dir`` this process can claim."""
    sent = failed = unreachable = busy = corrupt = 0
    for marker in sorted(pending_dir.glob("*.json")):
        with claimed(marker) as mine:
            if not mine:
                busy += 1
                log.info("%s: being sent by another process; left to it", marker.name)
                continue
            if not marker.is_file():  # sent by another process since the folder was listed
                continue
            plan = _load(pending_dir, marker)
            if plan is None:
                corrupt += 1
                continue
            ok, down = _send(plan, marker, tracking_uri)
            sent += ok
            failed += not ok
            unreachable += down
    return Replayed(sent, failed, unreachable, busy, corrupt)


def _load(pending_dir: Path, marker: Path) -> LogPlan | None:
    """The plan in ``marker``, or None when it is not one (moved to :data:`CORRUPT`)."""
    try:
        return LogPlan.load(marker)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # JSON or its fields
        target = pending_dir / CORRUPT / marker.name
        target.parent.mkdir(exist_ok=True)
        marker.replace(target)
        reason = str(exc).splitlines()[0][:160] if str(exc) else ""
        log.error("%s: not a log plan (%s: %s); moved to %s", marker.name,
                  type(exc).__name__, reason, target)
        return None


def _send(plan: LogPlan, marker: Path, tracking_uri: str | None) -> tuple[bool, bool]:
    """Send one claimed plan; returns (sent, its store did not answer)."""
    if tracking_uri:
        plan.tracking_uri = tracking_uri
    gone = missing_files(plan)
    if gone:
        folders = sorted({str(Path(p).parent) for p in gone})
        log.error("%s: can never be sent: %d result file(s) are gone (%s%s). Drop it "
                  "with: harness sync --drop %s", marker.name, len(gone),
                  ", ".join(folders[:2]), ", ..." if len(folders) > 2 else "",
                  marker.stem)
        return False, False
    try:
        ids = execute(plan, marker)
    except Exception as exc:  # noqa: BLE001 - report and keep the plan for next time
        log.error("%s: still pending (%s: %s)", marker.name, type(exc).__name__,
                  str(exc).splitlines()[0][:200] if str(exc) else "")
        return False, not refused(exc)
    log.info("%s: logged to %s, experiment %r, runs %s", marker.name, plan.tracking_uri,
             plan.experiment, ", ".join(sorted({v for k, v in ids.items()
                                                if k != EXPERIMENT_ID})))
    return True, False
