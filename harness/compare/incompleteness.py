"""Does the ranker ordering rest on what unjudged documents count as? (issue 24)

The incompleteness group of a sweep's variants: every metric measured under two or more
``unjudged`` treatments (nonrelevant, condensed, relevant), and the measures built for
incomplete judgments (bpref, infAP: binary, over the whole ranking, reading which documents
are judged), read beside each of those metrics. For each member, the rankers' ordering by
mean and Kendall's tau-b (:func:`scipy.stats.kendalltau`) against the ordering under
``unjudged=nonrelevant`` (the metric as usually reported).
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable

import numpy as np
import pandas as pd
from scipy import stats

from harness.compare.unjudged_verdicts import UNJUDGED_OPTIONS
from harness.errors import MetricDefinitionError
from harness.metrics import parse_metric
from harness.metrics.vocabulary.options import display_value
from harness.metrics.vocabulary.registry import get_measure

__all__ = ["INCOMPLETENESS_COLUMNS", "incompleteness_taus", "incompleteness_note"]

INCOMPLETENESS_COLUMNS = ["metric", "treatment", "variant", "order", "tau", "n_rankers"]

def _for_incomplete_judgments(name: str) -> bool:
    """A measure built for incomplete judgments: binary, over the whole ranking, averaged,
    reading whether each document is judged, with no gain and no subtopics (bpref, infAP)."""
    m = get_measure(name)
    return (m.reads_judged and m.binary and not m.cutoff and not m.subtopics
            and m.aggregate == "mean" and "gain" not in m.options)


def _member(variant: str) -> tuple[Hashable, str] | None:
    """(the group's key, the treatment) of a variant, the key None for a measure built for
    incomplete judgments; None for a name that does not parse."""
    try:
        m = parse_metric(variant)
    except (MetricDefinitionError, ValueError):
        return None
    if _for_incomplete_judgments(m.name) and m.unjudged == "nonrelevant":
        return None, m.display_name
    rest = tuple((o, display_value(v)) for o, v in m.options().items()
                 if o not in UNJUDGED_OPTIONS)
    grade = "" if m.unjudged_grade is None else f" (grade {m.unjudged_grade:g})"
    return (m.name, m.k, rest), f"{m.unjudged}{grade}"


def _order(row: pd.Series) -> str:
    row = row.dropna().sort_values(ascending=False, kind="stable")
    return " > ".join(str(label) for label in row.index)


def _tau(a: pd.Series, b: pd.Series) -> tuple[float, int]:
    both = a.notna() & b.notna()
    if both.sum() < 2:
        return np.nan, int(both.sum())
    with warnings.catch_warnings():  # a constant ordering: tau is undefined (NaN)
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.kendalltau(a[both], b[both]).statistic), int(both.sum())


def incompleteness_taus(means: pd.DataFrame) -> pd.DataFrame:
    """The incompleteness group of ``means`` (variants x rankers, as
    :attr:`harness.compare.Sensitivity.means`): per metric measured under ``unjudged=
    nonrelevant`` and at least one other treatment, one row per treatment, and one per measure
    built for incomplete judgments (``treatment`` its name): ``metric`` (its nonrelevant name), ``treatment``, ``variant``, the
    ``order`` of the rankers by mean, ``tau`` against the nonrelevant ordering and
    ``n_rankers`` (those with both). Empty when the sweep has no such metric.

    >>> m = pd.DataFrame({"a": [0.5, 0.2], "b": [0.4, 0.3]},
    ...                  index=["AP", "AP(unjudged=condensed)"])
    >>> incompleteness_taus(m)[["treatment", "order", "tau"]]
         treatment  order  tau
    0  nonrelevant  a > b  1.0
    1    condensed  b > a -1.0
    """
    groups: dict[Hashable, dict[str, str]] = {}
    for variant in means.index:
        found = _member(str(variant))
        if found is not None:
            groups.setdefault(found[0], {}).setdefault(found[1], str(variant))
    judged_only = groups.pop(None, {})
    rows = []
    for members in groups.values():
        reference = members.get("nonrelevant")
        if reference is None or len(members) < 2:
            continue
        for treatment, variant in {**members, **judged_only}.items():
            tau, n = _tau(means.loc[reference], means.loc[variant])
            rows.append({"metric": reference, "treatment": treatment, "variant": variant,
                         "order": _order(means.loc[variant]), "tau": tau, "n_rankers": n})
    return pd.DataFrame(rows, columns=INCOMPLETENESS_COLUMNS)


def incompleteness_note(table: pd.DataFrame) -> str:
    """One line for the console and the report: where the ordering changes with the
    treatment of unjudged documents (tau below 1), or that it holds; "" for an empty table."""
    if table.empty:
        return ""
    others = table[table["treatment"] != "nonrelevant"]
    changed = others[~(others["tau"] >= 1 - 1e-12)]
    if changed.empty:
        return (f"incompleteness: the ranker ordering is the same under every unjudged "
                f"treatment and measure for incomplete judgments ({len(others)} compared "
                "with unjudged=nonrelevant; tau 1)")
    parts = [f"{r.variant} against {r.metric}: tau {r.tau:.3f} ({r.order})"
             for r in changed.head(4).itertuples()]
    more = f", and {len(changed) - 4} more" if len(changed) > 4 else ""
    return ("incompleteness: the ranker ordering changes with what unjudged documents count "
            "as (Kendall's tau against the ordering under unjudged=nonrelevant): " + "; ".join(parts) + more
            + "; bound it with harness judgments")
