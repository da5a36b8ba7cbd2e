"""MLflow tracking: store set-up, log plans written to disk before sending, replay."""

from harness.tracking.log_plan import LogPlan, RunRecord, execute
from harness.tracking.store import (
    configure_requests,
    ensure_experiment,
    project_path,
    resolve_tracking_uri,
)

__all__ = ["LogPlan", "RunRecord", "configure_requests", "ensure_experiment", "execute",
           "project_path", "resolve_tracking_uri"]
