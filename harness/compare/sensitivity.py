"""Does the metric definition change which ranker wins? Sensitivity of a sweep's variants.

For every pair of variants, Kendall's tau between the ranker orderings (by mean); for every
variant, the leader by mean, whether its lead is significant (the chosen test, after the
chosen correction, finds it better than every other ranker; otherwise the variant is a tie at
the top), and its discriminative power (share of compared ranker pairs found significantly
different after correction); and, where the sweep holds both tie extremes, each ranker's
tie-sensitivity interval (optimistic - pessimistic); and the incompleteness group (metrics
under several ``unjudged`` treatments, bpref and infAP beside AP): each treatment's ordering and
its Kendall's tau against ``unjudged=nonrelevant`` (:mod:`harness.compare.incompleteness`).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import stats

from harness.compare.incompleteness import (
    INCOMPLETENESS_COLUMNS,
    incompleteness_note,
    incompleteness_taus,
)
from harness.compare.stats import per_query_frame
from harness.errors import MetricDefinitionError
from harness.metrics import parse_metric
from harness.metrics.engine.evaluate import metric_columns

if TYPE_CHECKING:
    from harness.compare.result import Comparison

__all__ = ["Sensitivity", "sensitivity", "kendall_matrix", "tie_intervals", "TIES_HOWTO",
           "significance_rule"]

#: What to do when the sweep has no optimistic/pessimistic pair of variants.
TIES_HOWTO = ("tie-sensitivity interval not available: no two variants of the sweep differ "
              "only in ties=optimistic/pessimistic; add both tie rules to the metric grid, "
              "e.g. metric.ties=[optimistic,pessimistic] (or sweep -m "
              "metric.ties=optimistic,pessimistic)")


@dataclass(frozen=True)
class Sensitivity:
    """Sensitivity of the ranker ordering to the metric variant.

    Attributes
    ----------
    means : DataFrame
        Mean per query of each ranker (columns) under each variant (rows); NaN where the
        ranker lacks the variant.
    winners : DataFrame
        Per variant: ``winner`` (rankers sharing the top mean joined by " = "), its
        ``mean``, the ``margin`` to the runner-up and the full ``order``; ``significant``:
        True when the comparison table finds the leader significantly better than every
        other ranker of the variant (its ``significant`` column: the chosen test, corrected),
        False when not (a tie at the top), None when untested (no table, or the table lacks
        one of the leader's pairs, as a table against a baseline does); ``p_adj``: the
        corrected p-value of the deciding test, leader vs runner-up; ``top``: the leader and
        the rankers not significantly worse than it, joined by " = ".
    tau : DataFrame
        Kendall's tau-b between the orderings under two variants, over the rankers holding
        both (NaN with fewer than two, or when an ordering is all ties).
    power : DataFrame
        Per variant: ``n_comparisons``, ``n_significant`` and their ratio
        ``discriminative_power`` (empty when no comparison table was given).
    ties : DataFrame
        Per ranker and variant (named with ties=average): the ``optimistic`` and
        ``pessimistic`` means, the ``interval`` (their difference), ``n_queries`` and
        ``n_affected`` (queries whose value depends on the tie rule). Empty when the sweep
        has no such pair; ``notes`` then says how to get it.
    notes : tuple of str
        Plain-language findings: whether the winner changes (counting only significant
        leads), what is missing.
    rule : str
        The significance rule of the winners ("" when untested).
    unjudged : DataFrame
        The incompleteness group (:func:`~harness.compare.incompleteness.incompleteness_taus`):
        per metric and unjudged treatment, the ordering and its tau against nonrelevant;
        empty when the sweep measured no metric under two treatments.
    """

    means: pd.DataFrame
    winners: pd.DataFrame
    tau: pd.DataFrame
    power: pd.DataFrame
    ties: pd.DataFrame
    notes: tuple[str, ...]
    rule: str = ""
    unjudged: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=INCOMPLETENESS_COLUMNS))

    @property
    def winner_changes(self) -> bool:
        """True when two variants have different significant winners; untested (no
        comparison table): when no ranker is at the top by mean (alone or tied) under every
        variant."""
        if self.rule:
            return len(set(_significant_winners(self.winners).values())) > 1
        return not _always_top(self.winners)


def kendall_matrix(means: pd.DataFrame) -> pd.DataFrame:
    """Kendall's tau-b (:func:`scipy.stats.kendalltau`) between every two rows of
    ``means`` (variants x rankers), over the rankers with a value in both rows.

    >>> m = pd.DataFrame({"a": [0.9, 0.1], "b": [0.5, 0.5], "c": [0.1, 0.9]},
    ...                  index=["v1", "v2"])
    >>> kendall_matrix(m).loc["v1", "v2"]
    np.float64(-1.0)
    """
    variants = list(means.index)
    tau = pd.DataFrame(np.nan, index=variants, columns=variants, dtype=np.float64)
    values = means.to_numpy(dtype=np.float64)
    for i, j in itertools.combinations_with_replacement(range(len(variants)), 2):
        both = ~np.isnan(values[i]) & ~np.isnan(values[j])
        if both.sum() < 2:
            continue
        with warnings.catch_warnings():  # a constant ordering: tau is undefined (NaN)
            warnings.simplefilter("ignore", RuntimeWarning)
            t = stats.kendalltau(values[i][both], values[j][both]).statistic
        tau.iat[i, j] = tau.iat[j, i] = t
    return tau


def _order(row: pd.Series) -> str:
    """Labels by descending mean, joined by " > " or, for equal means, " = "."""
    text = str(row.index[0])
    for i in range(1, len(row)):
        text += (" = " if row.iloc[i] == row.iloc[i - 1] else " > ") + str(row.index[i])
    return text


def _always_top(winners: pd.DataFrame) -> list[str]:
    tops = [w.split(" = ") for w in winners["winner"]]
    return [label for label in tops[0] if all(label in t for t in tops[1:])] if tops else []


def _state(value: object) -> bool | None:
    """A ``significant`` cell as True, False or None (untested)."""
    return None if value is None or value != value else bool(value)


def _significant_winners(winners: pd.DataFrame) -> dict[str, str]:
    """Variant -> winner, for the variants whose leader's lead is significant."""
    return {v: w for v, w, sig in zip(winners.index, winners["winner"], winners["significant"])
            if _state(sig) is True}


def _listed(names: Sequence[str], at_most: int = 4) -> str:
    return ", ".join(names[:at_most]) + (", ..." if len(names) > at_most else "")


def _untested_note(winners: pd.DataFrame) -> str:
    """The winners by mean, said to be untested (no comparison table)."""
    always = _always_top(winners)
    tied = [v for v, w in winners["winner"].items() if " = " in w]
    untested = "significance not tested: no comparison table given"
    if always:
        text = f"{' and '.join(always)} wins under every variant ({len(winners)}) by mean"
        return text + (f", tied at the top under {len(tied)} ({_listed(tied)})"
                       if tied else "") + f"; {untested}"
    counts = winners["winner"].value_counts()
    parts = [f"{w} under {n} ({_listed(list(winners.index[winners['winner'] == w]))})"
             for w, n in counts.items()]
    return f"the winner by mean changes with the variant ({untested}): " + "; ".join(parts)


def _winner_note(winners: pd.DataFrame, has_table: bool = True) -> str:
    """Plain-language answer to: does the variant change which ranker wins? A variant has a
    winner only when its leader's lead is significant; otherwise it is a tie at the top."""
    if not has_table:
        return _untested_note(winners)
    decided = _significant_winners(winners)
    ties = [f"{v} ({top})" for v, top, sig in zip(winners.index, winners["top"],
                                                   winners["significant"])
            if _state(sig) is False]
    untested = [v for v, sig in winners["significant"].items() if _state(sig) is None]
    rest = ([f"no significant winner (a tie at the top) under {len(ties)} ({_listed(ties)})"]
            if ties else []) + ([f"untested under {len(untested)} ({_listed(untested)}): the "
                                 "comparison table lacks a pair of the leader"]
                                if untested else [])
    names = list(dict.fromkeys(decided.values()))
    if len(names) == 1 and not rest:
        return f"{names[0]} wins under every variant ({len(winners)})"
    if not names and not ties:
        return (f"the leads are untested under every variant ({len(winners)}): the "
                "comparison table lacks a pair of each leader (a table against a baseline?); "
                "pass one of every ranker pair")
    if not names:
        return f"no ranker wins significantly under any variant ({len(winners)}): " + \
            "; ".join(rest)
    parts = [f"{w} under {sum(x == w for x in decided.values())} "
             f"({_listed([v for v, x in decided.items() if x == w])})" for w in names]
    if len(names) == 1:
        return f"{names[0]} wins under {len(decided)} of {len(winners)} variants " \
            f"({_listed(list(decided))}); " + "; ".join(rest)
    return "the winner changes with the variant: " + "; ".join(parts + rest)


def _pair_lookup(comparison: Comparison | None) -> dict[tuple[str, str, str], tuple]:
    """(variant, ranker, other) -> (significant, mean difference ranker - other, p adj)."""
    if comparison is None or not len(comparison.tests):
        return {}
    rows = comparison.tests
    column = f"p_{comparison.settings.test}_adj"
    out = {}
    for v, a, b, sig, diff, p in zip(rows["variant"], rows["ranker_a"], rows["ranker_b"],
                                     rows["significant"], rows["mean_diff"], rows[column]):
        out[(v, a, b)] = (bool(sig), float(diff), float(p))
        out[(v, b, a)] = (bool(sig), -float(diff), float(p))
    return out


def _lead(variant: str, row: pd.Series, pairs: Mapping[tuple[str, str, str], tuple]
          ) -> tuple[bool | None, float, str]:
    """Whether the leader of ``row`` (means sorted descending) is significantly better than
    every other ranker; the corrected p-value against the runner-up; the top group."""
    leader = str(row.index[0])
    if not pairs:
        return None, np.nan, ""
    top, missing = [leader], False
    for other in row.index[1:]:
        found = pairs.get((variant, leader, str(other)))
        if found is None:
            missing = True
        elif not (found[0] and found[1] > 0):
            top.append(str(other))
    runner_up = pairs.get((variant, leader, str(row.index[1])))
    p_adj = runner_up[2] if runner_up else np.nan
    return (None if missing else len(top) == 1), p_adj, " = ".join(top)


def _winners(means: pd.DataFrame, comparison: Comparison | None = None) -> pd.DataFrame:
    pairs = _pair_lookup(comparison)
    rows = {}
    for variant, row in means.iterrows():
        row = row.dropna().sort_values(ascending=False, kind="stable")
        top = row[row == row.iloc[0]]
        rest = row[row < row.iloc[0]]
        significant, p_adj, group = _lead(str(variant), row, pairs)
        rows[variant] = {"winner": " = ".join(top.index), "mean": float(row.iloc[0]),
                         "margin": float(row.iloc[0] - rest.iloc[0]) if len(rest) else np.nan,
                         "order": _order(row), "significant": significant, "p_adj": p_adj,
                         "top": group}
    out = pd.DataFrame.from_dict(rows, orient="index", columns=[
        "winner", "mean", "margin", "order", "significant", "p_adj", "top"])
    out["significant"] = pd.Series([r["significant"] for r in rows.values()],
                                   index=out.index, dtype=object)
    return out


def significance_rule(comparison: Comparison) -> str:
    """The rule deciding ``significant`` in a comparison, in words."""
    s = comparison.settings
    return f"{s.test} p adj < {s.alpha}, {s.correction} per {s.family}"


def tie_intervals(per_query: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Optimistic - pessimistic mean per ranker, for every variant the sweep holds under both
    tie rules (and otherwise equal); empty when there is none.

    >>> f = pd.DataFrame({"qid": ["q1", "q2"], "nDCG@5(ties=optimistic)": [1.0, 0.8],
    ...                   "nDCG@5(ties=pessimistic)": [0.6, 0.8]})
    >>> tie_intervals({"r": f})[["ranker", "variant", "interval", "n_affected"]]
      ranker  variant  interval  n_affected
    0      r   nDCG@5       0.2           1
    """
    rows = []
    for label, frame in per_query.items():
        frame = per_query_frame(frame)
        columns = metric_columns(frame)
        for column in columns:
            try:
                m = parse_metric(column)
            except MetricDefinitionError:
                continue
            if m.ties != "optimistic":
                continue
            pessimistic = m.with_options(ties="pessimistic").display_name
            if pessimistic not in columns:
                continue
            both = frame[[column, pessimistic]].dropna()
            opt, pes = both[column], both[pessimistic]
            rows.append({"ranker": label,
                         "variant": m.with_options(ties="average").display_name,
                         "optimistic": float(opt.mean()), "pessimistic": float(pes.mean()),
                         "interval": float(opt.mean() - pes.mean()), "n_queries": len(both),
                         "n_affected": int((np.abs(opt - pes) > 1e-12).sum())})
    return pd.DataFrame(rows, columns=["ranker", "variant", "optimistic", "pessimistic",
                                       "interval", "n_queries", "n_affected"])


def sensitivity(per_query: Mapping[str, pd.DataFrame], comparison: Comparison | None = None,
                *, variants: Sequence[str] | None = None) -> Sensitivity:
    """Sensitivity of the ranker ordering to the metric definition.

    Parameters
    ----------
    per_query : mapping of ranker label -> DataFrame
        Per-query tables, as for :func:`harness.compare.compare_table`.
    comparison : Comparison, optional
        A :func:`~harness.compare.build_comparison` result; the ``significant`` column of
        its tests (its test, alpha and correction) decides whether each variant's leader
        wins or the top is a tie,
        and gives the discriminative power of each variant. Pass an all-pairs table (no
        baseline): with a table against a baseline the leads are untested wherever the
        leader's pairs are missing, and the power is over the baseline's comparisons only
        (a note says so). Without a table the winners are by mean, said to be untested.
    variants : sequence of str, optional
        Default: every variant column of any table.

    Returns
    -------
    Sensitivity

    Notes
    -----
    A ranker's mean under a variant is over the queries it has a value for (the mean
    MLflow logs). Kendall's tau-b counts concordant minus discordant ranker pairs over the
    geometric mean of the untied pairs: 1 = the same ordering, -1 = reversed.
    """
    frames = {label: per_query_frame(f) for label, f in per_query.items()}
    if variants is None:
        variants = list(dict.fromkeys(c for f in frames.values() for c in metric_columns(f)))
    means = pd.DataFrame({label: [float(f[v].mean()) if v in f.columns else np.nan
                                  for v in variants] for label, f in frames.items()},
                         index=list(variants), dtype=np.float64)
    compared = means.notna().sum(axis=1) >= 2  # a variant one ranker has proves nothing
    winners = _winners(means[compared], comparison)
    tested = comparison is not None and len(comparison.tests) > 0
    rule = significance_rule(comparison) if comparison is not None and tested else ""
    notes = []
    if not compared.all():
        lone = list(means.index[~compared])
        notes.append(f"{len(lone)} variant(s) computed for fewer than two rankers left out of "
                     f"the winners: {', '.join(lone[:4])}{', …' if len(lone) > 4 else ''}")
    if len(winners):
        notes.append(_winner_note(winners, bool(rule)))
        if rule:
            notes.append("a variant has a winner only when its leader is significantly "
                         f"better than every other ranker ({rule}); otherwise its top is a "
                         "tie")
    tau = kendall_matrix(means)
    off = tau.to_numpy()[~np.eye(len(tau), dtype=bool)]
    off = off[~np.isnan(off)]
    if len(off):
        notes.append(f"Kendall's tau between variant orderings: min {off.min():.3f}, "
                     f"median {np.median(off):.3f}")
    if comparison is not None and tested:
        grouped = comparison.tests.groupby("variant", sort=False)["significant"]
        power = pd.DataFrame({"n_comparisons": grouped.size(),
                              "n_significant": grouped.sum().astype(int)})
        power["discriminative_power"] = power["n_significant"] / power["n_comparisons"]
        if comparison.settings.baseline is not None:
            notes.append(f"discriminative power over the comparisons with the baseline "
                         f"{comparison.settings.baseline} only, not over every ranker pair")
    else:
        power = pd.DataFrame(columns=["n_comparisons", "n_significant",
                                      "discriminative_power"])
        notes.append("discriminative power not computed: no comparison table given")
    ties = tie_intervals({label: f[[c for c in f.columns if c in set(variants)]]
                          for label, f in frames.items()})
    if ties.empty:
        notes.append(TIES_HOWTO)
    unjudged = incompleteness_taus(means)
    if note := incompleteness_note(unjudged):
        notes.append(note)
    return Sensitivity(means, winners, tau, power, ties, tuple(notes), rule, unjudged)

