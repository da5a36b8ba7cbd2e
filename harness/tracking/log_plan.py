"""A log plan: everything one job sends to MLflow, as data written to disk first.

The plan is saved as JSON in the pending folder *before* anything is sent. Executing it
creates the runs (recording each run id back into the file), logs params, metrics, tags,
inputs and artifacts in batches, and deletes the file when everything arrived. If the
tracking server is unreachable, or the process is killed, the file stays, and
``harness sync`` replays it later.

A replay is idempotent. Every run is created with a ``harness.plan_run`` tag (the plan's id
and the record's key); a replay first looks for a run with that tag, so a run created just
before a kill, whose id never reached the file, is continued rather than created again.
Metrics carry the time the work ended, so sending them twice stores them once.

Sending a plan is claimed: :func:`execute` holds the plan's lock (``<plan>.json.lock``
beside it, :mod:`filelock`; the system releases it when its process dies) while it sends,
and reads the plan's progress from disk once it holds it. Any number of jobs and
``harness sync`` processes thus send each plan once: one sends, the others skip it
(:func:`claimed` with ``wait=0``) or wait and find it sent.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

__all__ = ["RunRecord", "LogPlan", "execute", "batches", "refused", "close_open_runs",
           "missing_files", "claimed", "PlanBusy", "PARAM_LIMIT", "PLAN_RUN_TAG",
           "EXPERIMENT_ID", "CLAIM_WAIT_S", "MODEL_NAME", "MODEL_URI_TAG", "NOTE_TAG",
           "RUN_ID_SLOT"]

PARAM_LIMIT = 6000  # MLflow truncates (or refuses) longer param values
PLAN_RUN_TAG = "harness.plan_run"  # "<plan id>/<record key>": finds a run after a kill
NOTE_TAG = "mlflow.note.content"  # the run's description, Markdown atop its page
#: In a description, replaced by the run's id once the run exists (a link to its artifacts).
RUN_ID_SLOT = "__HARNESS_RUN_ID__"
#: The key of :func:`execute`'s answer that holds the experiment's id, not a run's (a
#: record's key is "job", "sweep" or "ranker:<name>"): the runs' pages are under it.
EXPERIMENT_ID = "experiment"


@dataclass
class RunRecord:
    """One MLflow run to create. ``parent`` names another record's ``key`` in the plan;
    ``parent_run_id`` an existing run (a sweep's parent)."""

    key: str
    name: str
    parent: str | None = None
    parent_run_id: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: list[list[str]] = field(default_factory=list)  # [local path, artifact dir]
    models: list[list[str]] = field(default_factory=list)  # [MLflow model folder, ranker kind]
    dataset: dict[str, str] | None = None
    status: str = "FINISHED"
    run_id: str | None = None
    attach_only: bool = False  # an existing run (run_id): only add artifacts, keep it open
    start_ms: int | None = None  # when the work began and ended (not when it was logged)
    end_ms: int | None = None
    done: bool = False


@dataclass
class LogPlan:
    tracking_uri: str
    experiment: str
    artifact_root: str
    runs: list[RunRecord]
    created: float = field(default_factory=time.time)
    plan_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    attempts: int = 0  # how many times sending began; a replay looks for runs made before

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        # the fields as they are (dataclasses.asdict deep-copies every value first: 0.2 s
        # per save of a default job's plan, which is saved after every run it sends)
        data = dict(vars(self), runs=[vars(r) for r in self.runs])
        tmp.write_text(json.dumps(data, indent=1, default=str))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> LogPlan:
        raw = json.loads(path.read_text())
        raw["runs"] = [RunRecord(**r) for r in raw["runs"]]
        return cls(**raw)

    def run_id(self, key: str) -> str | None:
        return next((r.run_id for r in self.runs if r.key == key), None)


#: MLflow's log_batch limits: params (and tags) per call, metrics per call, all entities.
BATCH_PARAMS, BATCH_METRICS, BATCH_ENTITIES = 100, 1000, 1000


def batches(params: list[Any], metrics: list[Any]) -> list[tuple[list[Any], list[Any]]]:
    """Params and metrics packed into as few ``log_batch`` calls as MLflow's limits allow
    (:data:`BATCH_PARAMS` params, :data:`BATCH_METRICS` metrics, :data:`BATCH_ENTITIES`
    entities per call), in order."""
    out = []
    while params or metrics:
        p, params = params[:BATCH_PARAMS], params[BATCH_PARAMS:]
        room = min(BATCH_METRICS, BATCH_ENTITIES - len(p))
        m, metrics = metrics[:room], metrics[room:]
        out.append((p, m))
    return out


#: How long a job waits for a plan that another process (``harness sync``) is sending.
CLAIM_WAIT_S = 600.0


class PlanBusy(Exception):
    """Another process held the plan's lock for longer than the wait."""


_HELD: set[str] = set()  # plans whose lock this process holds (a claim is re-entrant)


@contextmanager
def claimed(marker: Path, *, wait: float = 0.0) -> Iterator[bool]:
    """Hold the lock of the plan saved in ``marker`` (waiting up to ``wait`` seconds);
    yields whether this process holds it. Whoever holds it checks that ``marker`` still
    exists before sending: another process may have sent it meanwhile. The lock file is
    removed once the plan is gone (while still held, so that no process can act on a plan
    another one sent)."""
    key = str(marker)
    if key in _HELD:
        yield True
        return
    from filelock import FileLock, Timeout

    lock = FileLock(f"{marker}.lock", thread_local=False)
    try:
        lock.acquire(timeout=wait)
    except Timeout:
        yield False
        return
    _HELD.add(key)
    try:
        yield True
    finally:
        _HELD.discard(key)
        if not marker.exists():
            Path(f"{marker}.lock").unlink(missing_ok=True)
        lock.release()


def execute(plan: LogPlan, marker: Path, *,
            progress: Callable[[Iterable[RunRecord]], Iterable[RunRecord]] | None = None,
            wait: float = CLAIM_WAIT_S) -> dict[str, str]:
    """Send the plan to MLflow; returns record key -> run id, and :data:`EXPERIMENT_ID` ->
    the experiment's id. Deletes ``marker`` on success.

    Each run costs one ``create_run`` (with its tags), its params and metrics in as few
    ``log_batch`` calls as MLflow allows, its dataset, its artifacts and ``set_terminated``.
    Raises whatever MLflow raises when the store is unreachable; the marker then holds the
    progress so far. ``progress`` wraps the iterable of runs (e.g. a progress bar).

    The plan is claimed first (:func:`claimed`, waiting up to ``wait`` seconds, else
    :class:`PlanBusy`); its progress is then read from ``marker``, where another process
    may have saved some. A plan another process sent while this one waited is not sent
    again: its run ids are looked up in the store.
    """
    with claimed(marker, wait=wait) as mine:
        if not mine:
            raise PlanBusy(f"the log plan {marker} is being sent by another process "
                           f"(waited {wait:g}s)")
        if not marker.is_file():
            return _sent_ids(plan)
        saved = LogPlan.load(marker)
        if saved.plan_id == plan.plan_id:  # another process's progress, if any
            plan.runs, plan.attempts = saved.runs, saved.attempts
        return _execute(plan, marker, progress)


def _sent_ids(plan: LogPlan) -> dict[str, str]:
    """:func:`execute`'s answer for a plan another process sent: the ids of its runs."""
    from harness.tracking.store import ensure_experiment, open_client

    client = open_client(plan.tracking_uri)
    exp_id = ensure_experiment(client, plan.experiment, plan.artifact_root)
    return {r.key: r.run_id or _find_run(client, exp_id, f"{plan.plan_id}/{r.key}") or ""
            for r in plan.runs} | {EXPERIMENT_ID: exp_id}


def _execute(plan: LogPlan, marker: Path,
             progress: Callable[[Iterable[RunRecord]], Iterable[RunRecord]] | None
             ) -> dict[str, str]:
    from mlflow.entities import Metric, Param

    from harness.tracking.store import ensure_experiment, open_client

    client = open_client(plan.tracking_uri)
    exp_id = ensure_experiment(client, plan.experiment, plan.artifact_root)
    replay = plan.attempts > 0
    plan.attempts += 1
    plan.save(marker)
    now = int(time.time() * 1000)
    for record in (progress or iter)(plan.runs):
        if record.done:
            continue
        if record.attach_only and record.run_id:
            for local, artifact_dir in record.artifacts:
                _log_artifact(client, record.run_id, local, artifact_dir)
            record.done = True
            plan.save(marker)
            continue
        parent_id = record.parent_run_id or (plan.run_id(record.parent) if record.parent else None)
        if record.run_id is None and replay:  # created before a kill, id never saved?
            record.run_id = _find_run(client, exp_id, f"{plan.plan_id}/{record.key}")
        if record.run_id is None:
            tags = dict(record.tags) | {PLAN_RUN_TAG: f"{plan.plan_id}/{record.key}"}
            if parent_id:
                tags["mlflow.parentRunId"] = parent_id
            run = _with_retries(lambda record=record, tags=tags: client.create_run(
                exp_id, run_name=record.name, tags=tags, start_time=record.start_ms))
            record.run_id = run.info.run_id
            plan.save(marker)
        run_id = record.run_id
        note = record.tags.get(NOTE_TAG, "")
        if RUN_ID_SLOT in note:  # a description that links the run's own artifacts
            _with_retries(partial(client.set_tag, run_id, NOTE_TAG,
                                  note.replace(RUN_ID_SLOT, run_id)))
        params = [Param(k, v) for k, v in record.params.items()]
        stamp = record.end_ms or now  # fixed per record: a metric sent twice is stored once
        metrics = [Metric(k, float(v), stamp, 0) for k, v in record.metrics.items()]
        for p, m in batches(params, metrics):  # the tags went with create_run
            _with_retries(lambda p=p, m=m, run_id=run_id: client.log_batch(run_id, metrics=m,
                                                                          params=p))
        if record.dataset:
            _log_dataset(client, run_id, record.dataset)
        for local, artifact_dir in record.artifacts:
            _log_artifact(client, run_id, local, artifact_dir)
        for local, kind in record.models:
            _log_model(client, exp_id, run_id, local, kind, record)
        client.set_terminated(run_id, status=record.status, end_time=record.end_ms)
        record.done = True
        plan.save(marker)
    marker.unlink(missing_ok=True)
    return {r.key: r.run_id or "" for r in plan.runs} | {EXPERIMENT_ID: exp_id}


def _find_run(client: Any, exp_id: str, plan_run: str) -> str | None:
    """The id of the run a previous attempt created for this record, if any (the oldest
    when several exist)."""
    from mlflow.entities import ViewType

    found = client.search_runs([exp_id], filter_string=f"tags.`{PLAN_RUN_TAG}` = '{plan_run}'",
                               run_view_type=ViewType.ALL, max_results=10,
                               order_by=["attributes.start_time ASC"])
    return found[0].info.run_id if found else None


def missing_files(plan: LogPlan) -> list[str]:
    """Local files the plan still has to send that no longer exist (a deleted result
    folder): such a plan can never complete."""
    return [local for record in plan.runs if not record.done
            for local, _ in [*record.artifacts, *record.models] if not Path(local).exists()]


def refused(exc: BaseException) -> bool:
    """Whether MLflow answered and refused the request (bad value), as opposed to not
    answering at all: a refused plan will not go through on a replay either."""
    code = getattr(exc, "error_code", None)
    return code in ("INVALID_PARAMETER_VALUE", "BAD_REQUEST", "INVALID_STATE",
                    "RESOURCE_ALREADY_EXISTS", "RESOURCE_LIMIT_EXCEEDED")


def close_open_runs(plan: LogPlan) -> None:
    """Best effort after a refusal: mark runs the plan created but did not finish FAILED."""
    from harness.tracking.store import open_client

    client = open_client(plan.tracking_uri)
    for record in plan.runs:
        if record.run_id and not record.done and not record.attach_only:
            try:
                client.set_terminated(record.run_id, status="FAILED")
            except Exception:  # noqa: BLE001 - nothing more to do
                pass


def _log_artifact(client: Any, run_id: str, local: str, artifact_dir: str) -> None:
    if Path(local).is_dir():
        client.log_artifacts(run_id, local, artifact_dir or None)
    else:
        client.log_artifact(run_id, local, artifact_dir or None)


#: The name of a ranker run's logged model, and the run tag that holds its URI.
MODEL_NAME, MODEL_URI_TAG = "model", "ranker.model_uri"


def _log_model(client: Any, exp_id: str, run_id: str, local: str, kind: str,
               record: RunRecord) -> str:
    """Log the MLflow model folder ``local`` as the run's logged model (once: a replay finds
    the one logged before), with the ranker's options as its params and the trainer's
    validation metric beside the harness's value of it as its metrics, and tag the run
    with its ``models:/`` URI; returns the URI."""
    from mlflow.entities import LoggedModelOutput, LoggedModelStatus

    found = [m for m in client.search_logged_models(
        [exp_id], filter_string=f"source_run_id = '{run_id}'")
        if m.name == MODEL_NAME and m.status == LoggedModelStatus.READY]
    if found:
        model_id = found[0].model_id
    else:
        prefix = f"ranker.{record.params.get('ranker_name', '')}."
        options = {k.removeprefix(prefix): v for k, v in record.params.items()
                   if k.startswith(prefix)}
        model = client.create_logged_model(exp_id, name=MODEL_NAME, source_run_id=run_id,
                                           model_type=kind, tags={"ranker.kind": kind},
                                           params=options)
        model_id = model.model_id
        for key in ("trainer.value", "trainer.harness_value"):  # the library's own number
            value = record.tags.get(key)
            if value is not None:
                client.log_metric(run_id, key, float(value), timestamp=record.end_ms,
                                  step=0, model_id=model_id)
        client.log_model_artifacts(model_id, local)
        client.finalize_logged_model(model_id, LoggedModelStatus.READY)
        client.log_outputs(run_id, [LoggedModelOutput(model_id, step=0)])
    uri = f"models:/{model_id}"
    client.set_tag(run_id, MODEL_URI_TAG, uri)
    return uri


def _log_dataset(client: Any, run_id: str, info: dict[str, str]) -> None:
    from mlflow.entities import Dataset, DatasetInput, InputTag

    name = info["name"] if len(info["name"]) <= 200 else info["name"][:199] + "…"
    dataset = Dataset(name=name, digest=info["digest"][:32],  # MLflow caps name and digest
                      source_type="harness", source=info["source"],
                      schema=info.get("schema"), profile=info.get("profile"))
    tags = [InputTag("mlflow.data.context", "evaluation"),
            InputTag("harness.digest", info["digest"])]
    _with_retries(lambda: client.log_inputs(run_id, datasets=[DatasetInput(dataset=dataset,
                                                                           tags=tags)]))


_TRANSIENT = ("UNIQUE constraint failed", "database is locked", "IntegrityError")


def _with_retries(call: Any, attempts: int = 6) -> Any:
    """Run ``call``, retrying on SQLite races between parallel jobs: MLflow creates a
    shared dataset row with a check-then-insert, so two jobs logging the same dataset at
    once can collide; once the other job commits, the retry finds the row."""
    for attempt in range(attempts):
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - only the SQLite races are retried
            if attempt == attempts - 1 or not any(t in str(exc) for t in _TRANSIENT):
                raise
            time.sleep(0.1 * (attempt + 1))
    return None
