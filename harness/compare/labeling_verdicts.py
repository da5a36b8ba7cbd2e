"""Does a verdict hold over every labeling of the unjudged documents? (issue 24)

A study may log, per ranker run, the judgment interval of every variant and query (artifact
``judgments/<ranker>.parquet``, long format: ``qid, variant, low, high, exact,
judged_at_10``; its sha256 in tag :data:`JUDGMENTS_DIGEST_TAG`): ``low`` and ``high`` bound
the query's value over every labeling of the unjudged documents it retrieved. For a pair
(candidate a, baseline b) and a variant, over their common queries,

- ``worst`` = mean(a.low − b.high) and ``best`` = mean(a.high − b.low)

bound the mean difference over every labeling. The bounds are conservative: each side's bound
may be attained by a different labeling of a shared document, and each query's by another,
but every labeling's mean difference lies in [worst, best]. A verdict holds over every
labeling when the interval lies on its side: better when worst > 0, worse when best < −δ,
not worse when worst > −δ, equivalent when both. An inconclusive verdict gets no flag (worst
and best still say how far a labeling could move the difference). ``harness judgments``
gives the per-query bounds.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from harness.compare.artifact_check import ArtifactChanged, checked_parquet
from harness.compare.unjudged_verdicts import treatment_of
from harness.compare.verdict_names import BETTER, EQUIVALENT, NOT_WORSE, WORSE
from harness.metrics.unjudged.judgment_summary import (
    difference_bounds,
    judged_distribution as summarise_judged,
)

__all__ = ["JUDGMENTS_DIGEST_TAG", "judgments_artifact", "read_judgments", "merge_judgments",
           "labeling_bounds", "labeling_flags", "labeling_lines", "labeling_count",
           "judged_distribution", "interval_means", "interval_table", "HOLDS"]

#: The tag holding the sha256 of a ranker run's judgments artifact.
JUDGMENTS_DIGEST_TAG = "judgments.sha256"
#: The columns the judgments artifact must hold.
COLUMNS = ("qid", "variant", "low", "high", "exact", "judged_at_10")
#: The flag of a verdict that holds over every labeling.
HOLDS = "holds over every labeling"
_UNJUDGED_AS = {"nonrelevant": "non-relevant", "relevant": "relevant",
                "condensed": "left out"}


def judgments_artifact(ranker: str) -> str:
    """The artifact path of a ranker run's judgment intervals."""
    return f"judgments/{ranker}.parquet"


def read_judgments(path: Path, run_id: str, ranker: str, logged: str | None,
                   expected: str | None = None) -> tuple[pd.DataFrame, str]:
    """The judgments artifact at ``path`` and its sha256, checked against the digest its run
    logged (``logged``) and the one a comparison recorded (``expected``), when given.

    Raises ArtifactChanged (altered, unreadable or without a needed column)."""
    name = judgments_artifact(ranker)
    table, digest = checked_parquet(path, f"run {run_id} ({ranker}): artifact {name}", logged,
                                    expected)
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise ArtifactChanged(f"run {run_id} ({ranker}): artifact {name} has no column "
                              f"{missing[0]!r}; it holds {', '.join(map(str, table.columns))}")
    return table, digest


def merge_judgments(label: str, frames: list[pd.DataFrame | None], qids: pd.Index
                    ) -> tuple[pd.DataFrame | None, list[str]]:
    """One version's judgment intervals from its runs' (the first run's rows kept for a
    variant two runs hold), on the queries ``qids`` of its per-query table; None, with a
    note, when only some of its runs hold the artifact (a pair is bounded only when every
    run of it has one)."""
    held = [f for f in frames if f is not None]
    if not held:
        return None, []
    if len(held) < len(frames):
        return None, [f"{label}: {len(frames) - len(held)} of its {len(frames)} runs logged "
                      "no judgments artifact; its verdicts are not bounded over labelings"]
    merged = pd.concat(held, ignore_index=True).drop_duplicates(["qid", "variant"])
    return merged[merged["qid"].isin(qids)].reset_index(drop=True), []


def _side(frame: pd.DataFrame, variant: str) -> pd.DataFrame:
    rows = frame[frame["variant"] == variant]
    return rows.set_index("qid")[["low", "high"]].astype(np.float64)


def labeling_bounds(a: pd.DataFrame, b: pd.DataFrame, variant: str
                    ) -> tuple[float, float, int]:
    """``(worst, best, n)``: the mean over the ``n`` queries both judgment tables bound for
    ``variant`` of a.low − b.high and of a.high − b.low (NaN, NaN, 0 when none)."""
    return difference_bounds(_side(a, variant), _side(b, variant))


def _unjudged_as(variant: str) -> str:
    parsed = treatment_of(variant)
    treatment = "nonrelevant" if parsed is None else parsed[1]
    name, _, grade = treatment.partition(" ")
    return _UNJUDGED_AS.get(name, name) + (f" {grade}" if grade else "")


def _flag(verdict: str, variant: str, worst: float, best: float, margin: float) -> str:
    holds = {BETTER: worst > 0, WORSE: best < -margin, NOT_WORSE: worst > -margin,
             EQUIVALENT: worst > -margin and best < margin}.get(verdict)
    if holds is None or worst != worst:
        return ""
    if holds:
        return HOLDS
    return (f"{verdict} only if unjudged documents are {_unjudged_as(variant)} (difference "
            f"over every labeling in [{worst:+.4f}, {best:+.4f}])")


