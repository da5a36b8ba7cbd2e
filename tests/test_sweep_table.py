"""The table a sweep prints at its end (issue 22: "a sweep ends with the same table over its
jobs"), as golden text at a fixed width, from jobs' summaries made here."""

from __future__ import annotations

import pandas as pd

from harness.app.sweep_table import sweep_table


def _summary(values: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"mean": list(values.values())}, index=list(values))


JOBS = {
    "0": (["metric.gain=exp2", "dataset.n_queries=60"], {
        "bm25": _summary({"nDCG@10": 0.5, "nDCG@10(ties=input)": 0.49, "AP@10": 0.3}),
        "dense": _summary({"nDCG@10": 0.625, "nDCG@10(ties=input)": 0.6, "AP@10": 0.25}),
    }),
    "1": (["metric.gain=linear", "dataset.n_queries=60"], {
        "bm25": _summary({"nDCG@10(gain=linear)": 0.55, "AP@10": 0.3}),
        "dense": _summary({"nDCG@10(gain=linear)": 0.5, "AP@10": 0.25}),
    }),
}


def test_sweep_table_golden(monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    lines = sweep_table(JOBS, study="demo", width=100)
    # job 1 sweeps the gain: its nDCG@10 is another definition, in a column of its own, so
    # the * of job 0's 0.6250 is not set against job 1's 0.5500 (issue 41)
    assert lines == [
        "Sweep 'demo': 2 job(s) x 2 ranker(s) each, 2 ranker(s) in all. Mean per query, a "
        "column per metric definition (options off their defaults under its name), * the "
        "best of each column; every variant: each job's summary.csv. Overrides:",
        "  job 0: metric.gain=exp2",
        "  job 1: metric.gain=linear",
        "",
        "  ranker   nDCG@10  nDCG@10      AP@10",
        "                    gain=linear",
        "  0 bm25   0.5000                0.3000*",
        "  0 dense  0.6250*               0.2500",
        "  1 bm25            0.5500*      0.3000*",
        "  1 dense           0.5000       0.2500",
    ]


def test_one_ranker_per_job_is_counted_per_job() -> None:
    """Issue 41: four jobs of one ranker each read "4 job(s) x 2 ranker(s)"."""
    jobs = {str(i): ([f"ranker={r}"], {r: _summary({"AP@10": 0.1 * i})})
            for i, r in enumerate(["oracle", "oracle", "random", "random"])}
    assert sweep_table(jobs, study="s", width=100)[0].startswith(
        "Sweep 's': 4 job(s) x 1 ranker(s) each, 2 ranker(s) in all.")
    jobs["4"] = (["ranker=contenders"], {"a": _summary({"AP@10": 0.2}),
                                         "b": _summary({"AP@10": 0.3})})
    assert sweep_table(jobs, study="s", width=100)[0].startswith(
        "Sweep 's': 5 job(s), 6 ranker run(s), 4 ranker(s) in all.")


def test_columns_wrap_at_the_width(monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    lines = sweep_table(JOBS, study="demo", width=22)
    table = lines[lines.index("") + 1:]
    assert table[0] == "  ranker   nDCG@10"  # the second column continues in a block below
    assert "" in table and "  ranker   AP@10" in table
    assert max(len(line) for line in table) <= 22


def test_the_sweep_description_bolds_the_best_within_one_definition() -> None:
    """The sweep parent's description has the console table's columns: one per metric
    definition, so job 1's nDCG@10 under gain=linear is in a column of its own and bold
    there, and job 0's 0.6250 under gain=exp2 is bold among exp2 means only (issue 41)."""
    from harness.app.notes import sweep_description

    text = sweep_description(JOBS, study="demo", overrides="metric.gain=exp2,linear")
    table = [[c.replace("&emsp;", "").strip() for c in line.strip("|").split("|")]
             for line in text.splitlines() if line.startswith("| ")]
    header, rows = table[0], table[1:]
    assert header == ["job", "overrides", "ranker", "nDCG@10", "nDCG@10(gain=linear)", "AP@10"]
    # (job, ranker) -> mean per column, read from JOBS here; bold = the column's largest
    expected = {(job, ranker): s["mean"].to_dict() for job, (_, summaries) in JOBS.items()
                for ranker, s in summaries.items()}
    keys = list(expected)
    for i, column in enumerate(header[3:], start=3):
        values = {k: expected[k].get(column) for k in keys}
        best = max(v for v in values.values() if v is not None)
        for k, row in zip(keys, rows):
            cell, value = row[i], values[k]
            if value is None:
                assert cell == "", (column, k)
            else:
                assert cell == (f"**{value:.4f}**" if value == best else f"{value:.4f}"), \
                    (column, k, cell)
    assert text.splitlines()[0] == "**Best on nDCG@10: dense 0.6250** in job 0 " \
                                   "(`metric.gain=exp2`)"
