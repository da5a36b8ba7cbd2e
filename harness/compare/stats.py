"""Paired comparisons of rankers on per-query values, with multiple-testing correction.

Every test is :mod:`scipy.stats`; this module aligns the queries, handles the degenerate
cases scipy leaves undefined (all differences zero), and collects the numbers in one table.
Only Holm's step-down correction is written here: scipy does not have it.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from harness.compare.pairs import align
from harness.compare.resampling import bootstrap_intervals, permutation_pvalues
from harness.errors import CompareError, NoOverlap, TooFewRankers, UnknownName
from harness.metrics.engine.evaluate import metric_columns

__all__ = ["CORRECTIONS", "FAMILIES", "TESTS", "TIE_TOLERANCE", "holm", "adjust_pvalues",
           "align_pair", "paired_comparison", "compare_table", "pair_rows",
           "per_query_frame"]

#: Multiple-testing corrections: Holm's step-down and Bonferroni (FWER), Benjamini–Hochberg
#: (FDR).
CORRECTIONS = ("holm", "bh", "bonferroni")
#: The comparisons corrected together: one variant's, one baseline's, or all.
FAMILIES = ("variant", "baseline", "all")
#: Tests whose corrected p-value can decide significance.
TESTS = ("ttest", "wilcoxon", "permutation")
#: Per-query differences within this distance of 0 are ties (floating-point noise).
TIE_TOLERANCE = 1e-12

COLUMNS = ["variant", "ranker_a", "ranker_b", "n", "n_dropped", "dropped", "mean_a", "mean_b",
           "mean_diff", "ci_low", "ci_high", "d_z", "wins", "ties", "losses", "p_ttest",
           "p_wilcoxon", "p_permutation", "p_ttest_adj", "p_wilcoxon_adj",
           "p_permutation_adj", "significant", "note"]


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error rate).

    Parameters
    ----------
    pvalues : sequence of float in [0, 1]
        NaN entries stay NaN and do not count in the family size ``m``.

    Returns
    -------
    ndarray
        Adjusted p-values in the input order.

    Notes
    -----
    With the p-values sorted ascending, ``p_(1) <= ... <= p_(m)``, the adjusted value of the
    j-th is ``max_{i <= j} min(1, (m - i + 1) p_(i))`` (Holm 1979). Rejecting where the
    adjusted value is below alpha is Holm's procedure at level alpha.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03])
    array([0.03, 0.06, 0.06])
    """
    p = np.asarray(pvalues, dtype=np.float64)
    ok = ~np.isnan(p)
    if np.any((p[ok] < 0) | (p[ok] > 1)):
        raise ValueError(f"p-values must lie in [0, 1]; got {p[ok].min()} .. {p[ok].max()}")
    out = np.full(p.shape, np.nan)
    q = p[ok]
    m = len(q)
    if m:
        order = np.argsort(q, kind="stable")
        steps = np.maximum.accumulate((m - np.arange(m)) * q[order])
        adjusted = np.empty(m)
        adjusted[order] = np.minimum(steps, 1.0)
        out[ok] = adjusted
    return out


def adjust_pvalues(pvalues: Sequence[float] | np.ndarray, method: str = "holm") -> np.ndarray:
    """Adjusted p-values by ``method``: ``"holm"`` (:func:`holm`), ``"bh"``
    (:func:`scipy.stats.false_discovery_control`) or ``"bonferroni"`` (``min(1, m p)``).
    NaN entries stay NaN and are left out of the family.

    >>> adjust_pvalues([0.01, 0.04, 0.03], "bh")
    array([0.03, 0.04, 0.04])
    >>> adjust_pvalues([0.01, 0.04, 0.5, np.nan], "bonferroni")
    array([0.03, 0.12, 1.  ,  nan])
    """
    if method not in CORRECTIONS:
        raise CompareError(f"correction must be one of {', '.join(CORRECTIONS)}; got "
                           f"{method!r}")
    if method == "holm":
        return holm(pvalues)
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any() and method == "bonferroni":
        out[ok] = np.minimum(1.0, p[ok] * ok.sum())
    elif ok.any():
        out[ok] = stats.false_discovery_control(p[ok], method="bh")
    return out


