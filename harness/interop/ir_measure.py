"""A harness definition as an ir_measures measure: ``as_ir_measure("nDCG@10(ties=average)")``
is accepted by ``ir_measures.calc_aggregate``, ``ir_measures.iter_calc`` and PyTerrier's
``pt.Experiment(eval_metrics=[...])``, and computed by :func:`harness.evaluate` (this
project's definitions and tie rules), not by ir_measures' providers.

The measure is declared through ir_measures' public route for custom measures,
``ir_measures.define``, so its runtime provider hands it the qrels and the run as
DataFrames. Two conventions are ir_measures' own: a judged query the run lacks scores 0
(as for every ir_measures measure), and the aggregate is the mean over queries; a query a
definition leaves out (``empty='exclude'``) yields NaN per query and is skipped by the mean.

>>> import ir_measures, harness
>>> m = harness.as_ir_measure("RR")
>>> m
harness:RR
>>> qrels = [ir_measures.Qrel("q1", "b", 1)]
>>> run = [ir_measures.ScoredDoc("q1", "a", 2.0), ir_measures.ScoredDoc("q1", "b", 1.0)]
>>> ir_measures.calc_aggregate([m], qrels, run)[m]
0.5
"""

from __future__ import annotations

import math
from typing import Any

from harness.errors import InputError
from harness.metrics.engine.evaluate import evaluate
from harness.metrics.vocabulary.definition import Metric, parse_metric

__all__ = ["as_ir_measure"]


class _SkipNaNMean:
    """ir_measures' aggregator protocol (``add``, ``result``): the mean of the values that
    are not NaN (queries a definition excluded)."""

    def __init__(self) -> None:
        self.total, self.count = 0.0, 0

    def add(self, value: float) -> None:
        if not math.isnan(value):
            self.total += value
            self.count += 1

    def result(self) -> float:
        return self.total / self.count if self.count else math.nan


def as_ir_measure(metric: str | Metric) -> Any:
    """An ``ir_measures`` measure computing ``metric`` (a name :func:`harness.parse_metric`
    reads, or a :class:`~harness.Metric`) with :func:`harness.evaluate`.

    Its printed name is ``harness:`` and the definition's display name
    (``harness:nDCG@10``): PyTerrier's result columns and ir_measures' result keys say
    which library computed the value, and the measure never equals ir_measures' own
    measure of the same name (ir_measures compares measures by their printed names).
    """
    try:
        import ir_measures
    except ImportError:
        raise InputError("as_ir_measure needs the ir_measures package: pip install "
                         "ir-measures") from None
    definition = metric if isinstance(metric, Metric) else parse_metric(metric)
    name = f"harness:{definition.display_name}"

    def per_query(qrels: Any, run: Any) -> list[tuple[Any, float]]:
        if len(run) == 0:  # no retrieved document: ir_measures scores each query 0
            return []
        table = evaluate(run, qrels, [definition])
        return [(qid, float(v)) for qid, v in table[definition.display_name].items()]

    base = type(ir_measures.define(per_query, name=name, support_cutoff=False))

    # mypy: the base is ir_measures' measure class, known only at run time
    class HarnessMeasure(base):  # type: ignore[misc, valid-type]
        """One harness definition, computed by harness.evaluate."""

        def aggregator(self) -> _SkipNaNMean:
            return _SkipNaNMean()

    HarnessMeasure.__name__ = HarnessMeasure.__qualname__ = name
    return HarnessMeasure()
