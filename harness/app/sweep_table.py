"""The table a sweep prints at its end: every job's rankers x the headline variants of all
its jobs, as a job prints its own (:func:`harness.app.notes.results_table`), read from the
jobs' ``summary.csv`` files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["sweep_table"]


def sweep_table(jobs: Mapping[str, tuple[Sequence[str], Mapping[str, pd.DataFrame]]], *,
                study: str, width: int | None = None) -> list[str]:
    """Lines for the console: a legend of each job's overrides (those not every job shares),
    then one row per job and ranker (``<job> <ranker>``) and one column per headline
    measure and cut-off (nDCG@10, AP@10, ...), each cell the job's first variant of it (the
    job's own definition), ``*`` on the best mean of each column, blank where a job did not
    compute it; columns beyond ``width`` continue in further blocks.

    ``jobs`` maps a job's number to (its overrides, ranker -> summary indexed by variant
    display name with a ``mean`` column), as :func:`harness.app.callbacks.sweep_jobs` reads
    them."""
    from harness.app.notes import bold_ok, results_table
    from harness.metrics.vocabulary.definition import Metric, parse_metric
    from harness.reporting.figures import headline_variants

    if not jobs:
        return []
    names = list(dict.fromkeys(v for _, summaries in jobs.values() for s in summaries.values()
                               for v in s.index))
    parsed = {n: parse_metric(n) for n in names}
    # a column per headline measure and cut-off; each job's cell is its first variant of it,
    # under the job's own definition (a sweep over definitions moves the numbers there)
    families = list(dict.fromkeys((m.name, m.k) for m in headline_variants(list(parsed.values()))))
    columns = [Metric(name, k=k) for name, k in families]
    shared = set.intersection(*(set(o) for o, _ in jobs.values()))
    rows: dict[str, Any] = {}
    for num, (_, summaries) in jobs.items():
        for ranker, summary in summaries.items():
            first: dict[tuple[str, int | None], float] = {}
            for variant in summary.index:
                m = parsed[variant]
                first.setdefault((m.name, m.k), float(summary.at[variant, "mean"]))
            rows[f"{num} {ranker}"] = pd.DataFrame(
                {"mean": [first.get(f, float("nan")) for f in families]},
                index=[c.display_name for c in columns])
    n_rankers = len({r for _, summaries in jobs.values() for r in summaries})
    lines = [f"Sweep {study!r}: {len(jobs)} job(s) x {n_rankers} ranker(s). Mean per query, "
             "each job under its own definition (its overrides below), * the best of each "
             "column; every variant: each job's summary.csv."]
    lines += [f"  job {num}: {' '.join(o for o in given if o not in shared) or '(shared)'}"
              for num, (given, _) in jobs.items()]
    lines += [""] + results_table(rows, columns, width=width, bold=bold_ok(), missing="")
    return lines
