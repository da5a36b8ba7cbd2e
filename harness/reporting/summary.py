"""Per-variant statistics of per-query tables: what MLflow gets for each metric.

The bootstrap intervals of a whole study come from one seeded resample-index matrix per set
of queries, shared by every ranker and variant evaluated on those queries (so the intervals
are paired), and each resample's means are one matrix product: the cost grows as queries ×
resamples once, not once per (ranker, variant).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.errors import InputError
from harness.metrics.engine.evaluate import aggregate, metric_columns

__all__ = ["STATS", "MAX_BOOTSTRAP_CELLS", "StudySummary", "check_resamples",
           "bootstrap_mean_intervals", "normal_interval", "summarize", "summarize_study"]

#: Statistic names, in the order they are logged (MLflow key suffixes).
STATS = ("mean", "std", "median", "p10", "p90", "ci_low", "ci_high", "frac_zero",
         "n_queries", "n_excluded")

#: Resample counts held in memory at once (float64): about 32 MB.
_BATCH_CELLS = 4_000_000
#: The most bootstrap draws (resamples x queries) of one set of queries: about 50 s; the
#: default 2,000 resamples of up to 20,000 queries draw 4e7.
MAX_BOOTSTRAP_CELLS = 1_000_000_000
#: The most resamples a study may ask for (``tracking.bootstrap_resamples``).
MAX_RESAMPLES = 1_000_000
RESAMPLES_KEY = "tracking.bootstrap_resamples"


def check_resamples(value: object) -> int:
    """``tracking.bootstrap_resamples`` as an int in [0, :data:`MAX_RESAMPLES`] (0: no
    bootstrap interval), or an InputError naming the key."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RESAMPLES:
        shown = f"{value:,}" if isinstance(value, int) else repr(value)
        raise InputError(f"{RESAMPLES_KEY} must be an int from 0 to {MAX_RESAMPLES:,}; got "
                         f"{shown} (the interval's cost grows with resamples x queries)",
                         key=RESAMPLES_KEY)
    return value


def summarize(per_query: pd.DataFrame, *, resamples: int = 2000, seed: int = 0,
              confidence: float = 0.95, bootstrap_max_queries: int | None = 20_000
              ) -> pd.DataFrame:
    """Statistics of every metric column of ``per_query`` (from :func:`harness.evaluate`).

    Returns a DataFrame indexed by display name with the columns of :data:`STATS`: the
    (weighted) mean and the query counts from :func:`harness.aggregate`; sample std
    (ddof=1); median, 10th and 90th percentiles; the bootstrap percentile interval of the
    mean (seeded; the same as :func:`scipy.stats.bootstrap` with ``method="percentile"``
    and ``rng=np.random.default_rng(seed)``, to rounding); and the share of queries
    scoring 0. NaN values (``empty="exclude"`` or ``"nan"``) are left out of every
    statistic but the mean.

    Above ``bootstrap_max_queries`` queries (None: no limit) the interval is the normal one,
    mean ± z·s/√n: at that size the two agree to about 1e-4 (the central limit theorem);
    :attr:`StudySummary.ci_methods` names the method of each column.
    """
    return summarize_study({"": per_query}, resamples=resamples, seed=seed,
                           confidence=confidence,
                           bootstrap_max_queries=bootstrap_max_queries).tables[""]


@dataclass(frozen=True)
class StudySummary:
    """:func:`summarize_study`'s result: ``tables``, one :func:`summarize` table per ranker,
    and ``ci_methods``, per ranker the method of each metric column's interval:
    ``"bootstrap"``, or ``"normal"`` above ``bootstrap_max_queries`` queries."""

    tables: dict[str, pd.DataFrame]
    ci_methods: dict[str, dict[str, str]]


