"""Where runs go: the tracking URI, request time-outs, and creating the experiment once."""

from __future__ import annotations

import os
import time

from harness.paths import project_path

__all__ = ["resolve_tracking_uri", "configure_requests", "ensure_experiment", "project_path"]


def resolve_tracking_uri(configured: str | None) -> str:
    """The configured URI, else ``$MLFLOW_TRACKING_URI``, else SQLite at runs/mlflow.db."""
    if configured:
        return configured
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    db = project_path("runs/mlflow.db")
    db.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{db}"


def configure_requests(timeout_s: int, max_retries: int) -> None:
    """Bound MLflow's HTTP retries so an unreachable server fails in seconds, not minutes."""
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(int(timeout_s))
    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = str(int(max_retries))
    os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"] = "1"
    os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_JITTER"] = "0"


def ensure_experiment(client: object, name: str, artifact_root: str) -> str:
    """Id of experiment ``name``, created if absent.

    With a local store (SQLite or files) artifacts go under ``artifact_root``; a tracking
    server keeps its own artifact store. Safe when several processes race: a loser of the
    race reads the winner's experiment.
    """
    from mlflow.exceptions import MlflowException

    uri = str(getattr(client, "tracking_uri", "") or "")
    remote = uri.startswith(("http://", "https://", "databricks"))
    for attempt in range(5):
        exp = client.get_experiment_by_name(name)  # type: ignore[attr-defined]
        if exp is not None:
            return str(exp.experiment_id)
        location = None if remote else (project_path(artifact_root) / name).as_uri()
        try:
            return str(client.create_experiment(  # type: ignore[attr-defined]
                name, artifact_location=location))
        except MlflowException:
            time.sleep(0.2 * (attempt + 1))
    raise RuntimeError(f"could not create or find MLflow experiment {name!r}")
