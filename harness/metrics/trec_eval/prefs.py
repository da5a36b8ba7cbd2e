"""trec_eval's preference measures (``-m all_prefs`` with ``-R prefs`` or ``-R qrels_prefs``).

Definitions follow trec_eval's ``form_prefs_counts.c`` and ``m_prefs_*.c`` (re-derived, not
translated). Per query, each judged document gets a rank: the judged documents the run
retrieved come first, in run order (score descending, ties by docno *ascending*: the
preference code orders ties the other way from trec_eval's other measures), then the
judged documents the run missed, by docno. ``NJR`` is the number retrieved.

A judgment group (JG) with one sub-group prefers every document to every document of a
lower level ("equivalence classes", counted here in closed form); a JG with several
sub-groups gives a partial order whose transitive closure is taken (a boolean matrix per
JG). A preference A > B is *fulfilled* (``ful``) when A ranks above B and A was retrieved;
it is a *ret* preference when both were retrieved, *imp* when exactly one was, and
*notoccur* when neither was. Level > 0 marks a relevant document, level 0 (or below, in a
one-sub-group JG) a non-relevant one.

Two quirks of trec_eval are kept, since its outputs are the reference: a query where some
JG scores 0/0 in ``prefs_avgjg_Rnonrel[_ret]`` scores 0 for that measure (the NaN makes
the sum fail its ``> 0`` test), and in the re-count of those measures the documents of the
lowest level are also paired with the R kept non-relevant documents. Where trec_eval would
read past the last class (more relevant documents than documents of the lowest level while
fewer than the non-relevant ones, which needs levels below 0), R is clipped to that class.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.errors import InputError, MetricDefinitionError
from harness.metrics.trec_eval.prefs_counts import add_ec_pairs, ec_counts, ec_rnonrel, pa_group
from harness.metrics.trec_eval.prefs_input import checked_prefs, prefs_from_qrels

__all__ = ["PREFS_MEASURES", "PREFS_SUMMARY", "prefs_measures", "prefs_summary",
           "prefs_from_qrels"]

#: trec_eval's prefs measures, in the order ``-m all_prefs`` prints them.
PREFS_MEASURES: tuple[str, ...] = (
    "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret",
    "prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel",
    "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret",
    "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp",
)
_COUNTS = PREFS_MEASURES[:3]
#: How trec_eval's ``all`` line summarises each measure over queries: the three counts are
#: summed (printed as integers), the ratios averaged over the evaluated queries.
PREFS_SUMMARY: dict[str, str] = {m: "sum" if m in _COUNTS else "mean"
                                 for m in PREFS_MEASURES}
# per-JG statistics: pairs (all / both retrieved / one retrieved), fulfilled (ret / imp),
# and the fulfilled/possible of the two Rnonrel measures
_STATS = ("pairs", "pairs_ret", "pairs_imp", "ful_ret", "ful_imp",
          "rn_ful", "rn_poss", "rnr_ful", "rnr_poss")


def prefs_measures(run: pd.DataFrame, prefs: pd.DataFrame, *,
                   names: Sequence[str] | None = None) -> pd.DataFrame:
    """trec_eval's prefs measures per query.

    Parameters
    ----------
    run : columns ``qid``, ``docid``, ``score`` (other columns, e.g. ``rank``, are ignored).
    prefs : the table of :func:`harness.data.trec.read_prefs` or :func:`prefs_from_qrels`.
    names : the measures to return (default: all of :data:`PREFS_MEASURES`), returned in
        trec_eval's order.

    Returns
    -------
    DataFrame indexed by ``qid`` (the queries in both inputs, in trec_eval's byte order)
    with one column per measure: int64 for the counts, float64 for the ratios.

    Raises
    ------
    InputError
        A missing column, a duplicate document in a query of the run, a document at two
        levels of one sub-group, a document both relevant (level > 0) and non-relevant
        (level 0) in one JG, or contradictory preferences within one JG.
    MetricDefinitionError
        A name that is not a prefs measure.
    """
    wanted = _names(names)
    prefs = checked_prefs(prefs)
    missing = [c for c in ("qid", "docid", "score") if c not in run.columns]
    if missing:
        raise InputError(f"run table lacks column(s) {missing}", column=missing[0])
    r_qid = run["qid"].astype(str).to_numpy()
    qids = np.array(sorted(set(r_qid) & set(prefs["qid"])), dtype=object)
    if len(qids) == 0:
        return _frame(qids, {m: np.zeros(0) for m in PREFS_MEASURES})[list(wanted)]
    q_index = pd.Index(qids)
    keep_run = q_index.get_indexer(r_qid) >= 0
    p = prefs[prefs["qid"].isin(q_index)].reset_index(drop=True)
    rq = q_index.get_indexer(r_qid[keep_run])
    pq = q_index.get_indexer(p["qid"])
    r_doc = run["docid"].astype(str).to_numpy()[keep_run]
    codes, _ = pd.factorize(np.concatenate([r_doc, p["docid"].to_numpy()]), sort=True)
    rd, pdoc = codes[: len(r_doc)], codes[len(r_doc):]
    score = pd.to_numeric(run["score"], errors="coerce").to_numpy(float)[keep_run]
    ranks, njr, nj = _judged_ranks(rq, rd, score, pq, pdoc, len(qids),
                                   np.flatnonzero(keep_run))

    jg_code = pd.factorize(p["jg"], sort=True)[0].astype(np.int64)
    g_key = pq.astype(np.int64) * (jg_code.max() + 1) + jg_code
    g_keys, g = np.unique(g_key, return_inverse=True)
    gq = g_keys // (jg_code.max() + 1)
    ng = len(g_keys)
    jsg = pd.factorize(p["jsg"], sort=True)[0].astype(np.int64)
    n_sub = np.bincount(np.unique(g * (jsg.max() + 1) + jsg) // (jsg.max() + 1),
                        minlength=ng)
    lvl = p["rel"].to_numpy(float)
    ret = ranks < njr[pq]
    stats = {s: np.zeros(ng) for s in _STATS}

    ec = n_sub[g] == 1
    if ec.any():
        _check_one_level(p, pq, pdoc, g, ec)
        counts = ec_counts(g[ec], lvl[ec], ranks[ec], ret[ec], ng)
        for s, v in counts.items():
            stats[s] += v
        for s, v in ec_rnonrel(g[ec], lvl[ec], ranks[ec], ret[ec], njr[pq[ec]], ng,
                               counts).items():
            stats[s] += v
    pa_groups = np.flatnonzero(n_sub > 1)
    # pair measures need each document pair's preferences over all JGs where a pair can
    # occur twice: queries with a multi-sub-group JG or with a document on several lines
    dup = pd.Series(pq.astype(np.int64) * (pdoc.max() + 1) + pdoc).duplicated().to_numpy()
    matrix_q = np.unique(np.concatenate([pq[dup], gq[pa_groups]])).astype(np.int64)
    order = np.argsort(g, kind="stable")
    bounds = np.searchsorted(g[order], np.arange(ng + 1))
    group_bounds = np.searchsorted(gq, np.arange(len(qids) + 1))  # JGs sorted by query
    docids = p["docid"].to_numpy()
    pair_values = {}
    for q in matrix_q:  # one query's matrix at a time
        matrix = np.zeros((nj[q], nj[q]), np.int32)
        for gi in range(group_bounds[q], group_bounds[q + 1]):
            rows = order[bounds[gi]:bounds[gi + 1]]
            if n_sub[gi] > 1:
                for s, value in pa_group(ranks[rows], lvl[rows], jsg[rows], int(njr[q]),
                                         matrix, docids[rows]).items():
                    stats[s][gi] = value
            else:
                add_ec_pairs(matrix, ranks[rows], lvl[rows])
        pair_values[q] = _pair_values(matrix, int(njr[q]))

    values = _aggregate(stats, gq, len(qids))
    for q, by_name in pair_values.items():
        for m, value in by_name.items():
            values[m][q] = value
    return _frame(qids, values)[list(wanted)]


def prefs_summary(per_query: pd.DataFrame) -> pd.Series:
    """trec_eval's ``all`` line for a :func:`prefs_measures` table: counts summed (int),
    ratios averaged over its queries."""
    return pd.Series({m: (int(per_query[m].sum()) if PREFS_SUMMARY[m] == "sum"
                          else float(per_query[m].mean()) if len(per_query) else 0.0)
                      for m in per_query.columns}, dtype=object)


def _names(names: Sequence[str] | None) -> tuple[str, ...]:
    if names is None:
        return PREFS_MEASURES
    unknown = [n for n in names if n not in PREFS_MEASURES]
    if unknown:
        raise MetricDefinitionError(f"not a prefs measure: {unknown}; known: "
                                    f"{', '.join(PREFS_MEASURES)}")
    return tuple(m for m in PREFS_MEASURES if m in set(names))


def _judged_ranks(rq: np.ndarray, rd: np.ndarray, score: np.ndarray, pq: np.ndarray,
                  pdoc: np.ndarray, nq: int, run_rows: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rank of each prefs row's document, judged retrieved per query, judged per query);
    ``run_rows`` are the run rows' places in the caller's table (for error messages)."""
    if np.isnan(score).any():
        i = int(np.flatnonzero(np.isnan(score))[0])
        raise InputError("run score is not a number", column="score", row=int(run_rows[i]))
    n_docs = int(max(rd.max(initial=-1), pdoc.max(initial=-1))) + 1
    r_key = rq.astype(np.int64) * n_docs + rd
    dup = pd.Series(r_key).duplicated().to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise InputError("document retrieved twice for one query", column="docid",
                         row=int(run_rows[i]))
    order = np.lexsort((rd, -score, rq))  # query, score descending, docno ascending
    run_pos = np.empty(len(rq), np.int64)
    run_pos[order] = np.arange(len(rq))
    judged = np.unique(pq.astype(np.int64) * n_docs + pdoc)
    where = pd.Index(r_key).get_indexer(judged)
    retrieved = where >= 0
    jq = judged // n_docs
    # retrieved first by run position, then missed ones by docno (their code)
    second = np.where(retrieved, run_pos[np.maximum(where, 0)], len(rq) + judged % n_docs)
    by_rank = np.lexsort((second, jq))
    start = np.searchsorted(jq[by_rank], np.arange(nq))
    rank = np.empty(len(judged), np.int64)
    rank[by_rank] = np.arange(len(judged)) - start[jq[by_rank]]
    row_rank = rank[np.searchsorted(judged, pq.astype(np.int64) * n_docs + pdoc)]
    return (row_rank, np.bincount(jq[retrieved], minlength=nq),
            np.bincount(jq, minlength=nq))


def _check_one_level(p: pd.DataFrame, pq: np.ndarray, pdoc: np.ndarray, g: np.ndarray,
                     ec: np.ndarray) -> None:
    """A document may have one level within a one-sub-group JG (trec_eval stops there)."""
    seen = pd.DataFrame({"g": g[ec], "d": pdoc[ec], "l": p["rel"].to_numpy()[ec]})
    levels = seen.drop_duplicates().duplicated(["g", "d"], keep=False).to_numpy()
    if levels.any():
        i = int(np.flatnonzero(ec)[np.flatnonzero(levels)[0]])
        raise InputError(f"document {p['docid'].iloc[i]!r} has two levels in judgment "
                         f"group {p['jg'].iloc[i]!r}, sub-group {p['jsg'].iloc[i]!r}",
                         qid=p["qid"].iloc[i], row=i)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), 0.0)


