"""Several score columns of one run evaluated together (:func:`evaluate_columns`): the run
checked and laid out once, the rankings and measures computed per column. The stream
engine evaluates a file's score columns (one per ranker of a study) this way, part by
part."""

from __future__ import annotations

import time
from collections.abc import Iterable

import pandas as pd

from harness.metrics.engine import blocked
from harness.metrics.engine.evaluate import (
    MetricLike,
    as_metrics,
    check_top_label,
    evaluate,
    negative_policy,
    per_query_table,
    refuse_fractional_labels_for_ranx,
)
from harness.metrics.engine.kernels import ranking_plan
from harness.metrics.layout.prepare import checked_scores, prepare

__all__ = ["evaluate_columns", "score_column"]


def evaluate_columns(run: pd.DataFrame, qrels: pd.DataFrame | None,
                     metrics: MetricLike | Iterable[MetricLike], scores: list[str], *,
                     nan_scores: str = "error", missing: str = "exclude",
                     negative_labels: str | None = None, top_label: float | None = None,
                     times: list[float] | None = None) -> list[pd.DataFrame]:
    """Per column of ``scores`` (columns of ``run``), the table :func:`evaluate` gives for
    ``run`` with that column as its ``score`` (the other score columns left out): the
    run is checked and laid out once, and only the rankings and measures are computed per
    column. Errors come in the order evaluating the columns one by one raises them: a bad
    qid, docid, label or the first column's score, then the first column's measures, then
    the second column's score, and so on. A run too large for one piece (above
    ``BLOCKED_ABOVE`` rows) is evaluated column by column. ``times`` (when given) receives
    each column's seconds, the shared preparation counted in the first's."""
    mlist = as_metrics(metrics)
    times = [] if times is None else times
    clock = time.perf_counter()

    def timed(table: pd.DataFrame) -> pd.DataFrame:
        nonlocal clock
        now = time.perf_counter()
        times.append(now - clock)
        clock = now
        return table

    if len(scores) < 2 or len(run) > blocked.BLOCKED_ABOVE:
        return [timed(evaluate(score_column(run, s, scores), qrels, mlist,
                               nan_scores=nan_scores, missing=missing,
                               negative_labels=negative_labels, top_label=top_label))
                for s in scores]
    check_top_label(top_label)
    negative = negative_policy(mlist, negative_labels)
    levels = {m.level for m in mlist if m.binary}
    level = levels.pop() if len(levels) == 1 else 1
    prep = prepare(score_column(run, scores[0], scores), qrels, level=level,
                   nan_scores=nan_scores, missing=missing, negative_labels=negative,
                   max_label=top_label, rankings=ranking_plan(mlist))
    refuse_fractional_labels_for_ranx(prep, mlist)
    tables = [timed(per_query_table(prep, mlist, level, missing))]
    for s in scores[1:]:
        score = checked_scores(score_column(run, s, scores), nan_scores)
        tables.append(timed(per_query_table(prep.with_score(score), mlist, level, missing)))
    return tables


def score_column(run: pd.DataFrame, score: str, scores: list[str]) -> pd.DataFrame:
    """``run`` with column ``score`` as its ``score`` and the other ``scores`` left out."""
    return run.drop(columns=[s for s in scores if s != score]).rename(
        columns={score: "score"})
