"""The gain-discount family: DCG, nDCG and mnDCG.

DCG is a sum of per-position terms, so with ``ties="average"`` the expected value over every
order of a tied group replaces each tied document's gain by the group's mean gain
(McSherry & Najork 2008). nDCG divides by the ideal DCG over the ideal labels (every judged
document, or only the retrieved ones); mnDCG by the DCG of a list of the same length whose
every document has the top grade.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.errors import InputError, MetricDefinitionError
from harness.metrics.layout.prepared import Ideal, Prepared, level_counts
from harness.metrics.layout.ranked import ratio
from harness.metrics.measures.top_grade import check_top_grade
from harness.metrics.vocabulary.measure import MeasureInput, builtin_measure

__all__ = ["MAX_MNDCG_K", "gains", "discounts"]

#: Where this family's measures stand in the docs' measure table (harness.metrics.measures).
TABLE_ORDER = 0

#: The largest cut-off of mnDCG beyond the longest list (its ideal sums k discounts).
MAX_MNDCG_K = 10_000_000
_SHAPE = ("gain", "discount", "min_label")


@builtin_measure("dcg", display="DCG", options=_SHAPE, graded=True, builtin=True,
                  reads_top_k=True,
                  unjudged_bounds="monotone",
                  matches="sklearn `dcg_score` (its nDCG numerator)",
                  formula="$\\sum_{i=1}^{k} g(rel_i)\\, d(i)$")
def _dcg(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    return _dcg_sum(x, x.prep.max_len), np.zeros(x.n_queries, dtype=bool)


@builtin_measure("ndcg", display="nDCG", options=(*_SHAPE, "ideal", "empty", "empty_weight"),
                  aliases=("ndcg_cut",), graded=True, sklearn=True, builtin=True,
                  reads_top_k=True,
                  unjudged_bounds="ideal",
                  matches="trec_eval `ndcg`, `ndcg_cut.k`; ir_measures `nDCG@k`; ranx `ndcg@k`, "
                          "`ndcg_burges@k`; sklearn `ndcg_score`; LightGBM, XGBoost, CatBoost, "
                          "keras_rs NDCG",
                  formula="$DCG@k / IDCG@k$, IDCG over the ideal labels (`ideal`) sorted by "
                          "gain")
def _ndcg(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    disc = discounts(x, x.prep.max_len)
    idcg = _ideal_dcg(x.prep, x, disc)
    return ratio(_dcg_sum(x, x.prep.max_len), idcg), idcg == 0


@builtin_measure("mndcg", display="mnDCG", options=(*_SHAPE, "empty", "empty_weight",
                                                      "max_label"),
                  aliases=("sdcg",), graded=True, top_grade=True, builtin=True,
                  unjudged_bounds="monotone",
                  matches="ir_measures `SDCG@k` (cwl_eval)",
                  formula="$DCG@k / (g(max\\_label) \\sum_{i=1}^{L} d(i))$, $L$ = k or the "
                          "list length")
def _mndcg(x: MeasureInput) -> tuple[np.ndarray, np.ndarray]:
    prep, metric = x.prep, x.metric
    # positions past the longest list hold nothing, but mnDCG's ideal fills k positions
    length = prep.max_len
    if metric.k is not None and metric.k > length:
        if metric.k > MAX_MNDCG_K:
            raise InputError(f"{metric.display_name}: its ideal fills k = {metric.k:,} positions "
                             f"with the top grade; k above {MAX_MNDCG_K:,} is refused (the "
                             f"longest list here has {length:,} documents)")
        length = metric.k
    top = metric.max_label if metric.max_label is not None else prep.max_label
    # the check reads the labels and the top grade only: once per call and top grade
    def check() -> bool:
        check_top_grade(prep, metric)
        return True

    x.cache.get_or(("top_grade_checked", top), check)
    dcg = _dcg_sum(x, length)
    nq = prep.n_queries

    def no_gain() -> np.ndarray:  # the queries whose judgments all have gain 0
        by_level = prep.judged_level_counts
        if by_level is None:
            judged_gain = gains(prep, x, prep.judged_label, "judged")
            return np.bincount(prep.judged_q, weights=judged_gain, minlength=nq) == 0
        _check_gains(prep, x, prep.judged_label, "judged")  # gains finite and >= 0
        counts, levels = by_level  # a sum of such gains is 0 when each of them is
        return counts[:, metric.gain_function()(levels) > 0].sum(axis=1) == 0

    empty = x.cache.get_or(("judged_gain_zero", metric.gain_key), no_gain)
    top_gain = float(metric.gain_function()(np.array([top]))[0])
    cum = np.concatenate(([0.0], np.cumsum(discounts(x, length))))
    length_q = np.minimum(prep.n_docs, length) if metric.k is None else np.full(nq, metric.k)
    with np.errstate(over="ignore"):
        ideal = _finite(x, top_gain * cum[length_q], "the top grade's DCG")
    return ratio(dcg, ideal), empty


# -- gains and discounts, checked once per call -------------------------------------------
def gains(prep: Prepared, x: MeasureInput, labels: np.ndarray, which: str) -> np.ndarray:
    """The gains of ``labels`` (``which`` names the rows: run, judged, ...), checked finite
    and >= 0, memoised per call."""
    metric = x.metric

    def make() -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            g = metric.gain_function()(labels)
        bad = ~np.isfinite(g) | (g < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            q = prep.judged_q[i] if which == "judged" else prep.q[i]
            raise InputError(
                f"gain {_gain_text(metric.gain)} of label {labels[i]!r} is {g[i]!r}; gains "
                "must be finite and >= 0 (exp2 overflows float64 for labels >= 1024)",
                column="label", qid=prep.qids[q])
        return g

    return x.cache.get_or(("gain", metric.gain_key, which), make)


def _check_gains(prep: Prepared, x: MeasureInput, labels: np.ndarray, which: str) -> None:
    """Raise as :func:`gains` would, without keeping every gain: exp2 and linear gains grow
    with the label and labels are >= 0 here, so the highest label's gain being finite
    proves them all; any other gain (or a bad highest one) is computed in full."""
    metric = x.metric
    if metric.gain in ("exp2", "linear") and ("gain", metric.gain_key, which) not in x.cache:
        with np.errstate(over="ignore"):
            top = metric.gain_function()(np.array([_top(prep, labels)]))
        if np.isfinite(top).all():
            return
    gains(prep, x, labels, which)


def _top(prep: Prepared, labels: np.ndarray) -> float:
    """The highest of ``labels`` (0 when empty): the prepared rows' own, for their labels
    and judgments (every nDCG variant checks them)."""
    if labels is prep.label:
        return prep.highest_label
    if labels is prep.judged_label:
        return prep.highest_judged
    return float(labels.max()) if len(labels) else 0.0


def _finite(x: MeasureInput, sums: np.ndarray, what: str) -> np.ndarray:
    """``sums`` (per query), or an error naming the first query whose sum overflowed
    float64 and its highest label: gains each finite (exp2's below label 1024) can still
    sum past 1.8e308 (three labels of 1023). sklearn's ``dcg_score`` returns inf there and
    ``ndcg_score`` NaN; trec_eval's gain is the label itself."""
    bad = ~np.isfinite(sums)
    if not bad.any():
        return sums
    prep, q = x.prep, int(np.flatnonzero(bad)[0])
    top = max(prep.label[prep.q == q].max(initial=0.0),
              prep.judged_label[prep.judged_q == q].max(initial=0.0))
    raise InputError(f"{x.metric.display_name}: {what} overflows float64 (gain "
                     f"{_gain_text(x.metric.gain)}, highest label {top:g}); lower the labels "
                     "or use a gain that grows less (gain='linear')", column="label",
                     qid=prep.qids[q])


def _gain_text(gain: object) -> str:
    return repr(gain) if isinstance(gain, str) else "table"


def discounts(x: MeasureInput, length: int) -> np.ndarray:
    """The discounts of positions ``0 .. length-1``, checked finite and >= 0."""
    metric = x.metric

    def make() -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            d = np.asarray(metric.discount_function()(np.arange(length)), dtype=np.float64)
        bad = ~np.isfinite(d) | (d < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise MetricDefinitionError(
                f"discount {metric.discount!r} is {d[i]!r} at rank {i + 1}; discounts must be "
                "finite and >= 0")
        return d

    return x.cache.get_or(("disc", metric.discount, length), make)


def _unjudged_rows(judged: np.ndarray | None, x: MeasureInput) -> np.ndarray | None:
    """Per row of ``judged`` (grouped rows: all of them, or the ranked contenders of a top
    k), True where the row has no judgment and its label 0 would get a nonzero gain (a gain
    table or formula with gain(0) > 0): such rows get gain 0, as ir_measures'
    ``nDCG(gains=...)`` relabels judged documents only. None when no row needs it."""
    if judged is None or judged.all():
        return None
    if float(x.metric.gain_function()(np.zeros(1))[0]) == 0.0:
        return None
    return ~judged


def _dcg_sum(x: MeasureInput, length: int) -> np.ndarray:
    """DCG@k per query over positions below ``length``, once per call for each ranking,
    cut-off, gain and discount (nDCG and mnDCG share it)."""
    metric = x.metric
    return x.cache.get_or(("dcg", id(x.ranking), metric.k, metric.gain_key, metric.discount,
                           length), lambda: _finite(x, _dcg_sum_of(x, length), "DCG"))


def _dcg_sum_of(x: MeasureInput, length: int) -> np.ndarray:
    prep, metric, r, cache = x.prep, x.metric, x.ranking, x.cache
    nq = prep.n_queries
    disc = discounts(x, length)
    gain_of = metric.gain_function()
    sparse = r.sparse() and float(gain_of(np.zeros(1))[0]) == 0.0
    # gain 0 needs no mask; the ranking's own rows (a top k ranks its contenders only)
    unjudged = None if sparse else _unjudged_rows(r.grouped_judged, x)
    if sparse:
        _check_gains(prep, x, prep.label, "run")  # every label's gain is valid
        q, pos, labels, _ = r.positive(0.0)  # the rows of nonzero gain
        g = cache.get_or(("positive_gain", id(r), metric.gain_key), lambda: gain_of(labels))
        k = metric.k
        if k is not None:  # the rows in the top k, once per ranking and k
            inside, q, pos = cache.get_or(("positive_top", id(r), k),
                                          lambda: _within(q, pos, k))
            g = g[inside]
    elif r.gid is None:
        q, pos, grouped, labels = r.top(metric.k)  # only the top k rows are touched
        _check_gains(prep, x, prep.label, "run")  # every label's gain is valid

        def top_gains() -> np.ndarray:
            g = gain_of(labels)
            return g if unjudged is None else np.where(unjudged[grouped], 0.0, g)

        g = cache.get_or(("top_gain", id(r), metric.k, metric.gain_key), top_gains)
    else:
        rows = r.head(metric.k)
        q, pos, grouped, labels = r.top(metric.k)

        def group_means() -> np.ndarray:  # per ranked row, its tie group's mean gain
            _check_gains(prep, x, prep.label, "run")  # every label's gain is valid
            with np.errstate(over="ignore", invalid="ignore"):
                ranked = _level_gains(r.label, gain_of) if metric.gain == "exp2" else \
                    gain_of(r.label)
            if unjudged is not None:
                ranked = np.where(unjudged[r.perm], 0.0, ranked)
            # a lone row's mean is its gain (g / 1 is g): only the tied rows are summed, by
            # group, in the same order as over every row
            tied, tied_start, tied_size = r.tied()
            ranked[tied] = (np.add.reduceat(ranked[tied], tied_start) / tied_size
                            ).repeat(tied_size)
            return ranked

        def top_means() -> np.ndarray:
            means = cache.get_or(("group_mean", id(r), metric.gain_key), group_means)
            return means if rows is None else means[rows]

        g = cache.get_or(("top_gain", id(r), metric.k, metric.gain_key), top_means)
    at = cache.get_or(("disc_at", id(r), metric.k, sparse, metric.discount, length),
                      lambda: disc[pos])  # the rows' discounts, whatever the gain
    return np.bincount(q, weights=g * at, minlength=nq)


def _level_gains(labels: np.ndarray, gain_of: Callable[[np.ndarray], np.ndarray]
                 ) -> np.ndarray:
    """``gain_of(labels)`` for a gain computed label by label: with integer labels in
    [0, 64), each level's gain is computed once and looked up (the same value, bit for bit,
    as each row's own; one pass instead of exp2's several)."""
    if len(labels) and labels.min() >= 0 and labels.max() < 64:
        codes = labels.astype(np.uint8)
        if np.array_equal(codes, labels):
            return gain_of(np.arange(int(codes.max()) + 1, dtype=np.float64)).take(codes)
    return gain_of(labels)


def _within(q: np.ndarray, pos: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """The rows at positions below ``k``: their indices, query codes and positions."""
    inside = np.flatnonzero(pos < k)
    return inside, q[inside], pos[inside]


def _ideal_dcg(prep: Prepared, x: MeasureInput, disc: np.ndarray) -> np.ndarray:
    """IDCG@k per query, once per prepared labels (:attr:`Prepared.ideal_dcgs`: nDCG under
    each tie rule, of each score column, shares it)."""
    metric = x.metric
    key = (metric.ideal, metric.gain_key, metric.discount, metric.k, len(disc))
    if key not in prep.ideal_dcgs:
        prep.ideal_dcgs[key] = _finite(x, _ideal_dcg_of(prep, x, disc), "the ideal DCG")
    return prep.ideal_dcgs[key]


def _ideal_dcg_of(prep: Prepared, x: MeasureInput, disc: np.ndarray) -> np.ndarray:
    """IDCG@k per query. Integer labels in [0, 64): from per-query label counts (no sort):
    levels in decreasing gain fill consecutive positions, each contributing its gain times
    the sum of the discounts it covers. Other labels: a per-query sort by gain."""
    metric, cache = x.metric, x.cache
    ideal = prep.ideal(metric.ideal)
    which = "judged" if metric.ideal == "judged" else "run"
    tag = metric.ideal
    unjudged = _unjudged_rows(prep.judged, x) if metric.ideal == "retrieved" else None
    if unjudged is not None:  # unjudged rows have gain 0 here: they add nothing to IDCG
        ideal = Ideal(prep.q[~unjudged], prep.label[~unjudged])
        which, tag = "run-judged", "retrieved-judged"
    _check_gains(prep, x, ideal.label, which)  # every ideal label's gain is valid
    nq = prep.n_queries
    kk = len(disc) if metric.k is None else min(metric.k, len(disc))
    cum = np.concatenate(([0.0], np.cumsum(disc)))

    def counts() -> tuple[np.ndarray, np.ndarray] | None:
        if ideal.q is prep.judged_q and ideal.label is prep.judged_label:
            return prep.judged_level_counts  # shared with the relevant counts
        return level_counts(ideal.q, ideal.label, nq)

    by_level = cache.get_or(("ideal_counts", tag), counts)
    if by_level is not None:
        c, levels = by_level
        level_gain = metric.gain_function()(levels)
        order = np.argsort(-level_gain, kind="stable")
        c, level_gain = c[:, order], level_gain[order]
        end = np.cumsum(c, axis=1)
        start = end - c
        span = cum[np.minimum(end, kk)] - cum[np.minimum(start, kk)]
        # a row-wise sum, not a BLAS product: each query's value must not depend on the
        # other queries evaluated with it (streaming evaluates them in batches)
        return (span * level_gain).sum(axis=1)

    def sorted_ideal() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        g_all = gains(prep, x, ideal.label, which)
        order = np.lexsort((-g_all, ideal.q))
        q, g = ideal.q[order], g_all[order]
        n = np.bincount(q, minlength=nq)
        return q, g, np.arange(len(q)) - np.repeat(np.cumsum(n) - n, n)

    q, g, pos = cache.get_or(("ideal_sorted", tag, metric.gain_key), sorted_ideal)
    m = pos < kk
    return np.bincount(q[m], weights=g[m] * disc[pos[m]], minlength=nq)