def summarize_study(tables: Mapping[str, pd.DataFrame], *, resamples: int = 2000,
                    seed: int = 0, confidence: float = 0.95,
                    bootstrap_max_queries: int | None = 20_000) -> StudySummary:
    """:func:`summarize` for every ranker of a study at once, with paired intervals.

    Parameters
    ----------
    tables : mapping of str to DataFrame
        Per-query tables by ranker name.
    resamples, seed, confidence, bootstrap_max_queries
        As in :func:`summarize`.

    Returns
    -------
    StudySummary
        One :func:`summarize` table per ranker, equal to what :func:`summarize` gives for
        that table alone, and each column's interval method.

    Notes
    -----
    Metric columns are grouped by the queries they hold (their non-NaN qids, in order).
    Every column of a group, whatever its ranker, is resampled with the same index matrix,
    drawn once from ``np.random.default_rng(seed)``: the bootstrap means of a batch of
    resamples are ``counts @ values / n``, where ``counts[b, i]`` is how often resample
    ``b`` drew query ``i``.
    """
    stats: dict[str, dict[str, dict[str, float]]] = {}
    methods: dict[str, dict[str, str]] = {}
    groups: list[tuple[np.ndarray, list[tuple[str, str, np.ndarray]]]] = []
    for name, table in tables.items():
        stats[name], methods[name] = _plain_stats(table), {}
        columns = metric_columns(table)
        if not columns:
            continue
        # column by column (no stacked copy of every column: 1M queries x 64 is 0.5 GB)
        arrays = [table[c].to_numpy(dtype=np.float64) for c in columns]
        masks: dict[bytes, list[int]] = {}
        for j, values in enumerate(arrays):
            masks.setdefault(np.packbits(~np.isnan(values)).tobytes(), []).append(j)
        for js in masks.values():
            keep = ~np.isnan(arrays[js[0]])
            every = bool(keep.all())
            if bootstrap_max_queries is not None and keep.sum() > bootstrap_max_queries:
                # the normal interval, column by column: no paired resampling to share
                for j in js:
                    low, high = normal_interval(arrays[j] if every else arrays[j][keep],
                                                confidence, std=stats[name][columns[j]]["std"])
                    stats[name][columns[j]].update(ci_low=float(low), ci_high=float(high))
                    methods[name][columns[j]] = "normal"
                continue
            qids = table.index.to_numpy()[keep]
            members = [(name, columns[j], arrays[j][keep]) for j in js]
            for known_qids, known in groups:
                if len(known_qids) == len(qids) and np.array_equal(known_qids, qids):
                    known.extend(members)
                    break
            else:
                groups.append((qids, members))
    for qids, _ in groups:  # refused before any is drawn
        if resamples * len(qids) > MAX_BOOTSTRAP_CELLS:
            raise InputError(f"the bootstrap of {resamples:,} resamples of {len(qids):,} "
                             f"queries draws {resamples * len(qids):,} indices; the limit is "
                             f"{MAX_BOOTSTRAP_CELLS:,}: lower the resamples, or "
                             "bootstrap_max_queries (larger query sets get the normal "
                             "interval)", key=RESAMPLES_KEY)
    for _qids, members in groups:
        values = np.column_stack([v for *_, v in members]) if members else np.empty((0, 0))
        low, high = bootstrap_mean_intervals(values, resamples=resamples, seed=seed,
                                             confidence=confidence)
        for (name, column, _), lo, hi in zip(members, low, high):
            stats[name][column].update(ci_low=float(lo), ci_high=float(hi))
            methods[name][column] = "bootstrap"
    tables = {name: pd.DataFrame.from_dict(rows, orient="index", columns=list(STATS))
              for name, rows in stats.items()}
    return StudySummary(tables, methods)


