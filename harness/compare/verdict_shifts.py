"""The verdict across metric definitions: for each candidate and baseline, the metrics whose
variants give different verdicts ("better under nDCG@10, inconclusive under
nDCG@10(gain=linear)"), and for the largest change, the options that account for it.

The quantity explained is the pair's mean difference D = mean over queries of (candidate −
baseline). Between two variants A and B of one metric (say gain exp2 and linear), D_B − D_A
is split option by option with exact Shapley values, as
:func:`harness.explain.explain_difference` splits the gap between two definitions of a
metric: v(S) is D under the hybrid definition "A with the options S switched to B's", and
an option's share is its marginal effect averaged over every order of switching, so the
parts add up to D_B − D_A. Since the Shapley value is linear, the split of D is the split of
the candidate's mean minus the split of the baseline's.

``explain_difference`` evaluates each hybrid from a run and its judgments; a comparison
reads only the per-query values the compared runs logged (their artifacts hold no rankings
nor labels). So v(S) is read from those values: the split is exact when the runs measured
every hybrid (always so when A and B differ in one option, e.g. a sweep over
``metric.gain``); otherwise the options whose hybrids are missing are reported together,
with the variants that would split them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.compare.stats import TIE_TOLERANCE, align_pair, per_query_frame
from harness.compare.verdicts import VERDICT_CODES, VERDICTS
from harness.errors import MetricDefinitionError
from harness.explain.shapley import differing_options, hybrid, shapley_terms, shown
from harness.metrics import parse_metric
from harness.metrics.vocabulary.definition import Metric

__all__ = ["CHANGES_FILE", "CHANGE_COLUMNS", "Split", "split_change", "verdict_changes",
           "comparable", "change_lines", "changes_display", "change_markdown"]

#: The table of :func:`verdict_changes` beside the report and in the comparison's run.
CHANGES_FILE = "verdict_changes.csv"
CHANGE_COLUMNS = ["candidate", "baseline", "metric", "verdicts", "variant_a", "verdict_a",
                  "diff_a", "variant_b", "verdict_b", "diff_b", "change", "candidate_change",
                  "baseline_change", "split", "split_exact", "largest"]
#: Above this many differing options (2^n hybrids) the change is not split.
MAX_OPTIONS = 8


def _mean_diff(frames: Mapping[str, pd.DataFrame], candidate: str, baseline: str,
               variant: str) -> tuple[float, float, float]:
    """D, and the candidate's and the baseline's means, on the queries both have a value
    for (as the verdict table computes D); NaN when a side lacks the variant."""
    a, b = frames[candidate], frames[baseline]
    if variant not in a.columns or variant not in b.columns:
        return (float("nan"),) * 3
    x, y, _, _ = align_pair(a[variant], b[variant])
    if not len(x):
        return (float("nan"),) * 3
    d = x - y
    d[np.abs(d) <= TIE_TOLERANCE] = 0.0
    return float(d.mean()), float(x.mean()), float(y.mean())


def _splittable(frames: Mapping[str, pd.DataFrame], candidate: str, baseline: str,
                variant_a: str, variant_b: str) -> bool:
    """Whether both runs measured every hybrid of the two variants (the change splits
    option by option)."""
    ma, mb = parse_metric(variant_a), parse_metric(variant_b)
    players = differing_options(ma, mb)
    if len(players) > MAX_OPTIONS:
        return False
    columns = set(frames[candidate].columns) & set(frames[baseline].columns)
    return all(hybrid(ma, mb, c).display_name in columns for r in range(len(players) + 1)
               for c in itertools.combinations(players, r))


@dataclass(frozen=True)
class Split:
    """A change of mean difference split by option (:func:`split_change`): ``table`` one
    row per option, ``change`` D_B − D_A, ``exact`` whether every hybrid was measured,
    ``missing`` the hybrid variants that were not."""

    table: pd.DataFrame
    change: float
    exact: bool
    missing: list[str]


def split_change(per_query: Mapping[str, pd.DataFrame], candidate: str, baseline: str,
                 variant_a: str, variant_b: str) -> Split:
    """Split D_B − D_A (the candidate's mean difference from the baseline under variant B
    minus under variant A, two definitions of one metric) by option.

    Returns
    -------
    Split
        Its ``table``: one row per option that differs (or per group of options whose
        hybrids were not measured, named ``"gain+ties"``): ``option``, ``a``, ``b`` (its
        values under A and B), ``contribution`` (adds up to D_B − D_A), ``share`` of it;
        ``change``, ``exact`` (every hybrid measured), ``missing`` (the hybrid variants
        that were not).

    Examples
    --------
    >>> c = pd.DataFrame({"nDCG@10": [1.0, 0.5], "nDCG@10(gain=linear)": [0.8, 0.5]})
    >>> b = pd.DataFrame({"nDCG@10": [0.5, 0.5], "nDCG@10(gain=linear)": [0.6, 0.5]})
    >>> s = split_change({"c": c, "b": b}, "c", "b", "nDCG@10", "nDCG@10(gain=linear)")
    >>> t = s.table
    >>> t[["option", "a", "b"]].values.tolist(), round(float(t["contribution"][0]), 6)
    ([['gain', 'exp2', 'linear']], -0.15)
    """
    ma, mb = parse_metric(variant_a), parse_metric(variant_b)
    if ma.name != mb.name:
        raise MetricDefinitionError(f"{variant_a} and {variant_b} are not two definitions of "
                                    "one metric")
    frames = {label: per_query_frame(per_query[label]) for label in (candidate, baseline)}
    players = differing_options(ma, mb)
    value = {s: _mean_diff(frames, candidate, baseline, hybrid(ma, mb, s).display_name)[0]
             for s in (frozenset(c) for r in range(len(players) + 1)
                       for c in itertools.combinations(players, r))} \
        if len(players) <= MAX_OPTIONS else {}
    value[frozenset()] = _mean_diff(frames, candidate, baseline, variant_a)[0]
    value[frozenset(players)] = _mean_diff(frames, candidate, baseline, variant_b)[0]
    change = value[frozenset(players)] - value[frozenset()]
    missing = sorted(hybrid(ma, mb, s).display_name for s, v in value.items() if v != v)
    rows: list[dict[str, Any]] = []
    if missing or len(players) > MAX_OPTIONS:  # together: the hybrids that would split them
        rows.append({"option": "+".join(players),
                     "a": ", ".join(shown(getattr(ma, o)) for o in players),
                     "b": ", ".join(shown(getattr(mb, o)) for o in players),
                     "contribution": change})
    else:
        phi = dict.fromkeys(players, 0.0)
        for player, s, weight in shapley_terms(players):
            phi[player] += weight * (value[s | {player}] - value[s])
        rows += [{"option": o, "a": shown(getattr(ma, o)), "b": shown(getattr(mb, o)),
                  "contribution": phi[o]} for o in players]
    table = pd.DataFrame(rows, columns=["option", "a", "b", "contribution"])
    table["share"] = table["contribution"] / change if change else float("nan")
    return Split(table, change, not missing and len(players) <= MAX_OPTIONS, missing)


def _split_text(split: Split) -> str:
    if not split.exact:  # one row: the options together
        r = next(split.table.itertuples())
        missing = split.missing
        why = ("the runs did not measure " + ", ".join(missing[:4])
               + (f" (+{len(missing) - 4})" if len(missing) > 4 else "")
               + ", which would split them") if missing else "too many options to split"
        return (f"{r.option.replace('+', ', ')} together ({r.a} -> {r.b}) "
                f"{r.contribution:+.4f}; {why}")
    return "; ".join(f"{r.option} {r.a} -> {r.b} {r.contribution:+.4f}"
                     + (f" ({r.share:.0%})" if r.share == r.share else "")
                     for r in split.table.itertuples())


def _verdicts_text(rows: pd.DataFrame) -> str:
    return "; ".join(f"{verdict} under {', '.join(rows[rows['verdict'] == verdict]['variant'])}"
                     for verdict in VERDICTS if (rows["verdict"] == verdict).any())


def _family(variant: str) -> str | None:
    """The metric a variant defines, without cut-off nor options (``nDCG``)."""
    try:
        m: Metric = parse_metric(variant)
    except (MetricDefinitionError, ValueError):
        return None
    return Metric(m.name).display_name


def verdict_changes(verdicts: pd.DataFrame, per_query: Mapping[str, pd.DataFrame]
                    ) -> pd.DataFrame:
    """For each candidate, baseline and metric whose variants give different verdicts
    (:func:`harness.compare.verdicts.verdict_table`), the verdicts and the largest change
    (the two variants furthest apart in verdict, then in mean difference) split by option
    (:func:`split_change`). Columns :data:`CHANGE_COLUMNS`; ``largest`` marks each pair's
    largest change. Variants whose names do not parse as a metric are left out."""
    frames = {label: per_query_frame(f) for label, f in per_query.items()}
    families = verdicts["variant"].map(_family)
    rows: list[dict[str, Any]] = []
    for (candidate, baseline, metric), group in verdicts[families.notna()].groupby(
            ["candidate", "baseline", families[families.notna()]], sort=False):
        if group["verdict"].nunique() < 2:
            continue
        records = group.to_dict("records")
        a, b = max(((x, y) for x, y in itertools.combinations(records, 2)
                    if x["verdict"] != y["verdict"]),
                   key=lambda p: (abs(VERDICT_CODES[p[0]["verdict"]]
                                      - VERDICT_CODES[p[1]["verdict"]]),
                                  _splittable(frames, candidate, baseline, p[0]["variant"],
                                              p[1]["variant"]),
                                  abs(p[1]["mean_diff"] - p[0]["mean_diff"])))
        split = split_change(frames, candidate, baseline, a["variant"], b["variant"])
        _, ca, ba = _mean_diff(frames, candidate, baseline, a["variant"])
        _, cb, bb = _mean_diff(frames, candidate, baseline, b["variant"])
        rows.append({"candidate": candidate, "baseline": baseline, "metric": metric,
                     "verdicts": _verdicts_text(group), "variant_a": a["variant"],
                     "verdict_a": a["verdict"], "diff_a": a["mean_diff"],
                     "variant_b": b["variant"], "verdict_b": b["verdict"],
                     "diff_b": b["mean_diff"], "change": split.change,
                     "candidate_change": cb - ca, "baseline_change": bb - ba,
                     "split": _split_text(split), "split_exact": split.exact,
                     "gap": abs(VERDICT_CODES[a["verdict"]] - VERDICT_CODES[b["verdict"]])})
    table = pd.DataFrame(rows, columns=[*CHANGE_COLUMNS, "gap"])
    table["largest"] = False
    if len(table):
        score = table["gap"] * 1e6 + table["change"].abs()  # verdict gap first, then size
        table.loc[score.groupby([table["candidate"], table["baseline"]]).idxmax(),
                  "largest"] = True
    return table.drop(columns="gap")


def comparable(verdicts: pd.DataFrame) -> bool:
    """Whether a pair of the verdicts has a metric measured under several variants (else
    the verdict cannot change across definitions, and there is nothing to say)."""
    families = verdicts["variant"].map(_family)
    return bool(len(verdicts)) and bool(
        verdicts.assign(metric=families).groupby(["candidate", "baseline", "metric"])
        .size().max() > 1)


def change_lines(changes: pd.DataFrame, verdicts: pd.DataFrame | None = None, *,
                 limit: int = 4) -> list[str]:
    """The console's account: each pair's largest change (the verdicts, the two mean
    differences and the options that account for the change), then how many more; nothing
    when the ``verdicts`` the changes come from are not :func:`comparable`."""
    if verdicts is not None and not comparable(verdicts):
        return []
    if changes.empty:
        return ["Verdict across metric definitions: the same under every variant of each "
                "metric, for every pair"]
    pairs = changes[["candidate", "baseline"]].drop_duplicates()
    lines = [f"Verdict across metric definitions: it changes for {len(pairs)} pair(s), in "
             f"{len(changes)} metric(s) ({CHANGES_FILE}); the largest change per pair:"]
    for r in changes[changes["largest"]].head(limit).itertuples():
        lines += [f"  {r.candidate} vs {r.baseline}, {r.metric}: {r.verdict_a} under "
                  f"{r.variant_a} (diff {r.diff_a:+.4f}), {r.verdict_b} under {r.variant_b} "
                  f"(diff {r.diff_b:+.4f})",
                  f"    change {r.change:+.4f} (candidate {r.candidate_change:+.4f}, "
                  f"baseline {r.baseline_change:+.4f}) by option: {r.split}"]
    shown_rows = min(limit, int(changes["largest"].sum()))
    if len(changes) > shown_rows:
        lines.append(f"  ... {len(changes) - shown_rows} more in {CHANGES_FILE}")
    return lines


def changes_display(changes: pd.DataFrame) -> pd.DataFrame:
    """The changes as a report shows them: per pair and metric the verdicts, the largest
    change (its two variants and mean differences) and the options that account for it."""
    c = changes
    return pd.DataFrame({
        "candidate": c["candidate"], "baseline": c["baseline"], "metric": c["metric"],
        "verdicts": c["verdicts"],
        "largest change": [f"{r.verdict_a} under {r.variant_a} ({r.diff_a:+.4f}) -> "
                           f"{r.verdict_b} under {r.variant_b} ({r.diff_b:+.4f})"
                           for r in c.itertuples()],
        "change": c["change"].map("{:+.4f}".format),
        "candidate / baseline": [f"{a:+.4f} / {b:+.4f}" for a, b
                                 in zip(c["candidate_change"], c["baseline_change"])],
        "by option": c["split"]})


def change_markdown(changes: pd.DataFrame, *, limit: int = 5) -> list[str]:
    """Markdown lines for a run's description: each pair's largest change."""
    if changes.empty:
        return []
    lines = ["", "**Verdict across metric definitions** (the largest change per pair; all "
             f"in `{CHANGES_FILE}`):", ""]
    for r in changes[changes["largest"]].head(limit).itertuples():
        lines.append(f"- {r.candidate} vs {r.baseline}: {r.verdict_a} under `{r.variant_a}` "
                     f"({r.diff_a:+.4f}), {r.verdict_b} under `{r.variant_b}` "
                     f"({r.diff_b:+.4f}); by option: {r.split}")
    return lines
