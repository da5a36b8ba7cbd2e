"""How complete a ranker's judgments are in a study: its mean judged@10 (the share of its top
10 documents that the qrels judge), and the warning when it is low enough that a verdict may
rest on what unjudged documents are taken to be (issue 24; bound it with ``harness
judgments``, docs/measures.md#judgment-intervals)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from harness.metrics import Metric
from harness.metrics.unjudged.judgment_summary import judged_distribution

__all__ = ["JUDGED_K", "JUDGED_WARN_BELOW", "judged_at_k", "judged_per_query",
           "judged_distribution", "distribution_text", "judged_warning", "judged_line",
           "spread_line"]

#: The cut-off of the judged share a study reports.
JUDGED_K = 10
#: Below this mean judged@10 a ranker is warned about.
JUDGED_WARN_BELOW = 0.9


def judged_at_k(engine: Any, run: pd.DataFrame, qrels: pd.DataFrame | None,
                options: Mapping[str, Any]) -> float | None:
    """The mean over the evaluated queries of Judged@10 (:func:`judged_per_query`); None
    without qrels or without an evaluated query."""
    values = judged_per_query(engine, run, qrels, options)
    return None if values is None else judged_distribution(values)["mean"]


def judged_per_query(engine: Any, run: pd.DataFrame, qrels: pd.DataFrame | None,
                     options: Mapping[str, Any]) -> pd.Series | None:
    """Judged@10 per evaluated query (registry's ``judged`` measure, tied documents averaged
    over their orders) by the study's ``engine`` with its evaluate ``options``, indexed by
    qid; None without qrels or without a run row."""
    if qrels is None or not len(run):
        return None
    metric = Metric("judged", k=JUDGED_K)
    return engine.evaluate(run, qrels, [metric], **options)[metric.display_name].rename(
        f"judged_at_{JUDGED_K}")


def distribution_text(d: Mapping[str, float | None]) -> str:
    """``median 0.900, 10th percentile 0.600, 41% of queries fully judged, 3% below 0.5``."""
    return (f"median {d['median']:.3f}, 10th percentile {d['p10']:.3f}, "
            f"{d['full']:.0%} of queries fully judged, {d['below_half']:.0%} below 0.5")


def judged_warning(name: str, share: float | None) -> str | None:
    """The warning for a ranker whose mean judged@10 is below :data:`JUDGED_WARN_BELOW`."""
    if share is None or share >= JUDGED_WARN_BELOW:
        return None
    return (f"ranker {name}: judged@{JUDGED_K} is {share:.3f} (below {JUDGED_WARN_BELOW}): "
            f"{1 - share:.0%} of its top {JUDGED_K} documents are unjudged and count as "
            "non-relevant, so conclusions may depend on unjudged documents; bound them with "
            "harness judgments (docs/measures.md#judgment-intervals)")


def judged_line(shares: Mapping[str, float | None]) -> str | None:
    """``judged@10 (...): bm25 0.859, ance 0.770`` when some ranker retrieved an unjudged
    document in its top 10 (None when every share is 1 or unknown)."""
    known = {n: v for n, v in shares.items() if v is not None}
    if not known or all(v >= 1.0 for v in known.values()):
        return None
    return (f"judged@{JUDGED_K} (the share of a ranker's top {JUDGED_K} documents that are "
            "judged, mean over queries): "
            + ", ".join(f"{n} {v:.3f}" for n, v in known.items()))


def spread_line(dists: Mapping[str, Mapping[str, float | None] | None]) -> str | None:
    """``judged@10 per query: bm25 median 0.900, ...; ance ...`` (:func:`distribution_text`
    per ranker with a distribution), or None."""
    spread = [f"{n} {distribution_text(d)}" for n, d in dists.items()
              if d and d.get("median") is not None]
    return f"judged@{JUDGED_K} per query: " + "; ".join(spread) if spread else None
