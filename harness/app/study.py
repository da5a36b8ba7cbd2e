"""Run a study: dataset x rankers x metric variants, checked, written to disk, then logged.

:func:`run_study` takes a plain config (a DictConfig or a dict of the same shape), so it is
testable without Hydra's runtime. It is a pipeline whose stages each live in one module of
this package and only call downward:

1. plan (:mod:`harness.app.plan`): the config is checked and turned into one typed
   :class:`~harness.app.plan.StudyPlan` (metrics, ranker specs, dataset, engine, check,
   figures, tracking, explain), failing before any data is read; every later stage reads
   the plan, never the raw config;
2. score (:func:`harness.rankers.score`, from the score cache when possible) and evaluate
   (the study's engine; :mod:`harness.app.in_place` for a parquet_run read in place);
3. check (:mod:`harness.app.check`): the sklearn cross-check on the variants sklearn can
   express; explain (:mod:`harness.app.convention_diffs`): the convention diff of
   ``explain.pairs`` per ranker;
4. summarise and write (:mod:`harness.app.write`): per-query tables, summaries, the check
   table and figures in the output dir;
5. log (:mod:`harness.app.log`): a log plan saved to the pending folder and sent to MLflow;
   a failure to reach the store leaves the plan for ``harness sync``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from harness.app.check import CheckFailed, check_failures, sample_options
from harness.app.in_place import SampleCheck, evaluate_columns_in_place, evaluate_in_place
from harness.app.judged_share import judged_distribution, judged_per_query, judged_warning
from harness.app.plan import (
    DATASET_PATH_OPTIONS,
    StudyPlan,
    build_metrics,
    build_plan,
    check_rankers_against,
    validate,
)
from harness.app.ranker_notes import RankerNotes
from harness.app.results import INCOMPLETE, RankerResult, StudyResult
from harness.datasets import Dataset, ParquetRun, load_dataset
from harness.engines import Engine
from harness.errors import OutputError
from harness.metrics.sklearn_check import check_against_sklearn
from harness.rankers import TRAINERS, RankerSpec, score
from harness.tracking import resolve_tracking_uri

__all__ = ["StudyResult", "StudyPlan", "CheckFailed", "validate", "build_plan",
           "check_rankers_against", "build_metrics", "run_study", "DATASET_PATH_OPTIONS",
           "INCOMPLETE"]

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


@dataclass(frozen=True)
class _Job:
    """One study job once its plan is built: where it writes, how it logs."""

    plan: StudyPlan
    out: Path
    phases: Any  # harness.progress.Phases
    started: float  # time.time() when the job began
    worker: Any  # a TrackingWorker, or None: log in process
    parent_run_id: str | None
    job_label: str
    title: str


def _run_study(cfg: DictConfig | Mapping[str, Any], output_dir: Path, *,
               parent_run_id: str | None, job_label: str, title: str = "") -> StudyResult:
    from harness.progress import Phases

    started = time.time()
    phases = Phases()
    with phases("setup"):  # the checks, then scipy and the rest of the output side
        plan = build_plan(cfg)
        from harness.app import log as log_stage, write  # noqa: F401 - the output side
    # MLflow gets ready in a child process on the other core while the study computes
    with log_stage.start_tracking(plan) or contextlib.nullcontext() as worker:
        return _run_job(_Job(plan, output_dir, phases, started, worker, parent_run_id,
                             job_label, title))


def _run_job(job: _Job) -> StudyResult:
    """The study after its plan was built: load, score and evaluate, write, log."""
    t0 = time.perf_counter()
    dataset = _load(job)
    incomplete = _begin(job.out)  # the input is valid: work begins
    results, explained, runs = _evaluate_rankers(job, dataset)
    failures = check_failures(results, float(job.plan.check.tolerance))
    judgments = _judgments(job, dataset, results, runs)
    del runs
    written = _write(job, dataset, results, explained, judgments)
    warnings = [w for r in results.values() for w in r.warnings]
    notes = {name: RankerNotes(  # for the runs' descriptions and the closing summary
        warnings=tuple(results[name].warnings), judged_at_10=results[name].judged_at_10,
        judged_dist=judgments.dists.get(name) if judgments else None,
        intervals=_headline_intervals(job, judgments, name)) for name in written["summary"]}
    log.info("results written to %s", job.out)
    run_ids = _log(job, dataset, results, written, notes,  # INCOMPLETE goes once its plan
                   failed=bool(failures) and job.plan.check.sklearn == "fail",  # is saved
                   done=incomplete)
    incomplete.unlink(missing_ok=True)
    log.info("study done in %.1fs; %s", time.perf_counter() - t0, job.phases.line())
    plan = job.plan
    result = StudyResult(dataset, plan.metrics, results, job.out, run_ids, failures,
                         summaries=written["summary"], notes=notes,
                         seconds=time.perf_counter() - t0,
                         tracking_uri=resolve_tracking_uri(plan.tracking.uri) if run_ids
                         else None, experiment=plan.experiment, baseline=plan.baseline,
                         warnings=warnings, judgment_pairs=written["judgment_pairs"])
    if failures:
        message = "sklearn cross-check: " + "; ".join(failures)
        if plan.check.sklearn == "fail":
            raise CheckFailed(message + " (set check.sklearn=warn to only warn)")
        log.warning(message)
    return result


def _load(job: _Job) -> Dataset | ParquetRun:
    """The dataset, loaded and described; every ranker's feature or column checked in it."""
    kind, options = job.plan.dataset.kind, dict(job.plan.dataset.options)
    if _one_pass_of(job, kind):  # the file is hashed during the pass
        options["digest_later"] = True
    with job.phases("load"):
        dataset = load_dataset(kind, **options)
    if isinstance(dataset, ParquetRun):
        log.info("dataset %s (parquet_run): %s, %d rows evaluated in place, digest %s",
                 dataset.name, dataset.path, dataset.rows, f"{dataset.digest[:12]}…"
                 if dataset.digest else "computed during the pass")
    else:
        log.info("dataset %s (%s): %d test queries, %d judgments, digest %s…", dataset.name,
                 kind, dataset.test["qid"].nunique(), len(dataset.qrels), dataset.digest[:12])
    check_rankers_against(job.plan.rankers, dataset)
    return dataset


