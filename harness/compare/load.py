"""Load a sweep's ranker runs from MLflow: per-query tables, versions and provenance.

Everything comes from the tracking store (tags, params and the artifacts each ranker run
carries), so a comparison can be rebuilt later from the run ids alone.

A *ranker version* is a ranker name with one score cache key (tag ``ranker.cache_key``:
dataset digest x ranker config). The runs of one version (a sweep over metric options
evaluates the same scores in several jobs) are merged column-wise; a name with several
versions (e.g. a sweep over ``ranker.noisy_oracle.sigma``) gets one label per version,
``"<ranker> [<overrides that tell it apart>]"``, e.g. ``"noisy_oracle [sigma=0.5]"``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from harness.compare.labeling_verdicts import (
    JUDGMENTS_DIGEST_TAG,
    judgments_artifact,
    merge_judgments,
    read_judgments,
)
from harness.compare.versions import RunInfo, group_versions
from harness.datasets.dataset import file_sha256
from harness.errors import (
    CompareError,
    DatasetMismatch,
    RunNotFound,
    TooFewRankers,
    TrackingUnavailable,
    UnknownName,
)
from harness.metrics.engine.evaluate import metric_columns

__all__ = ["RankerVersion", "Sweep", "load_sweep", "latest_parent_run", "mlflow_call"]

T = TypeVar("T")


@dataclass(frozen=True)
class RankerVersion:
    """A ranker name with one config (one score cache key), and the runs that evaluated it."""

    label: str
    ranker: str
    kind: str
    cache_key: str
    run_ids: tuple[str, ...]
    jobs: tuple[str, ...]

    @classmethod
    def of(cls, label: str, members: list[RunInfo]) -> RankerVersion:
        """The version labelled ``label`` that the runs ``members`` evaluated."""
        first = members[0]
        return cls(label, first.ranker, first.kind, first.cache_key,
                   tuple(r.run_id for r in members), tuple(r.job for r in members if r.job))


@dataclass(frozen=True)
class Sweep:
    """The ranker versions of a sweep (or of a filtered set of runs) and their provenance.

    ``per_query`` maps each version's label to its per-query table (indexed by ``qid``, one
    column per variant display name); ``provenance`` holds plain JSON-ready data (run ids,
    tags, config, environment); ``notes`` says what was merged or left out;
    ``intervals`` maps each version whose runs all logged judgment intervals (issue 24) to
    them (long format: ``qid, variant, low, high, exact, judged_at_10``; see
    :mod:`harness.compare.labeling_verdicts`).
    """

    tracking_uri: str
    experiment: str
    experiment_id: str
    parent_run_id: str | None
    filter_string: str | None
    dataset_name: str
    dataset_digest: str
    versions: dict[str, RankerVersion]
    per_query: dict[str, pd.DataFrame]
    provenance: dict[str, Any]
    notes: tuple[str, ...] = ()
    intervals: dict[str, pd.DataFrame] = field(default_factory=dict)

    def resolve(self, name: str) -> str:
        """The version label a ranker name, a version label or a run id stands for (a
        ranker run's id, or the id of a job run given to :func:`harness.compare.runs.load_runs`
        with one ranker).

        Raises :class:`UnknownName` when ``name`` is unknown, or stands for several versions
        (the message lists their labels).
        """
        if name in self.versions:
            return name
        labels = [v.label for v in self.versions.values() if v.ranker == name] or [
            v.label for v in self.versions.values() if name in v.run_ids] or list(
            self.provenance.get("sources", {}).get(name, []))
        if len(labels) == 1:
            return labels[0]
        if labels:
            raise UnknownName(f"{name!r} stands for {len(labels)} ranker versions here; "
                              f"pick one: {'; '.join(labels)}")
        raise UnknownName(f"no ranker {name!r} in this sweep; known: "
                          f"{'; '.join(self.versions)}")

    @property
    def variants(self) -> list[str]:
        """Every variant column of any version, in first-seen order."""
        return list(dict.fromkeys(c for f in self.per_query.values() for c in f.columns))


def mlflow_call(call: Callable[[], T], uri: str, what: str) -> T:
    """Run an MLflow call; map its failures to harness errors with one clear message."""
    from mlflow.exceptions import MlflowException

    try:
        return call()
    except MlflowException as exc:
        message = str(exc).splitlines()[0][:300]
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            raise RunNotFound(f"{what}: not found in the tracking store {uri} ({message})"
                              ) from None
        if exc.error_code == "INVALID_PARAMETER_VALUE":
            raise CompareError(f"{what}: {message}") from None
        raise TrackingUnavailable(f"{what}: MLflow at {uri} failed ({message})") from None
    except OSError as exc:  # a server that is down, a store that cannot be read
        raise TrackingUnavailable(f"{what}: MLflow at {uri} is unreachable ({exc})") from None


def store_client(tracking_uri: str | None) -> tuple[Any, str]:
    from harness.tracking import resolve_tracking_uri
    from harness.tracking.store import open_client

    uri = resolve_tracking_uri(tracking_uri)
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).is_file():
        raise RunNotFound(f"no MLflow store at {uri}: the file does not exist")
    return open_client(uri), uri


def latest_parent_run(tracking_uri: str | None = None, *, min_rankers: int = 2) -> str:
    """Id of the most recently started sweep (or single-job) parent run in the store whose
    ranker runs name at least ``min_rankers`` rankers (a comparison needs two), looking at
    the 50 newest parents."""
    client, uri = store_client(tracking_uri)
    ids = [e.experiment_id for e in mlflow_call(client.search_experiments, uri, "experiments")]
    runs = mlflow_call(lambda: client.search_runs(
        ids, "tags.`harness.role` != 'ranker'", max_results=50,
        order_by=["attributes.start_time DESC"]), uri, "latest parent run")
    if not runs:
        raise RunNotFound(f"no harness parent run in the tracking store {uri}")
    for run in runs:
        children = mlflow_call(partial(
            client.search_runs, [run.info.experiment_id],
            f"tags.`mlflow.parentRunId` = '{run.info.run_id}'", max_results=1000), uri,
            "ranker runs")
        if len({c.data.tags.get("ranker.name") for c in children}) >= min_rankers:
            return run.info.run_id
    raise TooFewRankers(f"no parent run among the {len(runs)} newest in {uri} has ranker "
                        f"runs of {min_rankers} or more rankers; run a study with several "
                        "rankers first (harness run)")


def run_info(run: Any) -> RunInfo:
    tags = run.data.tags
    return RunInfo(run_id=run.info.run_id, ranker=tags.get("ranker.name", run.info.run_name),
                   cache_key=tags.get("ranker.cache_key", ""), job=tags.get("job", ""),
                   kind=tags.get("ranker.kind", ""), digest=tags.get("dataset.digest", ""),
                   dataset=tags.get("dataset.name", ""),
                   parent_run_id=tags.get("mlflow.parentRunId"), params=dict(run.data.params),
                   tags={k: v for k, v in tags.items() if not k.startswith("mlflow.")},
                   metrics=dict(run.data.metrics))


def search_runs(client: Any, uri: str, experiment_id: str, filter_string: str) -> list[Any]:
    runs: list[Any] = []
    token = None
    while True:
        page = mlflow_call(partial(
            client.search_runs, [experiment_id], filter_string, max_results=1000,
            page_token=token, order_by=["attributes.start_time ASC"]), uri,
            f"search {filter_string!r}")
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def load_sweep(tracking_uri: str | None = None, parent_run_id: str | None = None,
               experiment: str | None = None, filter_string: str | None = None) -> Sweep:
    """Load the ranker runs of a sweep (or job) parent run, or of an experiment.

    Parameters
    ----------
    tracking_uri : str, optional
        Default: ``$MLFLOW_TRACKING_URI``, else the project's ``runs/mlflow.db``.
    parent_run_id : str, optional
        A sweep's (or a single job's) parent run: its ranker child runs are loaded.
    experiment : str, optional
        Instead of a parent: every ranker run of this experiment.
    filter_string : str, optional
        An MLflow ``search_runs`` filter ANDed to the selection, e.g.
        ``"params.`metric.k` = '10'"``.

    Raises
    ------
    RunNotFound
        The run, experiment or store does not exist.
    DatasetMismatch
        The runs hold more than one ``dataset.digest``.
    TooFewRankers
        No finished ranker run matched.
    """
    client, uri = store_client(tracking_uri)
    clauses = ["tags.`harness.role` = 'ranker'"]
    parent_tags: dict[str, str] = {}
    if parent_run_id:
        parent = mlflow_call(lambda: client.get_run(parent_run_id), uri, f"run {parent_run_id!r}")
        role = parent.data.tags.get("harness.role")
        if role == "ranker":
            raise CompareError(f"run {parent_run_id} is a ranker run; pass its parent run "
                               f"{parent.data.tags.get('mlflow.parentRunId')} instead")
        experiment_id = parent.info.experiment_id
        parent_tags = {k: v for k, v in parent.data.tags.items() if not k.startswith("mlflow.")}
        clauses.append(f"tags.mlflow.parentRunId = '{parent_run_id}'")
    elif experiment:
        exp = mlflow_call(lambda: client.get_experiment_by_name(experiment), uri, "experiment")
        if exp is None:
            names = [e.name for e in mlflow_call(client.search_experiments, uri, "experiments")]
            raise RunNotFound(f"experiment {experiment!r} not found in {uri}; known: "
                              f"{', '.join(names) or 'none'}")
        experiment_id = exp.experiment_id
    else:
        raise CompareError("give a parent run id or an experiment name")
    if filter_string:
        clauses.append(filter_string)
    where = f"parent run {parent_run_id}" if parent_run_id else f"experiment {experiment!r}"
    found = search_runs(client, uri, experiment_id, " and ".join(clauses))
    notes = [f"left out {r.info.run_name} ({r.info.run_id}): status {r.info.status}"
             for r in found if r.info.status != "FINISHED"]
    runs = [run_info(r) for r in found if r.info.status == "FINISHED"]
    if not runs:
        raise TooFewRankers(f"no finished ranker run under {where}"
                            + (f" matching {filter_string!r}" if filter_string else ""))
    digests: dict[str, list[str]] = {}
    for r in runs:
        digests.setdefault(r.digest, []).append(r.ranker)
    if len(digests) > 1:
        parts = [f"{d[:12] or '?'}... ({len(v)} runs: {', '.join(sorted(set(v)))})"
                 for d, v in digests.items()]
        raise DatasetMismatch(f"the runs under {where} come from {len(digests)} datasets "
                              f"(dataset.digest {'; '.join(parts)}); compare one dataset at a "
                              "time, e.g. --filter \"tags.`dataset.digest` = '<digest>'\"")
    experiment_name = mlflow_call(lambda: client.get_experiment(experiment_id), uri,
                              "experiment").name
    groups = dict(sorted(group_versions(runs).items()))  # a stable order: by label
    per_query, versions, run_files, intervals = {}, {}, {}, {}
    with tempfile.TemporaryDirectory(prefix="harness-compare-") as tmp:
        for label, members in groups.items():
            frames, judged = [], []
            for r in members:
                files = _download(uri, r, Path(tmp) / r.run_id)
                run_files[r.run_id] = files
                frames.append(files.pop("per_query"))
                judged.append(files.pop("judgments"))
            per_query[label], merge_notes = merge_frames(label, frames)
            merged, judged_notes = merge_judgments(label, judged, per_query[label].index)
            if merged is not None:
                intervals[label] = merged
            notes.extend(merge_notes + judged_notes)
            versions[label] = RankerVersion.of(label, members)
    parents = {r.parent_run_id for r in runs}
    report_parent = parent_run_id or (parents.pop() if len(parents) == 1 else None)
    provenance = provenance_of(uri, experiment_name, parent_run_id, parent_tags, filter_string,
                             groups, run_files)
    return Sweep(uri, experiment_name, str(experiment_id), report_parent, filter_string,
                 runs[0].dataset, runs[0].digest, versions, per_query, provenance,
                 tuple(notes), intervals)


def _download(uri: str, run: RunInfo, dst: Path) -> dict[str, Any]:
    import mlflow.artifacts

    dst.mkdir(parents=True)
    root = Path(mlflow_call(lambda: mlflow.artifacts.download_artifacts(
        run_id=run.run_id, dst_path=str(dst), tracking_uri=uri), uri,
        f"artifacts of run {run.run_id}"))
    table = root / f"{run.ranker}.parquet"
    if not table.is_file():
        raise RunNotFound(f"run {run.run_id} ({run.ranker}) has no per-query artifact "
                          f"{table.name}")
    env = root / "environment.json"
    config = root / "config" / "config_resolved.yaml"
    judged = root / judgments_artifact(run.ranker)
    judgments, judged_sha = read_judgments(judged, run.run_id, run.ranker, run.tags.get(
        JUDGMENTS_DIGEST_TAG)) if judged.is_file() else (None, None)
    return {"per_query": pd.read_parquet(table), "sha256": file_sha256(table),
            "judgments": judgments, "judgments_sha256": judged_sha,
            "environment": json.loads(env.read_text()) if env.is_file() else {},
            "config": config.read_text() if config.is_file() else ""}


def merge_frames(label: str, frames: list[pd.DataFrame]) -> tuple[pd.DataFrame, list[str]]:
    notes = []
    merged: pd.DataFrame | None = None
    for frame in frames:
        frame = frame.set_index("qid")[metric_columns(frame.set_index("qid"))]
        if merged is None:
            merged = frame
            continue
        overlap = [c for c in frame.columns if c in merged.columns]
        if overlap:
            a = merged[overlap].reindex(frame.index).to_numpy(dtype=np.float64)
            b = frame[overlap].to_numpy(dtype=np.float64)
            if not np.allclose(a, b, rtol=0, atol=1e-12, equal_nan=True):
                notes.append(f"{label}: runs of the same scores disagree on {overlap[0]}"
                             " (another code version?); the first run's values are kept")
        merged = merged.join(frame[[c for c in frame.columns if c not in merged.columns]],
                             how="outer")
    assert merged is not None  # every version has at least one run
    return merged, notes


def provenance_of(uri: str, experiment: str, parent_run_id: str | None,
                parent_tags: Mapping[str, str], filter_string: str | None,
                groups: Mapping[str, list[RunInfo]],
                run_files: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    runs = [(label, r) for label, members in groups.items() for r in members]
    environments: list[dict[str, Any]] = []
    for _, r in runs:
        env = run_files[r.run_id]["environment"]
        for known in environments:
            if known["environment"] == env:
                known["runs"].append(r.run_id)
                break
        else:
            environments.append({"environment": env, "runs": [r.run_id]})
    keys = sorted({k for _, r in runs for k in r.params})
    varying = {k: {r.run_id: r.params.get(k) for _, r in runs} for k in keys
               if len({r.params.get(k) for _, r in runs}) > 1 and k != "ranker_name"}
    first = runs[0][1]
    return {
        "tracking_uri": uri, "experiment": experiment, "parent_run_id": parent_run_id,
        "parent_tags": dict(parent_tags), "filter_string": filter_string,
        "runs": [{"label": label, "run_id": r.run_id, "ranker": r.ranker, "kind": r.kind,
                  "job": r.job, "cache_key": r.cache_key,
                  "judged_at_10": r.metrics.get("judged_at_10")} for label, r in runs],
        "dataset": {"name": first.dataset, "digest": first.digest},
        "git_commits": sorted({r.tags.get("git.commit", "unknown") for _, r in runs}),
        "harness_versions": sorted({r.tags.get("harness.version", "unknown")
                                    for _, r in runs}),
        "environments": environments, "params_varying": varying,
        "config": run_files[first.run_id]["config"], "config_run_id": first.run_id,
        "versions": {label: [r.run_id for r in members] for label, members in groups.items()},
        "per_query_sha256": {r.run_id: run_files[r.run_id]["sha256"] for _, r in runs},
    } | ({"judgments_sha256": judged} if (judged := {
        r.run_id: run_files[r.run_id]["judgments_sha256"] for _, r in runs
        if run_files[r.run_id].get("judgments_sha256")}) else {})
