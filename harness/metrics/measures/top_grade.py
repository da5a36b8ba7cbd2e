"""The scale's top grade, which mnDCG and ERR divide by: every label must be at most it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from harness.errors import InputError

if TYPE_CHECKING:
    from harness.metrics.layout.prepared import Prepared
    from harness.metrics.vocabulary.measure import MetricOptions as Metric

__all__ = ["top_grade", "check_top_grade"]


def top_grade(prep: Prepared, metric: Metric) -> float:
    """The metric's ``max_label``, or the highest label evaluated when it has none."""
    return metric.max_label if metric.max_label is not None else prep.max_label


def check_top_grade(prep: Prepared, metric: Metric) -> None:
    """A label above the top grade would give values above 1: refuse it, naming the query."""
    top = top_grade(prep, metric)
    if prep.highest_label <= top and prep.highest_judged <= top:  # no label above it
        return
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
