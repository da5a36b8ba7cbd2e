"""trec_eval's counts, set measures and geometric means.

Counts (their summary is the sum over queries): the retrieved documents, the relevant ones
(judged with ``label >= level``, retrieved or not: ``R``), the relevant retrieved ones and
the judged non-relevant retrieved ones, in the top ``k`` when cut. Set measures read the
whole retrieved list as a set of ``n`` documents with ``h`` relevant among them: precision,
relative precision, recall, their product (trec_eval's ``set_map``), F and utility. They do
not depend on the order, so ties change nothing. The geometric means (``gm_ap``,
``gm_bpref``) have AP's and bpref's per-query values; only their summary differs (each value
floored at 1e-5, then the geometric mean).
"""

from __future__ import annotations

import numpy as np

from harness.metrics.layout.ranked import ratio
from harness.metrics.measures.binary import ap_dense, ap_sparse, binary_kernel
from harness.metrics.measures.judged import bpref_kernel, depth
from harness.metrics.vocabulary.measure import MeasureInput, builtin_measure

#: Where this family's measures stand in the docs' measure table (harness.metrics.measures).
TABLE_ORDER = 6

__all__: list[str] = []

Result = tuple[np.ndarray, np.ndarray]
_EMPTY = ("empty", "empty_weight")


def _none(x: MeasureInput) -> np.ndarray:
    return np.zeros(x.n_queries, dtype=bool)


@builtin_measure("num_ret", display="NumRet", options=(), aggregate="sum", builtin=True,
                  matches="trec_eval `num_ret`",
                  formula="$\\min(k, n)$, the retrieved documents (summary: the sum)")
def _num_ret(x: MeasureInput) -> Result:
    return depth(x), _none(x)


@builtin_measure("query_count", display="NumQ", options=(), cutoff=False,
                  aggregate="sum", builtin=True, matches="ir_measures `NumQ`; trec_eval `num_q`",
                  formula="1 for each query evaluated (summary: the sum, the number of "
                          "queries)")
def _num_q(x: MeasureInput) -> Result:
    return np.ones(x.n_queries), _none(x)


@builtin_measure("num_rel", display="NumRel", options=(), binary=True, cutoff=False,
                  aggregate="sum", builtin=True,
                  unjudged_bounds="swap", matches="trec_eval `num_rel`",
                  formula="$R$, the judged documents with $rel \\ge level$, retrieved or "
                          "not (summary: the sum)")
def _num_rel(x: MeasureInput) -> Result:
    return x.n_relevant(), _none(x)


@builtin_measure("num_rel_ret", display="NumRelRet", options=(), binary=True,
                  aggregate="sum", builtin=True,
                  unjudged_bounds="monotone", matches="trec_eval `num_rel_ret`",
                  formula="$\\sum_{i=1}^{k} [rel_i \\ge level]$ (summary: the sum)")
def _num_rel_ret(x: MeasureInput) -> Result:
    return x.top_k_sum(x.relevant()), _none(x)


@builtin_measure("num_nonrel_judged_ret", display="NumNonrelJudgedRet", options=(),
                  binary=True, reads_judged=True, aggregate="sum", builtin=True,
                  unjudged_bounds="swap",
                  matches="trec_eval `num_nonrel_judged_ret`",
                  formula="$\\sum_{i=1}^{k} [d_i \\text{ judged}, rel_i < level]$ (summary: "
                          "the sum)")
def _num_nonrel_judged_ret(x: MeasureInput) -> Result:
    return x.top_k_sum(x.judged * (1.0 - x.relevant())), _none(x)


builtin_measure(
    "gm_ap", binary_kernel(ap_sparse, ap_dense, ideal=True),
    display="GMAP", options=(*_EMPTY, "ideal"), binary=True, aggregate="gmean", builtin=True,
    unjudged_bounds="swap",
    matches="trec_eval `gm_map`",
    formula="AP's value per query; summary $\\exp(\\text{mean}_q \\ln \\max(AP_q, 10^{-5}))$")