def _plain_stats(per_query: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Every statistic but the interval, per metric column (NaN values left out). The
    columns of a large table are summarised on every core: each is a few sorts and sums
    over its values, in numpy, which lets other threads run meanwhile."""
    agg = aggregate(per_query)
    columns = metric_columns(per_query)
    arrays = [per_query[c].to_numpy(dtype=np.float64) for c in columns]
    if len(per_query) >= _THREADED_ROWS and len(columns) > 1:
        from concurrent.futures import ThreadPoolExecutor

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            (os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=min(cores, len(columns))) as pool:
            spreads = list(pool.map(_spread, arrays))
    else:
        spreads = [_spread(v) for v in arrays]
    return {column: {"mean": agg.at[column, "mean"], "n_queries": agg.at[column, "n_queries"],
                     "n_excluded": agg.at[column, "n_excluded"], "ci_low": np.nan,
                     "ci_high": np.nan, **spread}
            for column, spread in zip(columns, spreads)}


#: Tables of at least this many queries have their columns summarised in threads.
_THREADED_ROWS = 100_000


def _spread(values: np.ndarray) -> dict[str, float]:
    """std, median, p10, p90 and frac_zero of one column's values, NaN left out."""
    nan = np.isnan(values)
    if nan.any():
        values = values[~nan]
    if not len(values):
        return dict(std=np.nan, median=np.nan, p10=np.nan, p90=np.nan, frac_zero=np.nan)
    # the same percentiles of the same values, from a sorted copy: numpy's sort is several
    # times faster than the selection percentile runs on unsorted values (5 against 22 ms
    # per column of 1M queries)
    p10, median, p90 = np.percentile(np.sort(values), [10, 50, 90])
    return dict(std=float(np.std(values, ddof=1)) if len(values) > 1 else float("nan"),
                median=float(median), p10=float(p10), p90=float(p90),
                frac_zero=float(np.mean(values == 0)))


def bootstrap_mean_intervals(values: np.ndarray, *, resamples: int = 2000, seed: int = 0,
                             confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap intervals of the mean of each column of ``values``.

    Parameters
    ----------
    values : ndarray of shape (n_queries, n_columns)
        No NaN; every column is resampled with the same rows (a paired bootstrap).
    resamples : int
        Bootstrap resamples.
    seed : int
        Seed of ``np.random.default_rng``; the resample indices are drawn as
        :func:`scipy.stats.bootstrap` draws them, so one column's interval equals scipy's
        ``method="percentile"`` interval to rounding.
    confidence : float
        Two-sided level.

    Returns
    -------
    low, high : ndarray of shape (n_columns,)
        NaN for fewer than two queries; a constant column's interval is that constant.

    Examples
    --------
    >>> v = np.array([[0.0], [1.0], [1.0], [0.5]])
    >>> low, high = bootstrap_mean_intervals(v, resamples=1000, seed=0)
    >>> bool(0.0 <= low[0] < v.mean() < high[0] <= 1.0)
    True
    """
    n, m = values.shape
    low, high = np.full(m, np.nan), np.full(m, np.nan)
    if n < 2 or resamples < 1 or m == 0:
        return low, high
    constant = np.all(values == values[0], axis=0)
    low[constant] = high[constant] = values[0, constant]
    todo = np.flatnonzero(~constant)
    if not len(todo):
        return low, high
    data = np.ascontiguousarray(values[:, todo])
    rng = np.random.default_rng(seed)
    batch = max(1, min(resamples, _BATCH_CELLS // n))
    means = np.empty((resamples, len(todo)))
    for start in range(0, resamples, batch):
        size = min(batch, resamples - start)
        index = rng.integers(0, n, (size, n))
        index += np.arange(size)[:, None] * n
        counts = np.bincount(index.ravel(), minlength=size * n).reshape(size, n)
        means[start:start + size] = (counts.astype(np.float64) @ data) / n
    alpha = (1 - confidence) / 2
    low[todo], high[todo] = np.quantile(means, [alpha, 1 - alpha], axis=0)
    return low, high


def normal_interval(values: np.ndarray, confidence: float = 0.95, *,
                    std: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The normal interval of the mean along the last axis: mean ± z·s/√n (s: ddof=1;
    ``std``: s of one row of values, computed already)."""
    from statistics import NormalDist

    n = values.shape[-1]
    s = values.std(axis=-1, ddof=1) if std is None else np.float64(std)
    mean, sem = values.mean(axis=-1), s / np.sqrt(n)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return mean - z * sem, mean + z * sem