def _quietly(fn: Callable[[], Any], notes: list[str], what: str) -> Any:
    """Call ``fn`` and turn scipy's RuntimeWarnings into notes of the comparison."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    for w in caught:
        text = f"{what}: {str(w.message).splitlines()[0]}"
        if text not in notes:
            notes.append(text)
    return result


def align_pair(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray, int, str]:
    """The values of ``a`` and ``b`` on the queries both hold with a value, the number of
    queries dropped and why (empty when none was).

    >>> a = pd.Series([0.5, float("nan"), 0.9], index=["q1", "q2", "q3"])
    >>> b = pd.Series([0.4, 0.6, 0.1], index=["q1", "q2", "q4"])
    >>> x, y, n_dropped, why = align_pair(a, b)
    >>> x, y, n_dropped
    (array([0.5]), array([0.4]), 3)
    >>> why
    '3 queries: 1 only in a, 1 only in b, 1 without a value (NaN) in a or b'
    """
    _, x, y, n_dropped, dropped = align(a, b)
    return x, y, n_dropped, dropped


def paired_comparison(a: pd.Series, b: pd.Series, *, seed: int = 0, resamples: int = 10_000,
                      confidence: float = 0.95) -> dict[str, Any]:
    """Compare two rankers' per-query values of one metric variant, paired by query.

    Parameters
    ----------
    a, b : Series indexed by query id
        Per-query values; a query counts when both hold it with a non-NaN value.
    seed : int, default 0
        Seed of the permutation test and of the bootstrap (each gets its own generator).
    resamples : int, default 10000
        Sign flips of the permutation test and resamples of the bootstrap.
    confidence : float, default 0.95
        Level of the bootstrap interval of the mean difference.

    Returns
    -------
    dict
        ``n`` aligned queries; ``n_dropped`` and ``dropped`` (how many and why);
        ``mean_a``, ``mean_b`` over the aligned queries; ``mean_diff`` (a - b) with the BCa
        bootstrap interval ``ci_low``, ``ci_high`` (:func:`scipy.stats.bootstrap`); Cohen's
        ``d_z``; ``wins``, ``ties``, ``losses`` of a; p-values ``p_ttest``
        (:func:`scipy.stats.ttest_rel`), ``p_wilcoxon`` (:func:`scipy.stats.wilcoxon`) and
        ``p_permutation`` (:func:`scipy.stats.permutation_test`); ``note``.

    Notes
    -----
    With d the per-query differences a - b (values within ``TIE_TOLERANCE`` of 0 are
    ties): ``d_z = mean(d) / sd(d)`` (ddof=1). The permutation test is the paired
    randomization test: under H0 each difference is as likely to have either sign, so
    ``permutation_test((d,), mean, permutation_type="samples")`` flips signs (exactly, over
    all 2^n flips, when that is no more than ``resamples``). The Wilcoxon test drops zero
    differences (``zero_method="wilcox"``). When every difference is zero, t and W are
    undefined; their p-values are set to 1 and the note says so.

    Examples
    --------
    >>> a = pd.Series([0.5, 0.7, 0.9, 0.4], index=["q1", "q2", "q3", "q4"])
    >>> b = pd.Series([0.5, 0.6, 0.8, 0.2], index=["q1", "q2", "q3", "q5"])
    >>> r = paired_comparison(a, b, resamples=100)
    >>> r["n"], r["dropped"], (r["wins"], r["ties"], r["losses"])
    (3, '2 queries: 1 only in a, 1 only in b', (2, 1, 0))
    """
    x, y, n_dropped, dropped = align_pair(a, b)
    if not len(x):
        raise NoOverlap(f"no query has a value for both ({dropped or 'both are empty'})")
    d = _differences(x, y)[np.newaxis]
    p_perm = permutation_pvalues(d, seed=seed, resamples=resamples)[0]
    low, high, notes = bootstrap_intervals(d, seed=seed, resamples=resamples,
                                           confidence=confidence)
    return _aligned_comparison(x, y, d[0], n_dropped, dropped, p_perm,
                               (low[0], high[0], notes[0]))


def _differences(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    d = x - y
    d[np.abs(d) <= TIE_TOLERANCE] = 0.0
    return d


def _aligned_comparison(x: np.ndarray, y: np.ndarray, d: np.ndarray, n_dropped: int,
                        dropped: str, p_permutation: float,
                        interval: tuple[float, float, str]) -> dict[str, Any]:
    notes: list[str] = [interval[2]] if interval[2] else []
    out: dict[str, Any] = {"n": len(d), "n_dropped": n_dropped, "dropped": dropped,
                           "mean_a": float(x.mean()), "mean_b": float(y.mean()),
                           "mean_diff": float(d.mean()), "wins": int((d > 0).sum()),
                           "ties": int((d == 0).sum()), "losses": int((d < 0).sum())}
    sd = float(np.std(d, ddof=1)) if len(d) > 1 else float("nan")
    if sd == 0:
        out["d_z"] = 0.0 if out["mean_diff"] == 0 else float(np.copysign(np.inf,
                                                                           out["mean_diff"]))
    else:
        out["d_z"] = out["mean_diff"] / sd
    if not np.any(d):
        notes.append("all differences are zero: t-test and Wilcoxon p set to 1")
        out.update(p_ttest=1.0, p_wilcoxon=1.0)
    else:
        out["p_ttest"] = float(_quietly(lambda: stats.ttest_rel(x, y).pvalue, notes, "t-test"))
        out["p_wilcoxon"] = float(_quietly(lambda: stats.wilcoxon(d).pvalue, notes,
                                           "Wilcoxon"))
    out["p_permutation"] = float(p_permutation)
    out["ci_low"], out["ci_high"] = float(interval[0]), float(interval[1])
    out["note"] = "; ".join(notes)
    return out


def per_query_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A per-query table indexed by query id (a ``qid`` column becomes the index)."""
    if "qid" in frame.columns:
        frame = frame.set_index("qid")
    if not frame.index.is_unique:
        raise CompareError("a per-query table has duplicate query ids")
    return frame


