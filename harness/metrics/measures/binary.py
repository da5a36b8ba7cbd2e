"""Binary measures over the ranked list: AP, RR, precision and recall.

Relevant means ``label >= level``; ``R`` is the number of relevant documents, judged
(``ideal="judged"``) or among the retrieved ones (``ideal="retrieved"``, AP and recall).
With ``ties="average"`` each value is the exact expectation over every order of each tied
group:

- precision and recall are sums of per-position terms: a tied document's indicator is
  replaced by its group's mean;
- AP: a relevant document at offset ``J`` of a group of ``n`` with ``r`` relevant and ``c``
  relevant before the group has expected precision ``(c + 1 + J (r - 1) / (n - 1)) / rank``;
  each offset holds a relevant document with probability ``r / n``;
- RR is a cascade whose stop probability is the binary relevance
  (:func:`harness.metrics.layout.ranked.cascade`).

Without tie groups each sums over the ranking's relevant rows only
(:meth:`~harness.metrics.layout.ranking.Ranking.positive`): the same sums, term for term.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.metrics.layout.ranked import cascade, exclusive_count, ratio
from harness.metrics.vocabulary.measure import MeasureInput, builtin_measure

__all__ = ["group_relevant", "relevant_before"]

#: Where this family's measures stand in the docs' measure table (harness.metrics.measures).
TABLE_ORDER = 1

Result = tuple[np.ndarray, np.ndarray]
_EMPTY = ("empty", "empty_weight")


def _n_relevant(x: MeasureInput, ideal: bool) -> np.ndarray:
    """Per query, R: judged relevant, or (``ideal='retrieved'``, for measures that read
    ``ideal``) relevant among every retrieved document, not only the ranked contenders."""
    prep, metric = x.prep, x.metric
    if not ideal or metric.ideal == "judged":
        return prep.relevant_counts(metric.level)
    return np.bincount(prep.q, weights=prep.label >= metric.level, minlength=prep.n_queries)


def binary_kernel(sparse: Callable[[MeasureInput, tuple[np.ndarray, ...], np.ndarray], np.ndarray],
            dense: Callable[[MeasureInput, np.ndarray], np.ndarray], *,
            ideal: bool = False) -> Callable[[MeasureInput], Result]:
    """A kernel summing over the relevant rows when the ranking has no tie groups (and
    over every ranked row otherwise)."""
    def kernel(x: MeasureInput) -> Result:
        n_rel = _n_relevant(x, ideal)
        r, k = x.ranking, x.metric.k
        if r.sparse():
            q, pos, _, before = r.positive(x.metric.level)  # before: relevant rows above
            if k is not None:
                inside = pos < k
                q, pos, before = q[inside], pos[inside], before[inside]
            return sparse(x, (q, pos, before), n_rel), n_rel == 0
        return dense(x, n_rel), n_rel == 0

    return kernel


def _hits(x: MeasureInput, rows: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.bincount(rows[0], minlength=x.n_queries).astype(np.float64)


def _relevant_in_top(x: MeasureInput) -> np.ndarray:
    """Per query, the relevant rows in the top k, each tie group's averaged over its rows
    (:meth:`MeasureInput.top_k_sum`), once per ranking, level and k: P, R and Hits share
    it; only the top rows' means are read."""
    r, k = x.ranking, x.metric.k
    if r.gid is None:
        return x.top_k_sum(x.relevant())

    def make() -> np.ndarray:
        rows = r.head(k)
        assert r.gid is not None and r.gsize is not None  # make() is for tie groups
        means = group_relevant(x) / r.gsize
        q, gid = (r.q, r.gid) if rows is None else (r.q[rows], r.gid[rows])
        return np.bincount(q, weights=means[gid], minlength=x.n_queries)

    return x.cache.get_or(("relevant_in_top", id(r), x.metric.level, k), make)


def _depth(x: MeasureInput) -> np.ndarray:
    """Precision's denominator: k, or the list length without a cut-off."""
    k = x.metric.k
    return np.full(x.n_queries, float(k)) if k is not None else x.prep.n_docs.astype(float)


def relevant_before(x: MeasureInput) -> np.ndarray:
    """Per ranked row, the relevant rows ranked above it (AP, RR and bpref share them)."""
    r, rel = x.ranking, x.relevant()
    return x.cache.get_or(("before", id(r), x.metric.level),
                          lambda: exclusive_count(r, rel.astype(np.int64), r.n))


def ap_sparse(x: MeasureInput, rows: tuple[np.ndarray, ...], n_rel: np.ndarray) -> np.ndarray:
    q, pos, before = rows
    return ratio(np.bincount(q, weights=(before + 1.0) / (pos + 1.0), minlength=x.n_queries),
                 n_rel)


