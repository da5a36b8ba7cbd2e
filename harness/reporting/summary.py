"""Per-variant statistics of a per-query table: what MLflow gets for each metric."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from harness.metrics.evaluate import aggregate, metric_columns

__all__ = ["STATS", "normal_interval", "summarize"]

#: Statistic names, in the order they are logged (MLflow key suffixes).
STATS = ("mean", "std", "median", "p10", "p90", "ci_low", "ci_high", "frac_zero",
         "n_queries", "n_excluded")


def summarize(per_query: pd.DataFrame, *, resamples: int = 2000, seed: int = 0,
              confidence: float = 0.95, bootstrap_max_queries: int | None = 20_000
              ) -> pd.DataFrame:
    """Statistics of every metric column of ``per_query`` (from :func:`harness.evaluate`).

    Returns a DataFrame indexed by display name with the columns of :data:`STATS`: the
    (weighted) mean and the query counts from :func:`harness.aggregate`; sample std
    (ddof=1); median, 10th and 90th percentiles; the bootstrap percentile interval of the
    mean (:func:`scipy.stats.bootstrap`, seeded); and the share of queries scoring 0.

    Above ``bootstrap_max_queries`` queries (None: no limit) the interval is the normal one,
    mean ± z·s/√n: the bootstrap costs queries × resamples, and at that size the two agree
    to about 1e-4 (the central limit theorem). ``attrs['ci_method']`` names the method of
    each metric column.
    """
    agg = aggregate(per_query)
    rows, methods = {}, {}
    for column in metric_columns(per_query):
        values = per_query[column].to_numpy(dtype=np.float64)
        values = values[~np.isnan(values)]
        row = {"mean": agg.at[column, "mean"], "n_queries": agg.at[column, "n_queries"],
               "n_excluded": agg.at[column, "n_excluded"]}
        if len(values):
            p10, median, p90 = np.percentile(values, [10, 50, 90])
            row.update(std=float(np.std(values, ddof=1)) if len(values) > 1 else float("nan"),
                       median=float(median), p10=float(p10), p90=float(p90),
                       frac_zero=float(np.mean(values == 0)))
        else:
            row.update(std=np.nan, median=np.nan, p10=np.nan, p90=np.nan, frac_zero=np.nan)
        if bootstrap_max_queries is not None and len(values) > bootstrap_max_queries:
            low, high = normal_interval(values, confidence)
            row["ci_low"], row["ci_high"] = float(low), float(high)
            methods[column] = "normal"
        else:
            row["ci_low"], row["ci_high"] = _bootstrap_ci(values, resamples, seed, confidence)
            methods[column] = "bootstrap"
        rows[column] = row
    out = pd.DataFrame.from_dict(rows, orient="index")[list(STATS)]
    out.attrs["ci_method"] = methods
    return out


def normal_interval(values: np.ndarray, confidence: float = 0.95
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The normal interval of the mean along the last axis: mean ± z·s/√n (s: ddof=1)."""
    n = values.shape[-1]
    mean, sem = values.mean(axis=-1), values.std(axis=-1, ddof=1) / np.sqrt(n)
    z = stats.norm.ppf(0.5 + confidence / 2)
    return mean - z * sem, mean + z * sem


def _bootstrap_ci(values: np.ndarray, resamples: int, seed: int,
                  confidence: float) -> tuple[float, float]:
    if len(values) < 2 or resamples < 1:
        return float("nan"), float("nan")
    if np.all(values == values[0]):
        return float(values[0]), float(values[0])
    # resamples in batches of at most ~4M values (32 MB): a million queries x 2000 resamples
    # would otherwise be one 16 GB array
    batch = max(1, min(resamples, 4_000_000 // len(values)))
    res = stats.bootstrap((values,), np.mean, n_resamples=resamples, method="percentile",
                          confidence_level=confidence, rng=np.random.default_rng(seed),
                          vectorized=True, batch=batch)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)
