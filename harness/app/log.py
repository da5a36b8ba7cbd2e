"""The log stage of a study: first the runs as data (:class:`RunLog`: one per job, one per
ranker, or the sweep's parent run, each from the files already written), then a log plan
saved as pending and sent to MLflow; a store that cannot be reached leaves the plan for
``harness sync``."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from harness.app.plan import StudyPlan
from harness.app.provenance import flatten, git_commit
from harness.app.ranker_notes import RankerNotes
from harness.datasets import Dataset
from harness.errors import HarnessError, OutputError, TrackingUnavailable
from harness.metrics import Metric
from harness.paths import project_path
from harness.reporting import STATS
from harness.tracking import LogPlan, RunRecord, configure_requests, execute, resolve_tracking_uri
from harness.tracking.log_plan import PARAM_LIMIT, RUN_ID_SLOT, close_open_runs, refused
from harness.tracking.worker import TrackingWorker, WorkerFailed, WorkerGone
from harness.version import __version__

__all__ = ["RunLog", "study_runs", "log_study", "start_tracking", "VIEWABLE_ROWS",
           "ranker_metric_key", "ranker_metrics", "STATS_PREFIX", "PER_QUERY_DIGEST_TAG",
           "JUDGMENTS_DIGEST_TAG", "with_figure", "PREVIEW_WIDTH", "job_metrics", "BEST_PREFIX"]

log = logging.getLogger("harness")

#: The sha256 of a ranker run's per-query artifact (``<ranker>.parquet``), so that a later
#: comparison can tell the artifact it reads is the one the job logged.
PER_QUERY_DIGEST_TAG = "per_query.sha256"
#: The sha256 of a ranker run's judgment intervals (``judgments/<ranker>.parquet``).
JUDGMENTS_DIGEST_TAG = "judgments.sha256"


@dataclass(frozen=True)
class RunLog:
    """One MLflow run of a study as data, built before anything is sent.

    ``artifacts`` are (local file or folder, artifact folder) pairs; ``description`` is the
    run's note. A run with ``run_id`` exists already (a sweep's parent): only its artifacts
    are added, and it stays open."""

    key: str  # "job", "sweep" or "ranker:<name>"; a child names its parent's key
    name: str
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    artifacts: list[tuple[Path, str]] = field(default_factory=list)
    models: list[tuple[Path, str]] = field(default_factory=list)  # (MLflow model, kind)
    description: str = ""
    parent: str | None = None
    parent_run_id: str | None = None
    run_id: str | None = None

    def record(self, dataset: dict[str, str], *, failed: bool, start_ms: int,
               end_ms: int) -> RunRecord:
        """The run as the log plan saves and sends it."""
        artifacts = [[str(path), folder] for path, folder in self.artifacts]
        if self.run_id is not None:
            return RunRecord(key=self.key, name=self.name, run_id=self.run_id,
                             attach_only=True, artifacts=artifacts)
        tags = self.tags | ({"mlflow.note.content": self.description}
                            if self.description else {})
        return RunRecord(key=self.key, name=self.name, parent=self.parent,
                         parent_run_id=self.parent_run_id, tags=tags, params=self.params,
                         metrics=self.metrics, artifacts=artifacts, dataset=dataset,
                         models=[[str(path), kind] for path, kind in self.models],
                         status="FAILED" if failed else "FINISHED", start_ms=start_ms,
                         end_ms=end_ms)


def _params(record: Mapping[str, Any], out: Path) -> tuple[dict[str, str], Path | None]:
    params = flatten(record)
    overflow = {k: v for k, v in params.items() if len(v) > PARAM_LIMIT}
    if not overflow:
        return params, None
    path = out / "params_overflow.json"
    path.write_text(json.dumps(overflow, indent=1))
    for k in overflow:
        params[k] = f"(longer than {PARAM_LIMIT} characters: see artifact params_overflow.json)"
    return params, path


def start_tracking(plan: StudyPlan) -> TrackingWorker | None:
    """A :class:`~harness.tracking.worker.TrackingWorker` that gets MLflow ready on the
    other core while the study computes, or None: tracking off, ``tracking.worker=false``,
    or MLflow already loaded in this process (a sweep's jobs after the first, a notebook),
    where logging in process costs nothing more."""
    tracking = plan.tracking
    if tracking.enabled:  # the log plan's folder, before the study computes
        from harness.app.hydra_guard import cannot_write

        why = cannot_write(project_path(tracking.pending_dir))
        if why is not None:
            raise OutputError(f"tracking.pending_dir {project_path(tracking.pending_dir)} "
                              f"cannot be written ({why}): a job keeps its log plan there "
                              "until MLflow has it; give tracking.pending_dir a writable "
                              "folder, or tracking=off")
    if not tracking.enabled or not tracking.worker:
        return None
    if "mlflow" in sys.modules:
        return None
    configure_requests(tracking.timeout_s, tracking.max_retries)
    try:
        return TrackingWorker(resolve_tracking_uri(tracking.uri))
    except OSError as exc:  # no process to spare: log in process
        log.debug("no tracking worker (%s); logging in process", exc)
        return None


def log_study(plan: StudyPlan, dataset: Dataset, results: Mapping[str, Any],
              written: Mapping[str, Any], out: Path, *, notes: Mapping[str, RankerNotes],
              parent_run_id: str | None,
              job_label: str, failed: bool, started: float | None = None, title: str = "",
              worker: TrackingWorker | None = None, on_saved: Path | None = None
              ) -> dict[str, str]:
    """Build the study's runs, save them as a pending log plan, remove ``on_saved`` (the
    job's ``INCOMPLETE`` mark: a job stopped at any point is either incomplete or has its
    plan), send it (through ``worker`` when given; in process when it is None or gone).
    Raises TrackingUnavailable when the tracking store cannot be reached (the results stay
    on disk and the plan stays pending)."""
    marker = project_path(plan.tracking.pending_dir) / (
        f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{out.name}.json")
    try:
        return _log_study(plan, dataset, results, written, out, marker, notes=notes,
                          parent_run_id=parent_run_id, job_label=job_label, failed=failed,
                          started=started, title=title, worker=worker, on_saved=on_saved)
    except OSError as exc:  # a full disk, a folder made read-only: what is kept, one line
        if on_saved is not None:  # the results are complete; the error says what is not
            on_saved.unlink(missing_ok=True)
        kept = (f"the log plan {marker} is kept: send it with harness sync --pending-dir "
                f"{marker.parent}" if marker.is_file() else
                "nothing was sent to MLflow and no log plan was kept: free space, then run "
                "the job again (its scores come from the cache)")
        raise OutputError(f"the results are complete in {out}, but writing their MLflow "
                          f"log failed: {exc.strerror or exc} ({exc.filename or marker}); "
                          f"{kept}") from None


def _log_study(plan: StudyPlan, dataset: Dataset, results: Mapping[str, Any],
               written: Mapping[str, Any], out: Path, marker: Path, *,
               notes: Mapping[str, RankerNotes], parent_run_id: str | None, job_label: str,
               failed: bool, started: float | None, title: str,
               worker: TrackingWorker | None, on_saved: Path | None) -> dict[str, str]:
    configure_requests(plan.tracking.timeout_s, plan.tracking.max_retries)
    uri = resolve_tracking_uri(plan.tracking.uri)
    runs = study_runs(plan, dataset, results, written, out, notes=notes,
                      parent_run_id=parent_run_id,
                      job_label=job_label, title=title)
    info = {"name": dataset.name, "digest": dataset.digest, "source": dataset.source,
            "profile": json.dumps(dataset.summary())}
    start_ms, end_ms = int((started or time.time()) * 1000), int(time.time() * 1000)
    log_plan = LogPlan(tracking_uri=uri, experiment=plan.experiment,
                       artifact_root=str(project_path(plan.tracking.artifact_root)),
                       runs=[r.record(info, failed=failed, start_ms=start_ms, end_ms=end_ms)
                             for r in runs])
    log_plan.save(marker)
    if on_saved is not None:
        on_saved.unlink(missing_ok=True)
    t = time.perf_counter()
    ids = _send(log_plan, marker, worker, out)
    log.info("logged to MLflow (%s, experiment %r) in %.1fs", uri, plan.experiment,
             time.perf_counter() - t)
    return ids


def study_runs(plan: StudyPlan, dataset: Dataset, results: Mapping[str, Any],
               written: Mapping[str, Any], out: Path, *, notes: Mapping[str, RankerNotes],
               parent_run_id: str | None, job_label: str, title: str = "") -> list[RunLog]:
    """The study's runs: the job's (or, in a sweep, its files added to the sweep's parent
    run under ``jobs/<job number>/``), then one per ranker, child of the job's; ``notes``
    (per ranker, beside its summary) go into their descriptions."""
    from harness.app.notes import study_description

    written = {**written, "preview": _preview(written, out)}
    params, overflow = _params(plan.record, out)
    tags = {"harness.version": __version__, "git.commit": git_commit(),
            "dataset.digest": dataset.digest, "dataset.name": dataset.name,
            "study": plan.study}
    if job_label:
        tags["job"] = job_label
    tags |= _file_digests(plan.dataset.kind, plan.dataset.options)
    files = [(written[role], folder) for role, folder in (
        ("summary_csv", ""), ("check_csv", ""), ("keys_json", ""), ("config_yaml", "config"),
        ("dataset_json", ""), ("environment_json", ""), ("judgments_csv", ""))
        if role in written]
    if (out / ".hydra").is_dir():
        files.append((out / ".hydra", "config/hydra"))
    if "figures" in written:
        files.append((written["figures"], "figures"))
    if written["preview"] is not None:
        files.append((written["preview"], ""))
    if overflow is not None:
        files.append((overflow, ""))
    if parent_run_id is None:
        label = title or job_label.split(":", 1)[-1] or "defaults"
        metrics, best = job_metrics(plan.metrics,
                                    {name: written["summary"][name] for name in results})
        runs = [RunLog(
            key="job", name=f"{plan.study} · {label} · {time.strftime('%H:%M:%S')}",
            params=params, metrics=metrics, tags=tags | best | {"harness.role": "job"},
            artifacts=files,
            description=with_figure(study_description(
                written["summary"], plan.metrics, study=plan.study, dataset=dataset.name,
                title=label, pairs=written.get("judgment_pairs", ()), notes=notes),
                written))]
    else:  # a sweep: the job's files go to the sweep's parent run, under job_<label>/
        prefix = f"jobs/{job_label.split(':', 1)[0] if job_label else os.getpid()}"
        runs = [RunLog(key="sweep", name="sweep", run_id=parent_run_id, artifacts=[
            (path, f"{prefix}/{folder}".rstrip("/")) for path, folder in files])]
    return runs + [_ranker_run(plan, dataset, name, r, written, out, notes[name],
                               params=params, tags=tags, overflow=overflow, job_label=job_label,
                               parent="job" if parent_run_id is None else None,
                               parent_run_id=parent_run_id)
                   for name, r in results.items()]


#: Width in pixels of ``distributions.png``, the overview figure as a run's page shows it.
PREVIEW_WIDTH = 900


def _preview(written: Mapping[str, Any], out: Path) -> Path | None:
    """``<out>/distributions.png``: the overview figure scaled to :data:`PREVIEW_WIDTH`
    pixels (MLflow's run page shows a description's image at its own size, and the
    overview is 1,900 px wide); None without the figure."""
    folder = written.get("figures")
    if folder is None or not (Path(folder) / "overview.png").is_file():
        return None
    from PIL import Image  # matplotlib's own dependency

    with Image.open(Path(folder) / "overview.png") as image:
        small = image.copy()
    small.thumbnail((PREVIEW_WIDTH, PREVIEW_WIDTH * 4))
    path = out / "distributions.png"
    small.save(path)
    return path


def with_figure(description: str, written: Mapping[str, Any]) -> str:
    """The description with the overview figure (``distributions.png``, :func:`_preview`)
    under its first line, so the run's page opens on the result and its distribution:
    MLflow's run page renders the image from its ``get-artifact`` endpoint, the run's id
    filled in when the run is created (:data:`~harness.tracking.log_plan.RUN_ID_SLOT`).
    Unchanged without the figure or when the text would pass MLflow's limit."""
    from harness.app.notes import NOTE_LIMIT

    if not description or written.get("preview") is None:
        return description
    lead, _, rest = description.partition("\n")
    text = (f"{lead}\n\n![per-query distributions of the headline variants (ECDF)]"
            f"(get-artifact?path=distributions.png&run_uuid={RUN_ID_SLOT})\n{rest}")
    return text if len(text) <= NOTE_LIMIT else description


