"""trec_eval's measures read at ranks set by R or a cut-off, and its inferred and binary-gain
averages: RprecMult, relative precision, the interpolated-precision average (11pt_avg),
Unj@k, infAP and binG.

RprecMult, relative precision and Unj@k are sums of per-position terms: with
``ties="average"`` a tied document's indicator is replaced by its group's mean. The
interpolated-precision average is a maximum over ranks, and infAP and binG weight each
relevant document by a non-linear function of the documents above it: their expectation
over tied orders is not computed, and ``ties="average"`` raises
:class:`MetricDefinitionError`.
"""

from __future__ import annotations

import numpy as np

from harness.errors import MetricDefinitionError
from harness.metrics.layout.ranked import exclusive_count, ratio
from harness.metrics.measures.judged import judged_above
from harness.metrics.measures.recall_levels import interpolated_at, relevant_within
from harness.metrics.vocabulary.measure import MeasureInput, builtin_measure

__all__ = ["refuse_average"]

#: Where this family's measures stand in the docs' measure table (harness.metrics.measures).
TABLE_ORDER = 7

Result = tuple[np.ndarray, np.ndarray]
_EMPTY = ("empty", "empty_weight")
#: trec_eval's INFAP_EPSILON.
INFAP_EPSILON = 1e-5


def refuse_average(x: MeasureInput, why: str) -> None:
    """Raise for ``ties='average'``: the measure's expectation over tied orders is not
    computed."""
    if x.metric.ties == "average":
        raise MetricDefinitionError(
            f"{x.metric.display_name}: {why}, whose expectation over tied orders is not "
            "computed; choose ties='docid' (trec_eval), 'input', 'random', 'optimistic' or "
            "'pessimistic'")


@builtin_measure("rprec_mult", display="RprecMult", options=(*_EMPTY, "mult"), binary=True,
                  cutoff=False, builtin=True, unjudged_bounds="swap",
                  matches="trec_eval `Rprec_mult_x` (`Rprec_mult.x`)",
                  formula="$P@c$ with $c = \\lfloor mult \\cdot R + 0.9 \\rfloor$, dividing by "
                          "$c$ past the list's end (0 when $c = 0$)")
def _rprec_mult(x: MeasureInput) -> Result:
    n_rel = x.n_relevant()
    cut = np.floor(x.metric.mult * n_rel + 0.9)
    return ratio(relevant_within(x, cut), cut), n_rel == 0


@builtin_measure("relative_precision", display="RelP", options=_EMPTY, binary=True,
                  builtin=True, unjudged_bounds="swap", matches="trec_eval `relative_P_k`",
                  formula="$\\frac{1}{\\min(k, R)} \\sum_{i=1}^{k} [rel_i \\ge level]$ ($k$ = "
                          "the list length without a cut-off)")
def _relative_precision(x: MeasureInput) -> Result:
    n_rel, k = x.n_relevant(), x.metric.k
    depth = x.n_docs() if k is None else np.full(x.n_queries, float(k))
    return ratio(relevant_within(x, None if k is None else depth), np.minimum(depth, n_rel)
                 ), n_rel == 0


@builtin_measure("unj", display="Unj", options=(), reads_judged=True, builtin=True,
                  matches="trec_eval `unj_k`",
                  formula="$\\frac{1}{k} \\sum_{i=1}^{k} [d_i \\text{ unjudged}]$ (missing "
                          "ranks count as judged; $k$ = the list length without a cut-off)")
def _unj(x: MeasureInput) -> Result:
    k = x.metric.k
    depth = x.n_docs() if k is None else np.full(x.n_queries, float(k))
    return ratio(x.top_k_sum(1.0 - x.judged), depth), np.zeros(x.n_queries, dtype=bool)


@builtin_measure("iprec_avg", display="IPrecAvg", options=(*_EMPTY, "levels", "recall_cutoff"),
                  binary=True, cutoff=False, builtin=True, unjudged_bounds="swap",
                  matches="trec_eval `11pt_avg` (`11pt_avg.x,y,...`)",
                  formula="mean over the recall levels $x$ of $\\max_{i \\ge i_x} P@i$, $i_x$ "
                          "the rank of the $\\max(1, \\lfloor xR + 0.9 \\rfloor)$-th "
                          "relevant document (0 when fewer are retrieved); "
                          "$\\mathrm{round}(xR)$, halves up, under recall_cutoff=nearest")
