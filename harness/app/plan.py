"""The plan stage of a study: the composed config checked once, before any data is read,
and turned into one typed :class:`StudyPlan` (:func:`build_plan`) that every later stage
reads; no stage reads the raw config, and every default lives in ``conf/`` and the schema
dataclasses of :mod:`harness.app.config`."""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, MissingMandatoryValue, OmegaConfBaseException

from harness.app.config import (
    CheckConfig,
    Config,
    JudgmentsConfig,
    MetricGrid,
    RankerConfig,
    TrackingConfig,
)
from harness.app.config_values import check_loader_options
from harness.app.convention_diffs import ExplainPlan, explain_plan
from harness.datasets import DATASETS, Dataset, ParquetRun
from harness.datasets.dataset import PATH_OPTIONS
from harness.engines import Engine
from harness.errors import InputError, MetricDefinitionError
from harness.metrics import Metric, parse_metric
from harness.paths import project_path
from harness.rankers import ESTIMATORS, RANKERS, RankerSpec, check_options
from harness.tracking import resolve_tracking_uri

__all__ = ["StudyPlan", "DatasetPlan", "build_plan", "validate", "build_metrics",
           "check_rankers_against", "plain_config", "DATASET_PATH_OPTIONS"]

_GRID_AXES = ("name", "gain", "discount", "k", "ties", "ideal", "unjudged",
              "unjudged_grade")
_NAME_OK = re.compile(r"^[A-Za-z0-9_.-]+$")
DATASET_PATH_OPTIONS = PATH_OPTIONS  # dataset options that name files


@dataclass(frozen=True)
class DatasetPlan:
    """The dataset to load: its kind and the loader's options (files made absolute;
    ``default_feature`` is the feature ranker's, not the loader's)."""

    kind: str
    options: dict[str, Any]


@dataclass(frozen=True)
class StudyPlan:
    """The study as every stage after the plan reads it, built once by :func:`build_plan`.

    ``record`` is the config as given (dataset and ranker files made absolute): what is
    written to ``config_resolved.yaml`` and logged as MLflow params, never read for a value.
    """

    study: str
    seed: int
    cache_dir: Path
    dataset: DatasetPlan
    rankers: list[RankerSpec]
    metrics: list[Metric]
    metric: MetricGrid  # the grid the metrics came from; nan_scores and missing
    engine: Engine  # built, not started (``with plan.engine as engine``)
    check: CheckConfig
    figures: str  # headline | all | off
    tracking: TrackingConfig
    explain: ExplainPlan
    record: dict[str, Any]
    baseline: str | None = None  # the ranker the closing table's differences are against
    judgments: JudgmentsConfig = dataclasses.field(default_factory=JudgmentsConfig)

    @property
    def experiment(self) -> str:
        """The MLflow experiment: ``tracking.experiment``, else the study's name."""
        return self.tracking.experiment or self.study

    @property
    def evaluate_options(self) -> dict[str, Any]:
        """What the engine's evaluate takes besides the metrics."""
        return {"nan_scores": self.metric.nan_scores, "missing": self.metric.missing}

    @property
    def check_on(self) -> bool:
        return self.check.sklearn != "off"