def _ranker_run(plan: StudyPlan, dataset: Dataset, name: str, r: Any,
                written: Mapping[str, Any], out: Path, notes: RankerNotes, *,
                params: dict[str, str],
                tags: dict[str, str], overflow: Path | None, job_label: str,
                parent: str | None, parent_run_id: str | None) -> RunLog:
    """One ranker's run: its summary statistics and check counts, its per-query table (and
    a viewable excerpt), the study's figures and its convention-diff files."""
    from harness.app.notes import ranker_description
    from harness.datasets.dataset import file_sha256

    stats = ranker_metrics(written["summary"][name], plan.metrics)
    # logged (and listed on the run's page) in this order: means, check counts, judged@10,
    # statistics
    metrics = {k: v for k, v in stats.items() if not k.startswith(STATS_PREFIX)}
    checked = [c for c in r.checks if c.status == "checked"]
    metrics["sklearn_check.n_variants_checked"] = float(len(checked))
    metrics["sklearn_check.n_variants_not_checked"] = float(len(r.checks) - len(checked))
    if checked:
        metrics["sklearn_check.max_abs_diff"] = max(c.max_abs_diff for c in checked)
        metrics["sklearn_check.n_queries_checked"] = float(sum(c.n_checked for c in checked))
    judged = notes.judged_at_10  # None: not computed
    metrics["judged_at_10"] = float("nan") if judged is None else float(judged)
    metrics |= {k: v for k, v in stats.items() if k.startswith(STATS_PREFIX)}
    files = [(written["per_query"][name], ""), (written["config_yaml"], "config"),
             (written["environment_json"], ""), (written["keys_json"], "")]
    if overflow is not None:
        files.append((overflow, ""))
    if "figures" in written:  # the study's figures show this ranker among the others
        files.append((written["figures"], "figures"))
    if written.get("preview") is not None:
        files.append((written["preview"], ""))
    files.append((_viewable_table(r.per_query, out / "per_query" / name), ""))
    files += [(path, "explain") for path in written["explain"].get(name, [])]
    judgments = written.get("judgments", {}).get(name)  # None: not computed
    if judgments is not None:
        files.append((judgments, "judgments"))
        tags = tags | {JUDGMENTS_DIGEST_TAG: file_sha256(judgments)}
    return RunLog(
        key=f"ranker:{name}", name=f"{name} [{job_label}]" if job_label else name,
        parent=parent, parent_run_id=parent_run_id, params=params | {"ranker_name": name},
        metrics={k: v for k, v in metrics.items() if v == v},  # drop NaN
        tags=tags | r.trainer | {  # trainer.*: a trained ranker's own metric, reproduced
            "harness.role": "ranker", "ranker.name": name, "ranker.kind": r.spec.kind,
            "ranker.cache_key": r.cache_key,
            PER_QUERY_DIGEST_TAG: file_sha256(written["per_query"][name])},
        artifacts=files, models=[(r.model, r.spec.kind)] if r.model is not None else [],
        description=with_figure(ranker_description(
            name, written["summary"][name], plan.metrics, study=plan.study,
            dataset=dataset.name, notes=notes), written))


