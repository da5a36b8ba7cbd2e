"""The one comparison core: per-query tables in, a :class:`~harness.compare.api.Comparison`
out. ``harness.compare(...)`` (after evaluating the runs), ``harness compare`` on run files
and on MLflow runs, and ``harness reproduce`` of a comparison all build theirs here, with
:func:`build_comparison`.

>>> import pandas as pd
>>> a = pd.DataFrame({"qid": ["q1", "q2", "q3"], "RR": [1.0, 0.5, 1.0]}).set_index("qid")
>>> b = pd.DataFrame({"qid": ["q1", "q2", "q3"], "RR": [0.5, 0.5, 0.25]}).set_index("qid")
>>> c = build_comparison({"a": a, "b": b}, ["RR"], resamples=100, every_test=False)
>>> c.settings.test, c.settings.reference, int(c.table.loc["b", ("RR", "losses")])
('ttest', 'a', 2)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from harness.compare.result import STATS, Comparison, Settings
from harness.compare.stats import CORRECTIONS, TESTS, adjust_pvalues, pair_rows
from harness.errors import CompareError

__all__ = ["ALL_TESTS", "build_comparison", "check_options"]

#: the tests :func:`build_comparison` takes: the paired ones, the paired bootstrap test and
#: the randomised Tukey HSD
ALL_TESTS = (*TESTS, "bootstrap", "tukey")
def check_options(test: str, correction: str) -> None:
    """A CompareError naming a test or correction that is not one of the known ones."""
    if test not in ALL_TESTS:
        raise CompareError(f"test must be one of {', '.join(ALL_TESTS)}; got {test!r}")
    if correction not in CORRECTIONS:
        raise CompareError(f"correction must be one of {', '.join(CORRECTIONS)}; got "
                           f"{correction!r}")


def build_comparison(per_query: Mapping[str, pd.DataFrame],
                     measures: Sequence[str] | None = None,
                     baseline: str | Sequence[str] | None = None, *, test: str = "ttest",
                     correction: str = "holm", alpha: float = 0.05, seed: int = 0,
                     resamples: int = 10_000, family: str = "variant",
                     max_queries: int | None = 20_000, confidence: float = 0.95,
                     every_test: bool = True) -> Comparison:
    """The :class:`~harness.compare.api.Comparison` of the systems' per-query tables.

    ``measures`` the columns compared (None: every metric column). With ``every_test`` (the
    default) every paired test and each difference's bootstrap interval are computed (the
    full pairwise table of ``harness compare`` on MLflow runs), else only ``test`` (as
    :func:`harness.compare` does). ``bootstrap``
    and ``tukey`` add their p-values to the t-test's rows
    (:func:`~harness.compare.resampling.bootstrap_pvalues`,
    :func:`~harness.compare.resampling.tukey_pvalues`); the rest is
    :func:`~harness.compare.stats.compare_table`'s.
    """
    check_options(test, correction)
    baselines = tuple([baseline] if isinstance(baseline, str) else baseline or ())
    first = test if test in TESTS else "ttest"
    settings = Settings(test=test, correction=correction, alpha=alpha, seed=seed,
                        resamples=int(resamples), baselines=baselines,
                        reference=baselines[0] if baselines else next(iter(per_query), ""),
                        family=family, max_queries=max_queries, confidence=confidence,
                        every_test=every_test)
    tests, notes = pair_rows(per_query, measures, list(baselines) or None,
                             **(settings.options() | {"test": first}),
                             tests=None if every_test else [first], intervals=every_test)
    names = list(dict.fromkeys(tests["variant"]))
    if test == "tukey":
        tests = _with_tukey(tests, per_query, names, alpha, seed, resamples)
    elif test == "bootstrap":
        tests = _with_bootstrap(tests, per_query, alpha, correction, seed, resamples)
    table = _summary(per_query, tests, names, settings.reference, test)
    return Comparison(table, dict(per_query), tests.reset_index(drop=True), names, settings,
                      tuple(notes))


def _with_tukey(tests: pd.DataFrame, per_query: Mapping[str, pd.DataFrame], measures: list[str],
                alpha: float, seed: int, resamples: int) -> pd.DataFrame:
    """The randomised Tukey HSD of each measure over every system, on the queries all of
    them hold, as the columns ``p_tukey`` (= ``p_tukey_adj``) and ``significant``."""
    from harness.compare.resampling import tukey_pvalues

    tests = tests.copy()
    tests["p_tukey"] = np.nan
    names = list(per_query)
    for m in measures:
        joined = pd.concat([per_query[s][m].rename(s) for s in names], axis=1).dropna()
        p = tukey_pvalues(joined.to_numpy(np.float64), seed=seed, resamples=resamples)
        rows = tests["variant"] == m
        tests.loc[rows, "p_tukey"] = [p[names.index(a), names.index(b)] for a, b in
                                      zip(tests.loc[rows, "ranker_a"],
                                          tests.loc[rows, "ranker_b"])]
    tests["p_tukey_adj"] = tests["p_tukey"]
    tests["significant"] = tests["p_tukey_adj"] < alpha
    return tests


def _with_bootstrap(tests: pd.DataFrame, per_query: Mapping[str, pd.DataFrame], alpha: float,
                    correction: str, seed: int, resamples: int) -> pd.DataFrame:
    """The paired bootstrap test of each row (:func:`~harness.compare.resampling.
    bootstrap_pvalues`), corrected within each measure: ``p_bootstrap``,
    ``p_bootstrap_adj`` and ``significant``."""
    from harness.compare.resampling import bootstrap_pvalues

    tests = tests.copy()
    differences: list[np.ndarray] = []
    joined: dict[str, pd.DataFrame] = {}
    index = next(iter(per_query.values())).index
    same = all(f.index.equals(index) for f in per_query.values())
    for m, a, b in zip(tests["variant"], tests["ranker_a"], tests["ranker_b"]):
        if same and m not in joined:  # every system's values of m, on the same queries
            joined[m] = pd.concat([per_query[s][m].rename(s) for s in per_query], axis=1)
        both = (joined[m][[a, b]] if same else pd.concat([per_query[a][m], per_query[b][m]],
                                                         axis=1)).dropna().to_numpy()
        differences.append(both[:, 0] - both[:, 1])
    # a row's draws depend on its number of queries only: the rows of one size at once
    p = np.empty(len(differences))
    sizes = np.array([len(d) for d in differences])
    for n in np.unique(sizes):
        rows = np.flatnonzero(sizes == n)
        p[rows] = bootstrap_pvalues(np.vstack([differences[i] for i in rows]), seed=seed,
                                    resamples=resamples)
    tests["p_bootstrap"] = p
    tests["p_bootstrap_adj"] = np.nan
    for _, idx in tests.groupby("variant", sort=False).indices.items():
        tests.loc[tests.index[idx], "p_bootstrap_adj"] = adjust_pvalues(
            tests["p_bootstrap"].to_numpy()[idx], correction)
    tests["significant"] = tests["p_bootstrap_adj"] < alpha
    return tests


def _summary(per_query: Mapping[str, pd.DataFrame], tests: pd.DataFrame, measures: list[str],
             reference: str, test: str) -> pd.DataFrame:
    """Systems x (measure, statistic): means over the queries every system holds, and each
    system against the reference."""
    columns = pd.MultiIndex.from_product([measures, STATS])
    table = pd.DataFrame(index=list(per_query), columns=columns, dtype=object)
    for m in measures:
        rows = tests[tests["variant"] == m]
        a, b = rows["ranker_a"].to_numpy(), rows["ranker_b"].to_numpy()
        pair = pd.DataFrame({"s": a, "mean": rows["mean_a"].to_numpy(),
                             "delta": rows["mean_diff"].to_numpy(),
                             "wins": rows["wins"].to_numpy(), "losses": rows["losses"].to_numpy(),
                             "ok": b == reference})
        flip = pd.DataFrame({"s": b, "mean": rows["mean_b"].to_numpy(),
                             "delta": -rows["mean_diff"].to_numpy(),
                             "wins": rows["losses"].to_numpy(), "losses": rows["wins"].to_numpy(),
                             "ok": a == reference})
        common = {"ties": rows["ties"].to_numpy(), "p": rows[f"p_{test}"].to_numpy(),
                  "p_adj": rows[f"p_{test}_adj"].to_numpy(),
                  "significant": rows["significant"].to_numpy(dtype=bool)}
        order = np.arange(len(rows))
        both = pd.concat([pair.assign(**common, pos=order), flip.assign(**common, pos=order)],
                         ignore_index=True).sort_values("pos", kind="stable")
        against = both[both["ok"]].drop_duplicates("s").set_index("s")
        # the reference itself: its mean over the queries of its first comparison
        means = both.drop_duplicates("s").set_index("s")["mean"]
        for k in STATS:
            column = against[k].reindex(table.index).astype(object)
            if k == "mean":
                column = column.where(column.notna(), means.reindex(table.index))
            table[(m, k)] = column.to_numpy()
        for k in ("wins", "ties", "losses"):
            table[(m, k)] = np.array([np.nan if v != v else int(v) for v in table[(m, k)]],
                                     dtype=object)
        table[(m, "significant")] = np.array([np.nan if v != v else bool(v)
                                              for v in table[(m, "significant")]], dtype=object)
    for m in measures:
        table[(m, "mean")] = table[(m, "mean")].astype(float)
        table[(m, "delta")] = table[(m, "delta")].astype(float)
    return table
