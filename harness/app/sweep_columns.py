"""The columns of a sweep's tables (the console's and its parent run's description): one per
headline measure, cut-off and metric definition, so a best mean is marked only among means of
one definition."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from harness.metrics import Metric

__all__ = ["SweepJobs", "definition_columns"]

#: A job's number -> (its overrides, ranker -> summary indexed by variant display name with a
#: ``mean`` column), as :func:`harness.app.callbacks.sweep_jobs` reads them.
SweepJobs = Mapping[str, tuple[Sequence[str], Mapping[str, pd.DataFrame]]]


def definition_columns(jobs: SweepJobs
                       ) -> tuple[list[Metric], dict[tuple[str, str], dict[str, float]]]:
    """The sweep's columns and cells: a column per headline measure and cut-off (nDCG@10,
    AP@10, ...) and per definition among the jobs (nDCG@10 and nDCG@10(gain=linear) in a
    sweep over ``metric.gain``), in the order of the headline variants; each job's cell is
    its first variant of the measure and cut-off, the job's own definition. Returns the
    columns and ``(job, ranker) -> {display name: mean}``."""
    from harness.metrics.vocabulary.definition import parse_metric
    from harness.reporting.figures import headline_variants

    names = list(dict.fromkeys(v for _, summaries in jobs.values() for s in summaries.values()
                               for v in s.index))
    parsed = {n: parse_metric(n) for n in names}
    families = list(dict.fromkeys((m.name, m.k) for m in headline_variants(list(parsed.values()))))
    cells: dict[tuple[str, str], dict[str, float]] = {}
    for num, (_, summaries) in jobs.items():
        for ranker, summary in summaries.items():
            first: dict[tuple[str, int | None], str] = {}
            for variant in summary.index:
                first.setdefault((parsed[variant].name, parsed[variant].k), variant)
            cells[(num, ranker)] = {v: float(summary.at[v, "mean"])
                                    for f, v in first.items() if f in families}
    columns = sorted({v for row in cells.values() for v in row}, key=lambda v: (
        families.index((parsed[v].name, parsed[v].k)), names.index(v)))
    return [parsed[v] for v in columns], cells
