"""Vectorised metric kernels over ragged query groups.

Every kernel takes a :class:`~harness.metrics.prepare.Prepared` input and returns, per
query code, the metric value and whether the query is *empty* (no relevant document, so
the metric's ``empty`` policy decides its value). No Python loop runs per query.

Tie averaging (``ties="average"``) is exact, not sampled:

- DCG, precision and recall are sums of per-position terms, so the expected value over
  all orders of a tied group replaces each tied document's gain by the group's mean gain
  (McSherry & Najork 2008).
- AP: a relevant document at offset ``J`` of a group of ``n`` with ``r`` relevant and
  ``c`` relevant before the group has expected precision
  ``(c + 1 + J (r - 1) / (n - 1)) / rank``; each offset holds a relevant document with
  probability ``r / n``.
- RR and ERR are cascades: with ``mu_t`` the mean over ``t``-subsets of the group of the
  product of ``(1 - R)``, the chance that the cascade stops at offset ``t`` is
  ``S (mu_t - mu_{t+1})`` where ``S`` is the survival up to the group. ``mu`` comes from a
  dynamic programme batched over groups of equal size.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from harness.errors import InputError, MetricDefinitionError
from harness.metrics.definition import Metric
from harness.metrics import measures
from harness.metrics.prepared import Ideal, Prepared, level_counts
from harness.metrics.ranking import Ranking
from harness.metrics.ranked import cascade, exclusive_count, ratio, topk_sum

__all__ = ["compute"]


class Cache(dict[tuple[Any, ...], Any]):
    """Per-call memo of gains, discounts and ideal orders shared between metrics."""

    def get_or(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        if key not in self:
            self[key] = make()
        return self[key]


def _gains(prep: Prepared, metric: Metric, labels: np.ndarray, cache: Cache,
           which: str) -> np.ndarray:
    def make() -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            g = metric.gain_function()(labels)
        bad = ~np.isfinite(g) | (g < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            q = prep.judged_q[i] if which == "judged" else prep.q[i]
            raise InputError(
                f"gain {_gain_text(metric)} of label {labels[i]!r} is {g[i]!r}; gains must be "
                "finite and >= 0 (exp2 overflows float64 for labels >= 1024)",
                column="label", qid=prep.qids[q],
            )
        return g

    return cache.get_or(("gain", metric.gain, which), make)


def _check_gains(prep: Prepared, metric: Metric, labels: np.ndarray, cache: Cache,
                 which: str) -> None:
    """Raise as :func:`_gains` would, without keeping every gain: exp2 and linear gains grow
    with the label and labels are >= 0 here, so the highest label's gain being finite
    proves them all; any other gain (or a bad highest one) is computed in full."""
    if metric.gain in ("exp2", "linear") and ("gain", metric.gain, which) not in cache:
        with np.errstate(over="ignore"):
            top = metric.gain_function()(np.array([labels.max() if len(labels) else 0.0]))
        if np.isfinite(top).all():
            return
    _gains(prep, metric, labels, cache, which)


def _gain_text(metric: Metric) -> str:
    return repr(metric.gain) if isinstance(metric.gain, str) else "table"


def _discounts(metric: Metric, length: int, cache: Cache) -> np.ndarray:
    def make() -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            d = np.asarray(metric.discount_function()(np.arange(length)), dtype=np.float64)
        bad = ~np.isfinite(d) | (d < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise MetricDefinitionError(
                f"discount {metric.discount!r} is {d[i]!r} at rank {i + 1}; discounts must be "
                "finite and >= 0"
            )
        return d

    return cache.get_or(("disc", metric.discount, length), make)


def compute(prep: Prepared, metric: Metric, cache: Cache, top: int | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of ``metric`` (before the empty policy) and the empty mask.

    ``top`` (>= the metric's k) ranks only the rows that can reach the top ``top``; the
    caller passes one value for all metrics of a tie rule so they share one ranking.
    """
    if metric.name in measures.NEEDS_JUDGED:  # reads prep.judged by ranked row: every row
        return measures.compute(prep, metric, prep.ranking(metric.ties, metric.seed))
    r = prep.ranking(metric.ties, metric.seed, top=top)
    if metric.name in measures.NAMES:
        return measures.compute(prep, metric, r)
    nq = prep.n_queries
    # positions past the longest list hold nothing: a k beyond every list allocates nothing,
    # but for mnDCG, whose ideal fills k positions with the top grade
    length = prep.max_len
    if metric.name == "mndcg" and metric.k is not None and metric.k > length:
        if metric.k > MAX_MNDCG_K:
            raise InputError(f"{metric.display_name}: its ideal fills k = {metric.k:,} positions "
                             f"with the top grade; k above {MAX_MNDCG_K:,} is refused (the "
                             f"longest list here has {length:,} documents)")
        length = metric.k
    if metric.name in ("mndcg", "err"):
        _check_top_grade(prep, metric)
    if metric.name in ("dcg", "ndcg", "mndcg"):
        return _dcg_family(prep, metric, r, length, cache)
    if metric.name == "err":
        return _err(prep, metric, r, length)
    # binary metrics
    judged_rel = prep.relevant_counts(metric.level)
    if metric.ideal == "judged" or metric.name in ("rr", "precision"):
        n_rel = judged_rel
    else:  # relevant among every retrieved document, not only the ranked contenders
        n_rel = np.bincount(prep.q, weights=prep.label >= metric.level, minlength=nq)
    empty = n_rel == 0
    if metric.level > 0 and r.sparse():
        return _binary_sparse(prep, metric, r, n_rel), empty
    rel = cache.get_or(("rel", id(r), metric.level),
                       lambda: (r.label >= metric.level).astype(np.float64))
    if metric.name in ("precision", "recall"):
        hits = topk_sum(r, r.group_mean(rel), metric.k, nq)
        if metric.name == "recall":
            return ratio(hits, n_rel), empty
        den = np.full(nq, float(metric.k)) if metric.k is not None else prep.n_docs.astype(float)
        return ratio(hits, den), empty
    # relevant rows ranked above each row (AP and RR share them)
    before = cache.get_or(("before", id(r), metric.level),
                          lambda: exclusive_count(r, rel.astype(np.int64), r.n))
    if metric.name == "ap":
        return ratio(topk_sum(r, _ap_terms(r, rel, before), metric.k, nq), n_rel), empty
    # rr: a cascade whose stop probability is the binary relevance
    return cascade(r, rel, r.n, metric.k, nq, binary=True, before=before), empty


