"""Where runs go: the tracking URI, request time-outs, and creating the experiment once."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import TrackingUnavailable
from harness.paths import project_path

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

__all__ = ["resolve_tracking_uri", "configure_requests", "ensure_experiment", "project_path",
           "EXPERIMENT_KIND_TAG", "EXPERIMENT_KIND", "mark_experiment", "ui_url", "ui_base",
           "UI_BASE", "tracking_env", "REQUEST_TIMEOUT_S", "REQUEST_RETRIES"]

#: The experiment tag MLflow's UI (3.x) reads for an experiment's kind, and the kind of the
#: project's experiments: model development (runs and their metrics), not GenAI (traces).
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"
#: Seconds per MLflow HTTP request and retries of a failed one (``tracking.timeout_s``,
#: ``tracking.max_retries``; the commands' ``--timeout``): an unreachable store fails in
#: seconds, not minutes.
REQUEST_TIMEOUT_S = 5
REQUEST_RETRIES = 1


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


def configure_requests(timeout_s: int = REQUEST_TIMEOUT_S,
                       max_retries: int = REQUEST_RETRIES) -> None:
    """Bound MLflow's HTTP retries so an unreachable server fails in seconds, not minutes."""
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(int(timeout_s))
    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = str(int(max_retries))
    os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"] = "1"
    os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_JITTER"] = "0"


def ensure_experiment(client: MlflowClient, name: str, artifact_root: str) -> str:
    """Id of experiment ``name``, created if absent, tagged as a model-development
    experiment (:data:`EXPERIMENT_KIND_TAG`) so MLflow's UI opens on its runs; an existing
    experiment without the tag gets it, one whose kind was set already keeps it.

    With a local store (SQLite or files) artifacts go under ``artifact_root``; a tracking
    server keeps its own artifact store. Safe when several processes race: a loser of the
    race reads the winner's experiment.
    """
    from mlflow.exceptions import MlflowException

    uri = str(getattr(client, "tracking_uri", "") or "")
    remote = uri.startswith(("http://", "https://", "databricks"))
    for attempt in range(5):
        exp = client.get_experiment_by_name(name)
        if exp is not None:
            mark_experiment(client, exp)
            return str(exp.experiment_id)
        location = None if remote else (project_path(artifact_root) / name).as_uri()
        try:
            return str(client.create_experiment(
                name, artifact_location=location,
                tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND}))
        except MlflowException:
            time.sleep(0.2 * (attempt + 1))
    raise RuntimeError(f"could not create or find MLflow experiment {name!r}")


def mark_experiment(client: MlflowClient, experiment: Any) -> None:
    """Tag ``experiment`` (an MLflow ``Experiment``) as model development unless it has a
    kind already: one made before issue 22, or by hand, opens on its runs too."""
    if EXPERIMENT_KIND_TAG not in (experiment.tags or {}):
        client.set_experiment_tag(
            experiment.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)


#: Where ``make ui`` (and ``mlflow ui``, by default) serves a local store.
UI_BASE = "http://127.0.0.1:5000"


def ui_base(tracking_uri: str) -> str:
    """The address of the UI showing ``tracking_uri``'s runs: a tracking server's own (it
    serves its UI), else :data:`UI_BASE`, where ``make ui`` serves a local store."""
    if tracking_uri.startswith(("http://", "https://")):
        return tracking_uri.rstrip("/")
    return UI_BASE


def ui_url(experiment_id: str, run_id: str | None = None, *,
           base: str = UI_BASE) -> str:
    """The page of an experiment (or of one of its runs) in MLflow's UI, in its "Model
    training" view: MLflow 3.17 opens an experiment by the GenAI / Model training switch of
    the browser (default GenAI: traces and tokens), not by :data:`EXPERIMENT_KIND_TAG`;
    ``workflowType=machine_learning`` in the address selects the runs table."""
    page = f"{base}/#/experiments/{experiment_id}"
    return f"{page}{f'/runs/{run_id}' if run_id else ''}?workflowType=machine_learning"


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` tracking URI, else None."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///"):])


def open_client(uri: str) -> Any:
    """An ``MlflowClient`` whose store is ready, created under a lock across processes.

    MLflow builds or migrates a SQLite store's schema the first time a process opens it;
    two processes doing so at once race, and can leave the file half-migrated. Here the
    first opening in each process happens while holding ``<db>.lock`` (:mod:`filelock`),
    so one process builds the schema and the others find it built.

    Raises
    ------
    TrackingUnavailable
        When the store is half-migrated (a migration was interrupted), naming the file and
        how to repair it.
    """
    from mlflow.tracking import MlflowClient

    db = sqlite_path(uri)
    if db is None or str(db) in _READY:
        return MlflowClient(tracking_uri=uri)
    from filelock import FileLock

    db.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{db}.lock", timeout=600):
        try:
            client = MlflowClient(tracking_uri=uri)
            client.search_experiments(max_results=1)  # builds or migrates the schema
        except Exception as exc:  # noqa: BLE001 - MLflow wraps SQLAlchemy's errors variously
            if "_alembic_tmp" in str(exc) or "alembic" in type(exc).__module__:
                raise TrackingUnavailable(
                    f"the MLflow store {db} is half-migrated (an earlier schema migration was "
                    f"interrupted: {str(exc).splitlines()[0][:160]}). Repair: back up the file, "
                    "drop the leftover table (sqlite3 "
                    f"{db} \"DROP TABLE IF EXISTS _alembic_tmp_latest_metrics\"), then run "
                    f"mlflow db upgrade sqlite:///{db}") from None
            raise
    _READY.add(str(db))
    return client


_READY: set[str] = set()  # stores this process has opened once


@contextlib.contextmanager
def tracking_env(uri: str | None) -> Iterator[None]:
    """``models:/`` and ``runs:/`` URIs resolve against ``uri`` while inside (MLflow reads
    them from the environment); the environment is given back on leaving. With ``uri``
    None, nothing changes. A SQLite store is opened first (:func:`open_client`): its schema
    may be being built by another process at this moment."""
    if not uri:
        yield
        return
    keys = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")
    saved = {k: os.environ.get(k) for k in keys}
    try:
        os.environ.update(dict.fromkeys(keys, str(uri)))
        open_client(str(uri))
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
