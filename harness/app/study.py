"""Run a study: dataset x rankers x metric variants, checked, written to disk, then logged.

:func:`run_study` takes a plain config (a DictConfig or a dict of the same shape), so it is
testable without Hydra's runtime. It is a pipeline whose stages each live in one module of
this package and only call downward:

1. plan (:mod:`harness.app.plan`): every metric, ranker spec and dataset option is built,
   failing before any data is read;
2. score (:func:`harness.rankers.score`, from the score cache when possible) and evaluate
   (the study's engine; :mod:`harness.app.in_place` for a parquet_run read in place);
3. check (:mod:`harness.app.check`): the sklearn cross-check on the variants sklearn can
   express;
4. summarise and write (:mod:`harness.app.write`): per-query tables, summaries, the check
   table and figures in the output dir;
5. log (:mod:`harness.app.log`): a log plan saved to the pending folder and sent to MLflow;
   a failure to reach the store leaves the plan for ``python -m harness.sync``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from harness.app.check import CheckFailed, check_failures, sample_options
from harness.app.in_place import evaluate_in_place
from harness.app.plan import (
    DATASET_PATH_OPTIONS,
    build_metrics,
    check_rankers_against,
    plain_config,
    validate,
)
from harness.app.results import INCOMPLETE, RankerResult, StudyResult
from harness.datasets import ParquetRun, load_dataset
from harness.engines import Engine
from harness.metrics.sklearn_check import check_against_sklearn
from harness.paths import project_path
from harness.rankers import score
from harness.tracking import resolve_tracking_uri

__all__ = ["StudyResult", "CheckFailed", "validate", "check_rankers_against", "build_metrics",
           "run_study", "DATASET_PATH_OPTIONS", "INCOMPLETE"]

log = logging.getLogger("harness")


def run_study(cfg: DictConfig | Mapping[str, Any], output_dir: Path, *,
              parent_run_id: str | None = None, job_label: str = "",
              title: str = "") -> StudyResult:
    """Evaluate every ranker on every variant, write results, log them; see module doc.

    Long phases show tqdm bars on a terminal; the job log ends with the time of each phase
    (``phases: load 0.05s, score 0.31s, ...``)."""
    from harness.progress import quiet_logs_while_bars

    with quiet_logs_while_bars():
        return _run_study(cfg, output_dir, parent_run_id=parent_run_id, job_label=job_label,
                          title=title)


def _run_study(cfg: DictConfig | Mapping[str, Any], output_dir: Path, *,
               parent_run_id: str | None, job_label: str, title: str = "") -> StudyResult:
    from harness.progress import Phases

    started = time.time()
    phases = Phases()
    with phases("setup"):  # the checks, then scipy and the rest of the output side
        metrics, specs, ds_options = validate(cfg)
        from harness.app import log as log_stage, write  # noqa: F401 - the output side
    # MLflow gets ready in a child process on the other core while the study computes
    with log_stage.start_tracking(cfg) or contextlib.nullcontext() as worker:
        return _run_valid(cfg, output_dir, started, phases, (metrics, specs, ds_options),
                          worker, parent_run_id=parent_run_id, job_label=job_label,
                          title=title)


def _run_valid(cfg: DictConfig | Mapping[str, Any], output_dir: Path, started: float,
               phases: Any, valid: tuple[list[Any], list[Any], dict[str, Any]],
               worker: Any, *, parent_run_id: str | None, job_label: str,
               title: str) -> StudyResult:
    """The study after its config was validated (``valid``: metrics, ranker specs, dataset
    options), logging through ``worker`` when there is one."""
    from harness.app import log as log_stage, write
    from harness.progress import progress

    metrics, specs, ds_options = valid
    c = plain_config(cfg)
    for key in DATASET_PATH_OPTIONS:  # log the absolute paths that were read
        if ds_options.get(key):
            c["dataset"][key] = ds_options[key]
    for spec in specs:
        if "path" in spec.options:
            c["ranker"][spec.name]["path"] = spec.options["path"]
    t0 = time.perf_counter()
    kind = ds_options.pop("kind")
    with phases("load"):
        dataset = load_dataset(kind, **ds_options)
    if isinstance(dataset, ParquetRun):
        log.info("dataset %s (parquet_run): %s, %d rows evaluated in place, digest %s…",
                 dataset.name, dataset.path, dataset.rows, dataset.digest[:12])
    else:
        log.info("dataset %s (%s): %d test queries, %d judgments, digest %s…", dataset.name,
                 kind, dataset.test["qid"].nunique(), len(dataset.qrels), dataset.digest[:12])
    check_rankers_against(specs, dataset)
    from harness.explain.pairs import explain_pairs, explain_ranker, write_explanations

    explain_metric, pairs = explain_pairs(c)
    output_dir.mkdir(parents=True, exist_ok=True)  # the input is valid: work begins
    incomplete = output_dir / INCOMPLETE
    incomplete.write_text(f"This job (pid {os.getpid()}, started "
                          f"{time.strftime('%Y-%m-%d %H:%M:%S')}) has not finished writing its "
                          "results. If it is no longer running, it stopped early: the files "
                          "here are partial; run the job again.\n")
    cache_dir = project_path(c.get("cache_dir", "runs/cache/scores"))
    grid = c["metric"]
    options = {"nan_scores": grid.get("nan_scores", "error"),
               "missing": grid.get("missing", "exclude")}
    check_on = c.get("check", {}).get("sklearn", "fail") != "off"
    results: dict[str, RankerResult] = {}
    explained: dict[str, list[Path]] = {}  # ranker -> its convention-diff files
    with Engine.from_config(c.get("engine")) as engine:
        log.info("engine: %s", engine.describe())
        bar = progress(specs, desc="rankers", unit="ranker")
        for i, spec in enumerate(bar, start=1):
            t = time.perf_counter()
            if hasattr(bar, "set_postfix_str"):
                bar.set_postfix_str(spec.name)
            if isinstance(dataset, ParquetRun):
                with phases("evaluate"):
                    per_query, checks = evaluate_in_place(
                        engine, dataset, spec, metrics, options,
                        c.get("check", {}) if check_on else None)
                key, hit = f"parquet_run:{dataset.digest[:16]}:{spec.options['column']}", None
            else:
                with phases("score"):
                    run, key, hit = score(spec, dataset, cache_dir)
                with phases("evaluate"):
                    per_query = engine.evaluate(run, dataset.qrels, metrics, **options)
                if pairs:
                    with phases("explain"):
                        explained[spec.name] = write_explanations(
                            explain_ranker(run, dataset.qrels, explain_metric, pairs),
                            output_dir / "explain", spec.name)
                with phases("check"):
                    checks = (check_against_sklearn(
                        run, dataset.qrels, metrics, per_query,
                        **sample_options(c.get("check", {}), c.get("seed", 0)))
                              if check_on else [])
            results[spec.name] = RankerResult(spec, key, hit, per_query, checks,
                                              time.perf_counter() - t)
            sampled = max((ch.sample_size for ch in checks), default=0)
            if sampled:
                log.info("ranker %s: sklearn check on a seeded sample of %d of %d queries "
                         "(check.max_queries)", spec.name, sampled, len(per_query))
            log.info("[%d/%d] ranker %s: %d variants x %d queries in %.2fs (scores %s)", i,
                     len(specs), spec.name, len(metrics), len(per_query),
                     time.perf_counter() - t, {True: "cached", False: "computed",
                                               None: "read in place"}[hit])
    failures = check_failures(results, float(c.get("check", {}).get("tolerance", 1e-9)))
    mode = c.get("check", {}).get("sklearn", "fail")
    output_dir.mkdir(parents=True, exist_ok=True)
    with phases("summaries"):
        written = write.write_outputs(c, dataset, metrics, results, output_dir)
    with phases("figures"):
        figures = write.write_figures(c, metrics, results, output_dir)
    if figures is not None:
        written["figures"] = figures
    written["explain"] = explained
    incomplete.unlink(missing_ok=True)
    log.info("results written to %s", output_dir)
    run_ids: dict[str, str] = {}
    if c.get("tracking", {}).get("enabled", True):
        with phases("logging"):
            run_ids = log_stage.log_study(c, dataset, metrics, results, written, output_dir,
                                parent_run_id=parent_run_id, job_label=job_label,
                                failed=bool(failures) and mode == "fail", started=started,
                                title=title, worker=worker)
    log.info("study done in %.1fs; %s", time.perf_counter() - t0, phases.line())
    tcfg = c.get("tracking", {})
    result = StudyResult(dataset, metrics, results, output_dir, run_ids, failures,
                         summaries=written["summary"], seconds=time.perf_counter() - t0,
                         tracking_uri=resolve_tracking_uri(tcfg.get("uri")) if run_ids
                         else None, experiment=tcfg.get("experiment") or c.get("study"))
    if failures:
        message = "sklearn cross-check: " + "; ".join(failures)
        if mode == "fail":
            raise CheckFailed(message + " (set check.sklearn=warn to only warn)")
        log.warning(message)
    return result