def _send(log_plan: LogPlan, marker: Path, worker: TrackingWorker | None,
          out: Path) -> dict[str, str]:
    """Send the saved plan (through ``worker``, else in process); the store's refusal or
    absence becomes one error naming where the results and the plan are."""
    from harness.progress import progress

    uri = log_plan.tracking_uri
    try:
        ids = None
        if worker is not None:
            try:
                ids = worker.execute(marker)
            except WorkerGone as gone:  # the plan on disk holds its progress: go on here
                log.warning("%s; logging in process", gone)
                log_plan = LogPlan.load(marker)
        if ids is None:
            ids = execute(log_plan, marker, progress=lambda runs: progress(
                runs, desc="MLflow", unit="run"))
    except Exception as exc:  # the store is down or refused: keep everything for a replay
        reason = str(exc).splitlines()[0][:300] if str(exc) else ""
        kind = getattr(exc, "kind", type(exc).__name__)  # the worker's, or this one's
        if refused(exc):
            if not isinstance(exc, WorkerFailed):  # the worker closed its runs itself
                close_open_runs(log_plan)
            raise HarnessError(
                f"MLflow at {uri} refused the results ({kind}: {reason}). "
                f"Results are in {out}; the log plan is kept in {marker}") from exc
        raise TrackingUnavailable(
            f"could not log to MLflow at {uri} ({kind}: {reason}). Results are "
            f"in {out}; the log plan is pending in {marker}; replay it with: "
            "harness sync") from exc
    return ids


