"""trec_eval's experimental graded measures read along the whole ranking: G, nDCG averaged
over the relevant documents (``ndcg_rel``) and nDCG averaged at the R levels (``Rndcg``).

Each reads the gains of the ranked documents (``gain`` of the label; 0 for an unjudged
document) and the ideal list: the positive gains of the query's judged documents, highest
first. Sums along a query are running sums over its own row of a padded matrix, so a
query's value never depends on the other queries evaluated with it. nDCG at the R levels is
a mean of DCG prefixes, linear in the gains: with ``ties="average"`` a tied document's gain
is replaced by its group's mean. G and ``ndcg_rel`` weight each document by a non-linear
function of the gains above it: ``ties="average"`` raises.
"""

from __future__ import annotations

import numpy as np

from harness.metrics.measures.gain import gains
from harness.metrics.measures.rank_points import refuse_average
from harness.metrics.ranked import ratio
from harness.metrics.registry import MeasureInput, register_measure
from harness.metrics.segments import Layout

__all__ = ["running_sum", "ranked_gains", "ideal_gains"]

Result = tuple[np.ndarray, np.ndarray]
_OPTIONS = ("gain", "empty", "empty_weight")


def running_sum(q: np.ndarray, pos: np.ndarray, n: np.ndarray, values: np.ndarray
                ) -> np.ndarray:
    """Per row (rows grouped by query ``q`` at 0-based ``pos``; ``n`` rows per query), the
    sum of ``values`` over its query's rows up to and including it."""
    out = np.empty(len(values))
    layout = Layout.of(np.cumsum(n) - n, n, q, pos)
    for qidx, width, rows, flat, _ in layout.buckets:
        m = np.zeros(len(qidx) * width)
        m[flat] = values[rows]
        out[rows] = np.cumsum(m.reshape(len(qidx), width), axis=1).reshape(-1)[flat]
    return out


def ranked_gains(x: MeasureInput) -> np.ndarray:
    """Per ranked row, its gain (0 when unjudged, whatever the gain of label 0)."""
    g = x.metric.gain_function()(x.ranking.label)
    return np.where(x.judged > 0, g, 0.0)


def ideal_gains(x: MeasureInput) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ideal list: (query, 0-based position, gain) of the judged documents of positive
    gain, highest first, and the number per query."""
    prep = x.prep
    g = gains(prep, x, prep.judged_label, "judged")
    keep = g > 0
    q, g = prep.judged_q[keep], g[keep]
    order = np.lexsort((-g, q))
    q, g = q[order], g[order]
    n = np.bincount(q, minlength=x.n_queries)
    return q, np.arange(len(q)) - np.repeat(np.cumsum(n) - n, n), g, n


def _at(n_rows: np.ndarray, cum: np.ndarray, q: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The running sum ``cum`` of query ``q`` after its first ``count`` rows (0 for none)."""
    starts = np.cumsum(n_rows) - n_rows
    take = np.minimum(count, n_rows[q])
    return np.where(take > 0, cum[np.maximum(starts[q] + take - 1, 0)] if len(cum) else 0.0,
                    0.0)


@register_measure("g", display="G", options=_OPTIONS, graded=True, reads_judged=True,
                  cutoff=False, builtin=True, matches="trec_eval `G` (`G.l=g,...`)",
                  formula="$\\frac{1}{\\sum_j g^*_j} \\sum_{g_i \\ne 0} g_i / \\log_2(2 + "
                          "C_i - S_i)$, $S_i = \\sum_{j \\le i} g_j$, $C_i = \\sum_{j \\le i} "
                          "\\max(g^*_j, 1)$ over the ideal gains $g^*$")
def _g(x: MeasureInput) -> Result:
    refuse_average(x, "G weights each document by the gains above it")
    r, nq = x.ranking, x.n_queries
    g = ranked_gains(x)
    iq, ipos, ig, n_ideal = ideal_gains(x)
    excess = running_sum(iq, ipos, n_ideal, np.maximum(ig, 1.0) - 1.0)
    cost = (r.pos + 1.0) + _at(n_ideal, excess, r.q, r.pos + 1)
    got = running_sum(r.q, r.pos, r.n, g)
    hit = g != 0
    term = g[hit] / np.log2(2.0 + cost[hit] - got[hit])
    best = np.bincount(iq, weights=ig, minlength=nq)
    return ratio(np.bincount(r.q[hit], weights=term, minlength=nq), best), best == 0


