"""Intent-aware (diversity) measures over subtopic judgments, as ndeval computes them
(pyndeval 0.0.8, ir_measures' provider): alpha-DCG and alpha-nDCG (Clarke et al. 2008),
ERR-IA and nERR-IA (Chapelle et al. 2009), NRBP and nNRBP (Clarke et al. 2009), AP-IA,
P-IA and subtopic recall.

They read the qrels' ``subtopic`` column (:mod:`harness.metrics.layout.subtopics`): relevance is
``label >= level`` per (document, subtopic), and ``N`` counts the query's subtopics with a
relevant document (a query with none is empty). ndeval's conventions, kept here:

- ERR-IA and alpha-DCG divide by an "ideal ideal" list, ``N`` relevant subtopics at every
  rank, except at k = 1, where ndeval leaves the value undivided (it can exceed 1);
- nERR-IA, alpha-nDCG and nNRBP divide by the same measure of a greedy ideal ranking (the
  document of highest gain given those above at each rank, ties to the larger docid);
- without a cut-off, k is the query's list length; ndeval itself stops at k = 20;
- NRBP's persistence ``beta`` is the option ``p``; its redundancy intolerance ``alpha``.

The ideal ranking is built per query in Python (it is a greedy loop); ``ties="average"``
is refused but by P-IA, a sum of per-rank terms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from harness.errors import InputError
from harness.metrics.measures import diversity_ndeval as nd
from harness.metrics.measures.rank_points import refuse_average
from harness.metrics.vocabulary.measure import MeasureInput, builtin_measure

#: Where this family's measures stand in the docs' measure table (harness.metrics.measures).
TABLE_ORDER = 12

__all__: list[str] = []

Result = tuple[np.ndarray, np.ndarray]
_MATCH = "ir_measures `{}` (pyndeval 0.0.8)"
_EMPTY = ("empty", "empty_weight")
_REL = "$r_{i,s} = [label_{d_i, s} \\ge level]$, $N$ subtopics with a relevant document"


def _judgments(x: MeasureInput) -> tuple[list[nd.QueryJudgments | None], np.ndarray]:
    """Per query, its subtopic judgments (None: no subtopic judged); per grouped row, the
    row of its document in its query's matrix (-1: no subtopic judgment). Cached."""
    import pandas as pd

    prep, metric = x.prep, x.metric
    subs = None if prep.judgments is None else prep.judgments.subtopics
    if subs is None:
        raise InputError(f"{metric.display_name} needs subtopic judgments: a 'subtopic' "
                         "column in the qrels (harness eval: TREC qrels whose second column "
                         "is the subtopic)", table="qrels", column="subtopic")

    def build() -> tuple[list[nd.QueryJudgments | None], np.ndarray]:
        codes = prep.qids.get_indexer(subs["qid"])
        keep = codes >= 0
        frame = pd.DataFrame({"q": codes[keep], "d": subs["docid"].to_numpy()[keep],
                              "s": subs["subtopic"].to_numpy()[keep],
                              "rel": (subs["label"].to_numpy()[keep] >= metric.level)
                              .astype(np.int64)})
        out: list[nd.QueryJudgments | None] = [None] * prep.n_queries
        docs = []
        for q, rows in frame.groupby("q", sort=False):
            d_code, d_uniq = pd.factorize(rows["d"])
            s_code, s_uniq = pd.factorize(rows["s"])  # first appearance in the query
            rel = np.zeros((len(d_uniq), len(s_uniq)), dtype=np.int64)
            rel[d_code, s_code] = rows["rel"].to_numpy()
            out[int(q)] = nd.QueryJudgments(rel, np.asarray(d_uniq, dtype=str))
            docs.append(pd.DataFrame({"q": q, "d": d_uniq, "dc": np.arange(len(d_uniq))}))
        run_side = pd.DataFrame({"q": prep.q, "d": prep.docid.to_numpy()[prep.row]})
        table = pd.concat(docs) if docs else pd.DataFrame({"q": [], "d": [], "dc": []})
        dc = run_side.merge(table, on=["q", "d"], how="left")["dc"].fillna(-1)
        return out, dc.to_numpy(dtype=np.int64)

    return x.cache.get_or(("subtopics", id(prep), metric.level), build)


