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
from harness.engines.stream import iter_query_batches
from harness.errors import InputError
from harness.metrics import Metric
from harness.metrics.sklearn_check import CheckResult, check_against_sklearn
from harness.rankers import RankerSpec

__all__ = ["evaluate_in_place"]

def evaluate_in_place(engine: Engine, dataset: ParquetRun, spec: RankerSpec,
                       metrics: list[Metric], options: Mapping[str, Any],
                       check: CheckConfig | None
                       ) -> tuple[pd.DataFrame, list[CheckResult]]:
    """Evaluate one score column of a parquet_run file with the engine; the sklearn check
    runs on the whole queries of its first ``check.sample_rows`` rows (no check when
    ``check`` is None)."""
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
    sample = next(iter_query_batches(dataset.path, batch_rows=int(check.sample_rows),
                                     columns={f: r for r, f in names.items()}))
    judged = per_query.index.intersection(pd.unique(sample["qid"]))
    return per_query, check_against_sklearn(sample.reset_index(drop=True), qrels, metrics,
                                            per_query.loc[judged], **sample_options(check, 0))
