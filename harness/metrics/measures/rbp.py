"""Rank-biased precision (Moffat & Zobel 2008) and its residual.

RBP is a sum of per-position terms, so with ``ties="average"`` a tied document's
relevance is replaced by its group's mean. The residual is what unjudged documents in the
top k and every rank past it could add: ``(1 - p) sum p^(i-1) [d_i unjudged] + p^depth``.
"""

from __future__ import annotations

import numpy as np

from harness.metrics.layout.ranked import topk_sum
from harness.metrics.measures.judged import depth
from harness.metrics.vocabulary.measure import MeasureInput, builtin_measure

#: Where this family's measures stand in the docs' measure table (harness.metrics.measures).
TABLE_ORDER = 5

__all__: list[str] = []


def _rbp_sum(x: MeasureInput, values: np.ndarray) -> np.ndarray:
    """(1 - p) sum_i p^(i-1) values_i over the top k."""
    r, p = x.ranking, x.metric.p
    weights = (1.0 - p) * p ** r.pos.astype(np.float64)
    return topk_sum(r, weights * values, x.metric.k, x.n_queries)


@builtin_measure("rbp", display="RBP", options=("empty", "empty_weight", "p", "graded"),
                  binary=True,
                  builtin=True, unjudged_bounds="monotone",
                  matches="ir_measures `RBP(rel=...)` (cwl_eval); ranx `rbp.p`",
                  formula="$(1 - p) \\sum_{i=1}^{k} p^{i-1} [rel_i \\ge level]$ (weighted by "
                          "$rel_i$ itself with `graded=True`)")
def _rbp(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    # graded: each relevant document weighted by its label (ranx), else by 1
    values = x.relevant() * x.label if x.metric.graded else x.relevant()
    return _rbp_sum(x, x.ranking.group_mean(values)), x.n_relevant() == 0


@builtin_measure("rbp_residual", display="RBPres", options=("p",), reads_judged=True,
                  builtin=True,
                  matches="RBP residual (Moffat & Zobel 2008)",
                  formula="$(1 - p) \\sum_{i=1}^{k} p^{i-1} [d_i \\text{ unjudged}] + "
                          "p^{\\min(k, n)}$")
def _rbp_residual(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    unjudged = _rbp_sum(x, x.ranking.group_mean(1.0 - x.judged))
    return unjudged + x.metric.p ** depth(x), np.zeros(x.n_queries, dtype=bool)