def _per_query(x: MeasureInput, value: Callable[[np.ndarray, nd.QueryJudgments, int],
                                                 float]) -> Result:
    """``value(ranked matrix, judgments, n)`` per query with a relevant subtopic; the
    ranked matrix holds the rows of the ranked documents (the top ``k`` of ``n``)."""
    judged, doc = _judgments(x)
    r, nq = x.ranking, x.n_queries
    out, empty = np.zeros(nq), np.ones(nq, dtype=bool)
    starts = np.cumsum(r.n) - r.n
    for q in range(nq):
        jq = judged[q]
        if jq is None or jq.n_subtopics == 0:
            continue
        empty[q] = False
        rows = doc[r.perm[starts[q]:starts[q] + r.n[q]]]
        zeros = np.zeros((1, jq.rel.shape[1]), dtype=np.int64)
        matrix = np.vstack([jq.rel, zeros])[rows]  # -1: the row of zeros
        out[q] = value(matrix, jq, int(x.prep.n_docs[q]))
    return out, empty


def _depth(x: MeasureInput, n: int) -> int:
    return n if x.metric.k is None else x.metric.k


def _cascade(x: MeasureInput, weights: Callable[[int], np.ndarray], ideal: bool) -> Result:
    """ERR-IA / alpha-DCG (``ideal=False``) and their normalised forms at the cut-off."""
    refuse_average(x, "a document's gain depends on the documents above it")
    alpha = x.metric.alpha

    def value(matrix: np.ndarray, jq: nd.QueryJudgments, n: int) -> float:
        depth = _depth(x, n)
        if depth == 0:
            return 0.0
        w = weights(depth)
        run = nd.normalised(nd.cumulated(nd.gains(matrix, alpha), depth, w),
                            jq.n_subtopics, alpha, w)[depth - 1]
        if not ideal:
            return float(run)
        best_rows = _ideal(x, jq)
        best = nd.normalised(nd.cumulated(nd.gains(best_rows, alpha), depth, w),
                             jq.n_subtopics, alpha, w)[depth - 1]
        return float(run / best) if run else 0.0

    return _per_query(x, value)


def _ideal(x: MeasureInput, jq: nd.QueryJudgments) -> np.ndarray:
    return x.cache.get_or(("ideal_ia", id(jq), x.metric.alpha),
                          lambda: nd.greedy_ideal(jq, x.metric.alpha))


def _declare(name: str, display: str, irm: str, formula: str, options: tuple[str, ...] = (),
             cutoff: bool = True) -> Callable[[Any], Any]:
    return builtin_measure(name, display=display, options=(*_EMPTY, *options),
                            binary=True, cutoff=cutoff, reads_judged=True, subtopics=True,
                            builtin=True,
                            matches=_MATCH.format(irm), formula=formula + "; " + _REL)


@_declare("alpha_dcg", "AlphaDCG", "alpha_DCG(alpha=...)@k", "$\\sum_{i \\le k} g_i / "
          "\\log_2(i + 1)$ over $\\sum_{i \\le k} N (1-\\alpha)^{i-1} / \\log_2(i + 1)$ "
          "(k = 1: undivided), $g_i = \\sum_s r_{i,s} (1-\\alpha)^{c_{i,s}}$, $c_{i,s}$ "
          "documents above covering s", ("alpha",))
def _alpha_dcg(x: MeasureInput) -> Result:
    return _cascade(x, nd.dcg_weights, ideal=False)


@_declare("alpha_ndcg", "AlphaNDCG", "alpha_nDCG(alpha=...)@k", "alpha-DCG@k over "
          "alpha-DCG@k of the greedy ideal ranking", ("alpha",))
def _alpha_ndcg(x: MeasureInput) -> Result:
    return _cascade(x, nd.dcg_weights, ideal=True)


@_declare("err_ia", "ERRIA", "ERR_IA@k", "$\\sum_{i \\le k} g_i / i$ over $\\sum_{i \\le k} "
          "N (1-\\alpha)^{i-1} / i$ (k = 1: undivided), $g_i$ as alpha-DCG's", ("alpha",))
