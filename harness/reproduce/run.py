"""Re-run a logged evaluation and compare its bits (``harness reproduce``).

For every ranker run (a job or sweep run stands for its ranker children) the run's resolved
config is fetched from MLflow, the dataset is rebuilt and its digest checked against the
``dataset.digest`` tag, the ranker re-scores the data (never from the score cache) and every
per-query value is compared bit for bit with the logged ``<ranker>.parquet``. Package
versions logged with the run are compared with the current environment.

Exit status: 0 when every run reproduces identically, 1 when any value differs, 2 for bad
input (unknown run id, not a harness run, data changed since the run), 3 when the tracking
store cannot be reached.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, overload

import pandas as pd
import yaml

from harness.app import provenance
from harness.app.in_place import evaluate_in_place
from harness.app.log import PER_QUERY_DIGEST_TAG
from harness.app.plan import DatasetPlan, build_plan
from harness.datasets import Dataset, ParquetRun, load_dataset
from harness.datasets.dataset import file_sha256, input_files
from harness.engines import Engine
from harness.errors import HarnessError, TrackingUnavailable
from harness.metrics.engine.evaluate import evaluate  # the function, not its module
from harness.rankers import TRAINERS, RankerSpec, cache_key, score
from harness.reproduce.checks import (
    ReproduceError,
    as_params,
    describe_mismatches,
    param_mismatches,
    read_artifact,
)
from harness.reproduce.diff import ReproResult, compare_per_query
from harness.tracking import resolve_tracking_uri
from harness.tracking.log_plan import MODEL_URI_TAG

__all__ = ["ReproduceError", "ReproResult", "reproduce_run", "ranker_run_ids"]

CONFIG_ARTIFACT = "config/config_resolved.yaml"
ENV_ARTIFACT = "environment.json"


# --------------------------------------------------------------------------------------
# MLflow access


def open_store(tracking_uri: str | None) -> Any:
    from harness.tracking.store import open_client

    uri = resolve_tracking_uri(tracking_uri)
    if uri.startswith("sqlite:///"):  # do not create an empty store for a mistyped path
        db = Path(uri[len("sqlite:///"):].split("?", 1)[0])
        if not db.is_file():
            raise ReproduceError(f"no MLflow store at {db} (tracking URI {uri})")
    return open_client(uri)


def get_run(client: Any, run_id: str) -> Any:
    from mlflow.exceptions import MlflowException

    try:
        return client.get_run(run_id)
    except MlflowException as exc:
        if exc.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"):
            raise ReproduceError(f"run {run_id!r} not found in {client.tracking_uri}"
                                 ) from None
        raise TrackingUnavailable(f"cannot read run {run_id!r} from {client.tracking_uri}: "
                                  f"{_first_line(exc)}") from None
    except Exception as exc:  # connection refused, time-out, ...
        raise TrackingUnavailable(f"cannot reach the tracking store {client.tracking_uri}: "
                                  f"{type(exc).__name__}: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


@overload
def _download(client: Any, run_id: str, path: str, dst: Path) -> Path: ...
@overload
def _download(client: Any, run_id: str, path: str, dst: Path, *,
              required: bool) -> Path | None: ...
def _download(client: Any, run_id: str, path: str, dst: Path, *,
              required: bool = True) -> Path | None:
    from mlflow.exceptions import MlflowException

    folder, _, name = path.rpartition("/")
    listed = {a.path for a in client.list_artifacts(run_id, folder or None)}
    if path not in listed:
        if required:
            raise ReproduceError(f"run {run_id}: artifact {path!r} was not logged; it has "
                                 f"{sorted(listed) or 'none'}")
        return None
    try:
        return Path(client.download_artifacts(run_id, path, str(dst)))
    except MlflowException as exc:
        raise TrackingUnavailable(f"run {run_id}: cannot download {path!r}: "
                                  f"{_first_line(exc)}") from None


def ranker_run_ids(run_id: str, *, tracking_uri: str | None = None) -> list[str]:
    """The ranker runs that ``run_id`` stands for.

    Parameters
    ----------
    run_id : str
        A ranker run (returned as is), or a job or sweep run (its ranker children).
    tracking_uri : str, optional
        The MLflow store; default :func:`harness.tracking.resolve_tracking_uri`.

    Returns
    -------
    list of str
        Ranker run ids, ordered by run name.

    Raises
    ------
    ReproduceError
        The run does not exist, is not a harness run, or has no ranker runs.
    """
    client = open_store(tracking_uri)
    run = get_run(client, run_id)
    role = run.data.tags.get("harness.role")
    if role == "ranker":
        return [run.info.run_id]
    if role not in ("job", "sweep"):
        raise ReproduceError(f"run {run_id} is not a harness run (tag harness.role is "
                             f"{role!r}; expected ranker, job or sweep)")
    children = client.search_runs(
        [run.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{run.info.run_id}'",
        max_results=10000)
    rankers = sorted((r for r in children if r.data.tags.get("harness.role") == "ranker"),
                     key=lambda r: (r.info.run_name or "", r.info.run_id))
    if not rankers:
        raise ReproduceError(f"{role} run {run_id} has no ranker runs to reproduce")
    return [r.info.run_id for r in rankers]


# --------------------------------------------------------------------------------------
# reproduction


def reproduce_run(run_id: str, *, tracking_uri: str | None = None) -> ReproResult:
    """Re-run the evaluation of one ranker run and compare it bit for bit with its artifact.

    The run's resolved config (``config/config_resolved.yaml``) is validated as the app
    does; the dataset is rebuilt and its digest checked against the ``dataset.digest`` tag;
    the ranker's cache key is checked against ``ranker.cache_key`` (it covers a run file's
    sha256); the ranker re-scores the data and :func:`harness.evaluate` recomputes every
    variant. The score cache is never read: a reproduction scores for real.

    Parameters
    ----------
    run_id : str
        An MLflow run with tag ``harness.role=ranker`` (see :func:`ranker_run_ids` for job
        and sweep runs).
    tracking_uri : str, optional
        The MLflow store; default :func:`harness.tracking.resolve_tracking_uri` (the
        ``$MLFLOW_TRACKING_URI``, else ``runs/mlflow.db``).

    Returns
    -------
    ReproResult
        ``identical`` is True when the same queries and columns came back with every value
        equal bit for bit (the float64 bits; NaN equals NaN); ``differences`` lists each value
        that is not, and ``env_changes`` the package versions that differ from the logged ones.

    Raises
    ------
    ReproduceError
        The run does not exist, is not a ranker run, lacks its artifacts, or its data (a
        dataset file or a ranker's run file) changed since the run; the message names the
        file.
    TrackingUnavailable
        The tracking store cannot be read.

    Examples
    --------
    It needs a logged run, so the example is not run as a doctest (the tests do it)::

        result = reproduce_run("1d718a0e6e7e4b2aaf3fb8e2de5ffb32")
        result.identical, result.env_changes   # (True, {}) when nothing changed
    """
    client = open_store(tracking_uri)
    run = get_run(client, run_id)
    tags = run.data.tags
    if tags.get("harness.role") != "ranker":
        role = tags.get("harness.role")
        hint = (f"; for a {role} run, reproduce each of ranker_run_ids({run_id!r})"
                if role in ("job", "sweep") else "")
        raise ReproduceError(f"run {run_id} is not a ranker run (tag harness.role is "
                             f"{role!r}){hint}")
    name = tags.get("ranker.name") or ""
    with tempfile.TemporaryDirectory(prefix="harness-reproduce-") as tmp:
        dst = Path(tmp)
        cfg = read_artifact(run_id, _download(client, run_id, CONFIG_ARTIFACT, dst),
                            lambda p: yaml.safe_load(p.read_text()))
        table_path = _download(client, run_id, f"{name}.parquet", dst)
        logged = read_artifact(run_id, table_path, pd.read_parquet)
        _check_digest(run_id, table_path, tags.get(PER_QUERY_DIGEST_TAG))
        env_path = _download(client, run_id, ENV_ARTIFACT, dst, required=False)
        logged_env = read_artifact(run_id, env_path, lambda p: json.loads(p.read_text())) \
            if env_path else None
    if not isinstance(cfg, dict):
        raise ReproduceError(f"run {run_id}: {CONFIG_ARTIFACT} does not hold a config mapping")
    mismatched = param_mismatches(run.data.params, as_params(cfg))
    try:
        plan = build_plan(cfg, store=client.tracking_uri)
    except HarnessError as exc:
        raise ReproduceError(f"run {run_id}: its config no longer validates: {exc}") from None
    metrics, specs = plan.metrics, plan.rankers
    spec = next((s for s in specs if s.name == name), None)
    if spec is None:
        raise ReproduceError(f"run {run_id}: ranker {name!r} is not in its config (rankers: "
                             f"{', '.join(s.name for s in specs)})")
    notes: list[str] = [describe_mismatches(mismatched)] if mismatched else []
    dataset = _dataset(run, plan.dataset)
    options = plan.evaluate_options
    if isinstance(dataset, ParquetRun):  # its digest covers the file; read it batch by batch
        with Engine(kind="stream") as engine:
            now = evaluate_in_place(engine, dataset, spec, metrics, options, None)[0]
        now = now.reset_index()
    else:
        _check_ranker(run, spec, dataset, notes)
        model_uri = tags.get(MODEL_URI_TAG)
        if model_uri and spec.kind in TRAINERS:  # the logged model scores; nothing trains
            fresh = _score_with_model(run_id, spec, dataset, model_uri, client.tracking_uri)
            notes.append(f"scores: the logged model {model_uri} ({spec.kind}), not trained "
                         "again")
        else:
            fresh = score(spec, dataset, cache_dir=None).run
        now = evaluate(fresh, dataset.qrels, metrics, **options).reset_index()
    commit_then, commit_now = tags.get("git.commit", "unknown"), provenance.git_commit()
    if commit_then != commit_now:
        notes.append(f"code: git commit {_short(commit_then)} -> {_short(commit_now)}")
    if logged_env is None:
        notes.append("environment: not logged by this run")
    result = compare_per_query(run_id, name, logged, now, _env_changes(logged_env), notes)
    if mismatched:  # values equal to a config the run did not log prove nothing
        result = replace(result, identical=False)
    return result


def _check_digest(run_id: str, path: Path, logged: str | None) -> None:
    """Refuse a per-query artifact whose bytes are not those the run logged (tag
    ``per_query.sha256``), as ``harness compare`` does: its values would be compared as if
    they were the run's. A run that logged no digest (older runs) is read as it is."""
    digest = file_sha256(path)
    if logged and digest != logged:
        raise ReproduceError(f"run {run_id}: artifact {path.name!r} was altered (sha256 "
                             f"{digest[:12]}…, its run logged {logged[:12]}…)")


def _score_with_model(run_id: str, spec: RankerSpec, dataset: Dataset, uri: str,
                      store: str) -> pd.DataFrame:
    """The test split scored by the run's logged model (:mod:`harness.rankers.models`)."""
    import numpy as np

    from harness.rankers.models import load_model, predict
    from harness.tracking.store import tracking_env

    try:
        with tracking_env(store):
            model = load_model(spec.kind, uri)
    except Exception as exc:  # noqa: BLE001 - MLflow raises many kinds; name the model
        raise ReproduceError(f"run {run_id}: cannot load its logged model {uri}: "
                             f"{_first_line(exc)}") from None
    test = dataset.test
    cols = [str(c) for c in spec.option("features", dataset.features)]
    return pd.DataFrame({"qid": test["qid"].to_numpy(), "docid": test["docid"].to_numpy(),
                         "score": predict(spec.kind, model, test[cols].to_numpy(np.float64))})


def _short(commit: str) -> str:
    head, dirty = commit.removesuffix("-dirty"), commit.endswith("-dirty")
    return head[:12] + ("-dirty" if dirty else "")


def _dataset(run: Any, planned: DatasetPlan) -> Dataset:
    run_id, logged = run.info.run_id, run.data.tags.get("dataset.digest", "")
    kind, options = planned.kind, planned.options
    try:
        dataset = load_dataset(kind, **options)
    except HarnessError as exc:
        raise ReproduceError(f"run {run_id}: the dataset cannot be rebuilt: {exc}") from None
    if not logged:
        raise ReproduceError(f"run {run_id} has no dataset.digest tag; is it a harness run?")
    if dataset.digest == logged:
        return dataset
    inputs = input_files(kind, options)
    files = [str(p) for p in inputs.values()]
    logged_files = {role: run.data.tags.get(f"dataset.sha256.{role}") for role in inputs}
    if any(logged_files.values()):  # name only the files whose bytes changed
        files = [str(p) for role, p in inputs.items() if logged_files[role] and (
            not p.is_file() or file_sha256(p) != logged_files[role])] or files
    digests = f"dataset digest logged {logged[:12]}…, now {dataset.digest[:12]}…"
    if not files:
        raise ReproduceError(
            f"run {run_id}: the {kind} dataset {dataset.name!r} is no longer generated the "
            f"same ({digests}): the generator's code or options changed since the run")
    started = (run.info.start_time or 0) / 1000
    named = ", ".join(_describe_file(Path(f), started) for f in files)
    raise ReproduceError(f"run {run_id}: the data changed since the run: {named} ({digests})")


def _describe_file(path: Path, since: float) -> str:
    if not path.exists():
        return f"{path} (missing)"
    mtime = path.stat().st_mtime
    if mtime > since:
        return f"{path} (modified {datetime.fromtimestamp(mtime):%Y-%m-%d %H:%M:%S}, after " \
               "the run)"
    return str(path)


def _check_ranker(run: Any, spec: RankerSpec, dataset: Dataset, notes: list[str]) -> None:
    run_id, logged = run.info.run_id, run.data.tags.get("ranker.cache_key", "")
    try:
        key = cache_key(spec, dataset)
    except OSError as exc:
        raise ReproduceError(f"run {run_id}: ranker {spec.name!r} cannot read its input: "
                             f"{exc}") from None
    if not logged or key == logged:
        return
    keys = f"cache key logged {logged[:12]}…, now {key[:12]}…"
    if spec.kind == "run_file":
        path = Path(str(spec.option("path")))
        started = (run.info.start_time or 0) / 1000
        raise ReproduceError(f"run {run_id}: the run file of ranker {spec.name!r} changed "
                             f"since the run: {_describe_file(path, started)} ({keys})")
    notes.append(f"ranker {spec.name!r}: {keys} (its options or the cache version changed "
                 "since the run)")


def _env_changes(logged: dict[str, Any] | None) -> dict[str, tuple[str, str]]:
    if not logged:
        return {}
    current = provenance.environment()
    then = {"python": logged.get("python"), "platform": logged.get("platform"),
            **(logged.get("packages") or {})}
    now = {"python": current.get("python"), "platform": current.get("platform"),
           **(current.get("packages") or {})}
    out = {}
    for name in [*then, *(k for k in now if k not in then)]:
        a, b = then.get(name), now.get(name)
        if a != b:
            out[name] = ("not logged" if a is None else str(a),
                         "not installed" if b is None else str(b))
    return out
