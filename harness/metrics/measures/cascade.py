"""Cascade measures: ERR and Success@k.

A user reads down the list and stops at rank ``i`` with probability ``R_i`` given that no
earlier document stopped them. ERR weights the stop by ``1/i`` with a graded stop
probability ``R_i = (2^{rel_i} - 1) / 2^{max\\_label}`` (Chapelle et al. 2009); Success@k is
the chance that a binary cascade (stop at the first relevant document) stops within the top
k. With ``ties="average"``, with ``mu_t`` the mean over ``t``-subsets of a tied group of the
product of ``(1 - R)``, the chance that the cascade stops at offset ``t`` of the group is
``S (mu_t - mu_{t+1})`` where ``S`` is the survival up to the group; ``mu`` comes from a
dynamic programme batched over groups of equal size
(:func:`harness.metrics.layout.ranked.group_stop_probability`).
"""

from __future__ import annotations

import numpy as np

from harness.errors import InputError
from harness.metrics.layout.prepared import whole_grades
from harness.metrics.layout.ranked import (
    MAX_TIED_CASCADE,
    TieGroupTooLarge,
    cascade,
    group_stop_probability,
    survival_before,
    topk_sum,
)
from harness.metrics.measures.top_grade import check_top_grade, top_grade
from harness.metrics.vocabulary.measure import MeasureInput, builtin_measure

__all__: list[str] = []

#: Where this family's measures stand in the docs' measure table (harness.metrics.measures).
TABLE_ORDER = 2

_EMPTY = ("empty", "empty_weight")


@builtin_measure("err", display="ERR", options=(*_EMPTY, "max_label"), graded=True,
                  top_grade=True, builtin=True, unjudged_bounds="monotone",
                  matches="ir_measures `ERR@k` (gdeval)",
                  formula="$\\sum_{i=1}^{k} \\frac{1}{i} R_i \\prod_{j<i} (1 - R_j)$, "
                          "$R_i = (2^{rel_i} - 1) / 2^{max\\_label}$")
def _err(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    prep, metric, r = x.prep, x.metric, x.ranking
    check_top_grade(prep, metric)
    top = top_grade(prep, metric)
    with np.errstate(over="ignore", invalid="ignore"):
        stop = (np.exp2(r.label) - 1.0) / np.exp2(top)
    if (stop > 1).any() or not np.isfinite(stop).all():
        i = int(np.flatnonzero((stop > 1) | ~np.isfinite(stop))[0])
        raise InputError(
            f"ERR needs labels <= max_label ({top:g}) and < 1024; got label {r.label[i]!r}",
            column="label", qid=prep.qids[r.q[i]])
    nq = prep.n_queries
    by_level = prep.judged_level_counts  # the judgments counted per grade 0, 1, ...
    if by_level is None:
        empty = np.bincount(prep.judged_q, weights=prep.judged_label > 0, minlength=nq) == 0
    else:
        empty = by_level[0][:, 1:].sum(axis=1) == 0
    label = r.label  # integer grades below 64: at most 64 distinct stop probabilities
    if r.grouped_label is prep.label and len(label) == len(prep.label):  # every row's
        few = prep.integer_grades
    else:
        few = whole_grades(label)
    try:
        return cascade(r, stop, r.n, metric.k, nq, binary=False, few=bool(few)), empty
    except TieGroupTooLarge as exc:
        raise InputError(
            f"{metric.display_name} (ties={metric.ties!r}): a tie group of {exc.size:,} "
            f"documents with graded labels; averaging ERR over its orders costs n^2 steps, "
            f"and the limit is {MAX_TIED_CASCADE:,} documents: break the ties "
            "(ties='docid' or 'input') or give the documents distinct scores",
            qid=prep.qids[exc.code]) from None


@builtin_measure("success", display="Success", aliases=("hit_rate",), options=_EMPTY,
                  binary=True, builtin=True, unjudged_bounds="monotone",
                  matches="trec_eval `success.k`; ir_measures `Success@k`; ranx `hit_rate@k`",
                  formula="$[\\exists i \\le k : rel_i \\ge level]$")
def _success(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    r, k = x.ranking, x.metric.k
    if r.sparse() and x.metric.level > 0:  # each query's first relevant row, if in the top k
        q, pos, _, above = r.positive(x.metric.level)
        first = above == 0
        if k is not None:
            first &= pos < k
        return (np.bincount(q[first], minlength=x.n_queries).astype(np.float64),
                x.n_relevant() == 0)
    rel = x.relevant()
    survival = survival_before(r, rel, r.n, binary=True)
    first = survival * rel if r.gid is None else group_stop_probability(r, rel, survival, k)
    return topk_sum(r, first, k, x.n_queries), x.n_relevant() == 0
