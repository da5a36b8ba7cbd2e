"""Measures read at the number of relevant documents or a recall level: R-precision, F1@k
and interpolated precision.

With ``ties="average"``, R-precision and F1@k (``2 hits / (k + R)``) are sums of
per-position terms: a tied document's indicator is replaced by its group's mean.
Interpolated precision at recall level ``x`` is the highest precision at or below the rank
of the ``floor(x R + 0.9)``-th relevant document (trec_eval 9's rule, so 2 relevant of 3
reach the level 0.7), or with ``recall_cutoff="nearest"`` the ``round(x R)``-th (trec_eval
10's). It is a maximum over ranks, not a sum: its expectation over tied orders is not
computed, and ``ties="average"`` raises :class:`MetricDefinitionError`.
"""

from __future__ import annotations

import numpy as np

from harness.errors import MetricDefinitionError
from harness.metrics.ranked import exclusive_count, ratio, recall_count
from harness.metrics.registry import MeasureInput, register_measure

__all__: list[str] = []

_EMPTY = ("empty", "empty_weight")


@register_measure("rprec", display="Rprec", aliases=("r_precision",), options=_EMPTY,
                  binary=True, cutoff=False, builtin=True,
                  matches="trec_eval `Rprec`; ir_measures `Rprec`; ranx `r-precision`",
                  formula="$\\frac{1}{R} \\sum_{i=1}^{R} [rel_i \\ge level]$")
def _rprec(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    r, n_rel = x.ranking, x.n_relevant()
    top_r = r.pos < n_rel[r.q]
    hits = np.bincount(r.q[top_r], weights=r.group_mean(x.relevant())[top_r],
                       minlength=x.n_queries)
    return ratio(hits, n_rel), n_rel == 0


@register_measure("f1", display="F1", options=_EMPTY, binary=True, builtin=True,
                  matches="ranx `f1@k`",
                  formula="$\\frac{2 \\cdot hits@k}{k + R}$ ($k$ = the list length without "
                          "a cut-off)")
def _f1(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    n_rel = x.n_relevant()
    k = x.metric.k
    depth = x.n_docs() if k is None else np.full(x.n_queries, float(k))
    return ratio(2.0 * x.top_k_sum(x.relevant()), depth + n_rel), n_rel == 0


@register_measure("iprec", display="IPrec", options=(*_EMPTY, "at_recall", "recall_cutoff"),
                  binary=True, cutoff=False, builtin=True,
                  matches="trec_eval `iprec_at_recall_x`; ir_measures `IPrec@x`",
                  formula="$\\max_{i \\ge i_x} P@i$ over relevant ranks, $i_x$ the rank of "
                          "the $\\lfloor xR + 0.9 \\rfloor$-th relevant document "
                          "($\\mathrm{round}(xR)$-th under recall_cutoff=nearest)")
def _iprec(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    metric, r = x.metric, x.ranking
    if metric.ties == "average":
        raise MetricDefinitionError(
            f"{metric.display_name}: interpolated precision is a maximum over ranks, whose "
            "expectation over tied orders is not computed; choose ties='docid' (trec_eval), "
            "'input', 'random', 'optimistic' or 'pessimistic'")
    rel, n_rel = x.relevant(), x.n_relevant()
    found = exclusive_count(r, rel.astype(np.int64), r.n) + rel  # relevant up to here
    # the level is reached with floor(level * R + 0.9) relevant documents, trec_eval 9's rule
    # (so 2 of 3 reach 0.7), or round(level * R) (trec_eval 10)
    needed = recall_count(metric.at_recall, n_rel, metric.recall_cutoff)
    ok = (rel > 0) & (found >= needed[r.q])
    out = np.zeros(x.n_queries)
    np.maximum.at(out, r.q[ok], found[ok] / (r.pos[ok] + 1.0))
    return out, n_rel == 0