builtin_measure(
    "gm_bpref", bpref_kernel, display="GMBpref", options=_EMPTY, binary=True, reads_judged=True,
    cutoff=False, aggregate="gmean", builtin=True,
    unjudged_bounds="swap", matches="trec_eval `gm_bpref`",
    formula="bpref's value per query; summary "
            "$\\exp(\\text{mean}_q \\ln \\max(bpref_q, 10^{-5}))$")


def _set(x: MeasureInput) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query: retrieved documents n, relevant retrieved h, relevant R."""
    r = x.ranking
    hits = np.bincount(r.q, weights=x.relevant(), minlength=x.n_queries)
    return x.n_docs(), hits, x.n_relevant()


@builtin_measure("set_p", display="SetP", options=_EMPTY, binary=True, cutoff=False,
                  builtin=True, unjudged_bounds="monotone", matches="trec_eval `set_P`",
                  formula="$h / n$: $h$ relevant among the $n$ retrieved documents")
def _set_p(x: MeasureInput) -> Result:
    n, h, big_r = _set(x)
    return ratio(h, n), big_r == 0


@builtin_measure("set_relative_p", display="SetRelP", options=_EMPTY, binary=True,
                  cutoff=False, builtin=True,
                  unjudged_bounds="swap", matches="trec_eval `set_relative_P`",
                  formula="$h / \\min(n, R)$")
def _set_relative_p(x: MeasureInput) -> Result:
    n, h, big_r = _set(x)
    return ratio(h, np.minimum(n, big_r)), big_r == 0


@builtin_measure("set_recall", display="SetR", options=_EMPTY, binary=True, cutoff=False,
                  builtin=True,
                  unjudged_bounds="swap", matches="trec_eval `set_recall`", formula="$h / R$")
def _set_recall(x: MeasureInput) -> Result:
    n, h, big_r = _set(x)
    return ratio(h, big_r), big_r == 0


@builtin_measure("set_ap", display="SetAP", options=_EMPTY, binary=True, cutoff=False,
                  builtin=True, unjudged_bounds="swap", matches="trec_eval `set_map`",
                  formula="$\\frac{h}{n} \\cdot \\frac{h}{R}$")
def _set_ap(x: MeasureInput) -> Result:
    n, h, big_r = _set(x)
    return ratio(h * h, n * big_r), big_r == 0


@builtin_measure("set_f", display="SetF", options=(*_EMPTY, "beta"), binary=True,
                  cutoff=False, builtin=True,
                  unjudged_bounds="swap", matches="trec_eval `set_F`, `set_F.beta`",
                  formula="$\\frac{(1 + \\beta) P R'}{\\beta P + R'}$ with $P = h / n$, "
                          "$R' = h / R$ (0 when $h = 0$; $\\beta$ not squared, as trec_eval)")
def _set_f(x: MeasureInput) -> Result:
    n, h, big_r = _set(x)
    beta = x.metric.beta
    p, rec = ratio(h, n), ratio(h, big_r)
    return ratio((beta + 1.0) * p * rec, np.where(h > 0, beta * p + rec, 0.0)), big_r == 0


@builtin_measure("utility", display="Utility", options=("weights", "collection_size"),
                  binary=True, cutoff=False, builtin=True,
                  unjudged_bounds="swap", matches="trec_eval `utility`, `utility.a,b,c,d`",
                  formula="$a h + b (n - h) + c (R - h) + d (N + h - n - R)$ for weights "
                          "$(a, b, c, d)$: $d$ weighs the non-relevant documents not "
                          "retrieved of a collection of $N$ documents (`collection_size`, "
                          "trec_eval's `-N`, default 0)")
def _utility(x: MeasureInput) -> Result:
    n, h, big_r = _set(x)
    a, b, c, d = x.metric.weights
    big_n = float(x.metric.collection_size)
    return a * h + b * (n - h) + c * (big_r - h) + d * (big_n + h - n - big_r), _none(x)