def _aggregate(stats: dict[str, np.ndarray], gq: np.ndarray,
               nq: int) -> dict[str, np.ndarray]:
    """Per-query values from per-JG statistics (the pair measures as the simple ratios;
    :func:`_pair_values` replaces them where a document pair can recur)."""
    def per_q(v: np.ndarray) -> np.ndarray:
        return np.bincount(gq, weights=v, minlength=nq)

    def avg_jg(num: np.ndarray, den: np.ndarray, zero_zero_is_nan: bool = False
               ) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            each = num / den if zero_zero_is_nan else _ratio(num, den)
        total = per_q(each)
        return np.where(total > 0, total / n_jgs, 0.0)  # NaN > 0 is False: 0

    n_jgs = np.bincount(gq, minlength=nq)
    s = stats
    pairs, ful = s["pairs"], s["ful_ret"] + s["ful_imp"]
    pairs_ri = s["pairs_ret"] + s["pairs_imp"]
    out = {
        "prefs_num_prefs_poss": per_q(pairs), "prefs_num_prefs_ful": per_q(ful),
        "prefs_num_prefs_ful_ret": per_q(s["ful_ret"]),
        "prefs_simp": _ratio(per_q(ful), per_q(pairs)),
        "prefs_avgjg": avg_jg(ful, pairs),
        "prefs_avgjg_Rnonrel": avg_jg(s["rn_ful"], s["rn_poss"], True),
        "prefs_simp_ret": _ratio(per_q(s["ful_ret"]), per_q(s["pairs_ret"])),
        "prefs_avgjg_ret": avg_jg(s["ful_ret"], s["pairs_ret"]),
        "prefs_avgjg_Rnonrel_ret": avg_jg(s["rnr_ful"], s["rnr_poss"], True),
        "prefs_simp_imp": _ratio(per_q(ful), per_q(pairs_ri)),
        "prefs_avgjg_imp": avg_jg(ful, pairs_ri),
    }
    for kind in ("", "_ret", "_imp"):
        out[f"prefs_pair{kind}"] = out[f"prefs_simp{kind}"].copy()
    return out


