"""Verdicts of a candidate against a baseline: superiority, non-inferiority within a margin,
equivalence (TOST), and the gate that continuous integration reads.

With d the per-query differences candidate − baseline of one variant (higher is better) and
δ ≥ 0 its margin (0 when none is given), three one-sided tests of the mean difference μ:

- ``better``: H1 μ > 0;
- ``not worse``: H1 μ > −δ (non-inferiority);
- ``worse``: H1 μ < −δ;
- with ``equivalence``, also H1 μ < +δ; TOST's p-value is the larger of it and the
  non-inferiority one (Schuirmann 1987).

Each is a one-sided paired t-test (:func:`scipy.stats.ttest_1samp` on d ± δ), a one-sided
Wilcoxon signed-rank test (:func:`scipy.stats.wilcoxon` on d ± δ), or read from the bootstrap
interval of μ at level 1 − 2α (its lower bound above −δ shows non-inferiority at level α).
The p-values are corrected within the comparison's family (``correction``, ``family``); the
bootstrap bounds are not. The verdict is the first that holds, in the order equivalent (with
``equivalence``), better, not worse (δ > 0), worse; else inconclusive.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import stats

from harness.compare.labeling_verdicts import labeling_flags, labeling_lines
from harness.compare.resampling import bootstrap_intervals
from harness.compare.stats import TIE_TOLERANCE, adjust_pvalues, align_pair, per_query_frame
from harness.compare.unjudged_verdicts import unjudged_flags, unjudged_lines
from harness.compare.verdict_names import (
    BETTER,
    EQUIVALENT,
    INCONCLUSIVE,
    NOT_WORSE,
    PASSING,
    VERDICT_CODES,
    VERDICTS,
    WORSE,
)
from harness.errors import CompareError

if TYPE_CHECKING:
    from harness.compare.result import Comparison

__all__ = ["BETTER", "EQUIVALENT", "NOT_WORSE", "WORSE", "INCONCLUSIVE", "VERDICTS",
           "PASSING", "VERDICT_TESTS", "VERDICT_CODES", "parse_margins", "one_sided_p",
           "VerdictSettings", "verdict_settings", "verdict_table", "gate_failures",
           "verdict_lines", "gate_lines", "verdicts_display"]

#: The tests a verdict can rest on.
VERDICT_TESTS = ("ttest", "wilcoxon", "bootstrap")


@dataclass(frozen=True)
class VerdictSettings:
    """How verdicts were reached (:func:`verdict_settings`): the one-sided ``test``,
    ``equivalence`` (TOST too), the ``margins`` per variant, and the comparison's
    ``alpha``, ``correction`` and ``family``."""

    test: str = "ttest"
    equivalence: bool = False
    alpha: float = 0.05
    margins: dict[str, float] = field(default_factory=dict)
    correction: str = "holm"
    family: str = "variant"


def verdict_settings(comparison: Comparison, margins: Mapping[str, float] | None = None, *,
                     test: str = "ttest", equivalence: bool = False) -> VerdictSettings:
    """The settings of :func:`verdict_table` called with these arguments."""
    s = comparison.settings
    return VerdictSettings(test, equivalence, s.alpha, dict(margins or {}), s.correction,
                           s.family)


def parse_margins(items: Sequence[str], variants: Sequence[str]) -> dict[str, float]:
    """``{"nDCG@10": 0.005}`` from ``["nDCG@10=0.005"]``; the variant may be written in any
    spelling :func:`harness.parse_metric` reads, and must be one of ``variants``.

    >>> parse_margins(["ndcg@10=0.005"], ["nDCG@10", "AP@10"])
    {'nDCG@10': 0.005}
    """
    from harness.errors import MetricDefinitionError
    from harness.metrics import parse_metric

    out: dict[str, float] = {}
    for item in items:
        name, sep, value = item.rpartition("=")
        if not sep or not name:
            raise CompareError(f"--margin {item!r}: expected VARIANT=DELTA, e.g. "
                               "nDCG@10=0.005")
        try:
            delta = float(value)
        except ValueError:
            raise CompareError(f"--margin {item!r}: the margin {value!r} is not a number"
                               ) from None
        if not math.isfinite(delta) or delta < 0:
            raise CompareError(f"--margin {item!r}: the margin must be a finite number >= 0; "
                               f"got {value}")
        variant = name
        if name not in variants:
            try:
                variant = parse_metric(name).display_name
            except MetricDefinitionError:
                pass
        if variant not in variants:
            raise CompareError(f"--margin {item!r}: no compared run has variant {name!r}; "
                               f"known: {', '.join(variants)}")
        out[variant] = delta
    return out


def one_sided_p(x: np.ndarray, alternative: str, test: str) -> float:
    """One-sided p-value that the mean (t) or the location (Wilcoxon) of ``x`` is above
    (``"greater"``) or below (``"less"``) 0. Constant data: 0 when every value lies on the
    alternative's side, else 1 (scipy leaves t undefined there); no non-zero value: 1."""
    x = np.where(np.abs(x) <= TIE_TOLERANCE, 0.0, x)
    side = x > 0 if alternative == "greater" else x < 0
    if not np.any(x) or (test == "ttest" and np.ptp(x) <= TIE_TOLERANCE):
        return 0.0 if side.all() and len(x) > 1 else 1.0
    if test == "ttest":
        return float(stats.ttest_1samp(x, 0.0, alternative=alternative).pvalue)
    return float(stats.wilcoxon(x, alternative=alternative).pvalue)


