"""Run a study: dataset x rankers x metric variants, checked, written to disk, then logged.

:func:`run_study` takes a plain config (a DictConfig or a dict of the same shape), so it is
testable without Hydra's runtime. Order of work:

1. :func:`validate` builds every metric, ranker spec and dataset option, failing before any
   data is read;
2. each ranker scores the dataset (from the score cache when possible) and is evaluated on
   every variant; the sklearn cross-check runs on the variants sklearn can express;
3. per-query tables, summaries, the check table and figures are written to the output dir;
4. a log plan is saved to the pending folder and sent to MLflow; a failure to reach the
   store leaves the plan for ``python -m harness.sync``.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from harness.datasets.base import PATH_OPTIONS
from harness.datasets import DATASETS, Dataset, ParquetRun, load_dataset
from harness.engines import Engine
from harness.errors import HarnessError, InputError, MetricDefinitionError
from harness.metrics import Metric, parse_metric
from harness.engines.stream import iter_query_batches
from harness.metrics.sklearn_check import CheckResult, check_against_sklearn
from harness.paths import project_path
from harness.rankers import ESTIMATORS, RANKERS, RankerSpec, score
from harness.tracking import resolve_tracking_uri

__all__ = ["StudyResult", "CheckFailed", "validate", "check_rankers_against", "build_metrics",
           "run_study",
           "DATASET_PATH_OPTIONS"]

log = logging.getLogger("harness")

_GRID_AXES = ("name", "gain", "discount", "k", "ties", "ideal")
_NAME_OK = re.compile(r"^[A-Za-z0-9_.-]+$")
DATASET_PATH_OPTIONS = PATH_OPTIONS  # dataset options that name files
#: A file in a job's output folder from its start until every result is written: a folder
#: that still holds it after the job ended belongs to a job that was killed or failed.
INCOMPLETE = "INCOMPLETE"


class CheckFailed(HarnessError):
    """The sklearn cross-check found a difference above the tolerance."""


@dataclass
class RankerResult:
    spec: RankerSpec
    cache_key: str
    cache_hit: bool | None  # None: nothing to cache (scores read in place)
    per_query: pd.DataFrame
    checks: list[CheckResult]
    seconds: float


@dataclass
class StudyResult:
    """What a study produced; ``output_dir`` holds it on disk whatever MLflow did."""

    dataset: Dataset
    metrics: list[Metric]
    rankers: dict[str, RankerResult]
    output_dir: Path
    run_ids: dict[str, str]
    check_failures: list[str]
    summaries: dict[str, pd.DataFrame] = field(default_factory=dict)
    seconds: float = 0.0
    tracking_uri: str | None = None
    experiment: str | None = None

    def closing_summary(self, study: str) -> str:
        """What to print when the job ends (see :func:`harness.app.notes.closing_summary`)."""
        from harness.app.notes import closing_summary

        n_queries = max((len(r.per_query) for r in self.rankers.values()), default=0)
        return closing_summary(study=study, seconds=self.seconds, summaries=self.summaries,
                               metrics=self.metrics, n_queries=n_queries,
                               output_dir=self.output_dir, run_ids=self.run_ids,
                               tracking_uri=self.tracking_uri, experiment=self.experiment)


def _plain(cfg: DictConfig | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(cfg, DictConfig):
        try:
            return OmegaConf.to_container(cfg, resolve=True,  # type: ignore[return-value]
                                          throw_on_missing=True)
        except MissingMandatoryValue as exc:
            key = getattr(exc, "full_key", "") or "?"
            raise InputError(f"config value {key} is required and not set; set it with "
                             f"{key}=...", key=str(key)) from None
    return dict(cfg)


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def build_metrics(grid: Mapping[str, Any]) -> list[Metric]:
    """Every variant of a metric grid (the product of its axes) plus its ``extra`` names."""
    axes = {a: _as_list(grid.get(a)) for a in _GRID_AXES}
    common = {"empty": grid.get("empty", "zero"), "max_label": grid.get("max_label")}
    out: list[Metric] = []
    for combo in itertools.product(*axes.values()):
        opts = dict(zip(_GRID_AXES, combo))
        try:
            m = Metric(opts.pop("name"), **opts, **common)
        except MetricDefinitionError as exc:
            raise MetricDefinitionError(f"metric grid {dict(zip(_GRID_AXES, combo))}: {exc}"
                                        ) from None
        if m not in out:
            out.append(m)
    for text in grid.get("extra") or []:
        try:
            m = parse_metric(text)
        except MetricDefinitionError as exc:
            raise MetricDefinitionError(f"metric.extra {text!r}: {exc}") from None
        if m not in out:
            out.append(m)
    if not out:
        raise MetricDefinitionError("the metric grid is empty")
    return out


def _ranker_specs(rankers: Mapping[str, Any]) -> list[RankerSpec]:
    if not rankers:
        raise InputError("no ranker configured", key="ranker")
    specs = []
    for name, options in rankers.items():
        options = _typed_ranker(str(name), options)
        if not _NAME_OK.match(str(name)) or str(name) in (".", ".."):
            raise InputError(f"ranker name {name!r} may hold only letters, digits, _ . - "
                             "(and is not . or ..): it names files", key=f"ranker.{name}")
        opts = {k: v for k, v in dict(options).items() if k != "kind" and v not in (None, {})}
        kind = options.get("kind")
        if kind not in RANKERS:
            raise InputError(f"ranker {name!r}: unknown kind {kind!r}; known: "
                             f"{', '.join(RANKERS)}", key=f"ranker.{name}.kind")
        for required in {"feature": ["feature"], "column": ["column"], "run_file": ["path"],
                         "mlflow_model": ["uri"]}.get(kind, []):
            if opts.get(required) is None:
                hint = (" (or set dataset.default_feature, which it defaults to)"
                        if required == "feature" else "")
                raise InputError(f"ranker {name!r} (kind {kind}) needs option {required!r}"
                                 + hint, key=f"ranker.{name}.{required}")
        if opts.get("sigma") is not None and float(opts["sigma"]) < 0:
            raise InputError(f"ranker {name!r}: sigma must be >= 0, got {opts['sigma']}",
                             key=f"ranker.{name}.sigma")
        if opts.get("threads") is not None and int(opts["threads"]) < 1:
            raise InputError(f"ranker {name!r}: threads must be >= 1 (or null for all cores), "
                             f"got {opts['threads']}", key=f"ranker.{name}.threads")
        if kind == "sklearn" and opts.get("estimator", "hist_gradient_boosting") not in ESTIMATORS:
            raise InputError(f"ranker {name!r}: unknown estimator {opts['estimator']!r}; known: "
                             f"{', '.join(ESTIMATORS)}", key=f"ranker.{name}.estimator")
        if "path" in opts:
            opts["path"] = str(project_path(opts["path"]))
        specs.append(RankerSpec(name=str(name), kind=kind, options=opts))
    return specs


def _typed_ranker(name: str, options: Any) -> dict[str, Any]:
    """Check one ranker entry against the RankerConfig schema (unknown keys, types)."""
    from harness.app.config import RankerConfig

    if not isinstance(options, Mapping):
        raise InputError(f"ranker {name!r} must be a mapping of options, got {options!r}",
                         key=f"ranker.{name}")
    try:
        merged = OmegaConf.merge(OmegaConf.structured(RankerConfig), dict(options))
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", "") or ""
        raise InputError(f"ranker {name!r}: {str(exc).splitlines()[0]}",
                         key=f"ranker.{name}{'.' + key if key else ''}") from None
    return OmegaConf.to_container(merged)  # type: ignore[return-value]


def validate(cfg: DictConfig | Mapping[str, Any], *, store: str | None = None
             ) -> tuple[list[Metric], list[RankerSpec], dict[str, Any]]:
    """Check everything that can be checked without data; return the parsed pieces.

    ``mlflow_model`` rankers get the option ``tracking_uri`` (unless set): the configured
    ``tracking.uri``, else ``store``, else :func:`~harness.tracking.resolve_tracking_uri`,
    so ``models:/`` URIs resolve against the study's own store.
    """
    from harness.app.names import path_name

    c = _plain(cfg)
    path_name("study", c.get("study", "default"))
    if (c.get("tracking") or {}).get("experiment") is not None:
        path_name("tracking.experiment", c["tracking"]["experiment"])
    metrics = build_metrics(c["metric"])
    specs = _ranker_specs(c["ranker"])
    if any(s.kind == "mlflow_model" for s in specs):
        uri = (c.get("tracking") or {}).get("uri") or store or resolve_tracking_uri(None)
        specs = [RankerSpec(s.name, s.kind, {**s.options, "tracking_uri": s.options.get(
            "tracking_uri") or uri}) if s.kind == "mlflow_model" else s for s in specs]
    ds = dict(c["dataset"])
    ds.pop("default_feature", None)  # read by the feature ranker's config, not the loader
    if ds.get("kind") not in DATASETS:
        raise InputError(f"unknown dataset kind {ds.get('kind')!r}; known: "
                         f"{', '.join(DATASETS)}", key="dataset.kind")
    for key in DATASET_PATH_OPTIONS:
        if ds.get(key):
            ds[key] = str(project_path(ds[key]))
    if ds.get("kind") == "parquet_run":
        for spec in specs:
            if spec.kind != "column":
                raise InputError(f"ranker {spec.name!r} (kind {spec.kind}): a parquet_run dataset is "
                                 f"evaluated where it lies, so its rankers are score columns "
                                 f"of the file (kind column, e.g. ranker=scored_columns)",
                                 key=f"ranker.{spec.name}.kind")
    Engine.from_config(c.get("engine"))
    check = c.get("check", {})
    if check.get("sklearn", "fail") not in ("fail", "warn", "off"):
        raise InputError(f"check.sklearn must be fail, warn or off; got {check['sklearn']!r}",
                         key="check.sklearn")
    for key, default in (("max_queries", 2_000), ("max_tied_queries", 50)):
        bound = check.get(key, default)
        if bound is not None and (isinstance(bound, bool) or int(bound) < 1):
            raise InputError(f"check.{key} must be an int >= 1 or null (no bound); "
                             f"got {bound!r}", key=f"check.{key}")
    from harness.reporting.figures import figure_mode  # harness.reporting imports scipy

    figure_mode((c.get("tracking") or {}).get("figures", "headline"))
    for key, choices in (("nan_scores", ("error", "last")), ("missing", ("exclude", "zero"))):
        value = c["metric"].get(key, choices[0])
        if value not in choices:
            raise InputError(f"metric.{key} must be one of {choices}; got {value!r}",
                             key=f"metric.{key}")
    return metrics, specs, ds


def check_rankers_against(specs: list[RankerSpec], dataset: Dataset | ParquetRun) -> None:
    """Check every ranker's ``feature``, ``column`` and ``features`` against the loaded
    dataset, so a missing name fails before any ranker scores.

    Raises
    ------
    InputError
        Naming the ranker's key, the missing name and a few of the available ones.
    """
    in_place = isinstance(dataset, ParquetRun)
    features = tuple(map(str, dataset.features))
    columns = features if in_place else tuple(map(str, dataset.docs.columns))
    for spec in specs:
        wanted = [(key, spec.options.get(key), pool) for key, pool in
                  (("feature", features), ("column", columns))
                  if spec.kind in ("feature", "column") and spec.options.get(key) is not None]
        if spec.kind in ("sklearn", "mlflow_model") and spec.options.get("features"):
            wanted += [("features", f, features) for f in spec.options["features"]]
        for key, name, pool in wanted:
            if str(name) not in pool:
                shown = ", ".join(pool[:8]) + (f", … ({len(pool)} in all)"
                                                if len(pool) > 8 else "")
                what = "numeric column" if in_place or key == "column" else "feature"
                where = dataset.path.name if in_place else f"dataset {dataset.name!r}"
                raise InputError(f"ranker {spec.name!r}: no {what} {name!r} in {where}; "
                                 f"{'score columns' if in_place else 'available'}: "
                                 f"{shown or 'none'}", key=f"ranker.{spec.name}.{key}")


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
    from harness.progress import Phases, progress

    started = time.time()
    phases = Phases()
    with phases("setup"):  # the checks, then scipy and the rest of the output side
        metrics, specs, ds_options = validate(cfg)
        from harness.app.records import log_study, write_figures, write_outputs
    c = _plain(cfg)
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
    from harness.explain.study import explain_pairs, explain_ranker, write_explanations

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
                        **_sample_options(c.get("check", {}), c.get("seed", 0)))
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
    failures = _check_failures(results, float(c.get("check", {}).get("tolerance", 1e-9)))
    mode = c.get("check", {}).get("sklearn", "fail")
    output_dir.mkdir(parents=True, exist_ok=True)
    with phases("summaries"):
        written = write_outputs(c, dataset, metrics, results, output_dir)
    with phases("figures"):
        figures = write_figures(c, metrics, results, output_dir)
    if figures is not None:
        written["figures"] = figures
    written["explain"] = explained
    incomplete.unlink(missing_ok=True)
    log.info("results written to %s", output_dir)
    run_ids: dict[str, str] = {}
    if c.get("tracking", {}).get("enabled", True):
        with phases("logging"):
            run_ids = log_study(c, dataset, metrics, results, written, output_dir,
                                parent_run_id=parent_run_id, job_label=job_label,
                                failed=bool(failures) and mode == "fail", started=started,
                                title=title)
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


def evaluate_in_place(engine: Engine, dataset: ParquetRun, spec: RankerSpec,
                       metrics: list[Metric], options: Mapping[str, Any],
                       check: Mapping[str, Any] | None
                       ) -> tuple[pd.DataFrame, list[CheckResult]]:
    """Evaluate one score column of a parquet_run file with the engine; the sklearn check
    runs on the whole queries of its first ``check.sample_rows`` rows."""
    column = str(spec.options["column"])
    if column not in dataset.features:
        raise InputError(f"ranker {spec.name!r}: no numeric column {column!r} in "
                         f"{dataset.path.name}; score columns: {', '.join(dataset.features)}",
                         key=f"ranker.{spec.name}.column")
    names = dataset.names(column)
    qrels = None if dataset.labels_in_file else dataset.qrels
    per_query = engine.evaluate_file(dataset.path, qrels, metrics, names, **options)
    if check is None:
        return per_query, []
    sample = next(iter_query_batches(dataset.path, batch_rows=int(check.get(
        "sample_rows", 200_000)), columns={f: r for r, f in names.items()}))
    judged = per_query.index.intersection(pd.unique(sample["qid"]))
    return per_query, check_against_sklearn(sample.reset_index(drop=True), qrels, metrics,
                                            per_query.loc[judged], **_sample_options(check, 0))


def _sample_options(check: Mapping[str, Any], seed: Any) -> dict[str, Any]:
    """``check.max_queries`` and the study seed, as :func:`check_against_sklearn` takes them."""
    return {"max_queries": check.get("max_queries", 2_000),
            "max_tied_queries": check.get("max_tied_queries", 50), "seed": int(seed or 0)}


def _check_failures(results: Mapping[str, RankerResult], tolerance: float) -> list[str]:
    out = []
    for name, r in results.items():
        for c in r.checks:
            if c.failed(tolerance):
                out.append(f"ranker {name}, variant {c.variant}: |ours - sklearn| = "
                           f"{c.max_abs_diff:.3g} > {tolerance:g} at qid {c.worst_qid!r}")
    return out


def check_table(results: Mapping[str, RankerResult]) -> pd.DataFrame:
    """One row per (ranker, variant) of the sklearn cross-check."""
    rows = [{"ranker": name, "variant": c.variant, "status": c.status, "reason": c.reason,
             "n_checked": c.n_checked, "n_not_checked": c.n_not_checked,
             "max_abs_diff": c.max_abs_diff, "worst_qid": None if c.worst_qid is None
             else str(c.worst_qid), "sample_size": c.sample_size, "note": c.note}
            for name, r in results.items() for c in r.checks]
    return pd.DataFrame(rows, columns=["ranker", "variant", "status", "reason", "n_checked",
                                       "n_not_checked", "max_abs_diff", "worst_qid",
                                       "sample_size", "note"])


def metric_key_map(metrics: list[Metric]) -> dict[str, str]:
    """MLflow key -> display name (logged as an artifact)."""
    return {m.key: m.display_name for m in metrics}


def dump_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
    return path
