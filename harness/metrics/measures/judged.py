"""Measures that read whether each ranked document is judged: Judged@k and bpref.

``R`` is the number of judged relevant documents (``label >= level``), ``N`` the number of
judged non-relevant ones. With ``ties="average"``, Judged@k replaces a tied document's
indicator by its group's mean; bpref's relevant document of a tied group with ``m`` judged
non-relevant documents and ``c`` of them before the group has ``c + X`` non-relevant
documents above it, ``X`` uniform on ``0..m``, and the mean of ``min(c + X, R)`` has a
closed form. ``optimistic`` / ``pessimistic`` order tied documents by label; for Judged@k
they are not the extremes.
"""

from __future__ import annotations

import numpy as np

from harness.metrics.layout.ranked import count_before, exclusive_count, ratio, topk_sum
from harness.metrics.measures.binary import group_relevant, relevant_before
from harness.metrics.vocabulary.measure import MeasureInput, builtin_measure

__all__ = ["depth", "judged_above", "judged_rows", "every_row_judged"]

#: Where this family's measures stand in the docs' measure table (harness.metrics.measures).
TABLE_ORDER = 4


def depth(x: MeasureInput) -> np.ndarray:
    """Per query, how many ranked documents the cut-off keeps."""
    n = x.n_docs()
    return n if x.metric.k is None else np.minimum(n, float(x.metric.k))


@builtin_measure("judged", display="Judged", options=(), reads_judged=True, builtin=True,
                  matches="ir_measures `Judged@k`",
                  formula="$\\frac{1}{\\min(k, n)} \\sum_{i=1}^{k} [d_i \\text{ judged}]$")
