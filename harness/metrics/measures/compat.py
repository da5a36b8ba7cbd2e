"""Compatibility (Clarke, Vtyurina and Smucker 2021): the rank-biased overlap of the run
with an ideal ranking, as ir_measures' own ``compat`` provider computes it.

The ideal ranking holds the query's judged documents with a label above 0: by label,
highest first; equal labels by run score, highest first (an unretrieved document counts
0.0); then in the order of the qrels' rows (a labelled run: its own rows). Both lists are
read to the depth ``D = max(n, R)`` (``n`` documents retrieved, ``R`` in the ideal); with
persistence ``p``::

    RBO(a, b) = (1 / Z) sum_{i=1}^{D} p^{i-1} |a_{1..i} ∩ b_{1..i}| / i,
    Z = sum_{i=1}^{D} p^{i-1}

and ``Compat = RBO(run, ideal) / RBO(ideal, ideal)`` with ``normalize=True`` (the run's
RBO alone with ``normalize=False``).

A document at run rank ``j`` and ideal rank ``m`` is in both prefixes from rank
``max(j, m)`` on, so RBO is a sum over documents of ``S(max(j, m))``, with
``S(t) = sum_{i=t}^{D} p^{i-1} / i`` a difference of one table of partial sums. With
``ties="average"`` each tied document's term is averaged over the ranks of its tie group,
the exact expectation over the orders of the group (the ideal ranking does not move).
"""

from __future__ import annotations

import numpy as np

from harness.metrics.layout.ranked import ratio
from harness.metrics.vocabulary.measure import MeasureInput, builtin_measure

#: Where this family's measures stand in the docs' measure table (harness.metrics.measures).
TABLE_ORDER = 11

__all__: list[str] = []


def _ideal_ranks(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    """Per grouped row of ``x.prep``, its 1-based rank in the ideal ranking (0: not in
    it); per query, the length ``R`` of the ideal ranking."""
    import pandas as pd

    prep = x.prep
    nq = prep.n_queries
    j = prep.judgments
    if j is None:  # a labelled run: its judged rows are the judgments, in row order
        rows = np.flatnonzero((prep.label > 0) & np.asarray(prep.judged, dtype=bool))
        jq, label, order, hit = prep.q[rows], prep.label[rows], prep.row[rows], rows
    else:
        every = pd.to_numeric(j.frame["label"]).to_numpy(dtype=np.float64)
        codes = prep.qids.get_indexer(j.qid)
        order = np.flatnonzero((codes >= 0) & (every > 0))
        jq, label = codes[order], every[order]
        run_side = pd.DataFrame({"q": prep.q, "d": prep.docid.to_numpy()[prep.row],
                                 "g": np.arange(len(prep.q))})
        judged_side = pd.DataFrame({"q": jq, "d": j.docid.to_numpy()[order]})
        hit = judged_side.merge(run_side, on=["q", "d"], how="left")["g"] \
            .fillna(-1).to_numpy(dtype=np.int64)
    found = hit >= 0
    score = np.zeros(len(hit))  # an unretrieved document counts 0.0
    score[found] = prep.score[hit[found]]
    ranked = np.lexsort((order, -score, -label, jq))
    counts = np.bincount(jq, minlength=nq)
    starts = np.cumsum(counts) - counts
    rank = np.arange(len(ranked)) - starts[jq[ranked]] + 1
    m = np.zeros(len(prep.q), dtype=np.int64)
    retrieved = hit[ranked] >= 0
    m[hit[ranked][retrieved]] = rank[retrieved]
    return m, counts


@builtin_measure("compat", display="Compatibility", options=("empty", "empty_weight", "p",
                                                               "normalize"),
                  graded=True, cutoff=False, reads_judged=True, builtin=True,
                  matches="ir_measures `Compat(p=...,normalize=...)` (its own provider)",
                  formula="$\\frac{1}{Z} \\sum_{i=1}^{D} p^{i-1} \\frac{|run_{1..i} \\cap "
                          "ideal_{1..i}|}{i}$ (rank-biased overlap with the ideal ranking "
                          "by label, then run score, then qrels order; $D = \\max(n, R)$, "
                          "$Z = \\sum_{i \\le D} p^{i-1}$), divided by the ideal's own "
                          "overlap with `normalize=True`")
def _compat(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    r, p, nq = x.ranking, x.metric.p, x.n_queries
    m_grouped, big_r = _ideal_ranks(x)
    depth = np.maximum(x.prep.n_docs, big_r)
    top = int(depth.max()) if nq else 0
    i = np.arange(1, top + 1, dtype=np.float64)
    c = np.concatenate([[0.0], np.cumsum(p ** (i - 1.0) / i)])  # c[t] = sum_{i<=t}
    m = m_grouped[r.perm]
    rows = np.flatnonzero(m > 0)
    q, mr, j = r.q[rows], m[rows], r.pos[rows] + 1
    if r.gid is None:
        below = c[np.maximum(j, mr) - 1]
    else:  # the mean of c[max(j, m) - 1] over the ranks j = a..b of the tie group
        assert r.gstart is not None and r.gsize is not None  # set with gid
        gid = r.gid[rows]
        size = r.gsize[gid]
        a = r.pos[r.gstart[gid]] + 1
        b = a + size - 1
        cc = np.concatenate([[0.0], np.cumsum(c)])  # cc[t] = c[0] + ... + c[t-1]
        upto = np.clip(mr - a + 1, 0, size)  # ranks j <= m: c[m - 1] each
        lo = np.maximum(a, mr + 1)
        past = np.where(lo <= b, cc[b] - cc[np.minimum(lo, b) - 1], 0.0)
        below = (upto * c[mr - 1] + past) / size
    overlap = np.bincount(q, weights=c[depth[q]] - below, minlength=nq)
    if x.metric.normalize:  # RBO(ideal, ideal): min(i, R) / i
        best = (1.0 - p ** big_r) / (1.0 - p) + big_r * (c[depth] - c[big_r])
        value = ratio(overlap, best)
    else:
        value = ratio(overlap, (1.0 - p ** depth) / (1.0 - p))
    return value, big_r == 0
