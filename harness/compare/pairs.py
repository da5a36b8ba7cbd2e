"""The paired tests of many ranker pairs at once (the engine of
:func:`harness.compare.stats.compare_table`).

Per variant, the per-query values of every ranker are one matrix (queries x rankers, NaN
where a ranker has no value); the pairs whose aligned queries are the same set form one
group, whose differences are one matrix (pairs x queries). Each group's statistics are then
array operations: the means, W/T/L and d_z directly, the t-test and (above 50 queries) the
Wilcoxon test as one vectorised :mod:`scipy.stats` call, the permutation test as shared sign
flips times the matrix (:func:`~harness.compare.resampling.permutation_pvalues`), the BCa
interval as one :func:`scipy.stats.bootstrap` call. Only the tests asked for are computed.

A row's numbers are those of :func:`~harness.compare.stats.paired_comparison` on its pair
alone: where a vectorised scipy call would warn (degenerate data) the group's rows are
computed one by one, each warning a note of its row; a ranker whose queries are not in the
order of the union of the queries is aligned pair by pair (its order decides the resamples).
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from harness.compare.resampling import bootstrap_intervals, normal_pvalues, permutation_pvalues
from harness.errors import CompareError, NoOverlap
from harness.reporting.summary import normal_interval

__all__ = ["align", "pairwise"]

Key = tuple[str, str, str]  # (variant, ranker_a, ranker_b)


def pairwise(frames: Mapping[str, pd.DataFrame], pairs: Mapping[tuple[str, str], Sequence[str]],
             variants: Sequence[str], *, tests: Collection[str], intervals: bool, seed: int,
             resamples: int, confidence: float, max_queries: int | None,
             tie_tolerance: float) -> dict[str, Any]:
    """The columns of every (variant, pair) row, in the order variants x pairs."""
    keys = [(v, ra, rb) for v in variants for (ra, rb), vs in pairs.items() if v in vs]
    aligned: dict[Key, tuple[np.ndarray, int, int, int, str]] = {}
    groups: dict[bytes, list[Key]] = {}
    unions: list[pd.Index] = []
    for v in variants:
        _align_variant(frames, [k for k in keys if k[0] == v], aligned, groups, unions)
    out = _empty(len(keys), tests, intervals)
    where = {k: i for i, k in enumerate(keys)}
    for members in groups.values():
        raw, mean_a, mean_b = _gather(members, aligned)
        d = raw.copy()
        d[np.abs(d) <= tie_tolerance] = 0.0
        rows = np.array([where[m] for m in members])
        out["mean_a"][rows], out["mean_b"][rows] = mean_a, mean_b
        _group(raw, d, rows, out, tests=set(tests), intervals=intervals, seed=seed,
               resamples=resamples, confidence=confidence, max_queries=max_queries)
        for m, i in zip(members, rows):
            out["n_dropped"][i], out["dropped"][i] = aligned[m][3], aligned[m][4]
    out["note"] = ["; ".join(n) for n in out["note"]]
    return out


def align(a: pd.Series, b: pd.Series) -> tuple[pd.Index, np.ndarray, np.ndarray, int, str]:
    """The queries of ``a`` and ``b`` both hold with a value (in ``a``'s order), the values
    there, the number of queries dropped and why."""
    if not a.index.is_unique or not b.index.is_unique:
        raise CompareError("per-query values must have one row per query id")
    only_a = a.index.difference(b.index)
    only_b = b.index.difference(a.index)
    common = a.index.intersection(b.index, sort=False)
    x = a.loc[common].to_numpy(dtype=np.float64)
    y = b.loc[common].to_numpy(dtype=np.float64)
    missing = np.isnan(x) | np.isnan(y)
    counts = ((len(only_a), "only in a"), (len(only_b), "only in b"),
              (int(missing.sum()), "without a value (NaN) in a or b"))
    n_dropped = sum(n for n, _ in counts)
    dropped = (f"{n_dropped} queries: " + ", ".join(f"{n} {why}" for n, why in counts if n)
               if n_dropped else "")
    return common[~missing], x[~missing], y[~missing], n_dropped, dropped


def _gather(members: list[Key], aligned: dict[Key, Any]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A group's differences a - b (pairs x queries) and the means of a and of b: rows
    taken from the rankers x queries matrix each run of members is aligned on."""
    n = aligned[members[0]][0].shape[1]
    raw, mean_a, mean_b = np.empty((len(members), n)), np.empty(len(members)), \
        np.empty(len(members))
    i = 0
    while i < len(members):
        values = aligned[members[i]][0]  # rankers x queries
        j = i
        while j < len(members) and aligned[members[j]][0] is values:
            j += 1
        a = [aligned[m][1] for m in members[i:j]]
        b = [aligned[m][2] for m in members[i:j]]
        means = values.mean(axis=1)
        np.subtract(values[a], values[b], out=raw[i:j])
        mean_a[i:j], mean_b[i:j] = means[a], means[b]
        i = j
    return raw, mean_a, mean_b


def _empty(n: int, tests: Collection[str], intervals: bool) -> dict[str, Any]:
    out: dict[str, Any] = {k: np.zeros(n, dtype=np.int64) for k in
                           ("n", "n_dropped", "wins", "ties", "losses")}
    names = ["mean_a", "mean_b", "mean_diff", "d_z", *(f"p_{t}" for t in tests)]
    out |= {k: np.full(n, np.nan) for k in names + (["ci_low", "ci_high"] if intervals else [])}
    out["dropped"] = [""] * n
    out["note"] = [[] for _ in range(n)]
    return out


def _union(frames: Mapping[str, pd.DataFrame], names: list[str],
           unions: list[pd.Index]) -> tuple[pd.Index, int]:
    """Every query of ``names``' tables, in the first's order then each next one's new
    queries; and its number among ``unions`` (an equal union seen before keeps its)."""
    union = frames[names[0]].index
    for r in names[1:]:
        extra = frames[r].index.difference(union, sort=False)
        union = union.append(extra) if len(extra) else union
    for i, seen in enumerate(unions):
        if seen.equals(union):
            return seen, i
    unions.append(union)
    return union, len(unions) - 1


def _align_variant(frames: Mapping[str, pd.DataFrame], keys: list[Key],
                   aligned: dict[Key, Any], groups: dict[bytes, list[Key]],
                   unions: list[pd.Index]) -> None:
    """Each pair's aligned values of one variant, and the pairs grouped by their queries."""
    if not keys:
        return
    variant = keys[0][0]
    names = list(dict.fromkeys(r for _, a, b in keys for r in (a, b)))
    union, number = _union(frames, names, unions)
    values = np.full((len(union), len(names)), np.nan)
    present = np.zeros((len(union), len(names)), dtype=bool)
    in_order = {}
    for j, r in enumerate(names):
        pos = union.get_indexer(frames[r].index)
        values[pos, j] = frames[r][variant].to_numpy(dtype=np.float64)
        present[pos, j] = True
        in_order[r] = bool(np.all(np.diff(pos) > 0))
    valid = present & ~np.isnan(values)
    col = {r: j for j, r in enumerate(names)}
    p, v = present.astype(np.int64), valid.astype(np.int64)
    only = p.T @ (1 - p)  # [a, b]: queries a holds and b does not
    missing = p.T @ p - v.T @ v  # queries both hold, without a value in one of them
    subs: dict[bytes, np.ndarray] = {}  # rankers x the queries of a set
    for key in keys:
        _, ra, rb = key
        a, b = col[ra], col[rb]
        counts = ((only[a, b], "only in a"), (only[b, a], "only in b"),
                  (missing[a, b], "without a value (NaN) in a or b"))
        n_dropped = int(sum(n for n, _ in counts))
        dropped = (f"{n_dropped} queries: " + ", ".join(f"{n} {why}" for n, why in counts
                                                        if n) if n_dropped else "")
        both = valid[:, a] & valid[:, b]
        if in_order[ra]:
            label = b"u%d:" % number + np.packbits(both).tobytes()
            if label not in subs:
                subs[label] = np.ascontiguousarray(values[np.flatnonzero(both)].T)
            sub = subs[label]
        else:  # the queries in a's order, as pandas aligns them (a's order decides)
            kept, x, y, _, _ = align(frames[ra][variant], frames[rb][variant])
            label, sub, a, b = b"q" + repr(list(kept)).encode(), np.vstack([x, y]), 0, 1
        if not sub.shape[1]:
            raise NoOverlap(f"{ra} vs {rb} under {variant}: no query has a value for both "
                            f"({dropped or 'both are empty'}); compare rankers evaluated "
                            "on the same queries")
        aligned[key] = (sub, a, b, n_dropped, dropped)
        groups.setdefault(label, []).append(key)


def _group(raw: np.ndarray, d: np.ndarray, rows: np.ndarray, out: dict[str, Any], *,
           tests: set[str], intervals: bool, seed: int,
           resamples: int, confidence: float, max_queries: int | None) -> None:
    """The statistics of one group's rows (pairs x the same queries) into ``out``:
    ``raw`` the differences a - b, ``d`` the same with ties (within the tolerance) 0."""
    n = d.shape[1]
    out["n"][rows] = n
    mean = d.mean(axis=1)
    out["mean_diff"][rows] = mean
    out["wins"][rows] = (d > 0).sum(axis=1)
    out["ties"][rows] = (d == 0).sum(axis=1)
    out["losses"][rows] = (d < 0).sum(axis=1)
    sd = d.std(axis=1, ddof=1) if n > 1 else np.full(len(d), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["d_z"][rows] = np.where(sd == 0, np.where(mean == 0, 0.0, np.copysign(np.inf, mean)),
                                    mean / sd)
    zero = ~np.any(d, axis=1)
    large = max_queries is not None and n > max_queries
    notes: list[list[str]] = [[] for _ in rows]
    if large and (intervals or "permutation" in tests):
        note = (f"{n:,} queries > max_queries {max_queries:,}: normal approximations for "
                "the permutation p-value and the interval")
        for row_notes in notes:
            row_notes.append(note)
    if intervals and large:
        low, high = normal_interval(d, confidence)
    elif intervals:
        low, high, why = bootstrap_intervals(d, seed=seed, resamples=resamples,
                                             confidence=confidence)
        for row_notes, w in zip(notes, why):
            row_notes.extend([w] if w else [])
    if intervals:
        out["ci_low"][rows], out["ci_high"][rows] = low, high
    for i in np.flatnonzero(zero):
        if tests & {"ttest", "wilcoxon"}:
            notes[i].append("all differences are zero: t-test and Wilcoxon p set to 1")
    if "ttest" in tests:
        # ttest_rel(a, b) is ttest_1samp(a - b): scipy's own definition
        out["p_ttest"][rows] = _scipy(lambda e: stats.ttest_1samp(e, 0.0, axis=-1).pvalue,
                                      raw, zero, notes, "t-test")
    if "wilcoxon" in tests:
        out["p_wilcoxon"][rows] = _scipy(lambda e: stats.wilcoxon(e, axis=-1).pvalue, d,
                                         zero, notes, "Wilcoxon", vectorise=n > 50)
    if "permutation" in tests:
        out["p_permutation"][rows] = (normal_pvalues(d) if large else
                                      permutation_pvalues(d, seed=seed, resamples=resamples))
    for i, row_notes in zip(rows, notes):
        out["note"][i].extend(row_notes)


def _scipy(fn: Any, d: np.ndarray, zero: np.ndarray, notes: list[list[str]], what: str,
           vectorise: bool = True) -> np.ndarray:
    """``fn(d)``'s p-value of each row (1 where every difference is zero): one call
    over the rows when ``vectorise`` and scipy does not warn, else row by row, each
    warning a note of its row."""
    p = np.ones(len(d))
    todo = np.flatnonzero(~zero)
    if not len(todo):
        return p
    if vectorise:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = np.asarray(fn(d[todo]), dtype=np.float64)
        if not caught:
            p[todo] = got
            return p
    for i in todo:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p[i] = float(fn(d[i]))
        for w in caught:
            text = f"{what}: {str(w.message).splitlines()[0]}"
            if text not in notes[i]:
                notes[i].append(text)
    return p
