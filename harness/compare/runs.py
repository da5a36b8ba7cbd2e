"""Ranker runs named by id, from any jobs and experiments, made comparable
(``harness compare RUN_ID RUN_ID ...``).

Each id is a ranker run, or a job or sweep run standing for its finished ranker runs. The
runs are grouped into ranker versions as a sweep's are (:func:`group_versions`); a version
met under two of the ids given (the same ranker and config evaluated in two jobs, e.g. a
candidate identical to production) is split by id, so that each side keeps its own label.

Before anything is compared, the runs must agree on what was measured, else a
:class:`CompareError` names the difference: the dataset (tag ``dataset.digest``), the query
set (unless ``allow_subset``: then the common queries, and how many were dropped), and the
definition of every variant they share (the evaluation options of :data:`DEFINITION_PARAMS`).
Each per-query artifact is checked against the sha256 its run logged (tag
:data:`PER_QUERY_DIGEST_TAG`), or against the digests a logged comparison recorded; so is a
run's judgment intervals artifact, when it has one (tag ``judgments.sha256``).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from harness.compare.artifact_check import ArtifactChanged, checked_parquet
from harness.compare.labeling_verdicts import (
    JUDGMENTS_DIGEST_TAG,
    judgments_artifact,
    merge_judgments,
    read_judgments,
)
from harness.compare.load import (
    RankerVersion,
    Sweep,
    merge_frames,
    mlflow_call,
    provenance_of,
    run_info,
    search_runs,
    store_client,
)
from harness.compare.versions import RunInfo, group_versions
from harness.errors import CompareError, DatasetMismatch, NoOverlap, RunNotFound
from harness.metrics.engine.evaluate import metric_columns

__all__ = ["PER_QUERY_DIGEST_TAG", "DEFINITION_PARAMS", "load_runs", "load_versions",
           "QuerySetMismatch", "DefinitionMismatch", "ArtifactChanged"]

#: The tag holding the sha256 of a ranker run's ``<ranker>.parquet`` (as the app's log stage
#: writes it, ``harness.app.log.PER_QUERY_DIGEST_TAG``).
PER_QUERY_DIGEST_TAG = "per_query.sha256"
#: Params that change every variant's per-query values without showing in its name: runs
#: that differ in one of them measured different things under the same variant name.
DEFINITION_PARAMS = ("metric.missing", "metric.nan_scores")


class QuerySetMismatch(CompareError):
    """Runs evaluated on different query sets (without ``allow_subset``)."""


class DefinitionMismatch(CompareError):
    """Runs whose shared variant was computed under different evaluation options."""


def _ranker_runs(client: Any, uri: str, run_id: str) -> tuple[list[Any], list[str]]:
    """The finished ranker runs ``run_id`` stands for, and notes on those left out."""
    run = mlflow_call(lambda: client.get_run(run_id), uri, f"run {run_id!r}")
    role = run.data.tags.get("harness.role")
    if role == "ranker":
        if run.info.status != "FINISHED":
            raise CompareError(f"run {run_id} did not finish (status {run.info.status})")
        return [run], []
    if role not in ("job", "sweep"):
        raise CompareError(f"run {run_id} is not a harness run (tag harness.role is {role!r}; "
                           "expected ranker, job or sweep)")
    children = search_runs(client, uri, run.info.experiment_id,
                       f"tags.`mlflow.parentRunId` = '{run_id}' and "
                       "tags.`harness.role` = 'ranker'")
    notes = [f"left out {r.info.run_name} ({r.info.run_id}): status {r.info.status}"
             for r in children if r.info.status != "FINISHED"]
    finished = [r for r in children if r.info.status == "FINISHED"]
    if not finished:
        raise CompareError(f"{role} run {run_id} has no finished ranker run")
    return finished, notes


def load_runs(tracking_uri: str | None, run_ids: Sequence[str], *,
              allow_subset: bool = False) -> Sweep:
    """The ranker versions of the runs ``run_ids`` (ranker, job or sweep runs of any
    experiments), checked to be comparable.

    Raises
    ------
    RunNotFound
        An id the store does not hold.
    DatasetMismatch, QuerySetMismatch, DefinitionMismatch, ArtifactChanged, CompareError
        The runs measured different things, or an artifact is missing or altered; the
        message names the runs and the difference.
    """
    client, uri = store_client(tracking_uri)
    runs: dict[str, Any] = {}
    sources: dict[str, str] = {}  # ranker run id -> the id given for it
    notes: list[str] = []
    for given in dict.fromkeys(run_ids):
        found, left_out = _ranker_runs(client, uri, given)
        notes += left_out
        for r in found:
            if r.info.run_id not in runs:
                runs[r.info.run_id] = r
                sources[r.info.run_id] = given
    infos = [run_info(r) for r in runs.values()]
    _same_dataset(infos)
    groups: dict[str, list[RunInfo]] = {}
    for label, members in group_versions(infos).items():
        by_source: dict[str, list[RunInfo]] = {}
        for r in members:
            by_source.setdefault(sources[r.run_id], []).append(r)
        if len(by_source) == 1:
            groups[label] = members
        else:  # one version under several ids: each id keeps its side
            groups.update({f"{label} [run {src[:8]}]": rs for src, rs in by_source.items()})
    experiments = dict.fromkeys(r.info.experiment_id for r in runs.values())  # as given
    names = [mlflow_call(partial(client.get_experiment, e), uri, "experiment").name
             for e in experiments]
    given_to_labels: dict[str, list[str]] = {}
    for label, members in groups.items():
        for r in members:
            given_to_labels.setdefault(sources[r.run_id], [])
            if label not in given_to_labels[sources[r.run_id]]:
                given_to_labels[sources[r.run_id]].append(label)
    return _build(uri, names, dict(sorted(groups.items())), given_to_labels, notes,
                  allow_subset=allow_subset, digests=None)


def load_versions(tracking_uri: str | None, versions: Mapping[str, Sequence[str]], *,
                  allow_subset: bool, digests: Mapping[str, str],
                  sources: Mapping[str, Sequence[str]] | None = None,
                  judgment_digests: Mapping[str, str] | None = None) -> Sweep:
    """The versions a logged comparison recorded (label -> ranker run ids), each per-query
    artifact checked against ``digests`` (run id -> sha256), each judgments artifact against
    ``judgment_digests`` (none read without: a comparison that recorded none read none):
    what ``harness reproduce`` recomputes a comparison from."""
    client, uri = store_client(tracking_uri)
    runs = {i: mlflow_call(partial(client.get_run, i), uri, f"run {i!r}")
            for ids in versions.values() for i in ids}
    groups = {label: [run_info(runs[i]) for i in ids] for label, ids in versions.items()}
    _same_dataset([r for rs in groups.values() for r in rs])
    names = sorted({mlflow_call(partial(client.get_experiment, r.info.experiment_id), uri,
                                "experiment").name for r in runs.values()})
    return _build(uri, names, groups, {k: list(v) for k, v in (sources or {}).items()}, [],
                  allow_subset=allow_subset, digests=digests,
                  judgment_digests=judgment_digests)


def _same_dataset(infos: Sequence[RunInfo]) -> None:
    digests: dict[str, list[RunInfo]] = {}
    for r in infos:
        digests.setdefault(r.digest, []).append(r)
    if len(digests) > 1:
        (da, ra), (db, rb) = list(digests.items())[:2]
        raise DatasetMismatch(
            f"the runs were evaluated on different data: run {ra[0].run_id} ({ra[0].ranker}) "
            f"on {ra[0].dataset or '?'} (dataset.digest {da[:12] or '?'}), run {rb[0].run_id} "
            f"({rb[0].ranker}) on {rb[0].dataset or '?'} (dataset.digest {db[:12] or '?'})")


def _download(client: Any, uri: str, run: RunInfo, dst: Path,
              expected: str | None, judged_expected: str | None = None,
              read_judged: bool = True) -> dict[str, Any]:
    name = f"{run.ranker}.parquet"
    listed = {a.path for a in mlflow_call(lambda: client.list_artifacts(run.run_id), uri,
                                          f"artifacts of run {run.run_id}")}
    if name not in listed:
        raise ArtifactChanged(f"run {run.run_id} ({run.ranker}) has no per-query artifact "
                              f"{name}; it holds {', '.join(sorted(listed)) or 'none'}")
    dst.mkdir(parents=True)
    path = Path(mlflow_call(lambda: client.download_artifacts(run.run_id, name, str(dst)), uri,
                            f"artifact {name} of run {run.run_id}"))
    logged = run.tags.get(PER_QUERY_DIGEST_TAG)
    table, digest = checked_parquet(path, f"run {run.run_id} ({run.ranker}): artifact {name}",
                                    logged, expected)
    extra: dict[str, Any] = {"judgments": None, "judgments_sha256": None}
    judged = judgments_artifact(run.ranker)
    if read_judged and "judgments" in listed and judged in {a.path for a in client.list_artifacts(
            run.run_id, "judgments")}:
        path = Path(mlflow_call(lambda: client.download_artifacts(run.run_id, judged, str(dst)),
                                uri, f"artifact {judged} of run {run.run_id}"))
        extra["judgments"], extra["judgments_sha256"] = read_judgments(
            path, run.run_id, run.ranker, run.tags.get(JUDGMENTS_DIGEST_TAG), judged_expected)
    elif judged_expected:
        raise ArtifactChanged(f"run {run.run_id} ({run.ranker}): the comparison read its "
                              f"artifact {judged}, which is gone")
    for key, artifact in (("environment", "environment.json"),
                          ("config", "config/config_resolved.yaml")):
        folder = artifact.rpartition("/")[0] or None
        if artifact in {a.path for a in client.list_artifacts(run.run_id, folder)}:
            text = Path(client.download_artifacts(run.run_id, artifact, str(dst))).read_text()
            extra[key] = json.loads(text) if key == "environment" else text
        else:
            extra[key] = {} if key == "environment" else ""
    return {"per_query": table, "sha256": digest, "digest_logged": bool(logged), **extra}


def _definitions(groups: Mapping[str, list[RunInfo]],
                 columns: Mapping[str, list[str]]) -> None:
    """Refuse runs sharing a variant computed under different :data:`DEFINITION_PARAMS`."""
    seen: dict[str, tuple[RunInfo, dict[str, str | None]]] = {}
    for members in groups.values():
        for r in members:
            options = {p: r.params.get(p) for p in DEFINITION_PARAMS}
            for variant in columns[r.run_id]:
                first = seen.setdefault(variant, (r, options))
                if first[1] != options:
                    key = next(p for p in DEFINITION_PARAMS if first[1][p] != options[p])
                    raise DefinitionMismatch(
                        f"variant {variant!r} has different definitions: run "
                        f"{first[0].run_id} ({first[0].ranker}) {key}={first[1][key]}, run "
                        f"{r.run_id} ({r.ranker}) {key}={options[key]}")


def _query_sets(per_query: dict[str, pd.DataFrame], allow_subset: bool,
                notes: list[str]) -> dict[str, pd.DataFrame]:
    labels = list(per_query)
    first = per_query[labels[0]].index
    if all(per_query[label].index.sort_values().equals(first.sort_values())
           for label in labels[1:]):
        return per_query
    common = first
    for label in labels[1:]:
        common = common.intersection(per_query[label].index, sort=False)
    if not allow_subset:
        other = next(label for label in labels[1:]
                     if not per_query[label].index.sort_values().equals(first.sort_values()))
        only_a = first.difference(per_query[other].index)
        only_b = per_query[other].index.difference(first)
        example = (list(only_a) or list(only_b))[0]
        raise QuerySetMismatch(
            f"the runs were evaluated on different query sets: {labels[0]} has {len(first)} "
            f"queries, {other} {len(per_query[other].index)} ({len(only_a)} only in the first, "
            f"{len(only_b)} only in the second, e.g. {example!r}); --allow-subset compares on "
            f"the {len(common)} common queries")
    if not len(common):
        raise NoOverlap("--allow-subset: the runs have no query in common")
    dropped = {label: len(f.index) - len(common) for label, f in per_query.items()}
    notes.append(f"--allow-subset: compared on the {len(common)} queries every run holds; "
                 f"dropped {sum(dropped.values())} (" + ", ".join(
                     f"{label}: {n}" for label, n in dropped.items() if n) + ")")
    return {label: f.loc[common] for label, f in per_query.items()}


def _build(uri: str, experiments: list[str], groups: dict[str, list[RunInfo]],
           sources: dict[str, list[str]], notes: list[str], *, allow_subset: bool,
           digests: Mapping[str, str] | None,
           judgment_digests: Mapping[str, str] | None = None) -> Sweep:
    from harness.tracking.store import open_client

    client = open_client(uri)
    per_query, versions, run_files, columns, judged = {}, {}, {}, {}, {}
    with tempfile.TemporaryDirectory(prefix="harness-compare-") as tmp:
        for label, members in groups.items():
            frames = []
            for r in members:
                expected = (digests or {}).get(r.run_id)
                if digests is not None and not expected:
                    raise ArtifactChanged(f"run {r.run_id}: the comparison recorded no digest "
                                          "of its per-query artifact")
                files = _download(client, uri, r, Path(tmp) / r.run_id, expected,
                                  (judgment_digests or {}).get(r.run_id),
                                  digests is None or bool(judgment_digests))
                run_files[r.run_id] = files
                frame = files["per_query"]
                columns[r.run_id] = metric_columns(frame.set_index("qid"))
                frames.append(frame)
            per_query[label], merge_notes = merge_frames(label, frames)
            notes.extend(merge_notes)
            judged[label] = [run_files[r.run_id].pop("judgments") for r in members]
            versions[label] = RankerVersion.of(label, members)
    _definitions(groups, columns)
    unchecked = [r for r, f in run_files.items() if not f["digest_logged"]]
    if unchecked and digests is None:
        notes.append(f"{len(unchecked)} run(s) logged no {PER_QUERY_DIGEST_TAG} (logged "
                     f"before it existed): their artifacts could not be checked "
                     f"({', '.join(unchecked[:3])}{', …' if len(unchecked) > 3 else ''})")
    per_query = _query_sets(per_query, allow_subset, notes)
    if not per_query:
        raise RunNotFound("no ranker run to compare")
    intervals = {}
    for label, frames in judged.items():
        found, judged_notes = merge_judgments(label, frames, per_query[label].index)
        notes.extend(judged_notes)
        if found is not None:
            intervals[label] = found
    provenance = provenance_of(uri, ", ".join(experiments), None, {}, None, groups, run_files)
    provenance |= {"sources": sources, "allow_subset": allow_subset,
                   "experiments": experiments}
    first = next(iter(groups.values()))[0]
    return Sweep(uri, ", ".join(experiments), "", None, None, first.dataset, first.digest,
                 versions, per_query, provenance, tuple(notes), intervals)
