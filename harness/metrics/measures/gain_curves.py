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

from harness.metrics.layout.ranked import ratio
from harness.metrics.layout.segments import Layout
from harness.metrics.measures.gain import gains
from harness.metrics.measures.rank_points import refuse_average
from harness.metrics.vocabulary.measure import MeasureInput, builtin_measure

__all__ = ["running_sum", "ranked_gains", "ideal_gains"]

#: Where this family's measures stand in the docs' measure table (harness.metrics.measures).
TABLE_ORDER = 8

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
    def make() -> np.ndarray:
        g = x.metric.gain_function()(x.ranking.label)
        return np.where(x.judged > 0, g, 0.0)

    return x.cache.get_or(("ranked_gains", id(x.ranking), x.metric.gain_key), make)


def ideal_gains(x: MeasureInput) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ideal list: (query, 0-based position, gain) of the judged documents of positive
    gain, highest first, and the number per query."""
    def make() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        prep = x.prep
        g = gains(prep, x, prep.judged_label, "judged")
        keep = g > 0
        q, g = prep.judged_q[keep], g[keep]
        order = np.lexsort((-g, q))
        q, g = q[order], g[order]
        n = np.bincount(q, minlength=x.n_queries)
        return q, np.arange(len(q)) - np.repeat(np.cumsum(n) - n, n), g, n

    return x.cache.get_or(("ideal_gains", x.metric.gain_key), make)


class _Nonzero:
    """The ranked rows whose value (a gain, or a gain's group mean) is not 0, query after
    query: only they change a running sum of the values, so sums read at them, or after the
    first ``count`` ranked rows of a query, equal the sums over every row, term for term
    (the other terms are exact zeros)."""

    def __init__(self, x: MeasureInput, values: np.ndarray):
        r = x.ranking
        rows = np.flatnonzero(values != 0)
        self.q, self.pos, self.value = r.q[rows], r.pos[rows], values[rows]
        self.n = np.bincount(self.q, minlength=x.n_queries)
        self.start = np.cumsum(self.n) - self.n
        self.index = np.arange(len(rows)) - self.start[self.q]  # among its query's rows
        self._width = np.int64(int(r.n.max()) + 1 if len(r.n) else 1)

    def running_sum(self, values: np.ndarray) -> np.ndarray:
        """The running sum of ``values`` (one per nonzero row) along each query."""
        return running_sum(self.q, self.index, self.n, values)

    def before(self, q: np.ndarray, count: np.ndarray) -> np.ndarray:
        """How many of query ``q``'s nonzero rows are among its first ``count`` ranked
        rows (``count`` <= the query's rows)."""
        keys = self.q * self._width + self.pos
        return np.searchsorted(keys, q * self._width + count) - self.start[q]


def _at(n_rows: np.ndarray, cum: np.ndarray, q: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The running sum ``cum`` of query ``q`` after its first ``count`` rows (0 for none)."""
    starts = np.cumsum(n_rows) - n_rows
    take = np.minimum(count, n_rows[q])
    return np.where(take > 0, cum[np.maximum(starts[q] + take - 1, 0)] if len(cum) else 0.0,
                    0.0)


@builtin_measure("g", display="G", options=_OPTIONS, graded=True, reads_judged=True,
                  cutoff=False, builtin=True, matches="trec_eval `G` (`G.l=g,...`)",
                  formula="$\\frac{1}{\\sum_j g^*_j} \\sum_{g_i \\ne 0} g_i / \\log_2(2 + "
                          "C_i - S_i)$, $S_i = \\sum_{j \\le i} g_j$, $C_i = \\sum_{j \\le i} "
                          "\\max(g^*_j, 1)$ over the ideal gains $g^*$")
def _g(x: MeasureInput) -> Result:
    refuse_average(x, "G weights each document by the gains above it")
    nq = x.n_queries
    iq, ipos, ig, n_ideal = ideal_gains(x)
    excess = running_sum(iq, ipos, n_ideal, np.maximum(ig, 1.0) - 1.0)
    hit = _Nonzero(x, ranked_gains(x))  # a document of gain 0 adds nothing
    cost = (hit.pos + 1.0) + _at(n_ideal, excess, hit.q, hit.pos + 1)
    got = hit.running_sum(hit.value)
    term = hit.value / np.log2(2.0 + cost - got)
    best = np.bincount(iq, weights=ig, minlength=nq)
    return ratio(np.bincount(hit.q, weights=term, minlength=nq), best), best == 0


def _dcg_prefixes(x: MeasureInput, g: np.ndarray
                  ) -> tuple[_Nonzero, np.ndarray, np.ndarray, np.ndarray]:
    """The ranked rows of nonzero gain with the running DCG there, and the ideal list with
    its running DCG (queries, gains, lengths)."""
    iq, ipos, ig, n_ideal = ideal_gains(x)
    hit = _Nonzero(x, g)
    dcg = hit.running_sum(hit.value / np.log2(hit.pos + 2.0))
    ideal = x.cache.get_or(("ideal_dcg", x.metric.gain_key), lambda: running_sum(
        iq, ipos, n_ideal, ig / np.log2(ipos + 2.0)))
    return hit, dcg, ideal, n_ideal


@builtin_measure("ndcg_rel", display="nDCGrel", options=_OPTIONS, graded=True,
                  reads_judged=True, cutoff=False, builtin=True,
                  matches="trec_eval `ndcg_rel`",
                  formula="mean over the $R^*$ documents of positive gain of $DCG@i / "
                          "IDCG@i$ at the rank $i$ of each retrieved one, $DCG/IDCG$ of the "
                          "whole list for each one not retrieved")
def _ndcg_rel(x: MeasureInput) -> Result:
    refuse_average(x, "nDCGrel reads nDCG at the ranks of the relevant documents")
    nq = x.n_queries
    hit, dcg, ideal, n_ideal = _dcg_prefixes(x, ranked_gains(x))
    positive = hit.value > 0
    q, dcg_here = hit.q[positive], dcg[positive]
    ideal_here = _at(n_ideal, ideal, q, hit.pos[positive] + 1)
    sums = np.bincount(q, weights=ratio(dcg_here, ideal_here), minlength=nq
                       ).astype(np.float64)
    queries = np.arange(nq)
    whole = ratio(_at(hit.n, dcg, queries, hit.n), _at(n_ideal, ideal, queries, n_ideal))
    found = np.bincount(q, minlength=nq)
    sums += (n_ideal - found) * whole
    return np.where(sums > 0, ratio(sums, n_ideal.astype(np.float64)), 0.0), n_ideal == 0


@builtin_measure("rndcg", display="RnDCG", options=_OPTIONS, binary=True, graded=True,
                  reads_judged=True, cutoff=False, builtin=True,
                  matches="trec_eval `Rndcg`",
                  formula="mean of $nDCG@i$ at each rank $i \\ge 1$ where the ideal gain "
                          "changes (at most $R^*$, the documents of positive gain), and at "
                          "the list's end $n$ when $n > R^* + 1$ (0 when $R = 0$ at `level`)")
def _rndcg(x: MeasureInput) -> Result:
    r, nq = x.ranking, x.n_queries
    hit, dcg, ideal, n_ideal = _dcg_prefixes(x, r.group_mean(ranked_gains(x)))
    iq, ipos, ig, _ = ideal_gains(x)
    # ranks i >= 1 where the ideal gain changes: after a change of value, and after the end
    change = np.zeros(len(ig), dtype=bool)
    change[1:] = (ig[1:] != ig[:-1]) & (iq[1:] == iq[:-1])
    bq, bi = iq[change], ipos[change]
    queries = np.flatnonzero(n_ideal > 0)
    bq, bi = np.concatenate([bq, queries]), np.concatenate([bi, n_ideal[queries]])
    # the list's end, when it runs on past the rank just after the ideal list's end
    longer = queries[r.n[queries] > n_ideal[queries] + 1]
    bq, bi = np.concatenate([bq, longer]), np.concatenate([bi, r.n[longer]])
    ranked = np.minimum(bi, r.n[bq])  # the ranked rows among the first bi
    at = ratio(_at(hit.n, dcg, bq, hit.before(bq, ranked)), _at(n_ideal, ideal, bq, bi))
    sums = np.bincount(bq, weights=at, minlength=nq)
    count = np.bincount(bq, minlength=nq)
    n_rel = x.n_relevant()
    return np.where(n_rel > 0, ratio(sums, count.astype(np.float64)), 0.0), n_rel == 0
