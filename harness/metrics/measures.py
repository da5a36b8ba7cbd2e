"""Kernels of the binary measures beyond the NDCG family: R-precision, bpref, Success@k,
Judged@k, RBP and its residual, F1@k and interpolated precision at a recall level.

Relevant means ``label >= level``; ``R`` is the number of judged relevant documents of the
query, ``N`` the number of judged non-relevant ones. With ``ties="average"`` each value is
the exact expectation over every order of each tied group:

- R-precision, Judged@k, RBP, its residual and F1@k are sums of per-position terms
  (F1@k = 2 hits / (k + R)), so a tied document's indicator is replaced by its group's mean.
- Success@k is the chance that the cascade stopping at the first relevant document stops
  within the top k (the expected reciprocal rank's cascade without the 1/rank weight).
- bpref: a relevant document of a tied group with ``m`` judged non-relevant documents and
  ``c`` of them before the group has ``c + X`` non-relevant documents above it, ``X``
  uniform on ``0..m``; the mean of ``min(c + X, R)`` has a closed form.
- Interpolated precision at recall level ``x`` is the highest precision at or below the
  rank of the ``floor(x R + 0.9)``-th relevant document (trec_eval's rule, so 2 relevant of
  3 reach the level 0.7). It is a maximum over ranks, not a sum: its expectation over tied
  orders is not computed, and ``ties="average"`` raises :class:`MetricDefinitionError`.

``optimistic`` / ``pessimistic`` order tied documents by label, as for every metric; for
Judged@k and RBPres, which look at whether a document is judged, they are not the extremes.
"""

from __future__ import annotations

import numpy as np

from harness.errors import MetricDefinitionError
from harness.metrics.definition import Metric
from harness.metrics.prepared import Prepared
from harness.metrics.ranking import Ranking
from harness.metrics.ranked import (
    exclusive_count,
    group_stop_probability,
    ratio,
    survival_before,
    topk_sum,
)

__all__ = ["NAMES", "compute"]

NAMES = ("rprec", "bpref", "success", "judged", "rbp", "rbp_residual", "f1", "iprec")
#: Measures that look at whether a ranked document is judged (not only at its label).
NEEDS_JUDGED = ("bpref", "judged", "rbp_residual")


def compute(prep: Prepared, metric: Metric, r: Ranking) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of one of :data:`NAMES` and the mask of queries with no relevant
    judged document (``Judged`` and ``RBPres`` have none: they do not look at relevance)."""
    nq = prep.n_queries
    rel = (r.label >= metric.level).astype(np.float64)
    n_rel = prep.relevant_counts(metric.level).astype(np.float64)
    empty = n_rel == 0
    if metric.name in NEEDS_JUDGED:
        judged = _ranked_judged(prep, metric, r)
        if metric.name == "judged":
            hits = topk_sum(r, r.group_mean(judged), metric.k, nq)
            return ratio(hits, _depth(prep, metric.k)), np.zeros(nq, dtype=bool)
        if metric.name == "rbp_residual":
            unjudged = _rbp_sum(r, r.group_mean(1.0 - judged), metric, nq)
            return unjudged + metric.p ** _depth(prep, metric.k), np.zeros(nq, dtype=bool)
        return _bpref(prep, metric, r, rel, judged, n_rel), empty
    if metric.name == "rprec":
        top_r = r.pos < n_rel[r.q]
        return ratio(np.bincount(r.q[top_r], weights=r.group_mean(rel)[top_r],
                                  minlength=nq), n_rel), empty
    if metric.name == "f1":
        hits = topk_sum(r, r.group_mean(rel), metric.k, nq)
        return ratio(2.0 * hits, _depth_k(prep, metric.k) + n_rel), empty
    if metric.name == "rbp":
        return _rbp_sum(r, r.group_mean(rel), metric, nq), empty
    if metric.name == "success":
        survival = survival_before(r, rel, r.n, binary=True)
        first = survival * rel if r.gid is None else \
            group_stop_probability(r, rel, survival, metric.k)
        return topk_sum(r, first, metric.k, nq), empty
    if metric.name == "iprec":
        return _iprec(prep, metric, r, rel, n_rel), empty
    raise AssertionError(metric.name)  # pragma: no cover - NAMES lists every branch


def _ranked_judged(prep: Prepared, metric: Metric, r: Ranking) -> np.ndarray:
    """Per ranked row, 1.0 when its document is judged (``r`` ranks every row of ``prep``,
    or of its float32 twin, which has the same rows)."""
    if prep.judged is None:  # pragma: no cover - prepare() always records it
        raise MetricDefinitionError(f"{metric.display_name} needs to know which ranked "
                                    "documents are judged; this input does not say")
    return prep.judged[r.perm].astype(np.float64)


def _depth(prep: Prepared, k: int | None) -> np.ndarray:
    """Per query, how many ranked documents a cut-off ``k`` keeps."""
    n = prep.n_docs.astype(np.float64)
    return n if k is None else np.minimum(n, float(k))


def _depth_k(prep: Prepared, k: int | None) -> np.ndarray:
    """Per query, the cut-off itself (the list length without one): F1's precision part."""
    return prep.n_docs.astype(np.float64) if k is None else np.full(prep.n_queries, float(k))