def _begin(out: Path) -> Path:
    """The output folder, marked incomplete until every result is written."""
    out.mkdir(parents=True, exist_ok=True)
    incomplete = out / INCOMPLETE
    incomplete.write_text(f"This job (pid {os.getpid()}, started "
                          f"{time.strftime('%Y-%m-%d %H:%M:%S')}) has not finished writing its "
                          "results. If it is no longer running, it stopped early: the files "
                          "here are partial; run the job again.\n")
    return incomplete


def _evaluate_rankers(job: _Job, dataset: Dataset | ParquetRun
                      ) -> tuple[dict[str, RankerResult], dict[str, list[Path]],
                                 dict[str, Any]]:
    """Every ranker scored (or read in place), evaluated, explained and checked by the
    plan's engine; returns the results, each ranker's convention-diff files and its run
    (None: read in place)."""
    from harness.progress import progress

    specs = job.plan.rankers
    results: dict[str, RankerResult] = {}
    runs: dict[str, Any] = {}
    explained: dict[str, list[Path]] = {}  # ranker -> its convention-diff files
    with job.plan.engine as engine:
        log.info("engine: %s", engine.describe())
        shared = _one_pass(job, engine, dataset)
        bar = progress(specs, desc="rankers", unit="ranker")
        for i, spec in enumerate(bar, start=1):
            if hasattr(bar, "set_postfix_str"):
                bar.set_postfix_str(spec.name)
            result, files, runs[spec.name] = _evaluate_ranker(job, engine, dataset, spec,
                                                              shared.get(spec.name))
            results[spec.name] = result
            if files is not None:
                explained[spec.name] = files
            sampled = max((ch.sample_size for ch in result.checks), default=0)
            if sampled:
                log.info("ranker %s: sklearn check on a seeded sample of %d of %d queries "
                         "(check.max_queries)", spec.name, sampled, len(result.per_query))
            log.info("[%d/%d] ranker %s: %d variants x %d queries in %.2fs %s", i,
                     len(specs), spec.name, len(job.plan.metrics), len(result.per_query),
                     result.seconds, result.how_scored())
    return results, explained, runs


def _one_pass(job: _Job, engine: Engine, dataset: Dataset | ParquetRun
              ) -> dict[str, tuple[Any, float, Any]]:
    """For a parquet_run streamed with two rankers or more: every ranker's per-query table
    from one pass over the file (each batch read once, every score column evaluated), its
    evaluation seconds and its check's sample; logs the pass's time split. Else empty."""
    specs = job.plan.rankers
    if not isinstance(dataset, ParquetRun) or not _one_pass_of(job, dataset.kind):
        return {}
    t = time.perf_counter()
    # the file's digest and sklearn's side of each check: computed during the pass
    samples = {spec.name: SampleCheck(dataset, spec, job.plan.metrics, job.plan.check)
               for spec in specs} if job.plan.check_on else {}
    with job.phases("evaluate"):
        tables, clock = evaluate_columns_in_place(engine, dataset, list(specs),
                                                  job.plan.metrics, job.plan.evaluate_options,
                                                  samples, [dataset.hash_file])
    dataset.hash_file()  # a no-op: done during the pass
    log.info("dataset digest %s… (sha256 of %s)", dataset.digest[:12], dataset.source)
    seconds = {spec.name: clock.scores[str(spec.options["column"])] for spec in specs}
    side = f" side by side in {clock.workers + 1} processes" if clock.workers else ""
    log.info("one pass over %s for %d rankers x %d variants: %s rows in %.1fs, batches of "
             "%s rows (reading %.1fs; evaluating%s %s)", dataset.path.name, len(specs),
             len(job.plan.metrics), f"{clock.rows:,}", time.perf_counter() - t,
             f"{engine.rows_per_batch(len(job.plan.metrics), len(specs)):,}", clock.read,
             side, ", ".join(f"{name} {s:.1f}s" for name, s in seconds.items()))
    return {name: (tables[name], seconds[name], samples.get(name)) for name in tables}