def labeling_flags(verdicts: pd.DataFrame, intervals: Mapping[str, pd.DataFrame]
                   ) -> pd.DataFrame | None:
    """Per row of a verdict table: ``worst``, ``best`` (the mean difference's bounds over
    every labeling) and ``labelings`` (:data:`HOLDS`, what the verdict rests on, or empty
    for an inconclusive verdict or a pair not bounded); None when no pair is bounded."""
    rows = []
    for r in verdicts.itertuples():
        a, b = intervals.get(r.candidate), intervals.get(r.baseline)
        worst = best = float("nan")
        if a is not None and b is not None:
            worst, best, _ = labeling_bounds(a, b, r.variant)
        rows.append((worst, best, _flag(r.verdict, r.variant, worst, best, r.margin)))
    out = pd.DataFrame(rows, columns=["worst", "best", "labelings"], index=verdicts.index)
    return None if out["worst"].isna().all() else out


def _failing(verdicts: pd.DataFrame) -> pd.DataFrame:
    text = verdicts["labelings"].fillna("")
    return verdicts[(text != "") & (text != HOLDS)]


def labeling_count(verdicts: pd.DataFrame) -> tuple[int, int] | None:
    """(verdicts that do not hold over every labeling, verdicts bounded and decisive); None
    without the column."""
    if "labelings" not in verdicts.columns:
        return None
    return len(_failing(verdicts)), int((verdicts["labelings"].fillna("") != "").sum())


def labeling_lines(verdicts: pd.DataFrame, *, limit: int = 6, markdown: bool = False
                   ) -> list[str]:
    """The account of the verdicts over every labeling of the unjudged documents: each that
    does not hold, or that every decisive verdict holds; nothing without intervals."""
    counts = labeling_count(verdicts)
    if counts is None:
        return []
    failing, decisive = counts
    code = "`" if markdown else ""
    where = f"per query: {code}harness judgments{code}"
    if not failing:
        return [f"Verdict over every labeling of the unjudged documents: each of the "
                f"{decisive} decisive verdict(s) bounded holds; {where}"]
    lines = [f"Verdict over every labeling of the unjudged documents: {failing} of "
             f"{decisive} decisive verdict(s) do not hold; the full bound {where}:"]
    rows = _failing(verdicts)
    item = "- " if markdown else "  "
    lines += [f"{item}{r.candidate} vs {r.baseline}, {code}{r.variant}{code}: {r.labelings}"
              for r in rows.head(limit).itertuples()]
    if len(rows) > limit:
        lines.append(f"{item}... {len(rows) - limit} more in verdicts.csv (column labelings)")
    return lines


def judged_distribution(intervals: Mapping[str, pd.DataFrame]
                        ) -> dict[str, tuple[float, float, float]]:
    """Per version with judgment intervals: the median and 10th percentile of its per-query
    judged@10, and the share of its queries whose top 10 is fully judged."""
    out = {}
    for label, frame in intervals.items():
        d = summarise_judged(frame.drop_duplicates("qid")["judged_at_10"].astype(np.float64))
        median, p10, full = d["median"], d["p10"], d["full"]
        if median is not None and p10 is not None and full is not None:  # a value: all are
            out[label] = (median, p10, full)
    return out



def interval_means(intervals: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per version and variant with judgment intervals: ``low`` and ``high``, the least and
    greatest mean over every labeling of the unjudged documents (the means of the per-query
    bounds over the queries bounded), ``exact`` (the share of those queries whose bounds are
    exact) and ``n_queries``."""
    rows = []
    for label, frame in intervals.items():
        for variant, part in frame.groupby("variant", sort=False):
            low, high = part["low"].astype(np.float64), part["high"].astype(np.float64)
            both = (low.notna() & high.notna()).to_numpy()
            if both.any():
                rows.append({"version": label, "variant": str(variant),
                             "low": float(low[both].mean()), "high": float(high[both].mean()),
                             "exact": float(part["exact"].to_numpy()[both].mean()),
                             "n_queries": int(both.sum())})
    return pd.DataFrame(rows, columns=["version", "variant", "low", "high", "exact",
                                       "n_queries"])


def interval_table(means: pd.DataFrame, variants: list[str]) -> pd.DataFrame:
    """:func:`interval_means` for the report: variants (rows, in ``variants``' order) by
    version, ``[low, high]`` with ``*`` where some query's bound is not exact. Empty when
    every interval is a point (every retrieved document judged) or none was logged."""
    if means.empty or not bool((means["high"] - means["low"] > 1e-12).any()):
        return pd.DataFrame()
    cell = means.assign(text=[f"[{lo:.4f}, {hi:.4f}]" + ("" if ex >= 1 else "*")
                              for lo, hi, ex in zip(means["low"], means["high"],
                                                    means["exact"])])
    table = cell.pivot(index="variant", columns="version", values="text").fillna("")
    order = [v for v in variants if v in table.index]
    return table.loc[order, [v for v in dict.fromkeys(means["version"])]]
