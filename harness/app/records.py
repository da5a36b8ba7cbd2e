"""Files a study writes to its output dir, and the MLflow log plan built from them."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

import harness
from harness.errors import HarnessError, TrackingUnavailable
from harness.datasets import Dataset
from harness.metrics import Metric
from harness.paths import PROJECT_ROOT, project_path
from harness.reporting import STATS
from harness.reporting.figures import figure_mode, study_figures
from harness.reporting.summary import summarize_study
from harness.tracking import LogPlan, RunRecord, configure_requests, execute, resolve_tracking_uri
from harness.tracking.plan import PARAM_LIMIT, close_open_runs, refused

__all__ = ["write_outputs", "log_study", "flatten", "git_commit"]

log = logging.getLogger("harness")


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config -> ``{"a.b.c": "value"}``; lists become JSON text."""
    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = json.dumps(value) if isinstance(value, (list, tuple, dict)) else str(value)
    return out


def git_commit() -> str:
    """HEAD of the checkout (``-dirty`` when tracked files changed), or 'unknown'."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, check=True,
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=PROJECT_ROOT, capture_output=True, text=True,
                               timeout=10).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


VERSIONED = ("numpy", "pandas", "scipy", "scikit-learn", "pyarrow", "matplotlib", "mlflow",
             "hydra-core", "omegaconf")


def environment() -> dict[str, Any]:
    """Python, platform and the versions of the packages that shape the numbers."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    packages = {"harness": harness.__version__}
    for name in VERSIONED:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = "not installed"
    return {"python": platform.python_version(), "platform": platform.platform(),
            "packages": packages}


def write_outputs(cfg: Mapping[str, Any], dataset: Dataset, metrics: list[Metric],
                  results: Mapping[str, Any], out: Path) -> dict[str, Any]:
    """Write every result file to ``out``; returns their paths by role."""
    from harness.app.study import check_table, dump_json, metric_key_map

    resamples = int(cfg.get("tracking", {}).get("bootstrap_resamples", 2000))
    max_queries = cfg.get("tracking", {}).get("bootstrap_max_queries", 20_000)
    seed = int(cfg.get("seed", 0))
    written: dict[str, Any] = {"per_query": {}, "summary": {}}
    (out / "per_query").mkdir(parents=True, exist_ok=True)
    for name, r in results.items():
        path = out / "per_query" / f"{name}.parquet"
        r.per_query.reset_index().to_parquet(path, index=False)
        written["per_query"][name] = path
    # one paired bootstrap for the whole study: a shared resample-index matrix per query set
    summaries = summarize_study({name: r.per_query for name, r in results.items()},
                                resamples=resamples, seed=seed,
                                bootstrap_max_queries=max_queries)
    frames = []
    for name, summary in summaries.items():
        normal = [c for c, m in summary.attrs["ci_method"].items() if m == "normal"]
        if normal:
            log.info("ranker %s: 95%% CI of %d variant(s) by the normal approximation "
                     "(more than tracking.bootstrap_max_queries=%s queries)", name, len(normal),
                     max_queries)
        written["summary"][name] = summary
        frames.append(summary.rename_axis("variant").reset_index().assign(ranker=name))
    table = pd.concat(frames, ignore_index=True)[["ranker", "variant", *STATS]]
    table.to_csv(out / "summary.csv", index=False)
    written["summary_csv"] = out / "summary.csv"
    checks = check_table(results)
    checks.to_csv(out / "sklearn_check.csv", index=False)
    written["check_csv"] = out / "sklearn_check.csv"
    written["keys_json"] = dump_json(out / "metric_keys.json", metric_key_map(metrics))
    (out / "config_resolved.yaml").write_text(yaml.safe_dump(dict(cfg), sort_keys=False))
    written["config_yaml"] = out / "config_resolved.yaml"
    written["dataset_json"] = dump_json(out / "dataset.json", dataset.summary() | {
        "source": dataset.source})
    written["environment_json"] = dump_json(out / "environment.json", environment())
    return written


def write_figures(cfg: Mapping[str, Any], metrics: list[Metric], results: Mapping[str, Any],
                  out: Path) -> Path | None:
    """Draw the study's figures once into ``out/figures`` (``tracking.figures``: headline,
    all or off; see :func:`harness.reporting.figures.study_figures`); returns the folder,
    or None when no figure was drawn."""
    from harness.progress import progress

    mode = figure_mode(cfg.get("tracking", {}).get("figures", "headline"))
    paths = study_figures({name: r.per_query for name, r in results.items()}, metrics,
                          out / "figures", mode=mode, progress=lambda jobs: progress(
                              jobs, desc="figures", unit="fig"))
    return out / "figures" if paths else None


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


def log_study(cfg: Mapping[str, Any], dataset: Dataset, metrics: list[Metric],
              results: Mapping[str, Any], written: Mapping[str, Any], out: Path, *,
              parent_run_id: str | None, job_label: str, failed: bool,
              started: float | None = None, title: str = "") -> dict[str, str]:
    """Build the log plan, save it as pending, send it. Raises TrackingUnavailable when the
    tracking store cannot be reached (the results stay on disk and the plan stays pending)."""
    tcfg = cfg.get("tracking", {})
    configure_requests(int(tcfg.get("timeout_s", 5)), int(tcfg.get("max_retries", 1)))
    uri = resolve_tracking_uri(tcfg.get("uri"))
    experiment = tcfg.get("experiment") or cfg.get("study", "default")
    params, overflow = _params(cfg, out)
    common_tags = {"harness.version": harness.__version__, "git.commit": git_commit(),
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
        ids = execute(plan, marker, progress=lambda runs: progress(runs, desc="MLflow",
                                                                   unit="run"))
    except Exception as exc:  # the store is down or refused: keep everything for a replay
        reason = str(exc).splitlines()[0][:300] if str(exc) else ""
        if refused(exc):
            close_open_runs(plan)
            raise HarnessError(
                f"MLflow at {uri} refused the results ({type(exc).__name__}: {reason}). "
                f"Results are in {out}; the log plan is kept in {marker}") from exc
        raise TrackingUnavailable(
            f"could not log to MLflow at {uri} ({type(exc).__name__}: {reason}). Results are "
            f"in {out}; the log plan is pending in {marker}; replay it with: "
            "python -m harness.sync") from exc
    log.info("logged to MLflow (%s, experiment %r) in %.1fs", uri, experiment,
             time.perf_counter() - t)
    return ids


def _file_digests(options: Mapping[str, Any]) -> dict[str, str]:
    """``dataset.sha256.<role>`` tags: the sha256 of each input file, so that reproduce can
    name the file that changed (a parquet_run's digest is its file's already)."""
    from harness.datasets.base import file_sha256, input_files

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
    shown.head(VIEWABLE_ROWS).round(6).to_csv(path)
    return path


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
