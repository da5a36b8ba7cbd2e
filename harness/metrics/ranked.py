"""Building blocks over rows in ranked order, shared by the metric kernels
(:mod:`harness.metrics.kernels`) and the other measures (:mod:`harness.metrics.measures`):
per-query sums over the top k, counts of the rows ranked above, and the cascade of RR and
ERR with its exact tie-group stop probabilities."""

from __future__ import annotations

import numpy as np

from harness.metrics.ranking import Ranking

__all__ = ["topk_sum", "exclusive_count", "ratio", "cascade", "survival_before",
           "group_stop_probability", "recall_count"]


def recall_count(level: float, n_rel: np.ndarray, rule: str) -> np.ndarray:
    """How many relevant documents reach recall ``level`` (option ``recall_cutoff``), from
    ``level * R`` in float64 as trec_eval computes it: ``floor(level R + 0.9)``
    (``plus_0.9``, trec_eval 9) or ``level R`` rounded, halves up (``nearest``, trec_eval
    10's ``lround``; exact, as the fraction of a double is)."""
    scaled = level * np.asarray(n_rel, dtype=np.float64)
    if rule == "nearest":
        whole = np.floor(scaled)
        return whole + (scaled - whole >= 0.5)
    return np.floor(scaled + 0.9)


def topk_sum(r: Ranking, values: np.ndarray, k: int | None, nq: int) -> np.ndarray:
    rows = r.head(k)
    if rows is None:
        return np.bincount(r.q, weights=values, minlength=nq)
    return np.bincount(r.q[rows], weights=values[rows], minlength=nq)


def exclusive_count(r: Ranking, indicator: np.ndarray, n_docs: np.ndarray) -> np.ndarray:
    """Per ranked row, how many earlier rows of its query have ``indicator`` set (exact)."""
    cs = np.cumsum(indicator, dtype=np.int64)
    before = cs - indicator
    starts = np.cumsum(n_docs) - n_docs
    base = np.zeros(len(n_docs), dtype=np.int64)
    has = n_docs > 0
    base[has] = before[starts[has]]
    before -= np.repeat(base, n_docs)  # ranked rows hold their queries in order
    return before


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros_like(num, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def cascade(r: Ranking, stop: np.ndarray, n_docs: np.ndarray, k: int | None, nq: int,
             *, binary: bool, before: np.ndarray | None = None) -> np.ndarray:
    """sum_i 1/i * P(stop at i) for a cascade with per-document stop probabilities
    (``before``: for a binary cascade, the stopping rows ranked above each row)."""
    if binary and before is not None:
        survival = (before == 0).astype(np.float64)
    else:
        survival = survival_before(r, stop, n_docs, binary=binary)
    if r.gid is None:
        hit = survival * stop
    else:
        hit = group_stop_probability(r, stop, survival, k)
    return topk_sum(r, hit / (r.pos + 1.0), k, nq)


def survival_before(r: Ranking, stop: np.ndarray, n_docs: np.ndarray, *,
                     binary: bool) -> np.ndarray:
    """Per ranked row, the product of (1 - stop) over earlier rows of its query."""
    if binary:
        return (exclusive_count(r, (stop > 0).astype(np.int64), n_docs) == 0).astype(float)
    values = np.unique(stop[stop > 0])
    if len(values) <= 64:  # exact: integer counts of each distinct factor
        out = np.ones(len(stop))
        for v in values:
            out *= (1.0 - v) ** exclusive_count(r, (stop == v).astype(np.int64), n_docs)
        return out
    logs = np.log1p(-np.minimum(stop, 1.0 - 1e-300))  # pragma: no cover - continuous labels
    cs = np.cumsum(logs) - logs
    starts = np.cumsum(n_docs) - n_docs
    base = np.where(n_docs > 0, cs[np.minimum(starts, len(cs) - 1)], 0.0)
    return np.exp(cs - base[r.q])


def group_stop_probability(r: Ranking, stop: np.ndarray, survival: np.ndarray,
                            k: int | None) -> np.ndarray:
    """Expected stop probability per position when tied groups are randomly ordered."""
    assert r.gid is not None and r.gstart is not None and r.gsize is not None
    hit = survival * stop  # exact for singleton groups
    start_survival = survival[r.gstart]
    relevant = (r.gsize > 1) & (start_survival > 0)
    if k is not None:
        relevant &= r.pos[r.gstart] < k
    for n in np.unique(r.gsize[relevant]):
        groups = np.flatnonzero(relevant & (r.gsize == n))
        rows = r.gstart[groups][:, None] + np.arange(n)[None, :]
        keep = 1.0 - stop[rows]
        mu = np.zeros((len(groups), n + 1))
        mu[:, 0] = 1.0
        for j in range(1, n + 1):  # add item j: mu_t <- ((j-t) mu_t + t q_j mu_{t-1}) / j
            t = np.arange(j + 1, dtype=np.float64)
            prev = mu[:, : j + 1].copy()
            shifted = np.zeros_like(prev)
            shifted[:, 1:] = prev[:, :-1]
            mu[:, : j + 1] = ((j - t) * prev + t * keep[:, j - 1 : j] * shifted) / j
        hit[rows] = start_survival[groups][:, None] * (mu[:, :-1] - mu[:, 1:])
    return hit