def ap_dense(x: MeasureInput, n_rel: np.ndarray) -> np.ndarray:
    r, k = x.ranking, x.metric.k

    def numerator() -> np.ndarray:  # once per ranking, level and k (whatever R is)
        rows = r.head(k)  # the top k rows' terms only: the others are not summed
        terms = _ap_terms(x, relevant_before(x), rows)
        q = r.q if rows is None else r.q[rows]
        return np.bincount(q, weights=terms, minlength=x.n_queries)

    return ratio(x.cache.get_or(("ap_sum", id(r), x.metric.level, k), numerator), n_rel)


def group_relevant(x: MeasureInput) -> np.ndarray:
    """Per tie group of the ranking, its relevant rows (as floats), once per ranking and
    level (AP and bpref share them)."""
    gid, gsize = x.ranking.gid, x.ranking.gsize
    assert gid is not None and gsize is not None
    return x.cache.get_or(("group_relevant", id(x.ranking), x.metric.level),
                          lambda: np.bincount(gid, weights=x.relevant(), minlength=len(gsize)))


def _ap_terms(x: MeasureInput, before: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """Per ranked row (of ``rows``: None, every row), its (expected) precision
    contribution to AP's numerator."""
    r, rel = x.ranking, x.relevant()
    index = np.arange(len(rel)) if rows is None else rows
    rank = r.pos[index] + 1.0
    if r.gid is None:
        return rel[index] * (before[index] + 1.0) / rank
    assert r.gstart is not None and r.gsize is not None
    gid = r.gid[index]
    size = r.gsize[gid].astype(np.float64)
    n_rel = group_relevant(x)[gid]
    start = r.gstart[gid]
    offset = index - start
    before_group = before[start]
    within = np.where(size > 1, offset * (n_rel - 1.0) / np.maximum(size - 1.0, 1.0), 0.0)
    return (n_rel / size) * (before_group + 1.0 + within) / rank


builtin_measure(
    "ap", binary_kernel(ap_sparse, ap_dense, ideal=True),
    display="AP", aliases=("map", "map_cut"), options=(*_EMPTY, "ideal"), binary=True,
    builtin=True, reads_top_k=True, unjudged_bounds="swap",
    matches="trec_eval `map`, `map_cut.k`; ir_measures `AP@k`; ranx `map@k`",
    formula="$\\frac{1}{R} \\sum_{i \\le k,\\, rel_i \\ge level} P@i$")


def _rr_sparse(x: MeasureInput, rows: tuple[np.ndarray, ...], n_rel: np.ndarray) -> np.ndarray:
    q, pos, before = rows
    first = before == 0  # the first relevant row of each query
    return np.bincount(q[first], weights=1.0 / (pos[first] + 1.0), minlength=x.n_queries)


def _rr_dense(x: MeasureInput, n_rel: np.ndarray) -> np.ndarray:
    r = x.ranking
    return cascade(r, x.relevant(), r.n, x.metric.k, x.n_queries, binary=True,
                   before=relevant_before(x))


builtin_measure(
    "rr", binary_kernel(_rr_sparse, _rr_dense),
    display="RR", aliases=("mrr", "recip_rank"), options=_EMPTY, binary=True, builtin=True,
    reads_top_k=True, unjudged_bounds="monotone",
    matches="trec_eval `recip_rank`; ir_measures `RR`; ranx `mrr`",
    formula="$1 / \\min\\{i \\le k : rel_i \\ge level\\}$ (0 if none)")

builtin_measure(
    "precision", binary_kernel(lambda x, rows, n_rel: ratio(_hits(x, rows), _depth(x)),
                         lambda x, n_rel: ratio(_relevant_in_top(x), _depth(x))),
    display="P", aliases=("p",), options=_EMPTY, binary=True, builtin=True,
    reads_top_k=True, unjudged_bounds="monotone",
    matches="trec_eval `P.k`; ir_measures `P@k`; ranx `precision@k`",
    formula="$\\frac{1}{k} \\sum_{i=1}^{k} [rel_i \\ge level]$")

builtin_measure(
    "recall", binary_kernel(lambda x, rows, n_rel: ratio(_hits(x, rows), n_rel),
                      lambda x, n_rel: ratio(_relevant_in_top(x), n_rel), ideal=True),
    display="R", aliases=("r",), options=(*_EMPTY, "ideal"), binary=True, builtin=True,
    reads_top_k=True, unjudged_bounds="swap",
    matches="trec_eval `recall.k`; ir_measures `R@k`; ranx `recall@k`",
    formula="$\\frac{1}{R} \\sum_{i=1}^{k} [rel_i \\ge level]$")

builtin_measure(
    "hits", binary_kernel(lambda x, rows, n_rel: _hits(x, rows),
                    lambda x, n_rel: _relevant_in_top(x).copy()),
    display="Hits", options=_EMPTY, binary=True, builtin=True, reads_top_k=True,
    unjudged_bounds="monotone",
    matches="ranx `hits@k`",
    formula="$\\sum_{i=1}^{k} [rel_i \\ge level]$ (a count, not a share)")