def plain_config(cfg: DictConfig | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(cfg, DictConfig):
        try:
            # mypy: to_container's union of results; a DictConfig gives a dict
            return OmegaConf.to_container(cfg, resolve=True,  # type: ignore[return-value]
                                          throw_on_missing=True)
        except MissingMandatoryValue as exc:
            raise _required(exc) from None
    return dict(cfg)


def _required(exc: MissingMandatoryValue) -> InputError:
    key = getattr(exc, "full_key", "") or "?"
    return InputError(f"config value {key} is required and not set; set it with {key}=...",
                      key=str(key))


def _typed(schema: type, values: Mapping[str, Any], where: str) -> Any:
    """``values`` merged over the schema dataclass's defaults, as an instance of it."""
    try:
        merged = OmegaConf.merge(OmegaConf.structured(schema), dict(values))
        return OmegaConf.to_object(merged)
    except MissingMandatoryValue as exc:
        raise _required(exc) from None
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", "") or ""
        full = ".".join(k for k in (where, str(key)) if k)
        raise InputError(f"{where or 'config'}: {str(exc).splitlines()[0]}"
                         + _valid_keys(schema, str(key)) if isinstance(exc, ConfigKeyError)
                         else f"{where or 'config'}: {str(exc).splitlines()[0]}",
                         key=full or None) from None


def _valid_keys(schema: type, key: str) -> str:
    """For an unknown ``key`` (dotted, under ``schema``): the closest valid key and the
    valid keys at its level, read from the schema dataclasses; '' where they are not
    dataclasses (a free-form mapping such as ``ranker`` or ``dataset``)."""
    *parents, leaf = key.split(".") if key else [""]
    node: Any = schema  # a dataclass, then a field's type hint (None: no such field)
    for part in parents:
        if not dataclasses.is_dataclass(node):
            return ""
        node = typing.get_type_hints(node).get(part)
    if not (isinstance(node, type) and dataclasses.is_dataclass(node)):
        return ""
    names = [f.name for f in dataclasses.fields(node)]
    close = difflib.get_close_matches(leaf, names, n=1)
    return ((f" (did you mean {close[0]!r}?)" if close else "")
            + f"; valid keys: {', '.join(names)}")


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def build_metrics(grid: MetricGrid | Mapping[str, Any]) -> list[Metric]:
    """Every variant of a metric grid (the product of its axes) plus its ``extra`` names."""
    checked: MetricGrid = grid if isinstance(grid, MetricGrid) else _typed(MetricGrid, grid,
                                                                          "metric")
    axes = {a: _as_list(getattr(checked, a)) for a in _GRID_AXES}
    out: list[Metric] = []
    for combo in itertools.product(*axes.values()):
        opts = dict(zip(_GRID_AXES, combo))
        try:
            m = Metric(opts.pop("name"), **opts, empty=checked.empty,
                       max_label=checked.max_label)
        except MetricDefinitionError as exc:
            raise MetricDefinitionError(f"metric grid {dict(zip(_GRID_AXES, combo))}: {exc}"
                                        ) from None
        if m not in out:
            out.append(m)
    for text in checked.extra:
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
    from harness.app.path_names import path_name

    if not rankers:
        raise InputError("no ranker configured", key="ranker")
    specs = []
    for name, options in rankers.items():
        options = _typed_ranker(str(name), options)
        if not _NAME_OK.match(str(name)) or str(name) in (".", ".."):
            raise InputError(f"ranker name {name!r} may hold only letters, digits, _ . - "
                             "(and is not . or ..): it names files", key=f"ranker.{name}")
        path_name(f"ranker.{name}", name)  # a name too long for a file
        opts = {k: v for k, v in dict(options).items() if k != "kind" and v not in (None, {})}
        kind = options["kind"]
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
        if kind == "sklearn" and opts.get("estimator") not in (None, *ESTIMATORS):
            raise InputError(f"ranker {name!r}: unknown estimator {opts['estimator']!r}; known: "
                             f"{', '.join(ESTIMATORS)}", key=f"ranker.{name}.estimator")
        if "path" in opts:
            opts["path"] = str(project_path(opts["path"]))
        specs.append(check_options(RankerSpec(name=str(name), kind=kind, options=opts)))
    return specs


def _typed_ranker(name: str, options: Any) -> dict[str, Any]:
    """Check one ranker entry against the RankerConfig schema (unknown keys, types)."""
    if not isinstance(options, Mapping):
        raise InputError(f"ranker {name!r} must be a mapping of options, got {options!r}",
                         key=f"ranker.{name}")
    try:
        merged = OmegaConf.merge(OmegaConf.structured(RankerConfig), dict(options))
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", "") or ""
        raise InputError(f"ranker {name!r}: {str(exc).splitlines()[0]}",
                         key=f"ranker.{name}{'.' + key if key else ''}") from None
    return OmegaConf.to_container(merged)  # type: ignore[return-value]  # a DictConfig's: a dict


def _check_seeds(typed: Any, specs: list[RankerSpec]) -> None:
    """Seeds feed numpy's generators, which take integers >= 0 only."""
    dataset = typed.dataset
    seeds = [("seed", typed.seed), ("dataset.seed", dataset.get("seed", 0)
                                    if isinstance(dataset, Mapping) else 0)]
    seeds += [(f"ranker.{s.name}.seed", s.options["seed"]) for s in specs
              if s.options.get("seed") is not None]
    for key, value in seeds:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InputError(f"{key} must be an integer >= 0 (a random generator's seed); "
                             f"got {value!r}", key=key)


def build_plan(cfg: DictConfig | Mapping[str, Any], *, store: str | None = None
               ) -> StudyPlan:
    """Check everything that can be checked without data; return the study's plan.

    ``mlflow_model`` rankers get the option ``tracking_uri`` (unless set): the configured
    ``tracking.uri``, else ``store``, else :func:`~harness.tracking.resolve_tracking_uri`,
    so ``models:/`` URIs resolve against the study's own store.
    """
    from harness.app.path_names import path_name

    record = plain_config(cfg)
    typed: Config = _typed(Config, record, "")
    path_name("study", typed.study)
    if typed.tracking.experiment is not None:
        path_name("tracking.experiment", typed.tracking.experiment)
    metrics = build_metrics(typed.metric)
    specs = _ranker_specs(typed.ranker)
    if any(s.kind == "mlflow_model" for s in specs):
        uri = typed.tracking.uri or store or resolve_tracking_uri(None)
        specs = [RankerSpec(s.name, s.kind, {**s.options, "tracking_uri": s.options.get(
            "tracking_uri") or uri}) if s.kind == "mlflow_model" else s for s in specs]
    _check_seeds(typed, specs)
    dataset = _dataset_plan(typed.dataset, specs)
    engine = Engine.from_config(dataclasses.asdict(typed.engine))
    _check_check(typed.check)
    from harness.reporting.summary import check_resamples  # harness.reporting imports scipy

    check_resamples(typed.tracking.bootstrap_resamples)
    from harness.reporting.figures import figure_mode  # harness.reporting imports scipy

    figures = figure_mode(typed.tracking.figures)
    for key, choices in (("nan_scores", ("error", "last")), ("missing", ("exclude", "zero"))):
        value = getattr(typed.metric, key)
        if value not in choices:
            raise InputError(f"metric.{key} must be one of {choices}; got {value!r}",
                             key=f"metric.{key}")
    explain = explain_plan(typed.explain.metric, typed.explain.pairs)
    names = [s.name for s in specs]
    if typed.baseline is not None and typed.baseline not in names:
        close = difflib.get_close_matches(str(typed.baseline), names, n=1)
        raise InputError(f"baseline {typed.baseline!r} is not a ranker of this study"
                         + (f" (did you mean {close[0]!r}?)" if close else "")
                         + f"; rankers: {', '.join(names)}", key="baseline")
    return StudyPlan(study=typed.study, seed=typed.seed, cache_dir=project_path(typed.cache_dir),
                     dataset=dataset, rankers=specs, metrics=metrics, metric=typed.metric,
                     engine=engine, check=typed.check, figures=figures,
                     tracking=typed.tracking, explain=explain,
                     record=_record(record, dataset, specs), baseline=typed.baseline,
                     judgments=_judgments(typed.judgments))


def validate(cfg: DictConfig | Mapping[str, Any], *, store: str | None = None
             ) -> tuple[list[Metric], list[RankerSpec], dict[str, Any]]:
    """:func:`build_plan`'s metric variants, ranker specs and dataset options (``kind``
    included), for callers that need only those."""
    plan = build_plan(cfg, store=store)
    return plan.metrics, plan.rankers, {"kind": plan.dataset.kind, **plan.dataset.options}


def _dataset_plan(options: Mapping[str, Any], specs: list[RankerSpec]) -> DatasetPlan:
    ds = dict(options)
    ds.pop("default_feature", None)  # read by the feature ranker's config, not the loader
    kind = ds.pop("kind", None)
    if kind not in DATASETS:
        raise InputError(f"unknown dataset kind {kind!r}; known: {', '.join(DATASETS)}",
                         key="dataset.kind")
    check_loader_options(kind, ds, DATASETS[kind])
    for key in DATASET_PATH_OPTIONS:
        if ds.get(key):
            ds[key] = str(project_path(ds[key]))
    if kind == "parquet_run":
        for spec in specs:
            if spec.kind != "column":
                raise InputError(f"ranker {spec.name!r} (kind {spec.kind}): a parquet_run "
                                 "dataset is evaluated where it lies, so its rankers are "
                                 "score columns of the file (kind column, e.g. "
                                 "ranker=scored_columns)", key=f"ranker.{spec.name}.kind")
    return DatasetPlan(kind, ds)


def _check_check(check: CheckConfig) -> None:
    if check.sklearn not in ("fail", "warn", "off"):
        raise InputError(f"check.sklearn must be fail, warn or off; got {check.sklearn!r}",
                         key="check.sklearn")
    for key in ("max_queries", "max_tied_queries"):
        bound = getattr(check, key)
        if bound is not None and (isinstance(bound, bool) or int(bound) < 1):
            raise InputError(f"check.{key} must be an int >= 1 or null (no bound); "
                             f"got {bound!r}", key=f"check.{key}")


#: What ``judgments.interval`` takes (YAML's and Hydra's booleans read as on and off).
INTERVAL_MODES = ("auto", "on", "off")


def _judgments(judgments: JudgmentsConfig) -> JudgmentsConfig:
    """``judgments`` checked, its interval mode one of :data:`INTERVAL_MODES`."""
    mode = judgments.interval
    mode = {True: "on", False: "off"}.get(mode, mode) if isinstance(mode, bool) else mode
    if not isinstance(mode, str) or mode.strip().lower() not in INTERVAL_MODES:
        raise InputError(f"judgments.interval must be one of {', '.join(INTERVAL_MODES)}; "
                         f"got {judgments.interval!r}", key="judgments.interval")
    budget = judgments.max_labelings
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise InputError(f"judgments.max_labelings must be an int >= 1 (labelings tried per "
                         f"query); got {budget!r}", key="judgments.max_labelings")
    return JudgmentsConfig(interval=mode.strip().lower(), max_labelings=budget)


def _record(config: dict[str, Any], dataset: DatasetPlan, specs: list[RankerSpec]
            ) -> dict[str, Any]:
    """The config as given, with the absolute paths of the files that were read (a copy:
    the caller's mapping is left as it was)."""
    out = dict(config)
    out["dataset"] = dict(out["dataset"])
    for key in DATASET_PATH_OPTIONS:
        if dataset.options.get(key):
            out["dataset"][key] = dataset.options[key]
    out["ranker"] = dict(out["ranker"])
    for spec in specs:
        if "path" in spec.options:
            out["ranker"][spec.name] = {**out["ranker"][spec.name], "path": spec.options["path"]}
    return out


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
                where = (dataset.path.name if isinstance(dataset, ParquetRun)
                         else f"dataset {dataset.name!r}")
                raise InputError(f"ranker {spec.name!r}: no {what} {name!r} in {where}; "
                                 f"{'score columns' if in_place else 'available'}: "
                                 f"{shown or 'none'}", key=f"ranker.{spec.name}.{key}")
