"""Send log plans left pending when MLflow was unreachable (``harness sync``).

Each pending file is a :class:`~harness.tracking.LogPlan` saved before the job tried to log.
Runs the job already created are continued, not duplicated, even when the job was killed
between creating a run and recording its id. A plan that still cannot be sent stays
pending; the command exits non-zero if any does. A plan whose result files were deleted can
never complete: sync says so, and ``--drop NAME`` (or ``--drop-missing``) moves it to
``dropped/`` beside the pending plans, marking the runs it had started FAILED.
"""

from __future__ import annotations

import logging
from pathlib import Path

from harness.errors import InputError
from harness.tracking.log_plan import (EXPERIMENT_ID, LogPlan, close_open_runs, execute,
                                      missing_files, refused)

__all__ = ["sync", "drop", "replay"]

log = logging.getLogger("harness.sync")


def sync(pending_dir: Path, tracking_uri: str | None = None) -> tuple[int, int]:
    """Replay every plan in ``pending_dir``; returns (sent, still pending)."""
    sent, failed, _ = replay(pending_dir, tracking_uri)
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


def replay(pending_dir: Path, tracking_uri: str | None) -> tuple[int, int, int]:
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
                      "with: harness sync --drop %s", marker.name, len(gone),
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
                 plan.experiment, ", ".join(sorted({v for k, v in ids.items()
                                                    if k != EXPERIMENT_ID})))
    return sent, failed, unreachable
