"""The table a sweep prints at its end: every job's rankers x the headline variants of all
its jobs, as a job prints its own (:func:`harness.app.notes.results_table`), read from the
jobs' ``summary.csv`` files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

__all__ = ["sweep_table"]


def sweep_table(jobs: Mapping[str, tuple[Sequence[str], Mapping[str, pd.DataFrame]]], *,
                study: str, width: int | None = None) -> list[str]:
    """Lines for the console: a legend of each job's overrides (those not every job shares),
    then one row per job and ranker (``<job> <ranker>``) and one column per headline
    measure, cut-off and definition (nDCG@10, AP@10, nDCG@10 with gain=linear, ...), each
    cell the job's first variant of the measure (the job's own definition), ``*`` on the
    best mean of each column (so only within one definition), blank where a job did not
    compute it; columns beyond ``width`` continue in further blocks.

    ``jobs`` maps a job's number to (its overrides, ranker -> summary indexed by variant
    display name with a ``mean`` column), as :func:`harness.app.callbacks.sweep_jobs` reads
    them."""
    from harness.app.notes import bold_ok, results_table
    from harness.metrics.vocabulary.definition import parse_metric
    from harness.reporting.figures import headline_variants

    if not jobs:
        return []
    names = list(dict.fromkeys(v for _, summaries in jobs.values() for s in summaries.values()
                               for v in s.index))
    parsed = {n: parse_metric(n) for n in names}
    # a column per headline measure and cut-off and per definition: each job's cell is its
    # first variant of the measure, under the job's own definition; a sweep over definitions
    # gets a column for each, so * compares only means of one definition
    families = list(dict.fromkeys((m.name, m.k) for m in headline_variants(list(parsed.values()))))
    shared = set.intersection(*(set(o) for o, _ in jobs.values()))
    cells: dict[str, dict[str, float]] = {}
    for num, (_, summaries) in jobs.items():
        for ranker, summary in summaries.items():
            first: dict[tuple[str, int | None], str] = {}
            for variant in summary.index:
                first.setdefault((parsed[variant].name, parsed[variant].k), variant)
            cells[f"{num} {ranker}"] = {v: float(summary.at[v, "mean"])
                                        for f, v in first.items() if f in families}
    columns = sorted({v for row in cells.values() for v in row}, key=lambda v: (
        families.index((parsed[v].name, parsed[v].k)), names.index(v)))
    rows = {key: pd.DataFrame({"mean": [row.get(v, float("nan")) for v in columns]},
                              index=columns) for key, row in cells.items()}
    counts = {len(summaries) for _, summaries in jobs.values()}
    n_rankers = len({r for _, summaries in jobs.values() for r in summaries})
    size = (f"{len(jobs)} job(s) x {counts.pop()} ranker(s) each" if len(counts) == 1
            else f"{len(jobs)} job(s), {len(rows)} ranker run(s)")
    lines = [f"Sweep {study!r}: {size}, {n_rankers} ranker(s) in all. Mean per query, a "
             "column per metric definition (options off their defaults under its name), * "
             "the best of each column; every variant: each job's summary.csv. Overrides:"]
    lines += [f"  job {num}: {' '.join(o for o in given if o not in shared) or '(shared)'}"
              for num, (given, _) in jobs.items()]
    lines += [""] + results_table(rows, [parsed[v] for v in columns], width=width,
                                  bold=bold_ok(), missing="")
    return lines