def _dcg_prefixes(x: MeasureInput, g: np.ndarray) -> tuple[np.ndarray, ...]:
    """Running DCG of the ranking and of the ideal list, with the ideal list."""
    r = x.ranking
    iq, ipos, ig, n_ideal = ideal_gains(x)
    dcg = running_sum(r.q, r.pos, r.n, g / np.log2(r.pos + 2.0))
    ideal = running_sum(iq, ipos, n_ideal, ig / np.log2(ipos + 2.0))
    return dcg, ideal, iq, ipos, ig, n_ideal


@register_measure("ndcg_rel", display="nDCGrel", options=_OPTIONS, graded=True,
                  reads_judged=True, cutoff=False, builtin=True,
                  matches="trec_eval `ndcg_rel`",
                  formula="mean over the $R^*$ documents of positive gain of $DCG@i / "
                          "IDCG@i$ at the rank $i$ of each retrieved one, $DCG/IDCG$ of the "
                          "whole list for each one not retrieved")
def _ndcg_rel(x: MeasureInput) -> Result:
    refuse_average(x, "nDCGrel reads nDCG at the ranks of the relevant documents")
    r, nq = x.ranking, x.n_queries
    g = ranked_gains(x)
    dcg, ideal, iq, _, _, n_ideal = _dcg_prefixes(x, g)
    ideal_here = _at(n_ideal, ideal, r.q, r.pos + 1)
    hit = g > 0
    sums = np.bincount(r.q[hit], weights=ratio(dcg[hit], ideal_here[hit]),
                       minlength=nq).astype(np.float64)
    queries = np.arange(nq)
    whole = ratio(_at(r.n, dcg, queries, r.n), _at(n_ideal, ideal, queries, n_ideal))
    found = np.bincount(r.q[hit], minlength=nq)
    sums += (n_ideal - found) * whole
    return np.where(sums > 0, ratio(sums, n_ideal.astype(np.float64)), 0.0), n_ideal == 0


@register_measure("rndcg", display="RnDCG", options=_OPTIONS, binary=True, graded=True,
                  reads_judged=True, cutoff=False, builtin=True,
                  matches="trec_eval `Rndcg`",
                  formula="mean of $nDCG@i$ at each rank $i \\ge 1$ where the ideal gain "
                          "changes (at most $R^*$, the documents of positive gain), and at "
                          "the list's end $n$ when $n > R^* + 1$ (0 when $R = 0$ at `level`)")
def _rndcg(x: MeasureInput) -> Result:
    r, nq = x.ranking, x.n_queries
    g = r.group_mean(ranked_gains(x))
    dcg, ideal, iq, ipos, ig, n_ideal = _dcg_prefixes(x, g)
    # ranks i >= 1 where the ideal gain changes: after a change of value, and after the end
    change = np.zeros(len(ig), dtype=bool)
    change[1:] = (ig[1:] != ig[:-1]) & (iq[1:] == iq[:-1])
    bq, bi = iq[change], ipos[change]
    queries = np.flatnonzero(n_ideal > 0)
    bq, bi = np.concatenate([bq, queries]), np.concatenate([bi, n_ideal[queries]])
    # the list's end, when it runs on past the rank just after the ideal list's end
    longer = queries[r.n[queries] > n_ideal[queries] + 1]
    bq, bi = np.concatenate([bq, longer]), np.concatenate([bi, r.n[longer]])
    at = ratio(_at(r.n, dcg, bq, bi), _at(n_ideal, ideal, bq, bi))
    sums = np.bincount(bq, weights=at, minlength=nq)
    count = np.bincount(bq, minlength=nq)
    n_rel = x.n_relevant()
    return np.where(n_rel > 0, ratio(sums, count.astype(np.float64)), 0.0), n_rel == 0