def _iprec_avg(x: MeasureInput) -> Result:
    refuse_average(x, "interpolated precision is a maximum over ranks")
    total = np.zeros(x.n_queries)
    for level in x.metric.levels:  # a few levels; every query at once
        total += interpolated_at(x, level)  # NaN where a level is (see interpolated_at)
    values = total / len(x.metric.levels)
    return values, (x.n_relevant() == 0) & ~np.isnan(values)


# unit_range: each term is 1/(i+1) + i/(i+1) times two ratios at most 1 (the rows above
# counted, r + s + u <= i; (r + eps) / (r + s + 2 eps) < 1), so at most 1; the relevant
# ranked rows are at most R
@builtin_measure("infap", display="infAP", options=_EMPTY, binary=True, reads_judged=True,
                  cutoff=False, builtin=True, unit_range=True, matches="trec_eval `infAP`",
                  formula="$\\frac{1}{R} \\sum_{rel_i \\ge level} \\frac{1}{i}\\left(1 + "
                          "(r_i + s_i + u_i) \\frac{r_i + \\epsilon}{r_i + s_i + 2\\epsilon}"
                          "\\right)$, $r_i$ / $s_i$ judged relevant / non-relevant above "
                          "$i$, $u_i$ those above judged with a negative label (in the pool, "
                          "not judged; other unjudged documents are outside it), "
                          "$\\epsilon = 10^{-5}$")
def _infap(x: MeasureInput) -> Result:
    refuse_average(x, "infAP weights each relevant document by a ratio of counts above it")
    r, nq = x.ranking, x.n_queries
    n_rel = x.n_relevant()
    if r.sparse() and x.metric.level > 0:  # the relevant rows, with the counts above each
        q, pos, a, s = judged_above(x)
        hit = None
    else:
        rel = x.relevant()
        nonrel = (x.judged > 0) & (rel == 0)
        hit = rel > 0
        q, pos = r.q[hit], r.pos[hit]
        a = exclusive_count(r, rel.astype(np.int64), r.n)[hit].astype(np.float64)
        s = exclusive_count(r, nonrel.astype(np.int64), r.n)[hit].astype(np.float64)
    # in the pool but not judged (a negative label): counted in the share of documents
    # above whose precision is inferred, as trec_eval's pool_unjudged_so_far
    judged = a + s
    counted = judged  # none in the pool but unjudged above any row: adding zeros (to
    if r.grouped_negative is not None:  # counts >= 0) would change no bit
        pooled = exclusive_count(r, x.negative.astype(np.int64), r.n).astype(np.float64)
        counted = judged + pooled[hit if hit is not None else x.relevant() > 0]
    j = pos.astype(np.float64)
    j1 = j + 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        term = 1.0 / j1 + (j / j1) * (counted / j) * (
            (a + INFAP_EPSILON) / (judged + 2.0 * INFAP_EPSILON))
    term[j == 0] = 1.0
    return ratio(np.bincount(q, weights=term, minlength=nq), n_rel), n_rel == 0


@builtin_measure("bin_g", display="BinG", options=_EMPTY, binary=True, cutoff=False,
                  builtin=True, unjudged_bounds="swap", matches="trec_eval `binG`",
                  formula="$\\frac{1}{R} \\sum_{rel_i \\ge level} 1 / \\log_2(2 + m_i)$, "
                          "$m_i$ the documents above $i$ that are not relevant")
def _bin_g(x: MeasureInput) -> Result:
    refuse_average(x, "binG weights each relevant document by the documents above it")
    r, nq = x.ranking, x.n_queries
    n_rel = x.n_relevant()
    if r.sparse() and x.metric.level > 0:  # the relevant rows, with those above each
        q, pos, _, above = r.positive(x.metric.level)
    else:
        rel = x.relevant()
        hit = rel > 0
        q, pos = r.q[hit], r.pos[hit]
        above = exclusive_count(r, rel.astype(np.int64), r.n)[hit]
    term = 1.0 / np.log2(2.0 + (pos - above).astype(np.float64))
    return ratio(np.bincount(q, weights=term, minlength=nq), n_rel), n_rel == 0
