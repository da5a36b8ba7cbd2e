"""Does a verdict rest on what unjudged documents count as? (issue 24)

A study that computed a metric under several ``unjudged`` treatments (``metric.unjudged=
[nonrelevant,condensed,relevant]``) gives each pair of rankers one verdict per treatment.
For each pair and metric that differs only in ``unjudged`` (and ``unjudged_grade``), the
verdicts are read together: the same under every treatment (the verdict holds), or not
("better only if unjudged documents are non-relevant: inconclusive under unjudged=condensed").
Bounds over every labeling of the unjudged documents come from ``harness judgments``.
"""

from __future__ import annotations

from collections.abc import Hashable

import pandas as pd

from harness.errors import MetricDefinitionError
from harness.metrics import parse_metric
from harness.metrics.vocabulary.options import display_value

__all__ = ["UNJUDGED_OPTIONS", "unjudged_flags", "unjudged_lines"]

#: The options that say what an unjudged document counts as.
UNJUDGED_OPTIONS = ("unjudged", "unjudged_grade")


def treatment_of(variant: str) -> tuple[Hashable, str] | None:
    """The metric without its unjudged options, and the treatment (``relevant`` with its
    grade when one is set); None for a name that does not parse as a metric."""
    try:
        m = parse_metric(variant)
    except (MetricDefinitionError, ValueError):
        return None
    rest = tuple((o, display_value(v)) for o, v in m.options().items()
                 if o not in UNJUDGED_OPTIONS)
    grade = "" if m.unjudged_grade is None else f" (grade {m.unjudged_grade:g})"
    return (m.name, m.k, rest), f"{m.unjudged}{grade}"


def unjudged_flags(verdicts: pd.DataFrame) -> pd.Series:
    """Per row of a verdict table (:func:`harness.compare.verdicts.verdict_table`): ``""``
    when the pair has the row's metric under one unjudged treatment only, ``"holds under
    unjudged=..."`` when every treatment gives the same verdict, else what the verdict rests
    on, e.g. ``"better only if unjudged documents are non-relevant: inconclusive under
    unjudged=condensed"`` (on every row of the group)."""
    out = pd.Series("", index=verdicts.index, dtype=object)
    if verdicts.empty:
        return out
    parsed = verdicts["variant"].map(treatment_of)
    keep = parsed.notna()
    if not keep.any():
        return out
    base = parsed[keep].map(lambda t: t[0])
    treatment = parsed[keep].map(lambda t: t[1])
    sub = verdicts[keep].assign(_base=base, treatment_of=treatment)
    for _, group in sub.groupby(["candidate", "baseline", "_base"], sort=False):
        if group["treatment_of"].nunique() < 2:
            continue
        by = dict(zip(group["treatment_of"], group["verdict"]))
        if len(set(by.values())) == 1:
            text = ("holds under unjudged="
                    + ", ".join(t for t in by if t != "nonrelevant"))
        else:
            others = "; ".join(f"{v} under unjudged={t}" for t, v in by.items()
                               if t != "nonrelevant" and v != by.get("nonrelevant"))
            text = (f"{by['nonrelevant']} only if unjudged documents are non-relevant: "
                    f"{others}" if "nonrelevant" in by else
                    "depends on unjudged documents: " + "; ".join(
                        f"{v} under unjudged={t}" for t, v in by.items()))
        out[group.index] = text
    return out


def unjudged_lines(verdicts: pd.DataFrame, *, limit: int = 6) -> list[str]:
    """The console's account: each pair and metric whose verdict does not hold across the
    unjudged treatments (its nonrelevant row), or that every verdict holds; and where to
    bound it. Nothing when no metric was measured under two treatments."""
    if "unjudged" not in verdicts.columns:
        return []
    flagged = verdicts[verdicts["unjudged"].fillna("").str.contains(" only if |depends on ")]
    if flagged.empty:
        return ["Verdict across unjudged treatments: the same under each, for every pair and "
                "metric measured under several; harness judgments bounds it over every "
                "labeling of the unjudged documents"]
    parsed = flagged["variant"].map(treatment_of)  # each group once, its nonrelevant row
    firsts = (flagged.assign(_base=parsed.map(lambda t: t[0]),
                             _last=parsed.map(lambda t: t[1] != "nonrelevant"))
              .sort_values("_last", kind="stable")
              .drop_duplicates(["candidate", "baseline", "_base"]).sort_index())
    lines = [f"Verdict across unjudged treatments: it changes for {len(firsts)} pair(s) and "
             "metric(s); bound it over every labeling with harness judgments:"]
    lines += [f"  {r.candidate} vs {r.baseline}, {r.variant}: {r.unjudged}"
              for r in firsts.head(limit).itertuples()]
    if len(firsts) > limit:
        lines.append(f"  ... {len(firsts) - limit} more in verdicts.csv (column unjudged)")
    return lines