def _rbp_sum(r: Ranking, values: np.ndarray, metric: Metric, nq: int) -> np.ndarray:
    """(1 - p) sum_i p^(i-1) values_i over the top k."""
    weights = (1.0 - metric.p) * metric.p ** r.pos.astype(np.float64)
    return topk_sum(r, weights * values, metric.k, nq)


def _bpref(prep: Prepared, metric: Metric, r: Ranking, rel: np.ndarray,
           judged: np.ndarray, n_rel: np.ndarray) -> np.ndarray:
    """sum over retrieved relevant documents of 1 - min(n, R) / min(R, N) with n the judged
    non-relevant documents ranked above it, over R."""
    nq = prep.n_queries
    nonrel = ((judged > 0) & (rel == 0)).astype(np.int64)
    n_nonrel = np.bincount(prep.judged_q, weights=prep.judged_label < metric.level,
                           minlength=nq)
    before = exclusive_count(r, nonrel, r.n).astype(np.float64)
    big_r = n_rel[r.q]
    scale = np.minimum(big_r, n_nonrel[r.q])
    if r.gid is None:
        shortfall = np.minimum(before, big_r)
        terms = rel * (1.0 - ratio(shortfall, scale))
        return ratio(np.bincount(r.q, weights=terms, minlength=nq), n_rel)
    # per tie group: c judged non-relevant before it, m inside, r_g relevant inside
    start = r.gstart
    c = before[start]
    m = np.bincount(r.gid, weights=nonrel, minlength=len(start))
    r_g = np.bincount(r.gid, weights=rel, minlength=len(start))
    big_rg, scale_g = big_r[start], scale[start]
    t = np.clip(big_rg - c, 0.0, m + 1.0)  # values of X with c + X below R
    total = t * c + t * (t - 1.0) / 2.0 + (m + 1.0 - t) * big_rg  # sum of min(c + X, R)
    terms = r_g * (1.0 - ratio(total / (m + 1.0), scale_g))
    return ratio(np.bincount(r.q[start], weights=terms, minlength=nq), n_rel)


def _iprec(prep: Prepared, metric: Metric, r: Ranking, rel: np.ndarray,
           n_rel: np.ndarray) -> np.ndarray:
    """Highest precision at or below the rank where the ``at_recall`` level is reached
    (0 if it never is)."""
    if metric.ties == "average":
        raise MetricDefinitionError(
            f"{metric.display_name}: interpolated precision is a maximum over ranks, whose "
            "expectation over tied orders is not computed; choose ties='docid' (trec_eval), "
            "'input', 'random', 'optimistic' or 'pessimistic'")
    nq = prep.n_queries
    found = exclusive_count(r, rel.astype(np.int64), r.n) + rel  # relevant up to here
    # the level is reached with floor(level * R + 0.9) relevant documents, trec_eval's rule
    # (so 2 of 3 reach 0.7); computed in float64 as trec_eval does
    needed = np.floor(metric.at_recall * n_rel + 0.9)
    ok = (rel > 0) & (found >= needed[r.q])
    out = np.zeros(nq)
    np.maximum.at(out, r.q[ok], found[ok] / (r.pos[ok] + 1.0))
    return out
