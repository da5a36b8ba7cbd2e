"""Weighted means over queries, with the ``empty_weight`` rule for queries that have no
relevant document.

The three rules differ only when weights are not all 1:

- ``own``: every query counts with its own weight, :math:`\\sum_q w_q v_q / \\sum_q w_q`.
- ``unweighted``: a query without relevant document adds its value (weight 1) to the
  numerator and its own weight to the denominator (LightGBM and XGBoost NDCG).
- ``mean``: such a query (with a positive weight) counts with the mean weight of the
  queries that have a relevant document and a positive weight, or 1 if there are none
  (keras_rs ranking metrics, within one batch).

:func:`harness.evaluate` records which queries had no relevant document in
``attrs["empty_qids"]`` (per metric column whose ``empty_weight`` is not ``own``), and so
does :func:`harness.evaluate_parquet`; :func:`harness.aggregate` reads it back. A frame
without that record (read from a file, or from :func:`harness.evaluate_dask`) is refused
when its weights are not all 1, rather than averaged under the wrong rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from harness.errors import InputError
from harness.metrics.vocabulary.measure import GMEAN_FLOOR

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EMPTY_ATTR", "empty_mask", "summary", "weighted_mean"]

#: The ``attrs`` entry of a per-query frame: {metric column: [qids without relevant doc]}.
EMPTY_ATTR = "empty_qids"


def empty_mask(per_query: pd.DataFrame, column: str, rule: str,
               weights: np.ndarray) -> np.ndarray | None:
    """The queries of ``column`` without relevant document, when ``rule`` needs them (weights
    not all 1); an InputError when the frame does not say which they are."""
    if rule == "own" or bool(np.all(weights == 1.0)):
        return None
    recorded = per_query.attrs.get(EMPTY_ATTR, {})
    if column not in recorded:
        raise InputError(
            f"{column} weights a query without relevant document by empty_weight={rule!r}, so "
            "its weighted mean needs to know which queries those are; aggregate the frame "
            "harness.evaluate returned (its attrs['empty_qids'] lists them), not a copy that "
            "lost its attrs", column=column)
    return np.asarray(per_query.index.isin(list(recorded[column])), dtype=bool)


def weighted_mean(values: np.ndarray, weights: np.ndarray, empty: np.ndarray | None,
                  rule: str) -> tuple[float, float]:
    """(numerator, denominator) of the weighted mean of ``values`` under ``rule``; ``empty``
    marks the queries without relevant document (``None``: the rule changes nothing)."""
    if empty is None or rule == "own":
        return float(np.dot(values, weights)), float(weights.sum())
    if rule == "unweighted":
        numerator = np.where(empty, values, values * weights)
        return float(numerator.sum()), float(weights.sum())
    if rule == "mean":
        graded = ~empty & (weights > 0)
        fill = float(weights[graded].mean()) if graded.any() else 1.0
        w = np.where(empty & (weights > 0), fill, weights)
        return float(np.dot(values, w)), float(w.sum())
    raise ValueError(f"unknown empty_weight rule {rule!r}")


def summary(values: np.ndarray, weights: np.ndarray, empty: np.ndarray | None, rule: str,
            how: str = "mean") -> float:
    """A measure's declared summary of its per-query values (``Measure.aggregate``): the
    weighted mean (``how="mean"``), the weighted sum (``"sum"``, counts), or the weighted
    geometric mean of the values floored at ``GMEAN_FLOOR`` (``"gmean"``, trec_eval's
    ``gm_map``); ``empty`` and ``rule`` as in :func:`weighted_mean`.

    >>> summary(np.array([0.5, 0.0]), np.ones(2), None, "own", "gmean")  # doctest: +ELLIPSIS
    0.00223...
    """
    if how == "gmean":
        values = np.log(np.maximum(values, GMEAN_FLOOR))
    numerator, total = weighted_mean(values, weights, empty, rule)
    if how == "sum":
        return numerator
    mean = numerator / total if total > 0 else float("nan")
    return float(np.exp(mean)) if how == "gmean" else mean


def record_empty(out: pd.DataFrame, column: str, empty: np.ndarray, rule: str) -> None:
    """Note in ``out.attrs`` which queries of ``column`` have no relevant document."""
    if rule != "own":
        out.attrs.setdefault(EMPTY_ATTR, {})[column] = out.index[empty].tolist()


def merge_empty(frames: list[Any]) -> dict[str, list[Any]]:
    """The ``empty_qids`` of per-query frames of disjoint query sets, joined."""
    merged: dict[str, list[Any]] = {}
    for frame in frames:
        for column, qids in frame.attrs.get(EMPTY_ATTR, {}).items():
            merged.setdefault(column, []).extend(qids)
    return merged