def _binary_sparse(prep: Prepared, metric: Metric, r: Ranking, n_rel: np.ndarray
                   ) -> np.ndarray:
    """Precision, recall, AP and RR of a ranking without tie groups, summed over its
    relevant rows only (:meth:`Ranking.positive`): the same sums as over every row."""
    nq = prep.n_queries
    q, pos, _, before = r.positive(metric.level)  # before: relevant rows ranked above
    if metric.k is not None:
        inside = pos < metric.k
        q, pos, before = q[inside], pos[inside], before[inside]
    if metric.name in ("precision", "recall"):
        hits = np.bincount(q, minlength=nq).astype(np.float64)
        if metric.name == "recall":
            return ratio(hits, n_rel)
        den = np.full(nq, float(metric.k)) if metric.k is not None else prep.n_docs.astype(float)
        return ratio(hits, den)
    if metric.name == "ap":
        return ratio(np.bincount(q, weights=(before + 1.0) / (pos + 1.0), minlength=nq), n_rel)
    first = before == 0  # rr: the first relevant row of each query
    return np.bincount(q[first], weights=1.0 / (pos[first] + 1.0), minlength=nq)


def _check_top_grade(prep: Prepared, metric: Metric) -> None:
    """mnDCG and ERR scale by the top grade: a label above it would give values above 1."""
    top = metric.max_label if metric.max_label is not None else prep.max_label
    for q, labels in ((prep.q, prep.label), (prep.judged_q, prep.judged_label)):
        above = np.flatnonzero(labels > top)
        if len(above):
            i = int(above[0])
            source = (f"max_label={top:g}" if metric.max_label is not None else
                      f"the top grade {top:g} given to evaluate (top_label)")
            raise InputError(
                f"{metric.display_name}: query {prep.qids[q[i]]!r} has label {labels[i]:g}, "
                f"above {source}; the scale's top grade must be at least every label",
                column="label", qid=prep.qids[q[i]])


def _unjudged_rows(prep: Prepared, metric: Metric) -> np.ndarray | None:
    """Per grouped row, True where the row has no judgment and its label 0 would get a
    nonzero gain (a gain table or formula with gain(0) > 0): such rows get gain 0, as
    ir_measures' ``nDCG(gains=...)`` relabels judged documents only. None when no row
    needs it."""
    if prep.judged is None or prep.judged.all():
        return None
    if float(metric.gain_function()(np.zeros(1))[0]) == 0.0:
        return None
    return ~prep.judged


