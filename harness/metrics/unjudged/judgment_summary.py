"""Judgment intervals of several runs, summarised (``harness judgments``): per run and
metric the mean under each unjudged treatment and the interval of the mean over every
labeling; per pair of runs, the difference under each treatment, its interval and whether
the verdict holds across it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.metrics.unjudged.judgment_interval import judgment_interval
from harness.metrics.vocabulary.definition import Metric, parse_metric

__all__ = ["judgment_tables", "markdown", "difference_bounds", "judged_distribution"]

TREATMENTS = ("nonrelevant", "relevant", "condensed")


def judgment_tables(runs: Mapping[str, pd.DataFrame], qrels: pd.DataFrame,
                    metrics: Sequence[Metric | str], *, ties: bool = False,
                    **kwargs: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two tables of ``harness judgments``.

    ``runs``: name -> run, the first the baseline. Returns ``per_run`` (one row per run and
    metric: ``judged_at_k``, the means under each treatment, ``low`` and ``high``, the
    least and greatest mean over every labeling of the documents any run retrieved
    unjudged (one set of labelings for all runs), ``exact``, the share of queries whose
    bounds are exact, ``n_queries`` and ``n_not_judged``, the run's queries without any
    judgment, not evaluated) and ``pairs`` (one row per other run and metric:
    the mean difference run - baseline over their common queries under each treatment,
    ``worst`` and ``best``, bounds of the difference over those labelings, conservative
    in that each run's bound may take a different labeling, and ``verdict``).
    """
    rows, pair_rows = [], []
    names = list(runs)
    pool = pd.concat([run[["qid", "docid"]] for run in runs.values()]).drop_duplicates()
    for metric in metrics:
        m = metric if isinstance(metric, Metric) else parse_metric(metric)
        tables = {name: judgment_interval(run, qrels, m, ties=ties, pool=pool, **kwargs)
                  for name, run in runs.items()}
        for name, t in tables.items():
            rows.append({"run": name, "metric": m.display_name,
                         "judged_at_k": t["judged_at_k"].mean(),
                         **{c: t[c].mean() for c in (*TREATMENTS, "low", "high")},
                         "exact": t["exact"].mean(), "n_queries": len(t),
                         "n_not_judged": len(t.attrs.get("unjudged_qids", []))})
        base = tables[names[0]]
        for name in names[1:]:
            pair_rows.append(_pair(name, names[0], m.display_name, tables[name], base))
    return pd.DataFrame(rows), pd.DataFrame(pair_rows)


def difference_bounds(a: pd.DataFrame, b: pd.DataFrame) -> tuple[float, float, int]:
    """``(worst, best, n)``: over the ``n`` queries both ``a`` and ``b`` (indexed by qid,
    columns ``low`` and ``high``) bound, the mean of a.low − b.high and of a.high − b.low,
    bounds of the mean difference a − b over every labeling (conservative: each side's
    bound may come from another labeling of a shared document); (NaN, NaN, 0) when none."""
    both = a[["low", "high"]].astype(np.float64).add_suffix("_a").join(
        b[["low", "high"]].astype(np.float64).add_suffix("_b"), how="inner").dropna()
    if both.empty:
        return float("nan"), float("nan"), 0
    return (float((both["low_a"] - both["high_b"]).mean()),
            float((both["high_a"] - both["low_b"]).mean()), len(both))


def judged_distribution(values: pd.Series) -> dict[str, float | None]:
    """Judged@k per query summarised: ``mean``, ``median``, ``p10`` (10th percentile),
    ``full`` (share of queries fully judged), ``below_half`` (share below 0.5) and ``n``
    (queries with a value); each None without a value."""
    v = values[values == values].to_numpy(dtype=float)
    if not len(v):
        return dict.fromkeys(("mean", "median", "p10", "full", "below_half", "n"))
    return {"mean": float(v.mean()), "median": float(np.median(v)),
            "p10": float(np.percentile(v, 10)), "full": float((v >= 1.0).mean()),
            "below_half": float((v < 0.5).mean()), "n": float(len(v))}


def _pair(name: str, baseline: str, metric: str, a: pd.DataFrame, b: pd.DataFrame
          ) -> dict[str, Any]:
    common = a.index.intersection(b.index)
    a, b = a.loc[common], b.loc[common]
    diff = {t: float((a[t] - b[t]).mean()) for t in TREATMENTS}
    worst, best, _ = difference_bounds(a, b)
    return {"run": name, "baseline": baseline, "metric": metric, **diff, "worst": worst,
            "best": best, "n_queries": len(common),
            "verdict": verdict(name, baseline, diff, worst, best)}


def verdict(a: str, b: str, diff: Mapping[str, float], worst: float, best: float) -> str:
    """Whether ``a`` beats ``b`` (or loses) under every treatment and every labeling."""
    if worst > 0:
        return f"{a} > {b} under every labeling"
    if best < 0:
        return f"{a} < {b} under every labeling"
    wins = [t for t in TREATMENTS if diff[t] > 0]
    if len(wins) == len(TREATMENTS):
        return f"{a} > {b} under the three treatments, not under every labeling"
    if not wins:
        return f"{a} < {b} under the three treatments, not under every labeling"
    return f"{a} > {b} only if unjudged documents are {' or '.join(wins)}"


def markdown(frame: pd.DataFrame, digits: int = 4, signed: bool = False) -> str:
    """A table as Markdown, numbers rounded to ``digits`` (with their sign: ``signed``)."""
    def cell(v: Any) -> str:
        if isinstance(v, (float, np.floating)):
            return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"
        return str(v)

    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |"
            for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])
