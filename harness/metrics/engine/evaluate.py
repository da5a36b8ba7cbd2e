"""Public entry points: ``evaluate``, ``evaluate_dense``, ``aggregate``, ``tie_interval``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import InputError, MetricDefinitionError
from harness.metrics.engine.blocked import assemble, plan_blocks
from harness.metrics.engine.kernels import measure_columns, ranking_plan
from harness.metrics.engine.weighting import empty_mask, record_empty, summary
from harness.metrics.layout.dense import dense_array
from harness.metrics.layout.peer_inputs import as_table
from harness.metrics.layout.prepare import prepare
from harness.metrics.vocabulary.conventions import TREC_EVAL_CONVENTIONS
from harness.metrics.vocabulary.definition import Metric, parse_metric

__all__ = ["evaluate", "evaluate_dense", "aggregate", "tie_interval", "as_metrics",
           "negative_policy"]

STAT_COLUMNS = ("n_docs", "n_judged", "n_relevant")

MetricLike = Metric | str



def negative_policy(metrics: list[Metric], given: str | None) -> str:
    """``negative_labels``: as given, else 'unjudged' when every metric uses a trec_eval
    convention (trec_eval reads a negative label as unjudged) and 'error' otherwise."""
    if given is not None:
        return given
    trec = all(m.convention in TREC_EVAL_CONVENTIONS for m in metrics)
    return "unjudged" if trec else "error"

def as_metrics(metrics: MetricLike | Iterable[MetricLike]) -> list[Metric]:
    """Metrics from a :class:`Metric`, a name, or an iterable of either (duplicates dropped)."""
    items = [metrics] if isinstance(metrics, (Metric, str)) else list(metrics)
    if not items:
        raise MetricDefinitionError("no metric given")
    out: dict[Metric, None] = {}  # in order; a set's lookups, not a list's (a grid of 32
    for item in items:  # compared 496 pairs of definitions for every part streamed)
        out.setdefault(item if isinstance(item, Metric) else parse_metric(item))
    return list(out)


def evaluate(
    run: pd.DataFrame,
    qrels: pd.DataFrame | None = None,
    metrics: MetricLike | Iterable[MetricLike] = ("ndcg@10",),
    *,
    weights: Mapping[Any, float] | pd.Series | None = None,
    nan_scores: str = "error",
    missing: str = "exclude",
    negative_labels: str | None = None,
    top_label: float | None = None,
) -> pd.DataFrame:
    """Per-query values of ranking metrics under explicit definitions.

    Parameters
    ----------
    run : DataFrame with columns ``qid``, ``docid``, ``score`` (and ``label`` when ``qrels``
        is None), or a peer's run (:mod:`harness.metrics.layout.peer_inputs`)
        Scored documents, one row each, in any order: also a ranx ``Run``, pytrec_eval's
        ``{qid: {docid: score}}``, ir_measures' ``ScoredDoc`` records, a PyTerrier frame.
        Higher scores rank first; equal scores are ordered by each metric's ``ties`` rule.
    qrels : DataFrame with columns ``qid``, ``docid``, ``label``, or a peer's qrels, optional
        Judgments. Documents the run did not retrieve still count for ``ideal='judged'``,
        AP and recall; retrieved documents without a judgment have label 0.
    metrics : Metric, str or iterable of them, default ``("ndcg@10",)``
        Definitions to compute (see :class:`~harness.Metric`); names are parsed with
        :func:`~harness.parse_metric`. Metrics sharing a tie mode share one sort.
    weights : mapping or Series from qid to weight, optional
        Per-query weights (keras_rs list weights), added as a ``weight`` column and used by
        :func:`aggregate`.
    nan_scores : {'error', 'last'}, default 'error'
        NaN scores raise, or rank after every scored document (tied with each other).
    missing : {'exclude', 'zero'}, default 'exclude'
        Judged queries absent from the run are left out (and listed in
        ``result.attrs['missing_qids']``), or scored 0 with ``n_docs`` 0 (trec_eval ``-c``).
    negative_labels : {'error', 'unjudged'} or None, default None
        Negative labels raise, or mark the document unjudged (trec_eval). ``None`` means
        ``'unjudged'`` when every metric uses ``convention='trec_eval'``, else ``'error'``.
    top_label : float, optional
        The top grade that metrics with ``max_label=None`` (mnDCG, ERR) use; by default the
        highest label in ``run`` and ``qrels``. Pass it when evaluating part of a larger
        collection (as :func:`harness.evaluate_parquet` does) so every part uses the same.

    Returns
    -------
    DataFrame
        Indexed by ``qid`` (sorted), columns ``n_docs`` (ranked documents), ``n_judged``
        (judged documents), ``n_relevant`` (judged with label >= the metrics' common
        ``level``, else 1), then one column per metric named by its display name. Queries
        whose metric is excluded by ``empty='exclude'`` hold NaN there. Run queries without
        any judgment are not evaluated; they are listed in ``attrs['unjudged_qids']``.

    Raises
    ------
    InputError
        A missing column, NaN/inf score or label, negative label, duplicate (qid, docid),
        non-numeric value or empty table, naming the table, column, qid and row.

    Notes
    -----
    Nothing is computed per query in Python: rows are factorised by qid, sorted once per tie
    mode with :func:`numpy.lexsort`, and summed per query with :func:`numpy.bincount`. A run
    of more than ``harness.metrics.engine.blocked.BLOCKED_ABOVE`` rows is evaluated in blocks of
    whole queries and assembled, bit for bit the same table (:mod:`harness.metrics.engine.blocked`).

    Examples
    --------
    >>> import pandas as pd
    >>> run = pd.DataFrame({"qid": ["q1"] * 4, "docid": ["a", "b", "c", "d"],
    ...                     "score": [3.0, 2.0, 1.0, 0.0], "label": [2, 3, 0, 1]})
    >>> evaluate(run, metrics=["ndcg", "ndcg@2(gain=linear)"]).round(4)
         n_docs  n_judged  n_relevant   nDCG  nDCG@2(gain=linear)
    qid
    q1        4         4           3  0.8354               0.9134
    """
    mlist = as_metrics(metrics)
    check_top_label(top_label)
    run, qrels = as_table(run, "run"), as_table(qrels, "qrels")
    options: dict[str, Any] = {"nan_scores": nan_scores, "missing": missing, "top_label": top_label,
               "negative_labels": negative_policy(mlist, negative_labels)}
    out, blocks = None, plan_blocks(run, qrels, options)  # a large run: blocks of queries
    if blocks is not None:
        parts, each = blocks
        try:
            out = assemble([_evaluate_whole(r, q, mlist, **each) for r, q in parts])
        except InputError:
            out = None  # evaluated whole, the first bad row of the whole input is named
    if out is None:
        out = _evaluate_whole(run, qrels, mlist, **options)
    if weights is not None:
        out["weight"] = _weights_for(out.index, weights)
    return out


def _evaluate_whole(run: pd.DataFrame, qrels: pd.DataFrame | None, mlist: list[Metric], *,
                    nan_scores: str, missing: str, negative_labels: str,
                    top_label: float | None) -> pd.DataFrame:
    """:func:`evaluate` of the whole run at once (of one block of a large run)."""
    levels = {m.level for m in mlist if m.binary}
    level = levels.pop() if len(levels) == 1 else 1
    prep = prepare(run, qrels, level=level, nan_scores=nan_scores, missing=missing,
                   negative_labels=negative_labels, max_label=top_label,
                   rankings=ranking_plan(mlist))
    refuse_fractional_labels_for_ranx(prep, mlist)
    return per_query_table(prep, mlist, level, missing)


def per_query_table(prep: Any, mlist: list[Metric], level: float, missing: str) -> pd.DataFrame:
    """The per-query table of the metrics on prepared rows."""
    columns: dict[str, Any] = {
        "n_docs": prep.n_docs,
        "n_judged": prep.n_judged,
        "n_relevant": prep.relevant_counts(level),
    }
    values, empties = measure_columns(prep, mlist)
    columns.update(values)
    out = pd.DataFrame(columns, index=prep.qids)
    for m, empty in empties.items():
        record_empty(out, m.display_name, empty, m.empty_weight)
    out.attrs["missing_qids"] = list(prep.missing_qids) if missing == "exclude" else []
    out.attrs["unjudged_qids"] = list(prep.unjudged_qids)
    return out


def refuse_fractional_labels_for_ranx(prep: Any, metrics: list[Metric]) -> None:
    """ranx and trec_eval store labels as integers, truncating a fractional label toward
    zero: a definition said to reproduce them cannot take such labels silently."""
    tools = [m for m in metrics if m.convention in ("ranx", *TREC_EVAL_CONVENTIONS)]
    if not tools:
        return
    for q, labels in ((prep.judged_q, prep.judged_label), (prep.q, prep.label)):
        frac = np.flatnonzero(labels != np.trunc(labels))
        if len(frac):
            i, m = int(frac[0]), tools[0]
            convention = str(m.convention)  # one of the tools' conventions (above)
            raise InputError(
                f"{m.display_name} (convention={m.convention!r}): label {labels[i]:g} is not "
                f"an integer; {convention.rstrip('9')} truncates labels toward zero, so its "
                "numbers would not be reproduced. Round or truncate the labels yourself, or "
                "choose another convention", column="label", qid=prep.qids[q[i]])


def _weights_for(index: pd.Index, weights: Mapping[Any, float] | pd.Series) -> np.ndarray:
    series = weights if isinstance(weights, pd.Series) else pd.Series(dict(weights))
    aligned = series.reindex(index)
    if aligned.isna().any():
        qid = index[np.flatnonzero(aligned.isna().to_numpy())[0]]
        raise InputError("no weight for an evaluated query", column="weight", qid=qid)
    w = pd.to_numeric(aligned, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"weights must be finite and >= 0, got {w[i]!r}", column="weight",
                         qid=index[i])
    return w


def check_top_label(value: Any) -> None:
    """The scale's top grade: a finite number (ERR with an infinite one exceeded 1); one
    below a label is refused where the labels are read."""
    if value is None:
        return
    number = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
    if isinstance(value, bool) or not np.isfinite(number):
        raise InputError(f"top_label must be a finite number, got {value!r}",
                         key="top_label")


def metric_columns(per_query: pd.DataFrame) -> list[str]:
    """The metric columns of a per-query frame (everything but counts and weight)."""
    return [c for c in per_query.columns if c not in (*STAT_COLUMNS, "weight")]


def aggregate(per_query: pd.DataFrame, weights: Mapping[Any, float] | pd.Series | None = None
              ) -> pd.DataFrame:
    """Mean of each metric over queries, weighted when asked, with query counts.

    Parameters
    ----------
    per_query : DataFrame
        The result of :func:`evaluate`; metric columns are recognised by their display
        names, which carry each metric's ``empty`` policy.
    weights : mapping or Series from qid to weight, optional
        Overrides the frame's ``weight`` column.

    Returns
    -------
    DataFrame
        Indexed by metric display name, columns ``mean`` (the measure's declared summary:
        the mean, or the sum for counts such as ``num_ret``, or the geometric mean for
        ``gm_ap`` and ``gm_bpref``), ``n_queries`` (used) and
        ``n_excluded`` (left out by ``empty='exclude'``, plus queries judged but not run and
        queries run but not judged). With ``empty='nan'`` a NaN value makes the mean NaN.
        A query without relevant document is weighted by its metric's ``empty_weight``
        (read from ``attrs['empty_qids']``, see :mod:`harness.metrics.engine.weighting`).

    Examples
    --------
    >>> import pandas as pd
    >>> pq = pd.DataFrame({"n_docs": [3, 3], "n_judged": [3, 3], "n_relevant": [1, 0],
    ...                    "AP": [0.5, 0.0]}, index=pd.Index(["a", "b"], name="qid"))
    >>> aggregate(pq)
        mean  n_queries  n_excluded
    AP  0.25          2           0
    """
    if weights is not None:
        w = _weights_for(per_query.index, weights)
    elif "weight" in per_query.columns:
        w = per_query["weight"].to_numpy(dtype=np.float64)
    else:
        w = np.ones(len(per_query))
    outside = len(per_query.attrs.get("missing_qids", ())) + len(
        per_query.attrs.get("unjudged_qids", ()))
    rows = {}
    for column in metric_columns(per_query):
        metric = parse_metric(column)
        values = per_query[column].to_numpy(dtype=np.float64)
        nan = np.isnan(values)
        n_nan = int(nan.sum())
        if metric.empty == "exclude" or not n_nan:
            keep = ~nan
            # every query kept (most columns): the arrays themselves, not copies
            kept_w = w if not n_nan else w[keep]
            if kept_w.sum() == 0 and len(kept_w):
                raise InputError(
                    f"the weights of the {len(kept_w)} queries averaged for {column} sum "
                    "to 0, so their weighted mean is undefined; give at least one of them a "
                    "positive weight", column="weight")
            empty = empty_mask(per_query, column, metric.empty_weight, kept_w)
            if empty is not None and n_nan:
                empty = empty[keep]
            mean = summary(values if not n_nan else values[keep], kept_w, empty,
                           metric.empty_weight, getattr(metric.measure, "aggregate", "mean"))
            rows[column] = (mean, len(kept_w), n_nan + outside)
        else:
            rows[column] = (float("nan"), len(values), outside)
    return pd.DataFrame.from_dict(rows, orient="index",
                                  columns=["mean", "n_queries", "n_excluded"])


def evaluate_dense(
    y_true: Any,
    y_score: Any,
    metrics: MetricLike | Iterable[MetricLike] = ("ndcg@10",),
    mask: Any = None,
    *,
    weights: Any = None,
) -> pd.DataFrame:
    """Metrics for equal-length lists, as sklearn and keras_rs take them.

    Parameters
    ----------
    y_true, y_score : array-like of shape (n_queries, list_size)
        Labels and scores; row ``i`` is query ``i`` and column ``j`` is document ``j``.
    metrics : as in :func:`evaluate`
    mask : bool array-like of shape (n_queries, list_size), optional
        ``True`` where an item is present (keras_rs); masked-out items are dropped.
    weights : array-like of shape (n_queries,), optional
        Per-list weights.

    Returns
    -------
    DataFrame
        As :func:`evaluate`, indexed by row number ``qid``. The ideal ranking is the list
        itself, so ``ideal='judged'`` and ``'retrieved'`` coincide.

    Examples
    --------
    >>> evaluate_dense([[1, 0.1, 0, 0]], [[2, 3, 1, 0]], "ndcg(gain=linear)").round(4)
         n_docs  n_judged  n_relevant  nDCG(gain=linear)
    qid
    0         4         4           1             0.6876
    """
    yt = dense_array("y_true", y_true)
    ys = dense_array("y_score", y_score)
    if yt.ndim != 2 or ys.shape != yt.shape:
        raise InputError(
            f"y_true and y_score must be 2-D arrays of the same shape, got {yt.shape} and "
            f"{ys.shape}", column="y_score")
    keep = np.ones(yt.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if keep.shape != yt.shape:
        raise InputError(f"mask has shape {keep.shape}, expected {yt.shape}", column="mask")
    rows, cols = np.nonzero(keep)
    run = pd.DataFrame({"qid": rows, "docid": cols, "score": ys[rows, cols],
                        "label": yt[rows, cols]})
    w = None
    if weights is not None:
        warr = np.asarray(weights, dtype=np.float64)
        if warr.shape != (yt.shape[0],):
            raise InputError(f"weights must have shape ({yt.shape[0]},), got {warr.shape}",
                             column="weight")
        w = pd.Series(warr, index=np.arange(yt.shape[0]))
    return evaluate(run, None, metrics, weights=w)


def tie_interval(run: pd.DataFrame, qrels: pd.DataFrame | None = None,
                 metric: MetricLike = "ndcg@10", **kwargs: Any) -> pd.DataFrame:
    """Per query, the range a metric can take over the orders of tied documents.

    Returns a DataFrame indexed by ``qid`` with columns ``pessimistic``, ``average``,
    ``optimistic`` and ``width`` (optimistic - pessimistic). A width of 0 means ties do not
    matter for that query.

    Examples
    --------
    >>> import pandas as pd
    >>> run = pd.DataFrame({"qid": 1, "docid": ["a", "b"], "score": [1.0, 1.0],
    ...                     "label": [0, 1]})
    >>> tie_interval(run, metric="rr")
         pessimistic  average  optimistic  width
    qid
    1            0.5     0.75         1.0    0.5
    """
    m = metric if isinstance(metric, Metric) else parse_metric(metric)
    variants = {name: m.with_options(ties=name) for name in
                ("pessimistic", "average", "optimistic")}
    pq = evaluate(run, qrels, list(variants.values()), **kwargs)
    out = pd.DataFrame({name: pq[v.display_name] for name, v in variants.items()})
    out["width"] = out["optimistic"] - out["pessimistic"]
    return out
