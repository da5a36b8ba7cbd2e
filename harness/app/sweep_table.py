"""The table a sweep prints at its end: every job's rankers x the headline variants of all
its jobs, as a job prints its own (:func:`harness.app.notes.results_table`), read from the
jobs' ``summary.csv`` files."""

from __future__ import annotations

import pandas as pd

from harness.app.sweep_columns import SweepJobs, definition_columns

__all__ = ["sweep_table"]


def sweep_table(jobs: SweepJobs, *, study: str, width: int | None = None) -> list[str]:
    """Lines for the console: a legend of each job's overrides (those not every job shares),
    then one row per job and ranker (``<job> <ranker>``) and one column per headline
    measure, cut-off and definition (nDCG@10, AP@10, nDCG@10 with gain=linear, ...), each
    cell the job's first variant of the measure (the job's own definition), ``*`` on the
    best mean of each column (so only within one definition), blank where a job did not
    compute it (:func:`~harness.app.sweep_columns.definition_columns`); columns beyond
    ``width`` continue in further blocks."""
    from harness.app.notes import bold_ok, results_table

    if not jobs:
        return []
    columns, cells = definition_columns(jobs)
    shared = set.intersection(*(set(o) for o, _ in jobs.values()))
    rows = {f"{num} {ranker}": pd.DataFrame(
        {"mean": [row.get(c.display_name, float("nan")) for c in columns]},
        index=[c.display_name for c in columns]) for (num, ranker), row in cells.items()}
    counts = {len(summaries) for _, summaries in jobs.values()}
    n_rankers = len({r for _, summaries in jobs.values() for r in summaries})
    size = (f"{len(jobs)} job(s) x {counts.pop()} ranker(s) each" if len(counts) == 1
            else f"{len(jobs)} job(s), {len(rows)} ranker run(s)")
    lines = [f"Sweep {study!r}: {size}, {n_rankers} ranker(s) in all. Mean per query, a "
             "column per metric definition (options off their defaults under its name), * "
             "the best of each column; every variant: each job's summary.csv. Overrides:"]
    lines += [f"  job {num}: {' '.join(o for o in given if o not in shared) or '(shared)'}"
              for num, (given, _) in jobs.items()]
    lines += [""] + results_table(rows, columns, width=width, bold=bold_ok(), missing="")
    return lines
