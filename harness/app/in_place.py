"""The evaluate stage of a study for a parquet_run dataset: one score column evaluated
where the file lies, by the study's engine, then checked on a sample of whole queries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from harness.app.check import sample_options
from harness.app.config import CheckConfig
from harness.datasets import ParquetRun
from harness.engines import Engine
from harness.engines.parts import PassClock
from harness.engines.stream import iter_query_batches
from harness.errors import InputError
from harness.metrics import Metric
from harness.metrics.sklearn_check import CheckResult, check_against_sklearn
from harness.rankers import RankerSpec

__all__ = ["evaluate_in_place", "evaluate_columns_in_place"]


def evaluate_in_place(engine: Engine, dataset: ParquetRun, spec: RankerSpec,
                       metrics: list[Metric], options: Mapping[str, Any],
                       check: CheckConfig | None, per_query: pd.DataFrame | None = None
                       ) -> tuple[pd.DataFrame, list[CheckResult]]:
    """Evaluate one score column of a parquet_run file with the engine (unless its
    ``per_query`` table was computed already, by :func:`evaluate_columns_in_place`); the
    sklearn check runs on the whole queries of its first ``check.sample_rows`` rows (no
    check when ``check`` is None)."""
    column = _column(dataset, spec)
    names = dataset.names(column)
    qrels = None if dataset.labels_in_file else dataset.qrels
    if per_query is None:
        per_query = engine.evaluate_file(dataset.path, qrels, metrics, names, **options)
    if check is None:
        return per_query, []
    sample = next(iter_query_batches(dataset.path, batch_rows=int(check.sample_rows),
                                     columns={f: r for r, f in names.items()}))
    judged = per_query.index.intersection(pd.unique(sample["qid"]))
    return per_query, check_against_sklearn(sample.reset_index(drop=True), qrels, metrics,
                                            per_query.loc[judged], **sample_options(check, 0))


def evaluate_columns_in_place(engine: Engine, dataset: ParquetRun, specs: list[RankerSpec],
                              metrics: list[Metric], options: Mapping[str, Any]
                              ) -> tuple[dict[str, pd.DataFrame], PassClock]:
    """Every ranker's per-query table, its score column read from the file in one pass
    (the stream engine; the others evaluate the columns one by one); and where the time
    went, per ranker."""
    columns = {spec.name: _column(dataset, spec) for spec in specs}
    qrels = None if dataset.labels_in_file else dataset.qrels
    roles = {r: c for r, c in dataset.roles.items() if r != "score"}
    tables, clock = engine.evaluate_file_scores(dataset.path, qrels, metrics,
                                                list(dict.fromkeys(columns.values())),
                                                roles, **options)
    return {name: tables[column] for name, column in columns.items()}, clock


def _column(dataset: ParquetRun, spec: RankerSpec) -> str:
    column = str(spec.options["column"])
    if column not in dataset.features:
        raise InputError(f"ranker {spec.name!r}: no numeric column {column!r} in "
                         f"{dataset.path.name}; score columns: {', '.join(dataset.features)}",
                         key=f"ranker.{spec.name}.column")
    return column
