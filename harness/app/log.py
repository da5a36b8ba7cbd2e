"""The log stage of a study: a log plan built from the files already written (one run per
job, one per ranker, or the sweep's parent run), saved as pending, then sent to MLflow; a
store that cannot be reached leaves the plan for ``python -m harness.sync``."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from harness.version import __version__
from harness.app.provenance import flatten, git_commit
from harness.datasets import Dataset
from harness.errors import HarnessError, TrackingUnavailable
from harness.metrics import Metric
from harness.paths import project_path
from harness.reporting import STATS
from harness.tracking import LogPlan, RunRecord, configure_requests, execute, resolve_tracking_uri
from harness.tracking.log_plan import PARAM_LIMIT, close_open_runs, refused
from harness.tracking.worker import TrackingWorker, WorkerFailed, WorkerGone

__all__ = ["log_study", "start_tracking", "VIEWABLE_ROWS"]

log = logging.getLogger("harness")

def _params(cfg: Mapping[str, Any], out: Path) -> tuple[dict[str, str], Path | None]:
    params = flatten(cfg)
    overflow = {k: v for k, v in params.items() if len(v) > PARAM_LIMIT}
    if not overflow:
        return params, None
    path = out / "params_overflow.json"
    path.write_text(json.dumps(overflow, indent=1))
    for k in overflow:
        params[k] = f"(longer than {PARAM_LIMIT} characters: see artifact params_overflow.json)"
    return params, path


def start_tracking(cfg: Mapping[str, Any]) -> TrackingWorker | None:
    """A :class:`~harness.tracking.worker.TrackingWorker` that gets MLflow ready on the
    other core while the study computes, or None: tracking off, ``tracking.worker=false``,
    or MLflow already loaded in this process (a sweep's jobs after the first, a notebook),
    where logging in process costs nothing more."""
    tcfg = cfg.get("tracking", {})
    if not tcfg.get("enabled", True) or not tcfg.get("worker", True):
        return None
    if "mlflow" in sys.modules:
        return None
    configure_requests(int(tcfg.get("timeout_s", 5)), int(tcfg.get("max_retries", 1)))
    try:
        return TrackingWorker(resolve_tracking_uri(tcfg.get("uri")))
    except OSError as exc:  # no process to spare: log in process
        log.debug("no tracking worker (%s); logging in process", exc)
        return None


def log_study(cfg: Mapping[str, Any], dataset: Dataset, metrics: list[Metric],
              results: Mapping[str, Any], written: Mapping[str, Any], out: Path, *,
              parent_run_id: str | None, job_label: str, failed: bool,
              started: float | None = None, title: str = "",
              worker: TrackingWorker | None = None) -> dict[str, str]:
    """Build the log plan, save it as pending, send it (through ``worker`` when given; in
    process when it is None or gone). Raises TrackingUnavailable when the tracking store
    cannot be reached (the results stay on disk and the plan stays pending)."""
    tcfg = cfg.get("tracking", {})
    configure_requests(int(tcfg.get("timeout_s", 5)), int(tcfg.get("max_retries", 1)))
    uri = resolve_tracking_uri(tcfg.get("uri"))
    experiment = tcfg.get("experiment") or cfg.get("study", "default")
    params, overflow = _params(cfg, out)
    common_tags = {"harness.version": __version__, "git.commit": git_commit(),
                   "dataset.digest": dataset.digest, "dataset.name": dataset.name,
                   "study": str(cfg.get("study", "default"))}
    if job_label:
        common_tags["job"] = job_label
    common_tags |= _file_digests(cfg.get("dataset", {}))
    dataset_info = {"name": dataset.name, "digest": dataset.digest, "source": dataset.source,
                    "profile": json.dumps(dataset.summary())}
    job_files = [[str(written["summary_csv"]), ""], [str(written["check_csv"]), ""],
                 [str(written["keys_json"]), ""], [str(written["config_yaml"]), "config"],
                 [str(written["dataset_json"]), ""], [str(written["environment_json"]), ""]]
    hydra_dir = out / ".hydra"
    if hydra_dir.is_dir():
        job_files.append([str(hydra_dir), "config/hydra"])
    if "figures" in written:
        job_files.append([str(written["figures"]), "figures"])
    if overflow is not None:
        job_files.append([str(overflow), ""])
    from harness.app.notes import ranker_description, study_description

    study = str(cfg.get("study", "default"))
    summaries = written["summary"]
    label = title or job_label.split(":", 1)[-1] or "defaults"
    records: list[RunRecord] = []
    if parent_run_id is None:
        job_key = "job"
        records.append(RunRecord(
            key="job", name=f"{study} · {label} · {time.strftime('%H:%M:%S')}",
            tags=common_tags | {"harness.role": "job", "mlflow.note.content": study_description(
                summaries, metrics, study=study, dataset=dataset.name, title=label)},
            params=params,
            metrics=_job_metrics(metrics, results, written), artifacts=job_files,
            dataset=dataset_info, status="FAILED" if failed else "FINISHED"))
    else:  # a sweep: the job's files go to the sweep's parent run, under job_<label>/
        job_key = None
        prefix = f"jobs/{job_label.split(':', 1)[0] if job_label else os.getpid()}"
        records.append(RunRecord(
            key="sweep", name="sweep", run_id=parent_run_id, attach_only=True,
            artifacts=[[p, f"{prefix}/{d}".rstrip("/")] for p, d in job_files]))
    for name, r in results.items():
        ranker_metrics = _stat_metrics(written["summary"][name], metrics, STATS)
        checked = [c for c in r.checks if c.status == "checked"]
        ranker_metrics["sklearn_check.n_variants_checked"] = float(len(checked))
        ranker_metrics["sklearn_check.n_variants_not_checked"] = float(len(r.checks) - len(checked))
        if checked:
            ranker_metrics["sklearn_check.max_abs_diff"] = max(c.max_abs_diff for c in checked)
            ranker_metrics["sklearn_check.n_queries_checked"] = float(sum(c.n_checked
                                                                          for c in checked))
        extra = [[str(overflow), ""]] if overflow is not None else []
        if "figures" in written:  # the study's figures show this ranker among the others
            extra.append([str(written["figures"]), "figures"])
        extra.append([str(_viewable_table(r.per_query, out / "per_query" / name)), ""])
        extra += [[str(p), "explain"] for p in written.get("explain", {}).get(name, [])]
        records.append(RunRecord(
            key=f"ranker:{name}", name=f"{name} [{job_label}]" if job_label else name,
            parent=job_key,
            parent_run_id=parent_run_id,
            tags=common_tags | {"harness.role": "ranker", "ranker.name": name,
                                "ranker.kind": r.spec.kind, "ranker.cache_key": r.cache_key,
                                "mlflow.note.content": ranker_description(
                                    name, summaries[name], metrics, study=study,
                                    dataset=dataset.name)},
            params=params | {"ranker_name": name},
            metrics={k: v for k, v in ranker_metrics.items() if v == v},  # drop NaN
            artifacts=[[str(written["per_query"][name]), ""], [str(written["config_yaml"]),
                                                                "config"],
                       [str(written["environment_json"]), ""], [str(written["keys_json"]), ""],
                       *extra],
            dataset=dataset_info,
            status="FAILED" if failed else "FINISHED"))
    start_ms = int((started or time.time()) * 1000)
    end_ms = int(time.time() * 1000)
    for record in records:
        if not record.attach_only:
            record.start_ms, record.end_ms = start_ms, end_ms
    plan = LogPlan(tracking_uri=uri, experiment=experiment,
                   artifact_root=str(project_path(tcfg.get("artifact_root", "runs/artifacts"))),
                   runs=records)
    marker = project_path(tcfg.get("pending_dir", "runs/pending")) / (
        f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{out.name}.json")
    plan.save(marker)
    t = time.perf_counter()
    from harness.progress import progress

    try:
        ids = None
        if worker is not None:
            try:
                ids = worker.execute(marker)
            except WorkerGone as gone:  # the plan on disk holds its progress: go on here
                log.warning("%s; logging in process", gone)
                plan = LogPlan.load(marker)
        if ids is None:
            ids = execute(plan, marker, progress=lambda runs: progress(runs, desc="MLflow",
                                                                       unit="run"))
    except Exception as exc:  # the store is down or refused: keep everything for a replay
        reason = str(exc).splitlines()[0][:300] if str(exc) else ""
        kind = getattr(exc, "kind", type(exc).__name__)  # the worker's, or this one's
        if refused(exc):
            if not isinstance(exc, WorkerFailed):  # the worker closed its runs itself
                close_open_runs(plan)
            raise HarnessError(
                f"MLflow at {uri} refused the results ({kind}: {reason}). "
                f"Results are in {out}; the log plan is kept in {marker}") from exc
        raise TrackingUnavailable(
            f"could not log to MLflow at {uri} ({kind}: {reason}). Results are "
            f"in {out}; the log plan is pending in {marker}; replay it with: "
            "harness sync") from exc
    log.info("logged to MLflow (%s, experiment %r) in %.1fs", uri, experiment,
             time.perf_counter() - t)
    return ids


def _file_digests(options: Mapping[str, Any]) -> dict[str, str]:
    """``dataset.sha256.<role>`` tags: the sha256 of each input file, so that reproduce can
    name the file that changed (a parquet_run's digest is its file's already)."""
    from harness.datasets.dataset import file_sha256, input_files

    kind = str(options.get("kind", ""))
    if kind == "parquet_run":
        return {}
    return {f"dataset.sha256.{role}": file_sha256(path)
            for role, path in input_files(kind, options).items() if path.is_file()}


#: Rows of the per-query CSV that MLflow's artifact viewer shows as a table.
VIEWABLE_ROWS = 5_000


def _viewable_table(per_query: pd.DataFrame, folder: Path) -> Path:
    """``folder/per_query.csv``: the per-query values as MLflow's UI previews them (the
    first :data:`VIEWABLE_ROWS` queries, values rounded to 6 decimals; the parquet is the
    exact record). The metric columns come first, the counts (documents, judged, relevant)
    last, so the preview opens on the values."""
    from harness.metrics.evaluate import metric_columns

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "per_query.csv"
    values = metric_columns(per_query)
    shown = per_query[values + [c for c in per_query.columns if c not in values]]
    shown = shown.head(VIEWABLE_ROWS).round(6)
    try:  # Arrow's writer: 0.03 s for 5,000 queries x 30 columns where pandas takes 0.2 s
        _write_csv(shown, path)
    except Exception:  # noqa: BLE001 - a column Arrow cannot write: pandas can
        shown.to_csv(path)
    return path


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` with its index as CSV: the header quoted only where needed (as pandas
    writes it), the rows by pyarrow (text values quoted, missing values empty)."""
    import csv
    import io

    import pyarrow as pa
    import pyarrow.csv as pa_csv

    table = pa.Table.from_pandas(frame.reset_index(), preserve_index=False)
    header = io.StringIO()
    csv.writer(header, lineterminator="\n").writerow([str(c) for c in table.column_names])
    body = io.BytesIO()
    pa_csv.write_csv(table, body, pa_csv.WriteOptions(include_header=False))
    path.write_bytes(header.getvalue().encode() + body.getvalue())


def _stat_metrics(summary: pd.DataFrame, metrics: list[Metric], stats: Sequence[str], *,
                  prefix: str = "") -> dict[str, float]:
    """``{"<prefix><key>.<stat>": value}`` from a summary table (one row per display name),
    read as one block rather than cell by cell."""
    block = summary.loc[[m.display_name for m in metrics], list(stats)].to_numpy(dtype=float)
    return {f"{prefix}{m.key}.{stat}": float(v) for m, row in zip(metrics, block)
            for stat, v in zip(stats, row)}


def _job_metrics(metrics: list[Metric], results: Mapping[str, Any],
                 written: Mapping[str, Any]) -> dict[str, float]:
    out = {}
    for name in results:
        means = _stat_metrics(written["summary"][name], metrics, ["mean"], prefix=f"{name}.")
        out.update({k: v for k, v in means.items() if v == v})  # drop NaN
    return out
