"""The evaluate stage of a study for a parquet_run dataset: one score column evaluated
where the file lies, by the study's engine, then checked on a sample of whole queries."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
from harness.metrics.sklearn_check import (
    CheckResult,
    SklearnSide,
    check_against_sklearn,
    sklearn_side,
)
from harness.rankers import RankerSpec

__all__ = ["SampleCheck", "evaluate_in_place", "evaluate_columns_in_place"]


def evaluate_in_place(engine: Engine, dataset: ParquetRun, spec: RankerSpec,
                       metrics: list[Metric], options: Mapping[str, Any],
                       check: CheckConfig | None, per_query: pd.DataFrame | None = None,
                       sample: SampleCheck | None = None
                       ) -> tuple[pd.DataFrame, list[CheckResult]]:
    """Evaluate one score column of a parquet_run file with the engine (unless its
    ``per_query`` table was computed already, by :func:`evaluate_columns_in_place`); the
    sklearn check runs on the whole queries of its first ``check.sample_rows`` rows (no
    check when ``check`` is None), with sklearn's side from ``sample`` when it was computed
    during the pass."""
    column = _column(dataset, spec)
    qrels = None if dataset.labels_in_file else dataset.qrels
    if per_query is None:
        per_query = engine.evaluate_file(dataset.path, qrels, metrics, dataset.names(column),
                                         **options)
    if check is None:
        return per_query, []
    if sample is None or sample.frame is None:
        sample = SampleCheck(dataset, spec, metrics, check)
        sample.read()
    assert sample.frame is not None  # read() sets it
    judged = per_query.index.intersection(pd.unique(sample.frame["qid"]))
    return per_query, check_against_sklearn(sample.frame, qrels, metrics, per_query.loc[judged],
                                            **sample_options(check, 0), side=sample.side)


class SampleCheck:
    """One ranker's sklearn check on the whole queries of the file's first
    ``check.sample_rows`` rows: the sample and sklearn's values of it (:meth:`compute`)
    need nothing from the evaluation, so a study computes them during its pass over the
    file (:func:`evaluate_columns_in_place`'s ``meanwhile``); the comparison with the
    ranker's table comes after it."""

    def __init__(self, dataset: ParquetRun, spec: RankerSpec, metrics: list[Metric],
                 check: CheckConfig) -> None:
        self.dataset, self.spec, self.metrics, self.check = dataset, spec, metrics, check
        self.frame: pd.DataFrame | None = None
        self.side: SklearnSide | None = None

    def read(self) -> None:
        names = self.dataset.names(_column(self.dataset, self.spec))
        self.frame = next(iter_query_batches(
            self.dataset.path, batch_rows=int(self.check.sample_rows),
            columns={f: r for r, f in names.items()})).reset_index(drop=True)

    def compute(self) -> None:
        """The sample and sklearn's values of its queries in file order (the table's order
        of them when every query of the file is evaluated; else the check computes them
        again for the queries it holds)."""
        self.read()
        assert self.frame is not None
        qrels = None if self.dataset.labels_in_file else self.dataset.qrels
        self.side = sklearn_side(self.frame, qrels, self.metrics,
                                 pd.Index(pd.unique(self.frame["qid"])),
                                 **sample_options(self.check, 0))


def evaluate_columns_in_place(engine: Engine, dataset: ParquetRun, specs: list[RankerSpec],
                              metrics: list[Metric], options: Mapping[str, Any],
                              samples: Mapping[str, SampleCheck] | None = None,
                              meanwhile: Sequence[Callable[[], Any]] = ()
                              ) -> tuple[dict[str, pd.DataFrame], PassClock]:
    """Every ranker's per-query table, its score column read from the file in one pass
    (the stream engine; the others evaluate the columns one by one); and where the time
    went, per ranker. ``meanwhile``'s tasks, then the ``samples``' sklearn sides, are
    computed during the pass."""
    columns = {spec.name: _column(dataset, spec) for spec in specs}
    qrels = None if dataset.labels_in_file else dataset.qrels
    roles = {r: c for r, c in dataset.roles.items() if r != "score"}
    tables, clock = engine.evaluate_file_scores(dataset.path, qrels, metrics,
                                                list(dict.fromkeys(columns.values())),
                                                roles, meanwhile=[*meanwhile, *(
                                                    c.compute for c in (samples or {}).values())],
                                                **options)
    return {name: tables[column] for name, column in columns.items()}, clock


def _column(dataset: ParquetRun, spec: RankerSpec) -> str:
    column = str(spec.options["column"])
    if column not in dataset.features:
        raise InputError(f"ranker {spec.name!r}: no numeric column {column!r} in "
                         f"{dataset.path.name}; score columns: {', '.join(dataset.features)}",
                         key=f"ranker.{spec.name}.column")
    return column