def _dcg_family(prep: Prepared, metric: Metric, r: Ranking, length: int,
                cache: Cache) -> tuple[np.ndarray, np.ndarray]:
    nq = prep.n_queries
    disc = _discounts(metric, length, cache)
    sparse = r.sparse() and float(metric.gain_function()(np.zeros(1))[0]) == 0.0
    unjudged = None if sparse else _unjudged_rows(prep, metric)  # gain 0 needs no mask
    if sparse:
        _check_gains(prep, metric, prep.label, cache, "run")  # every label's gain is valid
        q, pos, labels, _ = r.positive(0.0)  # the rows of nonzero gain
        gains = cache.get_or(("positive_gain", id(r), metric.gain),
                             lambda: metric.gain_function()(labels))
        if metric.k is not None:
            inside = pos < metric.k
            q, pos, gains = q[inside], pos[inside], gains[inside]
    elif r.gid is None:
        q, pos, grouped, labels = r.top(metric.k)  # only the top k rows are touched
        _gains(prep, metric, prep.label, cache, "run")  # validates every label's gain once

        def top_gains() -> np.ndarray:
            g = metric.gain_function()(labels)
            return g if unjudged is None else np.where(unjudged[grouped], 0.0, g)

        gains = cache.get_or(("top_gain", id(r), metric.k, metric.gain), top_gains)
    else:
        rows = r.head(metric.k)
        q, pos, grouped, labels = r.top(metric.k)

        def group_means() -> np.ndarray:  # mean gain per tie group
            _gains(prep, metric, prep.label, cache, "run")  # validates every label's gain
            with np.errstate(over="ignore", invalid="ignore"):
                ranked = metric.gain_function()(r.label)
            if unjudged is not None:
                ranked = np.where(unjudged[r.perm], 0.0, ranked)
            return np.add.reduceat(ranked, r.gstart) / r.gsize

        def top_means() -> np.ndarray:
            means = cache.get_or(("group_mean", id(r), metric.gain), group_means)
            return means[r.gid] if rows is None else means[r.gid[rows]]

        gains = cache.get_or(("top_gain", id(r), metric.k, metric.gain), top_means)
    dcg = np.bincount(q, weights=gains * disc[pos], minlength=nq)
    if metric.name == "dcg":
        return dcg, np.zeros(nq, dtype=bool)
    if metric.name == "ndcg":
        idcg = _ideal_dcg(prep, metric, disc, cache)
        return ratio(dcg, idcg), idcg == 0
    judged_gain = _gains(prep, metric, prep.judged_label, cache, "judged")
    empty = np.bincount(prep.judged_q, weights=judged_gain, minlength=nq) == 0
    top = metric.max_label if metric.max_label is not None else prep.max_label
    top_gain = float(metric.gain_function()(np.array([top]))[0])
    cum = np.concatenate(([0.0], np.cumsum(disc)))
    length_q = np.minimum(prep.n_docs, length) if metric.k is None else np.full(nq, metric.k)
    return ratio(dcg, top_gain * cum[length_q]), empty


#: The largest cut-off of mnDCG beyond the longest list (its ideal sums k discounts).
MAX_MNDCG_K = 10_000_000


def _ideal_dcg(prep: Prepared, metric: Metric, disc: np.ndarray, cache: Cache) -> np.ndarray:
    """IDCG@k per query. Integer labels in [0, 64): from per-query label counts (no sort):
    levels in decreasing gain fill consecutive positions, each contributing its gain times
    the sum of the discounts it covers. Other labels: a per-query sort by gain."""
    ideal = prep.ideal(metric.ideal)
    which = "judged" if metric.ideal == "judged" else "run"
    tag = metric.ideal
    unjudged = _unjudged_rows(prep, metric) if metric.ideal == "retrieved" else None
    if unjudged is not None:  # unjudged rows have gain 0 here: they add nothing to IDCG
        ideal = Ideal(prep.q[~unjudged], prep.label[~unjudged])
        which, tag = "run-judged", "retrieved-judged"
    gains = _gains(prep, metric, ideal.label, cache, which)
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
        order = np.lexsort((-gains, ideal.q))
        q, g = ideal.q[order], gains[order]
        n = np.bincount(q, minlength=nq)
        return q, g, np.arange(len(q)) - np.repeat(np.cumsum(n) - n, n)

    q, g, pos = cache.get_or(("ideal_sorted", tag, metric.gain), sorted_ideal)
    m = pos < kk
    return np.bincount(q[m], weights=g[m] * disc[pos[m]], minlength=nq)


def _ap_terms(r: Ranking, rel: np.ndarray, before: np.ndarray) -> np.ndarray:
    """Per ranked row, its (expected) precision contribution to AP's numerator; ``before``:
    the relevant rows ranked above it."""
    rank = r.pos + 1.0
    if r.gid is None:
        return rel * (before + 1.0) / rank
    size = r.gsize[r.gid].astype(np.float64)
    n_rel = r.group_sum(rel)
    start = r.gstart[r.gid]
    offset = np.arange(len(rel)) - start
    before_group = before[start]
    within = np.where(size > 1, offset * (n_rel - 1.0) / np.maximum(size - 1.0, 1.0), 0.0)
    return (n_rel / size) * (before_group + 1.0 + within) / rank


def _err(prep: Prepared, metric: Metric, r: Ranking, length: int) -> tuple[np.ndarray,
                                                                           np.ndarray]:
    nq = prep.n_queries
    top = metric.max_label if metric.max_label is not None else prep.max_label
    with np.errstate(over="ignore", invalid="ignore"):
        stop = (np.exp2(r.label) - 1.0) / np.exp2(top)
    if (stop > 1).any() or not np.isfinite(stop).all():
        i = int(np.flatnonzero((stop > 1) | ~np.isfinite(stop))[0])
        raise InputError(
            f"ERR needs labels <= max_label ({top:g}) and < 1024; got label {r.label[i]!r}",
            column="label", qid=prep.qids[r.q[i]])
    empty = np.bincount(prep.judged_q, weights=prep.judged_label > 0, minlength=nq) == 0
    return cascade(r, stop, r.n, metric.k, nq, binary=False), empty
