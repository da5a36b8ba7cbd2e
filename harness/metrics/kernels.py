"""One metric's per-query values: its measure's kernel (:mod:`harness.metrics.measures`)
applied to the ranking its tie rule gives.

Every kernel returns, per query code, the value and whether the query is *empty* (no
relevant document, so the metric's ``empty`` policy decides its value). No Python loop runs
per query. Tie averaging (``ties="average"``) is exact, not sampled; each measure's module
says how.
"""

from __future__ import annotations

import numpy as np

from harness.errors import InputError
from harness.metrics.definition import Metric
from harness.metrics.prepared import Prepared
from harness.metrics.registry import Cache, MeasureInput

__all__ = ["compute", "Cache", "unjudged_grade"]


def compute(prep: Prepared, metric: Metric, cache: Cache, top: int | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of ``metric`` (before the empty policy) and the empty mask.

    ``top`` (>= the metric's k) ranks only the rows that can reach the top ``top``; the
    caller passes one value for all metrics of a tie rule so they share one ranking. A
    measure that reads which ranked documents are judged ranks every row.
    """
    spec = metric.measure
    if metric.unjudged == "condensed" and prep.condensed is not prep:
        # the unjudged rows leave the ranking: other rows, so a memo of their own
        prep, cache = prep.condensed, cache.get_or(("condensed",), Cache)
    elif metric.unjudged == "relevant":  # the unjudged rows judged: other labels, own memo
        grade = unjudged_grade(prep, metric)
        prep, cache = prep.relevant(grade), cache.get_or(("relevant", grade), Cache)
    r = prep.ranking(metric.ties, metric.seed, top=None if spec.reads_judged else top)
    values, empty = spec.kernel(MeasureInput(prep, metric, r, cache))
    return np.asarray(values, dtype=np.float64), np.asarray(empty, dtype=bool)


def unjudged_grade(prep: Prepared, metric: Metric) -> float:
    """The grade an unjudged retrieved document takes under ``unjudged='relevant'``: the
    metric's ``unjudged_grade``, else the highest grade judged (refused when none is
    positive: the unjudged documents would stay non-relevant)."""
    if metric.unjudged_grade is not None:
        return metric.unjudged_grade
    if prep.max_label <= 0:
        raise InputError(
            f"{metric.display_name}: unjudged='relevant' takes the highest grade judged, but "
            "no judgment has a positive grade; give unjudged_grade", column="label")
    return float(prep.max_label)
