"""trec_eval's rank-biased precision and residual (v10), which differ from :mod:`RBP
<harness.metrics.measures.rbp>`'s: its RBP weights each document by its gain scaled into
[0, 1] per query (graded, whatever the relevance level), and its residual is 0 when the
list holds no unjudged document.

Both are sums of per-position terms: with ``ties="average"`` a tied document's value is
replaced by its group's mean. The arithmetic is trec_eval's, to the last bit: ``p^i`` is
``p`` multiplied in ``i`` times, the terms are added in rank order and the sum is
multiplied by ``1 - p`` once.
"""

from __future__ import annotations

import numpy as np

from harness.metrics.layout.ranked import topk_sum
from harness.metrics.measures.judged import judged_rows
from harness.metrics.vocabulary.measure import MeasureInput, builtin_measure

#: Where this family's measures stand in the docs' measure table (harness.metrics.measures).
TABLE_ORDER = 9

__all__: list[str] = []

Result = tuple[np.ndarray, np.ndarray]


def _powers(x: MeasureInput, pos: np.ndarray) -> np.ndarray:
    """``p^pos`` as trec_eval computes it: ``1.0`` multiplied by ``p`` ``pos`` times (a
    running product, which ``p ** pos`` differs from in the last bits)."""
    p = x.metric.p
    n = int(pos.max()) + 1 if len(pos) else 1
    table = np.cumprod(np.concatenate(([1.0], np.full(n - 1, p))))
    return table[pos]


def _discounted(x: MeasureInput, values: np.ndarray) -> np.ndarray:
    """(1 - p) sum_i p^(i-1) values_i over the top k, tied values by their group's mean."""
    r, p = x.ranking, x.metric.p
    terms = _powers(x, r.pos) * r.group_mean(values)
    return (1.0 - p) * topk_sum(r, terms, x.metric.k, x.n_queries)


def _scale(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    """Per query, the lowest and highest gain of the grades 0 .. its top judged grade
    (and of every label a gain table names): trec_eval's table of gains."""
    prep, nq = x.prep, x.n_queries
    gain = x.metric.gain_function()
    top = np.full(nq, -1, dtype=np.int64)
    np.maximum.at(top, prep.judged_q, np.floor(prep.judged_label).astype(np.int64))
    grades = np.arange(max(int(top.max(initial=-1)) + 1, 1), dtype=np.float64)
    level_gain = gain(grades)
    low, high = np.minimum.accumulate(level_gain), np.maximum.accumulate(level_gain)
    has = top >= 0
    lo = np.where(has, low[np.maximum(top, 0)], np.inf)
    hi = np.where(has, high[np.maximum(top, 0)], -np.inf)
    if isinstance(x.metric.gain, tuple):  # every label the table names is a grade
        named = np.array([v for _, v in x.metric.gain])
        lo, hi = np.minimum(lo, named.min()), np.maximum(hi, named.max())
    return np.where(np.isfinite(lo), lo, 0.0), np.where(np.isfinite(hi), hi, 0.0)


@builtin_measure("rbp_scaled", display="RBPscaled", options=("gain", "p"), graded=True,
                  reads_judged=True, builtin=True, matches="trec_eval `rbp` (`rbp.p=x`)",
                  formula="$(1 - p) \\sum_{i=1}^{k} p^{i-1} g'_i$, $g'_i = (g(rel_i) - "
                          "g_{min}) / (g_{max} - g_{min})$ when the query's gains of grades "
                          "$0 .. \\max rel$ leave $[0, 1]$, else $g(rel_i)$; 0 if unjudged")
def _rbp_scaled(x: MeasureInput) -> Result:
    lo, hi = _scale(x)
    r, k = x.ranking, x.metric.k
    rescale = (lo < 0) | (hi > 1)
    if r.sparse():  # an unjudged row adds an exact 0: sum over the judged rows alone
        rows = judged_rows(x)
        if k is not None:
            rows = rows[r.pos[rows] < k]
        q, p = r.q[rows], x.metric.p
        g = x.metric.gain_function()(r.label[rows])
        with np.errstate(invalid="ignore", divide="ignore"):
            scaled = np.where(rescale[q], (g - lo[q]) / (hi - lo)[q], g)
        terms = _powers(x, r.pos[rows]) * scaled
        values = (1.0 - p) * np.bincount(q, weights=terms, minlength=x.n_queries)
        return values, np.zeros(x.n_queries, dtype=bool)
    g = x.metric.gain_function()(r.label)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.where(rescale[r.q], (g - lo[r.q]) / (hi - lo)[r.q], g)
    values = np.where(x.judged > 0, scaled, 0.0)
    return _discounted(x, values), np.zeros(x.n_queries, dtype=bool)


@builtin_measure("rbp_resid", display="RBPresid", options=("p",), reads_judged=True,
                  cutoff=False, builtin=True, matches="trec_eval `rbp_resid` (`rbp_resid.p=x`)",
                  formula="$(1 - p) \\sum_{i=1}^{n} p^{i-1} [d_i \\text{ unjudged}] + p^n$ "
                          "when some $d_i$ is unjudged, else 0")
def _rbp_resid(x: MeasureInput) -> Result:
    unjudged = 1.0 - x.judged
    n_docs = x.n_docs().astype(np.int64)
    residual = _powers(x, n_docs) + _discounted(x, unjudged)
    some = np.bincount(x.ranking.q, weights=unjudged, minlength=x.n_queries) > 0
    return np.where(some, residual, 0.0), np.zeros(x.n_queries, dtype=bool)
