"""Structured configs: the schema every YAML under conf/ is validated against.

Registered in Hydra's ConfigStore under the group ``schema/`` (``schema/dataset/letor``,
``schema/metric``, ...), which the YAML files extend with ``- /schema/<group>@_here_`` in
their defaults lists; so the schemas are never offered as options (``dataset=base_letor``
fails to compose), and a misspelt key or a value of the wrong type fails at compose time.
Values with a range or a set of choices (k >= 1, ties in {...}) are checked by
:func:`harness.app.plan.build_plan` before any data is read; the dataclasses here are the
one home of every default: the plan's sections are instances of them (a plain-dict config
that leaves a key out gets the default given here).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from harness.app.path_names import hydra_dir_name
from harness.metrics.unjudged import MAX_LABELINGS
from harness.paths import ARTIFACT_ROOT, PENDING_DIR, PROJECT_ROOT, shared_data_dir
from harness.tracking.store import REQUEST_RETRIES, REQUEST_TIMEOUT_S

__all__ = ["Config", "register_configs", "PROJECT_ROOT"]


@dataclass
class SyntheticDataset:
    kind: str = "synthetic"
    name: str = "synthetic"
    n_queries: int = 400
    n_train_queries: int = 400
    min_docs: int = 10
    max_docs: int = 60
    label_probs: list[float] = field(default_factory=lambda: [0.55, 0.25, 0.12, 0.06, 0.02])
    # per feature: a slope (signal x label) or one mean per grade
    signal: list[Any] = field(default_factory=lambda: [1.5, 0.8, 0.4, 0.0])
    round_features: int | None = 1
    seed: int = 0
    default_feature: str | None = "f0"  # what ranker=feature scores by unless told


@dataclass
class LetorDataset:
    kind: str = "letor"
    name: str = "letor"
    test_path: str = MISSING
    train_path: str | None = None
    query_files: bool = True
    n_features: int | None = None
    default_feature: str | None = "f1"  # SVMlight features are numbered from 1


@dataclass
class TrecDataset:
    kind: str = "trec"
    name: str = "trec"
    qrels_path: str = MISSING
    run_path: str = MISSING
    default_feature: str | None = "run_score"  # the run file's score, its only feature


@dataclass
class IrDatasetsDataset:
    kind: str = "ir_datasets"
    name: str = "ir_datasets"
    id: str = MISSING  # an ir_datasets id; its qrels are read from ir_datasets' cache
    run_path: str = MISSING
    default_feature: str | None = "run_score"  # the run file's score, its only feature


@dataclass
class TableDataset:
    kind: str = "table"
    name: str = "table"
    path: str = MISSING
    qid: str = "qid"
    docid: str = "docid"
    label: str = "label"
    split: str | None = None
    features: list[str] | None = None
    default_feature: str | None = None  # set it to use ranker=feature


@dataclass
class ParquetRunDataset:
    kind: str = "parquet_run"
    name: str = "parquet_run"
    path: str = MISSING
    qid: str = "qid"
    docid: str = "docid"
    label: str = "label"
    qrels_path: str | None = None
    default_feature: str | None = None  # unused: rankers of a parquet_run are columns


@dataclass
class EngineConfig:
    """Where the per-query table is computed: local | stream | dask (harness.engines)."""

    kind: str = "local"
    batch_rows: int = 2_000_000  # stream: rows per batch of whole queries
    partition_rows: int = 2_000_000  # dask: rows per partition of whole queries
    address: str | None = None  # dask: scheduler to attach to; None starts a local cluster
    n_workers: int | None = None  # dask local cluster / stream score columns: processes
    threads_per_worker: int = 1


@dataclass
class RankerConfig:
    """One ranker. ``kind`` picks the implementation from harness.rankers.RANKERS."""

    kind: str = MISSING
    seed: int = 0
    sigma: float | None = None
    feature: str | None = None
    column: str | None = None
    estimator: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    features: list[str] | None = None
    path: str | None = None
    uri: str | None = None
    threads: int | None = None  # sklearn: native threads while fitting (None: all cores)
    # lightgbm / xgboost / catboost (harness.rankers.ltr)
    objective: str | None = None
    eval_at: int | None = None  # k of the trainer's ndcg@k (default 10)
    valid_fraction: float | None = None  # train queries held out for early stopping (0.2)
    early_stopping: int | None = None  # rounds without improvement before stopping (20)
    # fusion (harness.rankers.fusion): inputs name rankers' options or run files' paths
    inputs: dict[str, Any] | None = None
    method: str | None = None  # rrf | combsum | combmnz | combmax | wsum
    norm: str | None = None  # min-max | z-score | sum | max | rank | none
    rrf_k: float | None = None  # RRF's k (60)
    weights: dict[str, float] | None = None  # wsum: a weight per input
    tune: dict[str, Any] | None = None  # wsum: {metric, convention, step} on train queries


@dataclass
class MetricGrid:
    """A grid of metric variants: the product of the axes, plus ``extra`` names.

    Each axis takes one value or a list (so ``metric.k=5`` and ``metric.k=[5,10]`` both work).
    """

    name: Any = MISSING  # conf/metric/*.yaml names the measures
    gain: Any = field(default_factory=lambda: ["exp2", "linear"])
    discount: Any = field(default_factory=lambda: ["log2"])
    k: Any = field(default_factory=lambda: [5, 10, None])
    ties: Any = field(default_factory=lambda: ["average", "input"])
    ideal: Any = field(default_factory=lambda: ["judged"])
    # what an unjudged retrieved document counts as: nonrelevant | condensed | relevant, and
    # the grade relevant gives it (null: the qrels' highest); a grade only varies relevant
    unjudged: Any = field(default_factory=lambda: ["nonrelevant"])
    unjudged_grade: Any = None
    empty: str = "zero"
    max_label: float | None = None
    extra: list[str] = field(default_factory=list)
    nan_scores: str = "error"
    missing: str = "exclude"


@dataclass
class TrackingConfig:
    enabled: bool = True
    uri: str | None = None  # None: $MLFLOW_TRACKING_URI, else sqlite:///<project>/runs/mlflow.db
    experiment: str | None = None  # None: the study name
    artifact_root: str = ARTIFACT_ROOT
    pending_dir: str = PENDING_DIR  # log plans not yet sent (harness sync)
    timeout_s: int = REQUEST_TIMEOUT_S
    max_retries: int = REQUEST_RETRIES
    # ready MLflow in a child process while the study computes (false: all in process)
    worker: bool = True
    # headline | all | off (harness.reporting.figures.FIGURE_MODES); true = headline,
    # false = off. Typed Any so both the words and the booleans of older configs pass.
    figures: Any = "headline"
    bootstrap_resamples: int = 2000
    # above this many queries the CI of the mean is the normal one (null: always bootstrap)
    bootstrap_max_queries: int | None = 20_000


@dataclass
class CheckConfig:
    sklearn: str = "fail"  # fail | warn | off
    tolerance: float = 1e-9
    sample_rows: int = 200_000  # parquet_run: check the whole queries of the first rows
    # above this many queries a seeded sample of that many is checked (null: every query)
    max_queries: int | None = 2_000
    # queries checked on sklearn's tie-averaged path (a Python loop), per (gain, k)
    max_tied_queries: int | None = 50


@dataclass
class ExplainConfig:
    # [[a, b], ...]: conventions or metric names whose gap is split by option per ranker
    pairs: list[Any] = field(default_factory=list)
    metric: str = "ndcg@10"


@dataclass
class JudgmentsConfig:
    """Judgment intervals per ranker and variant (harness.app.judgment_study)."""

    # auto: computed when some ranker retrieved an unjudged document (else every interval is
    # the value itself); on: always; off: never. Any, so YAML's booleans pass as on/off.
    interval: Any = "auto"
    max_labelings: Any = MAX_LABELINGS  # labelings tried per query where no shortcut is known


@dataclass
class Config:
    study: str = "default"
    seed: int = 0
    dataset: Any = MISSING
    # name -> RankerConfig; typed loosely here so `+ranker.new={kind:random}` works from the
    # command line, and each entry is checked against RankerConfig by plan.build_plan
    ranker: dict[str, Any] = MISSING
    metric: MetricGrid = field(default_factory=MetricGrid)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    check: CheckConfig = field(default_factory=CheckConfig)
    explain: ExplainConfig = field(default_factory=ExplainConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    judgments: JudgmentsConfig = field(default_factory=JudgmentsConfig)
    cache_dir: str = "runs/cache/scores"
    # a ranker's name: the closing table adds each other ranker's difference from it
    baseline: str | None = None


#: Six hex digits drawn once per process: output folders of jobs started in the same second
#: (``${now:...}`` has one-second resolution) never coincide.
JOB_TOKEN = secrets.token_hex(3)


def register_configs() -> None:
    """Register the schemas and the resolvers ``${project_root:}`` and ``${shared_data:}``."""
    cs = ConfigStore.instance()
    cs.store(name="base_config", node=Config)
    # schemas live in their own group, referenced as /schema/<group>@_here_ from the YAML
    # defaults lists, so they are not offered as options (dataset=base_letor fails to compose)
    for group, name, node in (("dataset", "synthetic", SyntheticDataset),
                              ("dataset", "letor", LetorDataset),
                              ("dataset", "trec", TrecDataset),
                              ("dataset", "ir_datasets", IrDatasetsDataset),
                              ("dataset", "table", TableDataset),
                              ("dataset", "parquet_run", ParquetRunDataset)):
        cs.store(group=f"schema/{group}", name=name, node=node)
    cs.store(group="schema", name="engine", node=EngineConfig)
    cs.store(group="schema", name="metric", node=MetricGrid)
    cs.store(group="schema", name="tracking", node=TrackingConfig)
    if not OmegaConf.has_resolver("project_root"):
        OmegaConf.register_new_resolver("project_root", lambda: str(PROJECT_ROOT))
    if not OmegaConf.has_resolver("job_token"):
        OmegaConf.register_new_resolver("job_token", lambda: JOB_TOKEN)
    if not OmegaConf.has_resolver("path_name"):
        OmegaConf.register_new_resolver("path_name", hydra_dir_name)
    if not OmegaConf.has_resolver("shared_data"):
        OmegaConf.register_new_resolver("shared_data", lambda: str(shared_data_dir()))
