"""One metric's per-query values: its measure's kernel (:mod:`harness.metrics.measures`)
applied to the ranking its tie rule gives.

Every kernel returns, per query code, the value and whether the query is *empty* (no
relevant document, so the metric's ``empty`` policy decides its value). No Python loop runs
per query. Tie averaging (``ties="average"``) is exact, not sampled; each measure's module
says how.
"""

from __future__ import annotations

import numpy as np

from harness.errors import InputError
from harness.metrics.layout.prepared import Prepared
from harness.metrics.layout.ranking import RankingPlan
from harness.metrics.vocabulary.definition import Metric
from harness.metrics.vocabulary.registry import Cache, MeasureInput

__all__ = ["compute", "Cache", "unjudged_grade", "ranking_plan"]


def compute(prep: Prepared, metric: Metric, cache: Cache, top: int | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of ``metric`` (before the empty policy) and the empty mask.

    ``top`` (>= the metric's k) ranks only the rows that can reach the top ``top``; the
    caller passes one value for all metrics of a tie rule so they share one ranking. A
    measure that reads which ranked documents are judged ranks every row.
    """
    spec = metric.measure
    if metric.unjudged == "condensed" and prep.condensed is not prep:
        # the unjudged rows leave the ranking: other rows, so a memo of their own
        prep, cache = prep.condensed, cache.get_or(("condensed",), Cache)
    elif metric.unjudged == "relevant":  # the unjudged rows judged: other labels, own memo
        grade = unjudged_grade(prep, metric)
        prep, cache = prep.relevant(grade), cache.get_or(("relevant", grade), Cache)
    r = prep.ranking(metric.ties, metric.seed, top=None if spec.reads_judged else top)
    values, empty = spec.kernel(MeasureInput(prep, metric, r, cache))
    return np.asarray(values, dtype=np.float64), np.asarray(empty, dtype=bool)


def unjudged_grade(prep: Prepared, metric: Metric) -> float:
    """The grade an unjudged retrieved document takes under ``unjudged='relevant'``: the
    metric's ``unjudged_grade``, else the highest grade judged (refused when none is
    positive: the unjudged documents would stay non-relevant)."""
    if metric.unjudged_grade is not None:
        return metric.unjudged_grade
    if prep.max_label <= 0:
        raise InputError(
            f"{metric.display_name}: unjudged='relevant' takes the highest grade judged, but "
            "no judgment has a positive grade; give unjudged_grade", column="label")
    return float(prep.max_label)


def ranking_plan(metrics: list[Metric]) -> RankingPlan:
    """The rankings ``metrics`` will ask for, as the layout takes them
    (:class:`~harness.metrics.layout.ranking.RankingPlan`)."""
    return RankingPlan(tuple((m.ties, m.seed, m.k, m.measure.reads_judged,
                              m.unjudged == "nonrelevant") for m in metrics))


def apply_empty(values: np.ndarray, empty: np.ndarray, policy: str) -> np.ndarray:
    """``values`` with the empty queries' values set by the metric's ``empty`` policy."""
    if not empty.any():
        return values
    out = values.copy()
    out[empty] = {"zero": 0.0, "one": 1.0, "exclude": np.nan, "nan": np.nan}[policy]
    return out


def measure_columns(prep: Prepared, metrics: list[Metric]
                   ) -> tuple[dict[str, np.ndarray], dict[Metric, np.ndarray]]:
    """Per metric (by display name), its per-query values on prepared rows, empty policy
    applied, and per metric its empty mask. Judged queries the run did not retrieve
    (``missing='zero'``) score 0 for every measure, whatever its empty policy, as trec_eval
    ``-c`` scores them and as the stream and Dask engines do. The input's pending checks
    (:meth:`Prepared.wait`) finish before this returns: bad input wins."""
    cache = Cache()
    columns: dict[str, np.ndarray] = {}
    empties: dict[Metric, np.ndarray] = {}
    absent = prep.n_docs == 0
    try:
        tops = ranking_plan(metrics).contenders(prep.mean_length)
        for m in metrics:
            values, empty = compute(prep, m, cache, top=tops.get((m.ties, m.seed)))
            if absent.any():
                values, empty = np.where(absent, 0.0, values), empty & ~absent
            columns[m.display_name] = apply_empty(values, empty, m.empty)
            empties[m] = empty
    finally:
        prep.wait()
    return columns, empties
