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
from harness.metrics.layout.ranked import ratio, recall_count
from harness.metrics.vocabulary.measure import MeasureInput, builtin_measure

__all__ = ["suffix_max", "interpolated_at", "relevant_within"]

#: Where this family's measures stand in the docs' measure table (harness.metrics.measures).
TABLE_ORDER = 3

_EMPTY = ("empty", "empty_weight")


@builtin_measure("rprec", display="Rprec", aliases=("r_precision",), options=_EMPTY,
                  binary=True, cutoff=False, builtin=True, unjudged_bounds="swap",
                  matches="trec_eval `Rprec`; ir_measures `Rprec`; ranx `r-precision`",
                  formula="$\\frac{1}{R} \\sum_{i=1}^{R} [rel_i \\ge level]$")
def _rprec(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    n_rel = x.n_relevant()
    return ratio(relevant_within(x, n_rel), n_rel), n_rel == 0


def relevant_within(x: MeasureInput, cut: np.ndarray | None) -> np.ndarray:
    """Per query, the relevant ranked rows among its first ``cut`` ranks (all without a
    cut), each its tie group's mean under ``ties='average'``. Without tie groups, counted
    over the relevant rows alone (:meth:`~harness.metrics.layout.ranking.Ranking.positive`): the
    same integers as the sum of every row's 1.0 or 0.0, for a few percent of the rows."""
    r, level = x.ranking, x.metric.level
    if r.sparse() and level > 0:
        q, pos, _, _ = r.positive(level)
        if cut is not None:
            q = q[pos < cut[q]]
        return np.bincount(q, minlength=x.n_queries).astype(np.float64)
    values = r.group_mean(x.relevant())
    if cut is None:
        return np.bincount(r.q, weights=values, minlength=x.n_queries)
    inside = r.pos < cut[r.q]
    return np.bincount(r.q[inside], weights=values[inside], minlength=x.n_queries)


@builtin_measure("f1", display="F1", options=_EMPTY, binary=True, builtin=True,
                  unjudged_bounds="swap",
                  matches="ranx `f1@k`",
                  formula="$\\frac{2 \\cdot hits@k}{k + R}$ ($k$ = the list length without "
                          "a cut-off)")
def _f1(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    n_rel = x.n_relevant()
    k = x.metric.k
    depth = x.n_docs() if k is None else np.full(x.n_queries, float(k))
    return ratio(2.0 * x.top_k_sum(x.relevant()), depth + n_rel), n_rel == 0


@builtin_measure("iprec", display="IPrec", options=(*_EMPTY, "at_recall", "recall_cutoff"),
                  binary=True, cutoff=False, builtin=True, unjudged_bounds="swap",
                  matches="trec_eval `iprec_at_recall_x`; ir_measures `IPrec@x`",
                  formula="$\\max_{i \\ge i_x} P@i$ over relevant ranks, $i_x$ the rank of "
                          "the $\\lfloor xR + 0.9 \\rfloor$-th relevant document "
                          "($\\mathrm{round}(xR)$-th under recall_cutoff=nearest)")
def _iprec(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    metric = x.metric
    if metric.ties == "average":
        raise MetricDefinitionError(
            f"{metric.display_name}: interpolated precision is a maximum over ranks, whose "
            "expectation over tied orders is not computed; choose ties='docid' (trec_eval), "
            "'input', 'random', 'optimistic' or 'pessimistic'")
    values = interpolated_at(x, metric.at_recall)
    return values, (x.n_relevant() == 0) & ~np.isnan(values)


def suffix_max(q: np.ndarray, values: np.ndarray, nq: int) -> np.ndarray:
    """Per row (rows grouped by query ``q``), the maximum of ``values`` over that row and
    the later rows of its query, exact: values are replaced by their ranks, which a running
    maximum over the reversed rows reads with each query offset above the ones after it."""
    if len(values) == 0:
        return values
    uniq, code = np.unique(values, return_inverse=True)
    span = np.int64(len(uniq))
    offset = (nq - 1 - q[::-1]).astype(np.int64) * span
    running = np.maximum.accumulate(offset + code[::-1])
    return uniq[(running - offset)[::-1]]


def _interpolated(x: MeasureInput) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ranked relevant rows, query after query: at each, the highest precision at its
    rank or below (over the query's relevant ranks), with each query's first such row and
    their number. Computed once per ranking and level: every recall level of IPrec and of
    the 11-point average reads it."""
    def make() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r, nq = x.ranking, x.n_queries
        hit = np.flatnonzero(x.relevant() > 0)
        q = r.q[hit]
        n_found = np.bincount(q, minlength=nq)
        first = np.cumsum(n_found) - n_found
        found = np.arange(1, len(q) + 1, dtype=np.float64) - first[q]  # relevant up to here
        return suffix_max(q, found / (r.pos[hit] + 1.0), nq), first, n_found

    return x.cache.get_or(("interpolated", id(x.ranking), x.metric.level), make)


def interpolated_at(x: MeasureInput, level: float) -> np.ndarray:
    """Per query, interpolated precision at recall ``level``: the highest precision at or
    below the rank of the ``needed``-th relevant document (at least the first), 0 when
    fewer are retrieved. ``needed`` is ``floor(level * R + 0.9)`` (trec_eval 9's rule, so
    2 of 3 reach 0.7) or ``round(level * R)`` (trec_eval 10), per ``recall_cutoff``.

    A query left with no ranked document (every one unjudged under
    ``unjudged='condensed'``, trec_eval's ``-J``) is NaN at the levels that need no
    relevant document, as trec_eval computes it: the precision it starts from is 0 / 0."""
    best, first, n_found = _interpolated(x)
    count = recall_count(level, x.n_relevant(), x.metric.recall_cutoff)
    needed = np.maximum(count, 1.0).astype(np.int64)
    ok = needed <= n_found
    out = np.zeros(x.n_queries)
    out[ok] = best[first[ok] + needed[ok] - 1]
    out[(count == 0) & (x.n_docs() == 0)] = np.nan
    return out