def _pair_values(c: np.ndarray, njr: int) -> dict[str, float]:
    """prefs_pair[_ret|_imp] from one query's counts: ``c[i, j]`` JGs prefer the document
    at rank i to the one at rank j."""
    i, j = np.triu_indices(len(c), k=1)
    above, below = c[i, j].astype(float), c[j, i].astype(float)
    has = (above + below) > 0
    share = _ratio(above, above + below)
    both, one = has & (j < njr), has & (i < njr) & (j >= njr)
    n_both, n_one, n_all = both.sum(), one.sum(), has.sum()
    s_both, s_one = share[both].sum(), share[one].sum()
    return {"prefs_pair_ret": s_both / n_both if n_both else 0.0,
            "prefs_pair_imp": (s_both + s_one) / (n_both + n_one) if n_both + n_one else 0.0,
            "prefs_pair": (s_both + s_one) / n_all if n_all else 0.0}


def _frame(qids: np.ndarray, values: dict[str, np.ndarray]) -> pd.DataFrame:
    out = pd.DataFrame({m: (np.asarray(values[m]).round().astype(np.int64) if m in _COUNTS
                            else np.asarray(values[m], dtype=float))
                        for m in PREFS_MEASURES},
                       index=pd.Index(qids, name="qid", dtype=object))
    return out