def _judged(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    r = x.ranking
    hits = topk_sum(r, r.group_mean(x.judged), x.metric.k, x.n_queries)
    return ratio(hits, depth(x)), np.zeros(x.n_queries, dtype=bool)


@builtin_measure("bpref", display="Bpref", options=("empty", "empty_weight", "no_nonrelevant"),
                  binary=True,
                  reads_judged=True, cutoff=False, builtin=True, unjudged_bounds="swap",
                  matches="trec_eval `bpref`; ir_measures `Bpref`; ranx `bpref`",
                  formula="$\\frac{1}{R} \\sum_{rel_i \\ge level} 1 - "
                          "\\frac{\\min(n_i, R)}{\\min(R, N)}$, $n_i$ judged non-relevant "
                          "above $i$")
def bpref_kernel(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    prep, metric, r = x.prep, x.metric, x.ranking
    nq = prep.n_queries
    n_rel = x.n_relevant()
    by_level = prep.judged_level_counts
    if by_level is not None:  # the judgments counted per grade: those below the level
        n_nonrel = by_level[0][:, :metric.level].sum(axis=1).astype(np.float64)
    else:
        n_nonrel = np.bincount(prep.judged_q, weights=prep.judged_label < metric.level,
                               minlength=nq)
    if r.gid is None and metric.level > 0:  # the relevant rows alone: the same terms
        q, _, _, before = judged_above(x)
        big_r = n_rel[q]
        terms = 1.0 - ratio(np.minimum(before, big_r), np.minimum(big_r, n_nonrel[q]))
        return _unscored(x, ratio(np.bincount(q, weights=terms, minlength=nq), n_rel),
                         n_nonrel), n_rel == 0
    every = every_row_judged(x)
    if r.gid is not None and every:
        return _bpref_groups(x, n_rel, n_nonrel), n_rel == 0
    rel = x.relevant()
    if every:  # each row judged: the non-relevant rows are the others
        nonrel = (rel == 0).astype(np.int64)
    else:
        nonrel = ((x.judged > 0) & (rel == 0)).astype(np.int64)
    if r.gid is None:
        before = exclusive_count(r, nonrel, r.n).astype(np.float64)
        big_r = n_rel[r.q]
        shortfall = np.minimum(before, big_r)
        terms = rel * (1.0 - ratio(shortfall, np.minimum(big_r, n_nonrel[r.q])))
        return _unscored(x, ratio(np.bincount(r.q, weights=terms, minlength=nq), n_rel),
                         n_nonrel), n_rel == 0
    # per tie group: c judged non-relevant before it, m inside
    start = r.gstart
    assert start is not None  # set with gid, and the case without returned above
    m_count = np.add.reduceat(nonrel, start)
    c = count_before(m_count, np.bincount(r.q[start], minlength=nq)).astype(np.float64)
    r_g = group_relevant(x)
    some = np.flatnonzero(r_g > 0)
    return _unscored(x, _bpref_terms(x, start[some], r_g[some], c[some],
                                     m_count[some].astype(np.float64),
                                     n_rel, n_nonrel), n_nonrel), n_rel == 0


def _bpref_groups(x: MeasureInput, n_rel: np.ndarray, n_nonrel: np.ndarray) -> np.ndarray:
    """bpref of a ranking with tie groups whose rows are all judged: the non-relevant rows
    above a group or in it are the rows there less the relevant ones."""
    r = x.ranking
    assert r.gstart is not None and r.gsize is not None
    r_g = group_relevant(x)
    some = np.flatnonzero(r_g > 0)
    start, r_g = r.gstart[some], r_g[some]
    c = (r.pos[start] - relevant_before(x)[start]).astype(np.float64)
    return _unscored(x, _bpref_terms(x, start, r_g, c, r.gsize[some] - r_g, n_rel, n_nonrel),
                     n_nonrel)


def _bpref_terms(x: MeasureInput, start: np.ndarray, r_g: np.ndarray, c: np.ndarray,
                 m: np.ndarray, n_rel: np.ndarray, n_nonrel: np.ndarray) -> np.ndarray:
    """bpref per query from the tie groups starting at ranked rows ``start`` (those holding
    a relevant row: the others' terms are zeros, of either sign, which add nothing to a
    sum), with ``r_g`` relevant rows in each, ``c`` judged non-relevant rows before each and
    ``m`` inside (floats)."""
    r, nq = x.ranking, x.n_queries
    group_q = r.q[start]
    big_rg = n_rel[group_q]
    scale_g = np.minimum(big_rg, n_nonrel[group_q])
    # mean of min(c + X, R): min(c, R) where m = 0 (most groups: a single relevant row),
    # the very value the sum below gives then (c and R are whole: t is 0 or 1)
    mean = np.minimum(c, big_rg)
    mixed = np.flatnonzero(m > 0)
    if len(mixed):
        c, m, big = c[mixed], m[mixed], big_rg[mixed]
        t = np.clip(big - c, 0.0, m + 1.0)  # values of X with c + X below R
        total = t * c + t * (t - 1.0) / 2.0 + (m + 1.0 - t) * big  # sum of min(c + X, R)
        mean[mixed] = total / (m + 1.0)
    terms = r_g * (1.0 - ratio(mean, scale_g))
    return ratio(np.bincount(group_q, weights=terms, minlength=nq), n_rel)


def every_row_judged(x: MeasureInput) -> bool:
    """Whether every ranked row's document is judged, once per ranking."""
    judged = x.ranking.grouped_judged
    return x.cache.get_or(("every_row_judged", id(x.ranking)),
                          lambda: judged is not None and bool(judged.all()))


def judged_rows(x: MeasureInput) -> np.ndarray:
    """The ranked rows (indices in ranked order) whose document is judged, once per
    ranking."""
    return x.cache.get_or(("judged_rows", id(x.ranking)),
                          lambda: np.flatnonzero(x.judged > 0))


def judged_above(x: MeasureInput) -> tuple[np.ndarray, ...]:
    """The ranked relevant rows (label >= level > 0; a ranking without tie groups), query
    after query: (query, position, relevant rows above, judged non-relevant rows above),
    the counts as floats. From the judged rows alone, once per ranking and level (bpref,
    gm_bpref and infAP share it): a relevant row is judged, so the judged rows above it
    less the relevant ones above it are the judged non-relevant ones."""
    def make() -> tuple[np.ndarray, ...]:
        r, nq = x.ranking, x.n_queries
        if every_row_judged(x):  # the judged rows above are the rows above: the position
            q, pos, _, rel_before = r.positive(x.metric.level)
            return q, pos, rel_before.astype(np.float64), (pos - rel_before).astype(np.float64)
        rows = judged_rows(x)
        q = r.q[rows]
        n = np.bincount(q, minlength=nq)
        judged_before = np.arange(len(rows)) - (np.cumsum(n) - n)[q]
        relevant = r.label[rows] >= x.metric.level
        q, pos, judged_before = q[relevant], r.pos[rows][relevant], judged_before[relevant]
        n = np.bincount(q, minlength=nq)
        rel_before = np.arange(len(q)) - (np.cumsum(n) - n)[q]
        return (q, pos, rel_before.astype(np.float64),
                (judged_before - rel_before).astype(np.float64))

    return x.cache.get_or(("judged_above", id(x.ranking), x.metric.level), make)


def _unscored(x: MeasureInput, values: np.ndarray, n_nonrel: np.ndarray) -> np.ndarray:
    """``no_nonrelevant='nan'``: a query that retrieves a relevant document but has no
    judged non-relevant one has no bpref (its terms divide 0 by min(R, N) = 0), as ranx
    computes it; trec_eval counts each such document 1."""
    if x.metric.no_nonrelevant != "nan":
        return values
    retrieved = np.bincount(x.ranking.q, weights=x.relevant(), minlength=x.n_queries)
    return np.where((n_nonrel == 0) & (retrieved > 0), np.nan, values)