def _row(d: np.ndarray, delta: float, test: str, alpha: float, seed: int, resamples: int,
         equivalence: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(d), "mean_diff": float(d.mean()), "margin": delta}
    if test == "bootstrap":
        low, high, _ = bootstrap_intervals(d[np.newaxis], seed=seed, resamples=resamples,
                                           confidence=1 - 2 * alpha)
        out["bound_low"], out["bound_high"] = float(low[0]), float(high[0])
        return out
    out["p_better"] = one_sided_p(d, "greater", test)
    out["p_not_worse"] = one_sided_p(d + delta, "greater", test)
    out["p_worse"] = one_sided_p(d + delta, "less", test)
    if equivalence:
        out["p_upper"] = one_sided_p(d - delta, "less", test)
        out["p_equivalent"] = max(out["p_not_worse"], out["p_upper"])
    return out


def _decide(row: Mapping[str, Any], test: str, alpha: float, equivalence: bool
            ) -> tuple[str, str]:
    """The verdict and the numbers that decided it."""
    delta, name = row["margin"], {"ttest": "t", "wilcoxon": "Wilcoxon"}.get(test, test)
    if test == "bootstrap":
        low, high = row["bound_low"], row["bound_high"]
        bounds = f"{100 * (1 - 2 * alpha):g}% bootstrap CI [{low:+.4g}, {high:+.4g}]"
        checks = [(equivalence and -delta < low and high < delta, EQUIVALENT,
                   f"inside (-{delta:g}, +{delta:g})"), (low > 0, BETTER, "above 0"),
                  (delta > 0 and low > -delta, NOT_WORSE, f"above -{delta:g}"),
                  (high < -delta, WORSE, f"below {0.0 - delta:g}")]
        for holds, verdict, where in checks:
            if holds:
                return verdict, f"{bounds} {where}"
        return INCONCLUSIVE, f"{bounds} straddles {'0' if delta == 0 else f'-{delta:g}'}"
    one_sided = [(equivalence, "p_equivalent_adj", EQUIVALENT,
                  f"-{delta:g} < diff < +{delta:g} (TOST)"),
                 (True, "p_better_adj", BETTER, "diff > 0"),
                 (delta > 0, "p_not_worse_adj", NOT_WORSE, f"diff > -{delta:g}"),
                 (True, "p_worse_adj", WORSE, f"diff < {0.0 - delta:g}")]
    for applies, column, verdict, claim in one_sided:
        if applies and row[column] < alpha:
            return verdict, f"{name} one-sided p adj {row[column]:.3g} < {alpha:g}: {claim}"
    shown = ", ".join(f"{c.removeprefix('p_').removesuffix('_adj')} {row[c]:.3g}"
                      for a, c, _, _ in one_sided if a)
    return INCONCLUSIVE, f"{name} p adj ≥ {alpha:g} for every claim ({shown})"