def _one_pass_of(job: _Job, kind: str) -> bool:
    """Whether the study's rankers read score columns of a parquet_run in one pass."""
    return kind == "parquet_run" and job.plan.engine.kind == "stream" and len(job.plan.rankers) > 1


def _evaluate_ranker(job: _Job, engine: Engine, dataset: Dataset | ParquetRun,
                     spec: RankerSpec, shared: tuple[Any, float, Any] | None = None
                     ) -> tuple[RankerResult, list[Path] | None, Any]:
    """One ranker's result, its convention-diff files (None: nothing explained) and its
    run (None: read in place).
    ``shared``: its per-query table, seconds and check sample from the file's one pass
    (:func:`_one_pass`)."""
    from harness.app.convention_diffs import explain_ranker, write_explanations

    plan, phases, t = job.plan, job.phases, time.perf_counter()
    check = plan.check if plan.check_on else None
    files, judged, run, share, model = None, None, None, None, None
    tags: dict[str, str] = {}
    warnings: list[str] = []
    if isinstance(dataset, ParquetRun):
        with phases("evaluate"):
            per_query, checks = evaluate_in_place(engine, dataset, spec, plan.metrics,
                                                  plan.evaluate_options, check,
                                                  *(shared[::2] if shared else ()))
        t -= 0.0 if shared is None else shared[1]  # its share of the one pass
        key, hit = f"parquet_run:{dataset.digest[:16]}:{spec.options['column']}", None
    else:
        model = job.out / "models" / spec.name if spec.kind in TRAINERS else None
        with phases("train" if model is not None else "score"):
            run, key, hit, tags = score(spec, dataset, plan.cache_dir, model_dir=model)
        warnings = score_warnings(spec, run, dataset, plan.record)
        for text in warnings:
            log.warning("%s", text)
        with phases("evaluate"):
            per_query = engine.evaluate(run, dataset.qrels, plan.metrics,
                                        **plan.evaluate_options)
            judged = judged_per_query(engine, run, dataset.qrels, plan.evaluate_options)
        share = None if judged is None else judged_distribution(judged)["mean"]
        if (note := judged_warning(spec.name, share)) is not None:
            warnings.append(note)
            log.warning("%s", note)
        if plan.explain.pairs:
            with phases("explain"):
                files = write_explanations(
                    explain_ranker(run, dataset.qrels, plan.explain.metric, plan.explain.pairs),
                    job.out / "explain", spec.name)
        with phases("check"):
            checks = (check_against_sklearn(run, dataset.qrels, plan.metrics, per_query,
                                            **sample_options(check, plan.seed))
                      if check is not None else [])
    return (RankerResult(spec, key, hit, per_query, checks, time.perf_counter() - t, warnings,
                         share, judged, tags, model), files, run)


def score_warnings(spec: RankerSpec, run: Any, dataset: Dataset,
                   record: Mapping[str, Any] | None = None) -> list[str]:
    """What a reader of the table must know about a ranker's scores: a ranker named
    ``feature_<x>`` that scores another feature (``dataset.default_feature`` on a dataset
    without ``<x>``), and scores that are constant within every query, so that each value
    is decided by the tie rule alone."""
    out = []
    feature = spec.options.get("feature") if spec.kind == "feature" else None
    named = spec.name.removeprefix("feature_") if spec.name.startswith("feature_") else None
    if feature is not None and named and str(feature) != named:
        default = ((record or {}).get("dataset") or {}).get("default_feature")
        why = (f"its feature is dataset.default_feature, {feature} on dataset "
               f"{dataset.name!r}" if default is not None and str(default) == str(feature)
               else f"ranker.{spec.name}.feature={feature}")
        missing = "" if named in map(str, dataset.features) else \
            f"; the dataset has no feature {named}"
        out.append(f"ranker {spec.name} scores feature {feature}, not {named} as its name "
                   f"says ({why}{missing}); set ranker.{spec.name}.feature to choose")
    if len(run):
        spread = run.groupby("qid", sort=False)["score"].agg(["min", "max", "size"])
        spread = spread[spread["size"] > 1]
        if len(spread) and bool((spread["min"] == spread["max"]).all()):
            what = f"feature {feature}" if feature is not None else "its score"
            one = spread["min"].iloc[0]
            value = (f", {one:g} on every document" if (spread["min"] == one).all() else "")
            out.append(f"ranker {spec.name}: {what} is constant within each of its "
                       f"{len(spread)} queries{value}: every document ties, so its values "
                       "are decided by the tie rule (metric.ties) alone, not by the ranker")
    return out