def _err_ia(x: MeasureInput) -> Result:
    return _cascade(x, nd.err_weights, ideal=False)


@_declare("nerr_ia", "NERRIA", "nERR_IA@k", "ERR-IA@k over ERR-IA@k of the greedy ideal "
          "ranking", ("alpha",))
def _nerr_ia(x: MeasureInput) -> Result:
    return _cascade(x, nd.err_weights, ideal=True)


def _nrbp(x: MeasureInput, ideal: bool) -> Result:
    refuse_average(x, "a document's gain depends on the documents above it")
    alpha, beta = x.metric.alpha, x.metric.p

    def value(matrix: np.ndarray, jq: nd.QueryJudgments, n: int) -> float:
        run = nd.novelty_rbp(nd.gains(matrix, alpha), jq.n_subtopics, alpha, beta)
        if not ideal:
            return run
        return run / nd.novelty_rbp(nd.gains(_ideal(x, jq), alpha), jq.n_subtopics, alpha, beta)

    return _per_query(x, value)


@_declare("nrbp", "NoveltyRBP", "NRBP(alpha=...,beta=...)", "$\\frac{1 - (1-\\alpha) "
          "\\beta}{N} \\sum_i g_i \\beta^{i-1}$ ($\\beta$ = `p`), $g_i$ as alpha-DCG's",
          ("alpha", "p"), cutoff=False)
def _nrbp_run(x: MeasureInput) -> Result:
    return _nrbp(x, ideal=False)


@_declare("nnrbp", "NNoveltyRBP", "nNRBP(alpha=...,beta=...)", "NRBP over NRBP of the "
          "greedy ideal ranking", ("alpha", "p"), cutoff=False)
def _nnrbp(x: MeasureInput) -> Result:
    return _nrbp(x, ideal=True)


@_declare("ap_ia", "APIA", "AP_IA", "$\\frac{1}{N} \\sum_s AP_s$, $AP_s$ the average "
          "precision of subtopic s over its relevant documents", cutoff=False)
def _ap_ia(x: MeasureInput) -> Result:
    refuse_average(x, "AP-IA reads the relevant documents above each rank")
    return _per_query(x, lambda matrix, jq, n: nd.map_ia(matrix, jq))


@_declare("p_ia", "PIA", "P_IA@k", "$\\frac{1}{k N} \\sum_{i \\le k} \\sum_s r_{i,s}$ "
          "(k: the list length without a cut-off)")
def _p_ia(x: MeasureInput) -> Result:
    judged, doc = _judgments(x)
    r = x.ranking
    width = max((len(j.docids) for j in judged if j is not None), default=0) + 1
    table = np.zeros((x.n_queries, width))  # relevant subtopics per document; last: 0
    for q, j in enumerate(judged):
        if j is not None:
            table[q, :len(j.docids)] = j.rel.sum(axis=1)
    counts = table[r.q, doc[r.perm]]  # a document without subtopic judgments: -1, the 0
    hits = x.top_k_sum(counts)
    n_sub = np.array([0 if j is None else j.n_subtopics for j in judged], dtype=np.float64)
    depth = x.prep.n_docs.astype(np.float64) if x.metric.k is None else \
        np.full(x.n_queries, float(x.metric.k))
    value = np.zeros(x.n_queries)
    np.divide(hits, depth * n_sub, out=value, where=depth * n_sub > 0)
    return value, n_sub == 0


@_declare("strecall", "SubtopicRecall", "StRecall@k", "$\\frac{1}{N} |\\{s : \\exists i "
          "\\le k, r_{i,s} = 1\\}|$")
def _strecall(x: MeasureInput) -> Result:
    refuse_average(x, "subtopic recall counts a subtopic once, at its first document")

    def value(matrix: np.ndarray, jq: nd.QueryJudgments, n: int) -> float:
        top = matrix[:_depth(x, n)]
        return float((top.sum(axis=0) > 0).sum()) / float(jq.n_subtopics)

    return _per_query(x, value)
