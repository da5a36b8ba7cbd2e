"""Cross-check nDCG variants against :func:`sklearn.metrics.ndcg_score`, per query.

sklearn can express an nDCG variant when: the gain is ``linear`` (``y_true`` = label) or
``exp2`` (``y_true`` = 2^label - 1); the discount is logarithmic (any base: nDCG does not
depend on it); the ideal is ``retrieved`` or, for a query, every judged document with a
positive gain was retrieved; ties are ``average`` (``ignore_ties=False``) or the query has
no tied scores; and the query is not empty unless ``empty='zero'``. Queries with a single
document are not checked (sklearn refuses them). Other variants are reported as not checked,
never as passed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.metrics.definition import Metric

__all__ = ["CheckResult", "sklearn_expressible", "check_against_sklearn"]


@dataclass(frozen=True)
class CheckResult:
    """Outcome for one variant. ``status`` is 'checked' or 'not checked' (with ``reason``)."""

    variant: str
    status: str
    reason: str
    n_checked: int
    n_not_checked: int
    max_abs_diff: float
    worst_qid: object

    def failed(self, tolerance: float) -> bool:
        return self.status == "checked" and self.max_abs_diff > tolerance


def sklearn_expressible(metric: Metric) -> str | None:
    """``None`` when sklearn can compute the variant for some queries, else the reason."""
    if metric.name != "ndcg":
        return f"sklearn has no {metric.name}"
    if metric.gain not in ("linear", "exp2"):
        return "gain is neither linear nor exp2"
    if not (metric.discount in ("log2", "ln") or re.fullmatch(r"log[\d.]+", metric.discount)):
        return "discount is not logarithmic"
    return None


def check_against_sklearn(run: pd.DataFrame, qrels: pd.DataFrame | None,
                          metrics: list[Metric], per_query: pd.DataFrame) -> list[CheckResult]:
    """Compare ``per_query`` (from :func:`harness.evaluate`) with sklearn, variant by variant.

    sklearn's value of a query depends only on (gain, k) here, so it is computed once per
    pair, for all queries at once, on lists padded to one length: padding items have gain 0
    and score below the list's minimum, so they change neither DCG nor the ideal DCG.
    """
    lists = _lists(run, qrels, per_query.index)
    qids = list(lists)
    n = np.array([len(lists[q][0]) for q in qids])
    complete = np.array([lists[q][2] for q in qids], dtype=bool)
    tied = np.array([len(np.unique(lists[q][1])) < len(lists[q][1]) for q in qids], dtype=bool)
    width = int(n.max()) if len(n) else 0
    labels = np.zeros((len(qids), width))
    scores = np.zeros((len(qids), width))
    for i, q in enumerate(qids):
        lab, sc, _ = lists[q]
        labels[i, : len(lab)] = lab
        scores[i, : len(sc)] = sc
        scores[i, len(sc):] = sc.min() - 1.0
    cache: dict[tuple[str, int | None], np.ndarray] = {}
    results = []
    for m in metrics:
        reason = sklearn_expressible(m)
        if reason is not None:
            results.append(CheckResult(m.display_name, "not checked", reason, 0,
                                       len(per_query), float("nan"), None))
            continue
        gains = labels if m.gain == "linear" else np.where(labels > 0, np.exp2(labels) - 1, 0)
        eligible = n >= 2
        filters = [("a single document", n >= 2)]
        if m.ideal == "judged":
            filters.append(("relevant documents not retrieved (ideal=judged)", complete))
        if m.ties != "average":
            filters.append((f"tied scores (sklearn averages ties; ties={m.ties})", ~tied))
        if m.empty != "zero":
            filters.append((f"no relevant document (empty={m.empty})",
                            (gains > 0).any(axis=1)))
        for _, ok in filters:
            eligible &= ok
        if not eligible.any():
            why = "; ".join(f"{int((~ok).sum())} with {what}" for what, ok in filters
                            if (~ok).any())
            results.append(CheckResult(m.display_name, "not checked",
                                       f"no query sklearn can express: {why}", 0,
                                       len(per_query), float("nan"), None))
            continue
        key = (m.gain, m.k)
        if key not in cache:
            cache[key] = _sklearn_per_query(gains, scores, m.k)
        theirs = cache[key][eligible]
        ours = per_query[m.display_name].reindex([q for q, e in zip(qids, eligible) if e])
        diff = np.abs(theirs - ours.to_numpy(dtype=float))
        worst = int(np.argmax(diff))
        results.append(CheckResult(m.display_name, "checked", "", int(eligible.sum()),
                                   len(per_query) - int(eligible.sum()), float(diff[worst]),
                                   ours.index[worst]))
    return results


def _sklearn_per_query(y_true: np.ndarray, y_score: np.ndarray, k: int | None) -> np.ndarray:
    """sklearn's per-query nDCG with tie averaging. Uses sklearn's per-sample helper when
    present (one call for all queries), else the public ``ndcg_score`` per query."""
    try:
        from sklearn.metrics._ranking import _ndcg_sample_scores
    except ImportError:  # pragma: no cover - private helper moved
        from sklearn.metrics import ndcg_score

        return np.array([ndcg_score(t[None, :], s[None, :], k=k, ignore_ties=False)
                         for t, s in zip(y_true, y_score)])
    return np.asarray(_ndcg_sample_scores(y_true, y_score, k=k, ignore_ties=False))


def _lists(run: pd.DataFrame, qrels: pd.DataFrame | None, qids: pd.Index
           ) -> dict[object, tuple[np.ndarray, np.ndarray, bool]]:
    """Per evaluated query: labels and scores of the ranked list, and whether every judged
    document with a positive label was retrieved."""
    frame = run[["qid", "docid", "score"]]
    if qrels is None:
        frame = frame.assign(label=run["label"].clip(lower=0))
        positive_judged = frame[frame["label"] > 0].groupby("qid").size()
    else:
        frame = frame.merge(qrels[["qid", "docid", "label"]], on=["qid", "docid"], how="left")
        frame["label"] = frame["label"].fillna(0).clip(lower=0)
        positive_judged = qrels[qrels["label"] > 0].groupby("qid").size()
    out = {}
    wanted = set(qids)
    for qid, group in frame.groupby("qid", sort=False):
        if qid not in wanted:
            continue
        labels = group["label"].to_numpy(dtype=float)
        complete = int((labels > 0).sum()) == int(positive_judged.get(qid, 0))
        out[qid] = (labels, group["score"].to_numpy(dtype=float), complete)
    return out