def _judgments(job: _Job, dataset: Dataset | ParquetRun, results: dict[str, RankerResult],
               runs: dict[str, Any]) -> Any:
    """The study's judgment intervals (:mod:`harness.app.judgment_study`), or None: off, or
    not computed (a parquet_run read in place, no qrels), said in the log."""
    from harness.app.judgment_study import study_judgments
    from harness.reporting.figures import headline_variants

    plan = job.plan
    if plan.judgments.interval == "off":
        log.info("judgment intervals: off (judgments.interval)")
        return None
    if isinstance(dataset, ParquetRun) or dataset.qrels is None or any(
            r is None for r in runs.values()):
        log.info("judgment intervals: not computed (%s)", "a parquet_run is evaluated in "
                 "place: its runs are never held whole" if isinstance(dataset, ParquetRun)
                 else "no qrels")
        return None
    with job.phases("judgments"):
        return study_judgments(
            plan.judgments.interval, int(plan.judgments.max_labelings), plan.metrics, runs,
            dataset.qrels, {n: r.per_query for n, r in results.items()},
            {n: r.judged for n, r in results.items()}, plan.evaluate_options,
            headline=[m.display_name for m in headline_variants(plan.metrics)],
            baseline=plan.baseline)


def _headline_intervals(job: _Job, judgments: Any, name: str
                        ) -> dict[str, tuple[float, float, float]]:
    """The ranker's mean low and high and its share of exact bounds per headline variant,
    when some interval is wide."""
    from harness.reporting.figures import headline_variants

    if judgments is None or not judgments.wide():
        return {}
    means = judgments.means(name)
    return {m.display_name: (float(means.at[m.display_name, "low"]),
                             float(means.at[m.display_name, "high"]),
                             float(means.at[m.display_name, "exact"]))
            for m in headline_variants(job.plan.metrics) if m.display_name in means.index}


def _write(job: _Job, dataset: Dataset | ParquetRun, results: dict[str, RankerResult],
           explained: dict[str, list[Path]], judgments: Any = None) -> dict[str, Any]:
    """Every result file and the figures in the output folder; returns them by role."""
    from harness.app import write
    from harness.app.judgment_notes import pair_line
    from harness.app.judgment_study import write_judgments

    try:
        job.out.mkdir(parents=True, exist_ok=True)
        with job.phases("summaries"):
            written = write.write_outputs(job.plan, dataset, results, job.out)
            if judgments is not None:
                written |= write_judgments(judgments, {n: r.per_query for n, r in
                                                       results.items()}, job.out)
        with job.phases("figures"):
            figures = write.write_figures(job.plan, results, job.out)
    except OSError as exc:  # a full disk, a folder made read-only: one line, where and what
        kept = sum(1 for p in job.out.rglob("*") if p.is_file()) if job.out.is_dir() else 0
        raise OutputError(
            f"writing the results to {job.out} failed: {exc.strerror or exc} "
            f"({exc.filename or 'a result file'}); {kept} file(s) were written before it, "
            "the folder is marked INCOMPLETE and nothing was sent to MLflow: free space or "
            "choose a writable hydra.run.dir, then run the job again") from None
    if figures is not None:
        written["figures"] = figures
    written["explain"] = explained
    wide = judgments is not None and judgments.wide()
    written["judgment_pairs"] = judgments.pairs if wide else []
    for pair in written["judgment_pairs"]:
        log.info("judgment intervals: %s", pair_line(pair))
    return written


def _log(job: _Job, dataset: Dataset | ParquetRun, results: dict[str, RankerResult],
         written: dict[str, Any], notes: Mapping[str, RankerNotes], *, failed: bool,
         done: Path) -> dict[str, str]:
    """The study's MLflow runs (none when tracking is off); returns their ids by key."""
    from harness.app import log as log_stage

    if not job.plan.tracking.enabled:
        return {}
    with job.phases("logging"):
        return log_stage.log_study(job.plan, dataset, results, written, job.out, notes=notes,
                                   parent_run_id=job.parent_run_id, job_label=job.job_label,
                                   failed=failed, started=job.started, title=job.title,
                                   worker=job.worker, on_saved=done)