def _file_digests(kind: str, options: Mapping[str, Any]) -> dict[str, str]:
    """``dataset.sha256.<role>`` tags: the sha256 of each input file, so that reproduce can
    name the file that changed (a parquet_run's digest is its file's already)."""
    from harness.datasets.dataset import file_sha256, input_files

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
    from harness.metrics.engine.evaluate import metric_columns

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


#: Where a ranker run's distribution statistics go: ``stats.<key>.<stat>``, after the means
#: (``<key>``) in MLflow's alphabetical column lists.
STATS_PREFIX = "stats."


def ranker_metric_key(key: str, stat: str) -> str:
    """The MLflow key of statistic ``stat`` of variant ``key`` in a ranker run: the mean is
    the bare key (``ndcg_at_10``), the others ``stats.<key>.<stat>`` (``stats.ndcg_at_10.std``).
    Runs logged before issue 22 hold ``<key>.<stat>`` for every statistic, the mean included."""
    return key if stat == "mean" else f"{STATS_PREFIX}{key}.{stat}"


def ranker_metrics(summary: pd.DataFrame, metrics: list[Metric]) -> dict[str, float]:
    """A ranker run's summary statistics under :func:`ranker_metric_key`: one key per variant
    for the means, the rest (std, median, percentiles, CI, counts) under ``stats.``."""
    values = _stat_metrics(summary, metrics, STATS)
    return {ranker_metric_key(m.key, stat): values[f"{m.key}.{stat}"]
            for stat in STATS for m in metrics}  # the means first


