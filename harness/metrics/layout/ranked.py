"""Building blocks over rows in ranked order, shared by the metric kernels
(:mod:`harness.metrics.engine.kernels`) and the other measures (:mod:`harness.metrics.measures`):
per-query sums over the top k, counts of the rows ranked above, and the cascade of RR and
ERR with its exact tie-group stop probabilities."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from harness.metrics.layout.ranking import Ranking

__all__ = ["topk_sum", "exclusive_count", "count_before", "ratio", "cascade",
           "survival_before", "group_stop_probability", "recall_count", "MAX_TIED_CASCADE",
           "TieGroupTooLarge"]


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
    return count_before(indicator, n_docs)


def count_before(counts: np.ndarray, n_docs: np.ndarray) -> np.ndarray:
    """Per item of items grouped by query (``n_docs`` each, query after query: ranked rows,
    or tie groups), the sum of the integer ``counts`` of the earlier items of its query."""
    cs = np.cumsum(counts, dtype=np.int64)
    before = cs - counts
    starts = np.cumsum(n_docs) - n_docs
    base = np.zeros(len(n_docs), dtype=np.int64)
    has = n_docs > 0
    base[has] = before[starts[has]]
    before -= np.repeat(base, n_docs)  # the items hold their queries in order
    return before


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros_like(num, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def cascade(r: Ranking, stop: np.ndarray, n_docs: np.ndarray, k: int | None, nq: int,
            *, binary: bool, before: np.ndarray | None = None, few: bool = False
            ) -> np.ndarray:
    """sum_i 1/i * P(stop at i) for a cascade with per-document stop probabilities
    (``before``: for a binary cascade, the stopping rows ranked above each row; ``few``:
    the caller knows the stop probabilities take at most 64 distinct values).

    With a cut-off only the top k rows of each query are read (a row's survival reads the
    rows above it, which are in the top k too): the same terms, for a tenth of a ranking of
    100 per query at k = 10."""
    rows = r.head(k)
    if rows is not None and few and not binary:  # the top rows' values: the others'
        assert k is not None  # rows: a cut-off's top rows
        return _cascade_top(r, stop, n_docs, k, nq, rows,  # factors would be 1 there
                            _stop_values(stop[rows]), before=before)
    values = None if binary else _stop_values(stop)
    if rows is not None and (values is None or len(values) <= _EXACT_VALUES):
        assert k is not None  # rows: a cut-off's top rows
        return _cascade_top(r, stop, n_docs, k, nq, rows, values, before=before)
    if rows is None and binary and before is not None and r.gid is not None:
        return _cascade_open(r, stop, n_docs, nq, before)
    if binary and before is not None:
        survival = (before == 0).astype(np.float64)
    else:
        survival = survival_before(r, stop, n_docs, binary=binary, values=values)
    if r.gid is None:
        hit = survival * stop
    else:
        hit = group_stop_probability(r, stop, survival, k)
    return topk_sum(r, hit / (r.pos + 1.0), k, nq)


def _cascade_top(r: Ranking, stop: np.ndarray, n_docs: np.ndarray, k: int, nq: int,
                 rows: np.ndarray, values: np.ndarray | None, *,
                 before: np.ndarray | None) -> np.ndarray:
    """:func:`cascade` over the top ``k`` rows ``rows`` of each query (each query's first
    rows, query after query; ``values``: at most 64 distinct stop probabilities, those of
    these rows among them, None for a binary cascade), term for term as over every row."""
    q, pos = r.top(k)[:2]
    top_stop = stop[rows]
    n_top = np.minimum(n_docs, k)
    if values is None and before is not None:
        survival = (before[rows] == 0).astype(np.float64)
    else:
        survival = _survival(top_stop, n_top, values)
    hit = survival * top_stop
    if r.gid is not None:
        assert r.gstart is not None and r.gsize is not None
        gid = r.gid[rows]  # the groups reaching into the top k, from their first row
        opens = np.flatnonzero(np.concatenate(([True], gid[1:] != gid[:-1])))
        tied = r.gsize[gid[opens]] > 1
        groups, at = gid[opens][tied], opens[tied]  # at: the group's start, a top row
        some = survival[at] > 0
        first = np.cumsum(n_top) - n_top  # each query's first top row
        for n, members, chance in _tied_stops(r, stop, groups[some], survival[at][some]):
            cells = r.gstart[members][:, None] + np.arange(n)[None, :]
            keep = r.pos[cells] < k
            hit[first[r.q[cells[keep]]] + r.pos[cells[keep]]] = chance[keep]
    return np.bincount(q, weights=hit / (pos + 1.0), minlength=nq)


def _cascade_open(r: Ranking, stop: np.ndarray, n_docs: np.ndarray, nq: int,
                  before: np.ndarray) -> np.ndarray:
    """A binary :func:`cascade` without cut-off over the tie groups with no stopping row
    above them, each query's first ones: below them the cascade has stopped (its terms
    are zeros, which add nothing to a sum)."""
    assert r.gstart is not None and r.gsize is not None
    starts = r.gstart
    open_groups = np.flatnonzero(before[starts] == 0)
    length = np.bincount(r.q[starts[open_groups]], weights=r.gsize[open_groups],
                         minlength=nq).astype(np.int64)
    first = np.cumsum(length) - length  # each query's first open row
    rows = (np.arange(int(length.sum())) - np.repeat(first, length)
            + np.repeat(np.cumsum(n_docs) - n_docs, length))
    hit = (before[rows] == 0).astype(np.float64) * stop[rows]
    tied = open_groups[r.gsize[open_groups] > 1]
    for n, groups, chance in _tied_stops(r, stop, tied, np.ones(len(tied))):
        cells = starts[groups][:, None] + np.arange(n)[None, :]
        hit[first[r.q[cells]] + r.pos[cells]] = chance
    return np.bincount(r.q[rows], weights=hit / (r.pos[rows] + 1.0), minlength=nq)


#: Up to this many distinct stop probabilities, survival is computed exactly (integer counts).
_EXACT_VALUES = 64


def _stop_values(stop: np.ndarray) -> np.ndarray:
    return np.unique(stop[stop > 0])


def survival_before(r: Ranking, stop: np.ndarray, n_docs: np.ndarray, *,
                    binary: bool, values: np.ndarray | None = None) -> np.ndarray:
    """Per ranked row, the product of (1 - stop) over earlier rows of its query
    (``values``: the distinct positive stops, when known)."""
    if not binary and values is None:
        values = _stop_values(stop)
    if values is None or len(values) <= _EXACT_VALUES:
        return _survival(stop, n_docs, values)
    logs = np.log1p(-np.minimum(stop, 1.0 - 1e-300))  # pragma: no cover - continuous labels
    cs = np.cumsum(logs) - logs
    starts = np.cumsum(n_docs) - n_docs
    base = np.where(n_docs > 0, cs[np.minimum(starts, len(cs) - 1)], 0.0)
    return np.exp(cs - base[r.q])


def _survival(stop: np.ndarray, n_docs: np.ndarray, values: np.ndarray | None
              ) -> np.ndarray:
    """:func:`survival_before` from integer counts: of the stopping rows above (a binary
    cascade: ``values`` None), else of each distinct stop probability ``values`` above,
    its factor raised to them (a value absent from these rows: a factor 1, exactly)."""
    if values is None:
        return (count_before((stop > 0).astype(np.int64), n_docs) == 0).astype(float)
    out = np.ones(len(stop))
    for v in values:
        out *= _powers(1.0 - v, count_before((stop == v).astype(np.int64), n_docs))
    return out


def _powers(base: np.floating, counts: np.ndarray) -> np.ndarray:
    """``base ** counts`` for non-negative integer ``counts``: each power from 0 to the
    largest count computed once, by the same float power, and looked up (a power per row
    took most of a cut-off ERR's time)."""
    if len(counts) == 0:
        return base ** counts
    return (base ** np.arange(int(counts.max()) + 1, dtype=counts.dtype)).take(counts)


def group_stop_probability(r: Ranking, stop: np.ndarray, survival: np.ndarray,
                           k: int | None) -> np.ndarray:
    """Expected stop probability per position when tied groups are randomly ordered."""
    assert r.gid is not None and r.gstart is not None and r.gsize is not None
    hit = survival * stop  # exact for singleton groups
    start_survival = survival[r.gstart]
    relevant = (r.gsize > 1) & (start_survival > 0)
    if k is not None:
        relevant &= r.pos[r.gstart] < k
    tied = np.flatnonzero(relevant)
    for n, groups, chance in _tied_stops(r, stop, tied, start_survival[tied]):
        hit[r.gstart[groups][:, None] + np.arange(n)[None, :]] = chance
    return hit


#: The largest tie group whose graded stop probabilities are averaged over its orders: the
#: dynamic programme costs n^2 steps (1.3 s at 16,384 documents, 25 s at 64,000). Binary
#: stops (RR, Success, a group without relevant documents) have a closed form, any size.
MAX_TIED_CASCADE = 16_384


class TieGroupTooLarge(Exception):
    """A tie group past :data:`MAX_TIED_CASCADE` with graded stops: its query code, size."""

    def __init__(self, code: int, size: int) -> None:
        super().__init__(code, size)
        self.code, self.size = code, size


def _tied_stops(r: Ranking, stop: np.ndarray, tied: np.ndarray, start_survival: np.ndarray
                ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Per size ``n`` of the tie groups ``tied`` (group ids, ascending): the groups and,
    per group and offset, the chance the cascade stops there (``start_survival``: per
    group of ``tied``, the survival up to it)."""
    assert r.gstart is not None and r.gsize is not None
    sizes = r.gsize[tied]
    for n in np.unique(sizes):
        which = sizes == n
        groups = tied[which]
        rows = r.gstart[groups][:, None] + np.arange(n)[None, :]
        keep = 1.0 - stop[rows]
        if np.all((keep == 0.0) | (keep == 1.0)):  # z documents that do not stop: the
            # mean over t-subsets is C(z, t) / C(n, t), a product of (z - i) / (n - i)
            z = (keep == 1.0).sum(axis=1)[:, None]
            i = np.arange(n)[None, :]
            factors = np.maximum(z - i, 0) / (n - i)
            mu = np.hstack([np.ones((len(groups), 1)), np.cumprod(factors, axis=1)])
            yield int(n), groups, start_survival[which][:, None] * (mu[:, :-1] - mu[:, 1:])
            continue
        if n > MAX_TIED_CASCADE:
            raise TieGroupTooLarge(int(r.q[r.gstart[groups[0]]]), int(n))
        mu = np.zeros((len(groups), n + 1))
        mu[:, 0] = 1.0
        for j in range(1, n + 1):  # add item j: mu_t <- ((j-t) mu_t + t q_j mu_{t-1}) / j
            t = np.arange(j + 1, dtype=np.float64)
            prev = mu[:, : j + 1].copy()
            shifted = np.zeros_like(prev)
            shifted[:, 1:] = prev[:, :-1]
            mu[:, : j + 1] = ((j - t) * prev + t * keep[:, j - 1 : j] * shifted) / j
        yield int(n), groups, start_survival[which][:, None] * (mu[:, :-1] - mu[:, 1:])