def verdict_table(per_query: Mapping[str, pd.DataFrame], comparison: Comparison,
                  margins: Mapping[str, float] | None = None, *, test: str = "ttest",
                  equivalence: bool = False,
                  intervals: Mapping[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """The verdict of every pair of a comparison made against baselines
    (:attr:`Comparison.tests`): ``ranker_a`` (the candidate) against ``ranker_b`` (the
    baseline).

    Parameters
    ----------
    per_query : mapping of label -> DataFrame
        The per-query tables the comparison was made from.
    comparison : Comparison
        From :func:`~harness.compare.core.build_comparison` with ``baseline``; its
        settings give alpha, the correction, the family, the seed and the resamples.
    margins : mapping of variant -> float, optional
        δ per variant (:func:`parse_margins`); other variants get 0.
    test : {'ttest', 'wilcoxon', 'bootstrap'}
    equivalence : bool
        Also test equivalence within ±δ (TOST); needs δ > 0 for some variant.
    intervals : mapping of label -> DataFrame, optional
        The judgment intervals of the versions that have them (``Sweep.intervals``).

    Returns
    -------
    DataFrame
        One row per comparison: ``variant, candidate, baseline, n, mean_diff, margin``, the
        one-sided p-values and their corrected values (or the bootstrap bounds),
        ``verdict``, ``decided_by``, ``gated`` (the variant has a margin); where measured,
        ``unjudged`` (the verdict across unjudged treatments) and, where both versions have
        judgment intervals, ``worst``, ``best`` and ``labelings`` (the verdict over every
        labeling of the unjudged documents: :mod:`harness.compare.labeling_verdicts`).
    """
    if test not in VERDICT_TESTS:
        raise CompareError(f"the verdict test must be one of {', '.join(VERDICT_TESTS)}; "
                           f"got {test!r}")
    margins = dict(margins or {})
    if equivalence and not any(margins.values()):
        raise CompareError("--equivalence tests |diff| < margin: give a margin > 0 "
                           "(--margin VARIANT=DELTA)")
    s = comparison.settings
    alpha, seed, resamples = s.alpha, s.seed, s.resamples
    frames = {label: per_query_frame(f) for label, f in per_query.items()}
    rows = []
    for r in comparison.tests.itertuples():
        x, y, _, _ = align_pair(frames[r.ranker_a][r.variant], frames[r.ranker_b][r.variant])
        d = x - y
        d[np.abs(d) <= TIE_TOLERANCE] = 0.0
        rows.append({"variant": r.variant, "candidate": r.ranker_a, "baseline": r.ranker_b}
                    | _row(d, margins.get(r.variant, 0.0), test, alpha, seed, resamples,
                           equivalence))
    table = pd.DataFrame(rows)
    family = s.family
    groups = [np.arange(len(table))] if family == "all" else list(table.groupby(
        "variant" if family == "variant" else "baseline", sort=False).indices.values())
    for column in [c for c in table.columns if c.startswith("p_")]:
        adjusted = np.empty(len(table))
        for idx in groups:
            adjusted[idx] = adjust_pvalues(table[column].to_numpy()[idx], s.correction)
        table[f"{column}_adj"] = adjusted
    decided = [_decide(row, test, alpha, equivalence) for row in table.to_dict("records")]
    table["verdict"] = [v for v, _ in decided]
    table["decided_by"] = [why for _, why in decided]
    table["gated"] = table["variant"].isin(list(margins))
    flags = unjudged_flags(table)  # the verdict across unjudged treatments, where measured
    if (flags != "").any():
        table["unjudged"] = flags
    bounded = None if not intervals else labeling_flags(table, intervals)
    if bounded is not None:
        table = table.join(bounded)
    return table


def gate_failures(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The gated rows whose verdict is neither better, equivalent nor not worse."""
    gated = verdicts[verdicts["gated"]]
    return gated[~gated["verdict"].isin(PASSING)]


def verdict_lines(verdicts: pd.DataFrame, settings: VerdictSettings, *,
                  limit: int = 12) -> list[str]:
    """The console's account of the verdicts (reached under ``settings``): the gated rows
    (else the first ``limit``), each with the numbers that decided it, and the count of
    each verdict."""
    counts = verdicts["verdict"].value_counts()
    a = settings
    head = (f"Verdicts ({a.test}, alpha {a.alpha}, {a.correction} per "
            f"{a.family}" + (", equivalence (TOST)" if a.equivalence else "")
            + "): " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS if v in counts))
    shown = verdicts[verdicts["gated"]] if verdicts["gated"].any() else verdicts.head(limit)
    lines = [head]
    for r in shown.itertuples():
        margin = f", margin {r.margin:g}" if r.margin else ""
        lines.append(f"  {r.variant}, {r.candidate} vs {r.baseline}: {r.verdict} (diff "
                     f"{r.mean_diff:+.4f}{margin}; {r.decided_by})")
    if len(shown) < len(verdicts):
        lines.append(f"  ... {len(verdicts) - len(shown)} more in verdicts.csv")
    return lines + unjudged_lines(verdicts) + labeling_lines(verdicts)


def gate_lines(verdicts: pd.DataFrame) -> tuple[bool, list[str]]:
    """Whether the gate passes, and its short report (what failed)."""
    gated, failed = verdicts[verdicts["gated"]], gate_failures(verdicts)
    if failed.empty:
        return True, [f"gate: passed ({len(gated)} gated comparison(s) better or not worse)"]
    return False, [f"gate: FAILED ({len(failed)} of {len(gated)} gated comparison(s))"] + [
        f"  {r.variant}, {r.candidate} vs {r.baseline}: {r.verdict} (diff {r.mean_diff:+.4f}"
        f", margin {r.margin:g}; {r.decided_by})" for r in failed.itertuples()]


def verdicts_display(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The verdict table as a report shows it: one row per variant, candidate and baseline,
    the mean difference, the margin, the verdict, the numbers that decided it and whether
    the gate reads it."""
    v = verdicts
    return pd.DataFrame({
        "variant": v["variant"], "candidate": v["candidate"], "baseline": v["baseline"],
        "n": v["n"], "diff": v["mean_diff"].map("{:+.4f}".format),
        "margin": v["margin"].map("{:g}".format), "verdict": v["verdict"],
        "decided by": v["decided_by"], "gated": v["gated"].map({True: "yes", False: ""}),
        **({"unjudged": v["unjudged"].fillna("")} if "unjudged" in v else {}),
        **({"labelings": v["labelings"].fillna(""),
            "over labelings": [f"[{w:+.4f}, {b:+.4f}]" if w == w else "" for w, b in
                               zip(v["worst"], v["best"])]} if "labelings" in v else {})})
