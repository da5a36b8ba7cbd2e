"""Resampling tests of paired per-query differences, vectorised over many comparisons at
once: permutation p-values (scipy's own sign flips, drawn once and shared), bootstrap
intervals, and the normal approximation for large query sets."""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

__all__ = ["permutation_pvalues", "bootstrap_intervals", "normal_pvalues", "tukey_pvalues",
           "bootstrap_pvalues"]


def _mean_last_axis(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def permutation_pvalues(d: np.ndarray, *, seed: int = 0, resamples: int = 10_000
                        ) -> np.ndarray:
    """Two-sided paired randomization test of each row of ``d`` (variants x queries of
    per-query differences): :func:`scipy.stats.permutation_test` with
    ``permutation_type="samples"`` on the differences flips their signs.

    Every row sees the same sign flips; a row's p-value equals that of a call on the row
    alone with the same seed. The flips are scipy's own, drawn once: scipy permutes a
    vector of ones, and each batch of flipped ones (a matrix of signs) gives the null means
    of every row at once as one matrix product, instead of a mean over a copy of the data
    per row. The p-value is scipy's: counts of null means at or beyond the observed one on
    either side, plus one, over resamples plus one, doubled; where scipy treats values within
    100 ulp of the observed mean as equal, the tolerance here is also at least 16 ulp of the
    row's largest difference, the rounding error of a mean of such values, so that a null
    mean equal to the observed one in exact arithmetic always counts (scipy's answer can
    then depend on the order of summation, by a few counts, for differences on a grid such
    as those of P@10).
    """
    rows, n = d.shape
    if n < 64 and 2 ** n <= resamples:  # scipy enumerates every flip: cheap, call it as is
        res = stats.permutation_test((d,), _mean_last_axis, permutation_type="samples",
                                     vectorized=True, n_resamples=resamples, axis=-1,
                                     rng=np.random.default_rng(seed))
        return np.atleast_1d(np.asarray(res.pvalue, dtype=np.float64))
    observed = np.mean(d, axis=-1)
    eps = np.finfo(np.float64).eps
    gamma = np.maximum(np.abs(eps * 100 * observed), 16 * eps * np.abs(d).max(axis=-1))
    at_most = np.zeros(rows, dtype=np.int64)
    at_least = np.zeros(rows, dtype=np.int64)
    dt = np.ascontiguousarray(d.T) / n

    def count(signs: np.ndarray, axis: int) -> np.ndarray:
        if signs.ndim == 1:  # the observed statistic of the ones: not needed
            return np.zeros(())
        null = signs @ dt  # (batch, rows): the mean of each row under each flip
        at_most[:] += np.count_nonzero(null <= observed + gamma, axis=0)
        at_least[:] += np.count_nonzero(null >= observed - gamma, axis=0)
        return np.zeros(len(signs))

    batch = max(1, min(resamples, int(4_000_000 // max(1, n))))  # memory of one batch
    stats.permutation_test((np.ones(n),), count, permutation_type="samples", vectorized=True,
                           n_resamples=resamples, batch=batch, axis=-1,
                           rng=np.random.default_rng(seed))
    p = np.minimum(at_most + 1, at_least + 1) / (resamples + 1) * 2
    return np.clip(p, 0.0, 1.0)


def bootstrap_intervals(d: np.ndarray, *, seed: int = 0, resamples: int = 10_000,
                        confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """BCa bootstrap interval of the mean of each row of ``d`` (variants x queries), with
    :func:`scipy.stats.bootstrap` in one call; a row's interval equals that of a call on the
    row alone with the same seed (the same resamples), up to floating-point rounding.
    Returns the lows, the highs and a note per row.

    A constant row has the interval (value, value); a row where BCa is undefined gets the
    percentile interval, and its note says so.
    """
    rows, n = d.shape
    low, high = np.full(rows, np.nan), np.full(rows, np.nan)
    notes = [""] * rows
    if n < 2:
        return low, high, ["one query: no bootstrap interval"] * rows
    constant = np.all(d == d[:, :1], axis=1)
    low[constant] = high[constant] = d[constant, 0]
    todo = np.flatnonzero(~constant)
    if len(todo):
        batch = max(1, int(4_000_000 // d[todo].size))
        with warnings.catch_warnings():  # degenerate rows: handled below
            warnings.simplefilter("ignore")
            ci = stats.bootstrap((d[todo],), np.mean, n_resamples=resamples, axis=-1,
                                 confidence_level=confidence, vectorized=True, batch=batch,
                                 rng=np.random.default_rng(seed)).confidence_interval
        low[todo], high[todo] = ci.low, ci.high
    for i in np.flatnonzero(np.isnan(low) | np.isnan(high)):
        ci = stats.bootstrap((d[i],), np.mean, n_resamples=resamples, method="percentile",
                             confidence_level=confidence, vectorized=True,
                             rng=np.random.default_rng(seed)).confidence_interval
        low[i], high[i] = ci.low, ci.high
        notes[i] = "BCa interval undefined (degenerate data): percentile interval used"
    return low, high, notes


def normal_pvalues(d: np.ndarray) -> np.ndarray:
    """The sign-flip test's large-sample p-value for each row of ``d``: under H0 the sum of
    randomly signed differences has mean 0 and variance ``sum(d**2)``, so
    ``z = sum(d) / sqrt(sum(d**2))`` and ``p = 2 * norm.sf(|z|)`` (1 for an all-zero row)."""
    total, scale = d.sum(axis=-1), np.sqrt((d * d).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = 2 * stats.norm.sf(np.abs(total) / scale)
    return np.where(scale > 0, p, 1.0)


def tukey_pvalues(x: np.ndarray, *, seed: int = 0, resamples: int = 10_000) -> np.ndarray:
    """Randomised Tukey HSD (Carterette 2012, "Multiple testing in statistical analysis of
    systems-based information retrieval experiments", ACM TOIS 30(1)): every pair of the
    systems (columns of ``x``, queries x systems) at once, family-wise.

    Under H0 the systems are exchangeable within a query: each resample shuffles every
    row of ``x`` independently and takes the range (largest minus smallest) of the
    systems' means. The p-value of systems i and j is the share of resamples whose range
    reaches ``|mean_i - mean_j|``, counting the observed order as one resample:
    ``(count + 1) / (resamples + 1)``.

    Returns
    -------
    ndarray (systems x systems)
        Symmetric, 1 on the diagonal.
    """
    rng = np.random.default_rng(seed)
    n, k = x.shape
    means = x.mean(axis=0)
    observed = np.abs(means[:, None] - means[None, :])
    eps = 16 * np.finfo(np.float64).eps * max(1.0, float(np.abs(x).max(initial=0.0)))
    count = np.zeros((k, k), dtype=np.int64)
    batch = max(1, min(resamples, 2_000_000 // max(1, n * k)))
    done = 0
    while done < resamples:
        b = min(batch, resamples - done)
        shuffled = rng.permuted(np.broadcast_to(x, (b, n, k)), axis=2)
        m = shuffled.mean(axis=1)  # (b, k): each system's mean in each resample
        ranges = m.max(axis=1) - m.min(axis=1)
        count += (ranges[:, None, None] >= observed[None] - eps).sum(axis=0)
        done += b
    p = (count + 1) / (resamples + 1)
    np.fill_diagonal(p, 1.0)
    return np.minimum(p, 1.0)


def bootstrap_pvalues(d: np.ndarray, *, seed: int = 0, resamples: int = 10_000) -> np.ndarray:
    """Two-sided paired bootstrap test of each row of ``d`` (comparisons x queries of
    per-query differences), by the shift method (Efron & Tibshirani 1993, sec. 16.4;
    Sakai 2006): each row is centred on 0 (H0: mean difference 0), queries are drawn with
    replacement, and the p-value is the share of resampled means at least as far from 0 as
    the observed one, counting the observed sample as one resample:
    ``(count + 1) / (resamples + 1)``. Every row sees the same draws of queries."""
    rows, n = d.shape
    observed = np.abs(d.mean(axis=1))
    centred = d - d.mean(axis=1, keepdims=True)
    eps = 16 * np.finfo(np.float64).eps * max(1.0, float(np.abs(d).max(initial=0.0)))
    rng = np.random.default_rng(seed)
    count = np.zeros(rows, dtype=np.int64)
    batch = max(1, min(resamples, 4_000_000 // max(1, n)))
    done = 0
    while done < resamples:
        b = min(batch, resamples - done)
        picks = rng.integers(0, n, size=(b, n))
        weights = np.zeros((b, n))
        np.add.at(weights, (np.repeat(np.arange(b), n), picks.ravel()), 1.0 / n)
        means = weights @ centred.T  # (b, rows)
        count += (np.abs(means) >= observed[None, :] - eps).sum(axis=0)
        done += b
    return (count + 1) / (resamples + 1)