def _stat_metrics(summary: pd.DataFrame, metrics: list[Metric], stats: Sequence[str], *,
                  prefix: str = "") -> dict[str, float]:
    """``{"<prefix><key>.<stat>": value}`` from a summary table (one row per display name),
    read as one block rather than cell by cell."""
    block = summary.loc[[m.display_name for m in metrics], list(stats)].to_numpy(dtype=float)
    return {f"{prefix}{m.key}.{stat}": float(v) for m, row in zip(metrics, block)
            for stat, v in zip(stats, row)}


#: The job run's headline metrics, listed first on its page: ``best.<key>``, the best mean
#: over the rankers under each headline variant, with the ranker(s) in the tag
#: ``best.<key>.ranker``.
BEST_PREFIX = "best."


def job_metrics(metrics: list[Metric], summaries: Mapping[str, pd.DataFrame]
                ) -> tuple[dict[str, float], dict[str, str]]:
    """A job run's metrics and headline tags, in the order its page lists them: first
    ``best.<key>`` per headline variant (:func:`~harness.reporting.figures.headline_variants`,
    the best mean over the rankers) with the tag ``best.<key>.ranker`` naming who has it,
    then every ranker's mean of every variant (``<ranker>.<key>.mean``, what
    ``mlflow.search_runs`` filters on), the headline variants' first. NaN means are left
    out."""
    from harness.reporting.figures import headline_variants

    means = {name: _stat_metrics(summary, metrics, ["mean"], prefix=f"{name}.")
             for name, summary in summaries.items()}
    headline = headline_variants(metrics)
    out: dict[str, float] = {}
    tags: dict[str, str] = {}
    for m in headline:
        column = {n: v[f"{n}.{m.key}.mean"] for n, v in means.items()}
        best = max((v for v in column.values() if v == v), default=None)
        if best is not None:
            out[f"{BEST_PREFIX}{m.key}"] = best
            tags[f"{BEST_PREFIX}{m.key}.ranker"] = ", ".join(
                n for n, v in column.items() if v == best)
    keys = {m.key for m in headline}
    for m in headline + [m for m in metrics if m.key not in keys]:
        for name, values in means.items():
            value = values[f"{name}.{m.key}.mean"]
            if value == value:
                out[f"{name}.{m.key}.mean"] = value
    return out, tags