def compare_table(per_query: Mapping[str, pd.DataFrame], variants: Sequence[str] | None = None,
                  baseline: str | Sequence[str] | None = None, **options: Any) -> pd.DataFrame:
    """Every ranker pair (or every ranker vs ``baseline``) under every variant: the rows of
    :func:`pair_rows` (its parameters); :func:`harness.compare.core.build_comparison` gives
    them with their settings and notes (a :class:`~harness.compare.result.Comparison`)."""
    return pair_rows(per_query, variants, baseline, **options)[0]


def pair_rows(per_query: Mapping[str, pd.DataFrame], variants: Sequence[str] | None = None,
              baseline: str | Sequence[str] | None = None, *, correction: str = "holm",
              alpha: float = 0.05, test: str = "ttest", seed: int = 0,
              resamples: int = 10_000, confidence: float = 0.95,
              family: str = "variant", max_queries: int | None = 20_000,
              tests: Sequence[str] | None = None, intervals: bool = True
              ) -> tuple[pd.DataFrame, list[str]]:
    """Every ranker pair (or every ranker vs ``baseline``) under every variant.

    Parameters
    ----------
    per_query : mapping of ranker label -> DataFrame
        Per-query tables (``qid`` column or index; one column per variant display name).
    variants : sequence of str, optional
        Variants to compare; default every variant column of any table, in order. A variant
        is compared between the rankers whose tables hold it.
    baseline : str or sequence of str, optional
        Compare each ranker with this one only (``ranker_b`` is the baseline); with several,
        each ranker with each baseline (the baselines with each other once).
    correction : {'holm', 'bh'}, default 'holm'
        Applied to each test's p-values within a family (see ``family``).
    alpha : float, default 0.05
        ``significant`` is ``p_<test>_adj < alpha``.
    test : {'ttest', 'wilcoxon', 'permutation'}, default 'ttest'
        The test whose corrected p-value decides ``significant``.
    seed, resamples, confidence :
        See :func:`paired_comparison`.
    family : {'variant', 'baseline', 'all'}, default 'variant'
        The comparisons corrected together: those of one variant (so each variant's
        discriminative power is its own), those against one baseline (every variant), or
        every row of the table.
    max_queries : int or None, default 20,000
        Above this many aligned queries the permutation p-value and the bootstrap interval
        (whose costs grow with queries x resamples, and the BCa jackknife with queries²)
        are replaced by their normal approximations (:func:`normal_pvalues`,
        :func:`harness.reporting.summary.normal_interval`); the row's note says so.
        None: never.
    tests : sequence of str, optional
        The tests computed (default all of ``TESTS``; ``test`` must be among them): the
        columns ``p_<test>`` and ``p_<test>_adj`` of the others are left out.
    intervals : bool, default True
        Compute the bootstrap interval of each mean difference (``ci_low``, ``ci_high``).

    Returns
    -------
    DataFrame, list of str
        One row per (variant, ranker_a, ranker_b) with the columns of
        :func:`paired_comparison`, the corrected p-values ``p_*_adj`` and ``significant``;
        the notes (variants left out, p-values that cannot reach alpha).
    """
    if len(per_query) < 2:
        names = ", ".join(per_query) or "none"
        raise TooFewRankers(f"a comparison needs at least two ranker versions; got "
                            f"{len(per_query)} ({names}): add rankers to the sweep, e.g. "
                            "-m ranker=oracle,random")
    for name, value, choices in (("correction", correction, CORRECTIONS),
                                 ("test", test, TESTS), ("family", family, FAMILIES)):
        if value not in choices:
            raise CompareError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    if not 0 < alpha < 1:
        raise CompareError(f"alpha must lie in (0, 1); got {alpha}")
    tests = list(TESTS if tests is None else tests)
    if test not in tests:
        raise CompareError(f"test {test!r} decides significance: compute it (tests="
                           f"{tests!r})")
    if int(resamples) < 1:
        raise CompareError(f"resamples must be >= 1; got {resamples}")
    for name, given in (("seed", seed), ("max_queries", max_queries)):
        if given is not None and int(given) < 0:  # numpy's seeds are >= 0
            raise CompareError(f"{name} must be an int >= 0; got {given}")
    frames = {label: per_query_frame(f) for label, f in per_query.items()}
    baselines = [baseline] if isinstance(baseline, str) else list(baseline or [])
    for b in baselines:
        if b not in frames:
            raise UnknownName(f"baseline {b!r} is not among the rankers: {', '.join(frames)}")
    if family == "baseline" and not baselines:
        raise CompareError("family 'baseline' corrects per baseline: name one (--baseline)")
    known = list(dict.fromkeys(c for f in frames.values() for c in metric_columns(f)))
    if variants is None:
        variants = known
    unknown = [v for v in variants if v not in known]
    if unknown:
        raise UnknownName(f"variant(s) {', '.join(map(repr, unknown))} not computed by any "
                          f"ranker; known: {', '.join(known)}")
    notes: list[str] = []
    pairs: dict[tuple[str, str], list[str]] = {}
    for variant in variants:
        holders = [label for label, f in frames.items() if variant in f.columns]
        if baselines:
            chosen = []
            for b in (b for b in baselines if b in holders):
                chosen += [(h, b) for h in holders if h != b and (b, h) not in chosen]
        else:
            chosen = list(itertools.combinations(holders, 2))
        if not chosen:
            notes.append(f"{variant}: computed for {', '.join(holders)} only; not compared")
        for pair in chosen:
            pairs.setdefault(pair, []).append(variant)
    if not pairs:
        raise TooFewRankers("no variant was computed for two rankers: " + "; ".join(notes))
    from harness.compare.pairs import pairwise

    keys = [(v, ra, rb) for v in variants for (ra, rb), vs in pairs.items() if v in vs]
    columns = pairwise(frames, pairs, variants, tests=[t for t in TESTS if t in tests],
                       intervals=intervals, seed=seed, resamples=int(resamples),
                       confidence=confidence, max_queries=max_queries,
                       tie_tolerance=TIE_TOLERANCE)
    table = pd.DataFrame({"variant": [k[0] for k in keys], "ranker_a": [k[1] for k in keys],
                          "ranker_b": [k[2] for k in keys]} | columns)
    groups = [np.arange(len(table))] if family == "all" else list(table.groupby(
        "variant" if family == "variant" else "ranker_b", sort=False).indices.values())
    for t in (t for t in TESTS if t in tests):
        adjusted = np.empty(len(table))
        for idx in groups:
            adjusted[idx] = adjust_pvalues(table[f"p_{t}"].to_numpy()[idx], correction)
        table[f"p_{t}_adj"] = adjusted
    table["significant"] = table[f"p_{test}_adj"] < alpha
    largest = max(len(idx) for idx in groups)
    if test == "permutation" and correction == "holm" and largest / (resamples + 1) >= alpha:
        notes.append(f"permutation p-values cannot fall below 1/(resamples + 1); with Holm "
                     f"over {largest} comparisons no result can reach alpha {alpha}: raise "
                     "resamples")
    return table[[c for c in COLUMNS if c in table.columns]], notes
